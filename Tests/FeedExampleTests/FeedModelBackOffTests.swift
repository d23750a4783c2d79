import FeedExample
import TaskDispatch
import TaskDispatchTesting
import Testing

// Every back-off in this file sleeps on the ManualDispatcher's virtual clock (`dispatcher.clock`): it wakes only when
// the test moves that clock with `advance`, so seven seconds of back-off take no real time.

/// `FeedModel.refresh()` retrying a failed fetch after sleeping on the dispatcher's virtual clock: the schedule
/// 1 s, 2 s, 4 s of `RetryPolicy.standard`, checked to the millisecond without waiting for any of it.
@Suite(.timeLimit(.minutes(1))) struct FeedModelBackOffTests {
    @Test @MainActor func backsOffOneTwoThenFourSecondsThenGivesUp() async throws {
        try await Self.backOffUntilTheModelGivesUp()
    }

    /// The scenario, shared with the repetition suite: every fetch fails, so the model sleeps 1 s, 2 s and 4 s
    /// between its four attempts, then fails.
    @MainActor static func backOffUntilTheModelGivesUp() async throws {
        let fixture = FeedModelFixture.failingEveryFetch(retryPolicy: .standard)
        let (dispatcher, source, model) = (fixture.dispatcher, fixture.source, fixture.model)
        let refreshing = model.refresh()
        try await dispatcher.runNextForeground()  // the start
        try await dispatcher.runNextBackground()  // "parse": the first fetch fails

        try await Self.expectBackOff(.seconds(1), beforeAttempt: 2, of: fixture)
        try await dispatcher.runNextBackground()  // "retry": fails
        try await Self.expectBackOff(.seconds(2), beforeAttempt: 3, of: fixture)
        try await dispatcher.runNextBackground()
        try await Self.expectBackOff(.seconds(4), beforeAttempt: 4, of: fixture)
        try await dispatcher.runNextBackground()  // the fourth and last attempt fails

        let unavailable = FeedError.unavailable(
            feed: FeedModelFixture.feedName,
            attempts: 4,
            reason: FeedModelFixture.outage
        )
        #expect(try await dispatcher.value(of: refreshing) == .failed(unavailable))
        #expect(model.state == .failed(unavailable))
        #expect(model.attempts == 4)
        #expect(source.fetchCount == 4)
        #expect(dispatcher.now == .seconds(7))  // 1 s + 2 s + 4 s of virtual time
        let runs = dispatcher.history.map { "\($0.task.label ?? "-")@\($0.startTime)" }
        #expect(
            runs == [
                "refresh@0.0 seconds", "parse@0.0 seconds",
                "refresh: clock sleep until 1 s@1.0 seconds", "retry@1.0 seconds",
                "refresh: clock sleep until 3 s@3.0 seconds", "retry@3.0 seconds",
                "refresh: clock sleep until 7 s@7.0 seconds", "retry@7.0 seconds",
            ]
        )
        #expect(dispatcher.unfinishedTaskCount == 0)
        try dispatcher.verifyIdle()
    }

    /// Checks one back-off after a failed fetch: the model sleeps exactly `delay` on the virtual clock, with its
    /// state showing attempt `attempt`, and then dispatches `"retry"`, which it leaves pending.
    @MainActor static func expectBackOff(
        _ delay: Duration,
        beforeAttempt attempt: Int,
        of fixture: FeedModelFixture,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        let dispatcher = fixture.dispatcher
        let failedAt = dispatcher.now
        try await dispatcher.waitForPendingTasks(1, in: .background)  // the sleep's timer
        let timer = try #require(dispatcher.pendingTasks.first, sourceLocation: sourceLocation)
        #expect(dispatcher.pendingTaskCount == 1, sourceLocation: sourceLocation)
        #expect(timer.label?.hasPrefix("refresh: clock sleep until") == true, sourceLocation: sourceLocation)
        #expect(timer.dueTime == failedAt + delay, sourceLocation: sourceLocation)
        #expect(fixture.model.state == .loading(attempt: attempt), sourceLocation: sourceLocation)
        #expect(fixture.model.attempts == attempt, sourceLocation: sourceLocation)

        #expect(
            try synchronously { try dispatcher.advance(by: delay - .milliseconds(1)) } == 0,
            sourceLocation: sourceLocation
        )
        #expect(dispatcher.pendingTasks == [timer], sourceLocation: sourceLocation)  // still sleeping: no retry
        #expect(fixture.source.fetchCount == attempt - 1, sourceLocation: sourceLocation)

        // The timer, and only the timer: the synchronous advance does not wait for the task it wakes.
        #expect(try synchronously { try dispatcher.advance(by: .milliseconds(1)) } == 1, sourceLocation: sourceLocation)
        // The sleeping task resumes on the main actor after the timer ran, and then dispatches the retry.
        try await dispatcher.waitForPendingTasks(1, in: .background)
        let retry = try #require(dispatcher.pendingTasks.first, sourceLocation: sourceLocation)
        #expect(retry.label == "retry", sourceLocation: sourceLocation)
        #expect(retry.dueTime == failedAt + delay, sourceLocation: sourceLocation)  // due now: the wait is over
        #expect(fixture.source.fetchCount == attempt - 1, sourceLocation: sourceLocation)
    }

    @Test @MainActor func aRetryThatSucceedsDeliversTheItems() async throws {
        let fixture = FeedModelFixture.failing(times: 2, then: Fixtures.oneItem)
        let refreshing = fixture.model.refresh()
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.runNextBackground()

        try await Self.expectBackOff(.seconds(1), beforeAttempt: 2, of: fixture)
        try await fixture.dispatcher.runNextBackground()
        try await Self.expectBackOff(.seconds(2), beforeAttempt: 3, of: fixture)
        try await fixture.dispatcher.runNextBackground()  // the third fetch succeeds
        let deliver = try await fixture.dispatcher.runNextForeground()

        #expect(deliver.task.label == "deliver")
        #expect(try await fixture.dispatcher.value(of: refreshing) == .loaded)
        #expect(fixture.model.items.map(\.id) == ["9"])
        #expect(fixture.model.attempts == 3)
        #expect(fixture.dispatcher.now == .seconds(3))
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func aPolicyOfItsOwnSetsTheSchedule() async throws {
        let policy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(250))
        let fixture = FeedModelFixture.failingEveryFetch(retryPolicy: policy)
        let refreshing = fixture.model.refresh()
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.runNextBackground()

        try await Self.expectBackOff(.milliseconds(250), beforeAttempt: 2, of: fixture)
        try await fixture.dispatcher.runNextBackground()
        try await Self.expectBackOff(.milliseconds(500), beforeAttempt: 3, of: fixture)
        try await fixture.dispatcher.runNextBackground()

        let state = try await fixture.dispatcher.value(of: refreshing)
        #expect(state == .failed(.unavailable(feed: FeedModelFixture.feedName, attempts: 3, reason: "offline")))
        #expect(fixture.dispatcher.now == .milliseconds(750))
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func withoutRetriesAFailedFetchFailsAtOnceWithoutSleeping() async throws {
        let fixture = FeedModelFixture.failingEveryFetch(retryPolicy: .never)
        let refreshing = fixture.model.refresh()
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.runNextBackground()

        let state = try await fixture.dispatcher.value(of: refreshing)

        #expect(state == .failed(.unavailable(feed: FeedModelFixture.feedName, attempts: 1, reason: "offline")))
        #expect(fixture.dispatcher.history.map(\.task.label) == ["refresh", "parse"])
        #expect(fixture.dispatcher.now == .zero)
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func cancellingDuringTheBackOffCancelsTheSleepAndEndsIdle() async throws {
        let fixture = FeedModelFixture.failing(times: 1)
        let refreshing = fixture.model.refresh()
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.runNextBackground()
        try await fixture.dispatcher.waitForPendingTasks(1, in: .background)
        #expect(fixture.dispatcher.pendingTasks.map(\.label) == ["refresh: clock sleep until 1 s"])
        #expect(fixture.model.state == .loading(attempt: 2))

        #expect(fixture.model.cancel())

        #expect(fixture.model.state == .idle)
        #expect(fixture.dispatcher.pendingTaskCount == 0)  // the timer left the dispatcher with the cancelled sleep
        #expect(try await fixture.dispatcher.value(of: refreshing) == .idle)
        #expect(try await fixture.dispatcher.advance(by: .seconds(10)) == 0)  // nothing wakes up later
        #expect(fixture.source.fetchCount == 1)
        #expect(fixture.model.state == .idle)
        #expect(fixture.dispatcher.unfinishedTaskCount == 0)
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func aRefreshAfterACancelledBackOffStartsAgainFromTheFirstAttempt() async throws {
        let fixture = FeedModelFixture.failing(times: 1, then: Fixtures.oneItem)
        let first = fixture.model.refresh()
        try await fixture.dispatcher.runNextForeground()
        try await fixture.dispatcher.runNextBackground()
        try await fixture.dispatcher.waitForPendingTasks(1, in: .background)
        fixture.model.cancel()
        #expect(try await fixture.dispatcher.value(of: first) == .idle)

        let second = fixture.model.refresh()
        try await fixture.dispatcher.runNextForeground()
        let parse = try await fixture.dispatcher.runNextBackground()
        #expect(parse.task.label == "parse")  // a new load: attempt 1, no back-off
        try await fixture.dispatcher.runNextForeground()

        #expect(try await fixture.dispatcher.value(of: second) == .loaded)
        #expect(fixture.model.attempts == 1)
        #expect(fixture.dispatcher.now == .zero)
        try fixture.dispatcher.verifyIdle()
    }
}
