import TaskDispatch
import TaskDispatchTesting
import Testing

@Test @MainActor func refreshParsesThenDelivers() async throws {
    let dispatcher = ManualDispatcher()
    let model = HeadlinesModel(dispatcher: dispatcher)

    let refreshing = Task { try await model.refresh("One\nTwo") }
    try await dispatcher.runNextBackground()  // "parse"
    #expect(model.headlines.isEmpty)
    try await dispatcher.runNextForeground()  // "deliver"
    #expect(model.headlines == ["One", "Two"])
    try await refreshing.value  // the rest of refresh() has run
    try dispatcher.verifyIdle()
}

@Test @MainActor func autoDrainRunsEachDispatchAtOnce() {
    let dispatcher = ManualDispatcher(mode: .autoDrain)  // or dispatcher.mode = .autoDrain
    let model = HeadlinesModel(dispatcher: dispatcher)
    model.show("One\nTwo")
    #expect(model.headlines == ["One", "Two"])  // parse and deliver already ran
    #expect(dispatcher.pendingTaskCount == 0)
}
