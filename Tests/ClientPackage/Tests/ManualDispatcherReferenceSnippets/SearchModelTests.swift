import TaskDispatch
import TaskDispatchTesting
import Testing

@Test @MainActor func searchesOnceTheTypingPauses() async throws {
    let dispatcher = ManualDispatcher()
    let model = SearchModel(dispatcher: dispatcher)

    model.search("sw")
    try await dispatcher.advance(by: .milliseconds(200))
    model.search("swift")  // cancels the first search, asleep
    try await dispatcher.advance(by: .milliseconds(300))
    #expect(model.queries == ["swift"])  // "sw" never ran
    #expect(model.results == ["swift 1", "swift 2"])  // 300 ms of virtual time, microseconds of real time
    try dispatcher.verifyIdle()
}
