import TaskDispatchTesting
import Testing

@MainActor
final class CounterModel {
    private(set) var total = 0
    private let dispatcher: any TaskDispatcher
    init(dispatcher: any TaskDispatcher) { self.dispatcher = dispatcher }

    func sum(_ numbers: [Int]) {
        let dispatcher = self.dispatcher
        dispatcher.background(label: "sum") {
            let total = numbers.reduce(0, +)
            dispatcher.foreground(label: "show") { [weak self] in self?.total = total }
        }
    }
}

@Test @MainActor func sumsInTheBackgroundAndShowsInTheForeground() throws {
    let dispatcher = ManualDispatcher()
    let model = CounterModel(dispatcher: dispatcher)

    model.sum([1, 2, 3])
    #expect(dispatcher.pendingTaskCount(in: .background) == 1)

    try dispatcher.runNextBackground()  // "sum"
    #expect(model.total == 0)  // computed, not shown yet

    try dispatcher.runNextForeground()  // "show"
    #expect(model.total == 6)

    try dispatcher.verifyIdle()
}
