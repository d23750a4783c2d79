import FeedExample
import TaskDispatch
import TaskDispatchTesting
import Testing

/// `FeedModel.refresh()`, the async load, tested the way a user would: start it in a task, wait for each step and
/// run it, assert in between, then await the task to see how the method ended.
@Suite(.timeLimit(.minutes(1))) struct FeedModelAsyncTests {
    /// Generous: only a failing test ever spends it.
    static let bound = Duration.seconds(30)

    @Test @MainActor func refreshParsesInTheBackgroundThenDeliversOnTheMainActor() async throws {
        try await Self.stepThroughARefresh()
    }

    /// The scenario, shared with the repetition suite.
    @MainActor static func stepThroughARefresh() async throws {
        let dispatcher = ManualDispatcher()
        let source = ScriptedFeedSource([.data(Fixtures.threeItems)])
        let model = FeedModel(feedName: "swift-notes", source: source, dispatcher: dispatcher)

        let loading = Task { await model.refresh() }

        let parse = try await dispatcher.runNextBackground(waitingUpTo: Self.bound)
        #expect(parse.label == "parse")
        #expect(source.fetchedNames == ["swift-notes"])
        #expect(model.state == .loading(attempt: 1))
        #expect(model.items.isEmpty)  // parsed, not delivered yet

        let deliver = try await dispatcher.runNextForeground(waitingUpTo: Self.bound)
        #expect(deliver.label == "deliver")
        #expect(model.title == "Swift Notes")  // the "deliver" closure ran inside the step
        #expect(model.items.map(\.title) == ["Third", "Second", "First"])

        // The rest of refresh() runs in its own main-actor job once "deliver" has returned: await the task to see it.
        #expect(await loading.value == .loaded)
        #expect(model.state == .loaded)
        #expect(model.attempts == 1)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func refreshRetriesAfterTheBackOffOnTheVirtualClock() async throws {
        let dispatcher = ManualDispatcher()
        let source = ScriptedFeedSource([.failure("offline"), .data(Fixtures.oneItem)])
        let model = FeedModel(feedName: "swift-notes", source: source, dispatcher: dispatcher)
        let loading = Task { await model.refresh() }

        try await dispatcher.runNextBackground(waitingUpTo: Self.bound)  // "parse": the fetch fails
        try await dispatcher.waitForPendingTasks(1, in: .background, waitingUpTo: Self.bound)
        let retry = try #require(dispatcher.pendingTasks.first)
        #expect(retry.label == "retry")
        #expect(retry.dueTime == .seconds(1))
        #expect(model.state == .loading(attempt: 2))  // set before the retry was dispatched

        try dispatcher.advance(by: .seconds(1))  // runs "retry"
        #expect(source.fetchCount == 2)
        try await dispatcher.runNextForeground(waitingUpTo: Self.bound)  // "deliver"

        #expect(await loading.value == .loaded)
        #expect(model.items.map(\.id) == ["9"])
        #expect(model.attempts == 2)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func cancellingTheRefreshBeforeTheParseCancelsItAndEndsIdle() async throws {
        let dispatcher = ManualDispatcher()
        let source = ScriptedFeedSource([.data(Fixtures.threeItems)])
        let model = FeedModel(feedName: "swift-notes", source: source, dispatcher: dispatcher)
        let loading = Task { await model.refresh() }
        try await dispatcher.waitForPendingTasks(1, in: .background, waitingUpTo: Self.bound)

        loading.cancel()

        #expect(await loading.value == .idle)
        #expect(model.state == .idle)
        #expect(dispatcher.pendingCount == 0)  // "parse" was cancelled with the task
        #expect(source.fetchCount == 0)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func cancellingTheRefreshAfterTheParseSkipsTheDelivery() async throws {
        let dispatcher = ManualDispatcher()
        let model = FeedModel(
            feedName: "swift-notes",
            source: ScriptedFeedSource([.data(Fixtures.threeItems)]),
            dispatcher: dispatcher
        )
        let loading = Task { await model.refresh() }
        try await dispatcher.runNextBackground(waitingUpTo: Self.bound)
        try await dispatcher.waitForPendingTasks(1, in: .foreground, waitingUpTo: Self.bound)

        loading.cancel()

        #expect(await loading.value == .idle)
        #expect(model.items.isEmpty)  // "deliver" never ran
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func theRealTimeBoundFailsWithItsMessageWhenTheModelNeverDispatches() async throws {
        let dispatcher = ManualDispatcher()
        let forgotten = ManualDispatcher()  // the bug: the model was given another dispatcher than the test steps
        let model = FeedModel(
            feedName: "swift-notes",
            source: ScriptedFeedSource([.data(Fixtures.threeItems)]),
            dispatcher: forgotten
        )
        let loading = Task { await model.refresh() }

        let error = try await #require(throws: ManualDispatcherError.self) {
            try await dispatcher.runNextBackground(waitingUpTo: .milliseconds(100))
        }

        #expect(error.kind == .waitTimedOut(after: .milliseconds(100)))
        #expect(
            error.summary
                == "runNextBackground(waitingUpTo: 100 ms) found no background task due within 100 ms of real time "
                + "(the virtual clock stands at 0 s); nothing else is pending either: check that the code under test "
                + "was given this dispatcher and dispatched its work"
        )
        #expect(error.description.hasPrefix("ManualDispatcher: runNextBackground(waitingUpTo: 100 ms) found no"))
        loading.cancel()
        #expect(await loading.value == .idle)
        try forgotten.verifyIdle()
    }
}

/// The async example 200 times in a row, in parallel (Swift Testing runs the cases concurrently).
@Suite(.timeLimit(.minutes(2))) struct FeedModelAsyncRepetitionTests {
    @Test(arguments: 0..<200) @MainActor func stepThroughARefresh(round: Int) async throws {
        try await FeedModelAsyncTests.stepThroughARefresh()
    }
}
