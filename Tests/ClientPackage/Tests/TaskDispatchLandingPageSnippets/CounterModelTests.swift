import TaskDispatchTesting
import Testing

@Test @MainActor func sumsInTheBackgroundAndShowsInTheForeground() throws {
    let dispatcher = ManualDispatcher()
    let model = CounterModel(dispatcher: dispatcher)

    model.sum([1, 2, 3])
    try dispatcher.runNextBackground()  // "sum"
    #expect(model.total == 0)  // computed, not shown yet
    try dispatcher.runNextForeground()  // "show"
    #expect(model.total == 6)
    try dispatcher.verifyIdle()
}
