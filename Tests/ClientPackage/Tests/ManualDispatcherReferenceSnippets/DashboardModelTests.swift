import TaskDispatch
import TaskDispatchTesting
import Testing

@Test @MainActor func eachFetchWakesAtItsTime() async throws {
    let dispatcher = ManualDispatcher()
    let model = DashboardModel(dispatcher: dispatcher)

    let load = model.load()
    try await dispatcher.advance(by: .seconds(1))
    #expect(dispatcher.history.map(\.task.label).contains("news"))
    #expect(!dispatcher.history.map(\.task.label).contains("weather"))  // still asleep
    try await dispatcher.advance(by: .seconds(1))
    try await dispatcher.value(of: load)
    #expect(model.shown == ["news", "weather"])
    try dispatcher.verifyIdle()
}

/// The children started on the main actor stop the advance with the article's message.
@Test @MainActor func childrenOfAMainActorTaskStopTheAdvanceWithTheArticlesMessage() async throws {
    let dispatcher = ManualDispatcher()
    let model = DashboardModel(dispatcher: dispatcher)

    let load = model.loadOnTheMainActor()
    let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.advance(by: .seconds(1)) }
    #expect(error?.kind == .unsettledTasks(after: .zero))
    // The article's message, at this package's call site.
    #expect(
        error?.summary
            == "advance(by: 1 s) cannot know whether every child task of tracked task \"dashboard\" (ManualDispatcherReferenceSnippets/DashboardModel.swift:30) has reached its wait: one of them (async let, a task group, or a Task { } it created) waited on the dispatcher, and the dispatcher counts the jobs of child tasks only in a nonisolated tracked task, while this one runs on the main actor. Rather than move the clock, or return, while a sibling may not have started its sleep yet, it stops here. Start the task nonisolated, as dispatcher.startTask(label:) { @concurrent in … }, and update main-actor state there through try await dispatcher.runOnMainActor { … }; or await the work one call after another, without child tasks. A Task { } the task's code creates (a debounce, say) stays uncounted wherever it runs: start that work with dispatcher.startTask instead"
    )
    load.cancel()
    await #expect(throws: CancellationError.self) { try await dispatcher.value(of: load) }
    try dispatcher.verifyIdle()
}
