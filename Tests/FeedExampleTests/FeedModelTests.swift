import FeedExample
import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct FeedModelTests {
    @Test @MainActor func parsesInTheBackgroundThenDeliversOnTheMainActor() throws {
        let dispatcher = ManualDispatcher()
        let source = ScriptedFeedSource([.data(Fixtures.threeItems)])
        let model = FeedModel(feedName: "swift-notes", source: source, dispatcher: dispatcher)

        model.load()
        #expect(model.state == .loading(attempt: 1))
        #expect(model.items.isEmpty)
        #expect(source.fetchCount == 0)  // nothing runs behind the test's back
        #expect(dispatcher.pendingTasks.map(\.label) == ["parse"])

        let parse = try dispatcher.runNextBackground()
        #expect(parse.task.label == "parse")
        #expect(source.fetchedNames == ["swift-notes"])
        #expect(model.items.isEmpty)  // parsed, not delivered yet
        #expect(model.state == .loading(attempt: 1))
        let deliver = try #require(dispatcher.pendingTasks.first)
        #expect(deliver.label == "deliver")
        #expect(deliver.context == .foreground)

        try dispatcher.runNextForeground()
        #expect(model.state == .loaded)
        #expect(model.title == "Swift Notes")
        #expect(model.items.map(\.title) == ["Third", "Second", "First"])
        #expect(model.attempts == 1)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func autoDrainDeliversBeforeLoadReturns() async throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let model = FeedModel(
            feedName: "swift-notes",
            source: ScriptedFeedSource([.data(Fixtures.threeItems)]),
            dispatcher: dispatcher
        )

        model.load()

        #expect(model.state == .loaded)
        #expect(model.items.count == 3)
        #expect(await model.finished() == .loaded)
        #expect(dispatcher.history.map(\.task.label) == ["parse", "deliver"])
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func loadWhileLoadingDoesNothing() throws {
        let dispatcher = ManualDispatcher()
        let source = ScriptedFeedSource([.data(Fixtures.threeItems)])
        let model = FeedModel(feedName: "swift-notes", source: source, dispatcher: dispatcher)

        model.load()
        model.load()

        #expect(dispatcher.pendingTaskCount == 1)
        try dispatcher.runUntilIdle()
        #expect(source.fetchCount == 1)
        #expect(model.state == .loaded)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func reloadKeepsTheOldItemsUntilTheNewOnesArrive() throws {
        let dispatcher = ManualDispatcher()
        let source = ScriptedFeedSource([.data(Fixtures.threeItems), .data(Fixtures.oneItem)])
        let model = FeedModel(feedName: "swift-notes", source: source, dispatcher: dispatcher)
        model.load()
        try dispatcher.runUntilIdle()

        model.load()
        try dispatcher.runNextBackground()
        #expect(model.state == .loading(attempt: 1))
        #expect(model.items.count == 3)

        try dispatcher.runNextForeground()
        #expect(model.title == "Updated")
        #expect(model.items.map(\.id) == ["9"])
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func finishedResumesWhenTheDeliveryRuns() async throws {
        let dispatcher = ManualDispatcher()
        let model = FeedModel(
            feedName: "swift-notes",
            source: ScriptedFeedSource([.data(Fixtures.oneItem)]),
            dispatcher: dispatcher
        )
        model.load()
        let waiter = Task { await model.finished() }

        try await dispatcher.runUntilIdle()

        #expect(await waiter.value == .loaded)
        try dispatcher.verifyIdle()
    }
}
