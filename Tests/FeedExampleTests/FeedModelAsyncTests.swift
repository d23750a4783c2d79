import FeedExample
import TaskDispatch
import TaskDispatchTesting
import Testing

/// `FeedModel.refresh()`, the load in a tracked task, stepped phase by phase the way a user would: start it,
/// run each step, assert in between, then await the task to see how the load ended.
@Suite(.timeLimit(.minutes(1))) struct FeedModelAsyncTests {
    @Test @MainActor func refreshStartsOnTheMainActorThenParsesThenDelivers() async throws {
        try await Self.stepThroughARefresh()
    }

    /// The scenario, shared with the repetition suite.
    @MainActor static func stepThroughARefresh() async throws {
        let fixture = FeedModelFixture.serving(Fixtures.threeItems)
        let (dispatcher, source, model) = (fixture.dispatcher, fixture.source, fixture.model)

        let refreshing = model.refresh()
        let start = try #require(dispatcher.pendingTasks.first)
        #expect(dispatcher.pendingTasks.count == 1)
        #expect(start.label == "refresh")
        #expect(start.context == .foreground)  // FeedModel is @MainActor, so its task starts on the main actor
        #expect(model.state == .idle)  // the task's body has not begun
        #expect(dispatcher.unfinishedTaskCount == 1)

        try await dispatcher.runNextForeground()  // the start
        let parse = try await dispatcher.runNextBackground()
        #expect(parse.task.label == "parse")
        #expect(source.fetchedNames == [FeedModelFixture.feedName])
        #expect(model.state == .loading(attempt: 1))
        #expect(model.items.isEmpty)  // parsed, not delivered yet

        let deliver = try await dispatcher.runNextForeground()
        #expect(deliver.task.label == "deliver")
        #expect(model.title == "Swift Notes")  // the "deliver" closure ran inside the step
        #expect(model.items.map(\.title) == ["Third", "Second", "First"])

        // The rest of the task runs in its own main-actor job once "deliver" has returned: await the task to see it.
        #expect(try await dispatcher.value(of: refreshing) == .loaded)
        #expect(model.state == .loaded)
        #expect(model.attempts == 1)
        #expect(dispatcher.history.map(\.task.label) == ["refresh", "parse", "deliver"])
        #expect(dispatcher.unfinishedTaskCount == 0)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func aRefreshWhileOneIsRunningReturnsTheSameTask() async throws {
        let fixture = FeedModelFixture.serving()
        let first = fixture.model.refresh()

        #expect(fixture.model.refresh() == first)  // before its start ran
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.waitForPendingTasks(1, in: .background)
        #expect(fixture.model.refresh() == first)  // while it waits for "parse"
        #expect(fixture.dispatcher.pendingTasks.map(\.label) == ["parse"])

        try await fixture.dispatcher.runNextBackground()
        try await fixture.dispatcher.runNextForeground()
        #expect(try await fixture.dispatcher.value(of: first) == .loaded)
        #expect(fixture.source.fetchCount == 1)

        let second = fixture.model.refresh()  // the first ended: a new refresh
        #expect(second != first)
        #expect(fixture.dispatcher.pendingTasks.map(\.label) == ["refresh"])
        second.cancel()
        await #expect(throws: CancellationError.self) { try await fixture.dispatcher.value(of: second) }
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func aRefreshWhileALoadIsInProgressSupersedesIt() async throws {
        let fixture = FeedModelFixture.serving(Fixtures.oneItem)
        fixture.model.load()
        #expect(fixture.model.state == .loading(attempt: 1))

        let refreshing = fixture.model.refresh()
        #expect(fixture.dispatcher.pendingTasks.map(\.label) == ["refresh"])  // the load's "parse" was cancelled
        #expect(fixture.model.state == .idle)  // the superseded load ended as cancel() ends it
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.runNextBackground()
        try await fixture.dispatcher.runNextForeground()

        #expect(try await fixture.dispatcher.value(of: refreshing) == .loaded)
        #expect(fixture.source.fetchCount == 1)  // one fetch: the load's never ran
        #expect(fixture.model.items.map(\.id) == ["9"])
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func aLoadWhileARefreshHasNotEndedDoesNothing() async throws {
        let fixture = FeedModelFixture.serving(Fixtures.oneItem)
        let refreshing = fixture.model.refresh()

        fixture.model.load()  // the refresh has not begun, but it has not ended either
        #expect(fixture.dispatcher.pendingTasks.map(\.label) == ["refresh"])

        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.runNextBackground()
        fixture.model.load()  // while the refresh waits for its delivery
        try await fixture.dispatcher.runNextForeground()

        #expect(try await fixture.dispatcher.value(of: refreshing) == .loaded)
        #expect(fixture.source.fetchCount == 1)
        #expect(fixture.dispatcher.history.map(\.task.label) == ["refresh", "parse", "deliver"])
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func finishedWaitsForARefreshWhoseStartHasNotRun() async throws {
        let fixture = FeedModelFixture.serving()
        let refreshing = fixture.model.refresh()
        #expect(fixture.model.state == .idle)  // the body has not begun, yet the refresh is in progress

        async let finished = fixture.model.finished()
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.runNextBackground()
        try await fixture.dispatcher.runNextForeground()

        #expect(await finished == .loaded)  // not the .idle the model showed when finished() was called
        #expect(try await fixture.dispatcher.value(of: refreshing) == .loaded)
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func aRefreshOnAProductionDispatcherRetriesOnTheRealClock() async throws {
        let source = ScriptedFeedSource([.failure("offline"), .data(Fixtures.oneItem)])
        let model = FeedModel(
            feedName: "swift-notes",
            source: source,
            dispatcher: QueueDispatcher(),  // a plain Task, Dispatch queues, ContinuousClock
            retryPolicy: RetryPolicy(maxAttempts: 2, baseDelay: .milliseconds(1))
        )

        let state = try await model.refresh().value

        #expect(state == .loaded)
        #expect(model.items.map(\.id) == ["9"])
        #expect(model.attempts == 2)
        #expect(source.fetchCount == 2)
    }

    @Test @MainActor func onAProductionDispatcherATaskCancelledBeforeItsBodyBeganLoadsNothing() async throws {
        let source = ScriptedFeedSource([.data(Fixtures.oneItem)])
        let model = FeedModel(feedName: "swift-notes", source: source, dispatcher: QueueDispatcher())
        let cancelled = model.refresh()
        cancelled.cancel()  // before the main actor ran its body: the test holds the main actor

        let next = model.refresh()  // the cancelled refresh is not joined

        #expect(next != cancelled)
        #expect(try await cancelled.value == .idle)  // a plain Task runs its body, which returns at once
        #expect(try await next.value == .loaded)
        #expect(source.fetchCount == 1)
        #expect(model.items.map(\.id) == ["9"])
    }

    @Test @MainActor func withAutoDrainTheWholeRefreshRunsOnceTheTaskIsAwaited() async throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let model = FeedModel(
            feedName: "swift-notes",
            source: ScriptedFeedSource([.data(Fixtures.threeItems)]),
            dispatcher: dispatcher
        )

        let refreshing = model.refresh()
        #expect(dispatcher.pendingTaskCount == 0)  // the start ran at once; the body waits for the main actor

        #expect(try await dispatcher.value(of: refreshing) == .loaded)
        #expect(model.items.count == 3)
        #expect(dispatcher.history.map(\.task.label) == ["refresh", "parse", "deliver"])
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func cancellingBeforeTheStartRanMeansTheRefreshNeverBegins() async throws {
        let fixture = FeedModelFixture.serving()
        let refreshing = fixture.model.refresh()

        #expect(fixture.model.cancel())  // a refresh had been started

        await #expect(throws: CancellationError.self) { try await fixture.dispatcher.value(of: refreshing) }
        #expect(fixture.model.state == .idle)
        #expect(fixture.dispatcher.pendingTaskCount == 0)  // the start was cancelled with the task
        #expect(fixture.source.fetchCount == 0)
        #expect(!fixture.model.cancel())  // nothing left to cancel
        #expect(fixture.dispatcher.unfinishedTaskCount == 0)
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func cancellingWhileTheParseIsPendingCancelsItAndEndsIdle() async throws {
        let fixture = FeedModelFixture.serving()
        let refreshing = fixture.model.refresh()
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.waitForPendingTasks(1, in: .background)
        #expect(fixture.model.state == .loading(attempt: 1))

        #expect(fixture.model.cancel())

        #expect(fixture.model.state == .idle)
        #expect(fixture.dispatcher.pendingTaskCount == 0)  // "parse" left the dispatcher with the cancelled task
        #expect(try await fixture.dispatcher.value(of: refreshing) == .idle)
        #expect(fixture.source.fetchCount == 0)
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func cancellingAfterTheParseSkipsTheDelivery() async throws {
        let fixture = FeedModelFixture.serving()
        let refreshing = fixture.model.refresh()
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.runNextBackground()
        try await fixture.dispatcher.waitForPendingTasks(1, in: .foreground)

        #expect(fixture.model.cancel())

        #expect(fixture.dispatcher.pendingTaskCount == 0)  // "deliver" left the dispatcher
        #expect(try await fixture.dispatcher.value(of: refreshing) == .idle)
        #expect(fixture.model.items.isEmpty)  // "deliver" never ran
        #expect(fixture.model.state == .idle)
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func cancellingTheReturnedTaskEndsTheLoadIdleAsCancelDoes() async throws {
        let fixture = FeedModelFixture.serving()
        let refreshing = fixture.model.refresh()
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.waitForPendingTasks(1, in: .background)

        refreshing.cancel()

        #expect(try await fixture.dispatcher.value(of: refreshing) == .idle)
        #expect(fixture.model.state == .idle)
        #expect(fixture.dispatcher.pendingTaskCount == 0)
        #expect(!fixture.model.cancel())  // the load already ended
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func aDocumentThatDoesNotParseFailsAtOnceWithoutABackOff() async throws {
        let fixture = FeedModelFixture.serving(Fixtures.untitledItem)
        let refreshing = fixture.model.refresh()
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.runNextBackground()

        let state = try await fixture.dispatcher.value(of: refreshing)

        guard case .failed(.invalidFeed(let feed, let reason)) = state else {
            Issue.record("expected .failed(.invalidFeed), got \(state)")
            return
        }
        #expect(feed == FeedModelFixture.feedName)
        #expect(reason.contains("missing key \"title\""))
        #expect(fixture.dispatcher.history.map(\.task.label) == ["refresh", "parse"])  // no sleep, no "deliver"
        #expect(fixture.source.fetchCount == 1)
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func theRealTimeBoundFailsWithItsMessageWhenTheModelNeverDispatches() async throws {
        let dispatcher = ManualDispatcher()
        let forgotten = ManualDispatcher()  // the bug: the model was given another dispatcher than the test steps
        let model = FeedModel(
            feedName: "swift-notes",
            source: ScriptedFeedSource([.data(Fixtures.threeItems)]),
            dispatcher: forgotten
        )
        let refreshing = model.refresh()

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
        #expect(forgotten.pendingTasks.map(\.label) == ["refresh"])  // the start went to the other dispatcher
        model.cancel()
        await #expect(throws: CancellationError.self) { try await forgotten.value(of: refreshing) }
        try forgotten.verifyIdle()
    }
}
