import FeedExample
import TaskDispatchTesting
import Testing

/// The refresh driven by the async drains, with no stepping: the async `runUntilIdle()` runs the start, "parse"
/// and "deliver" and waits, between them, for the refresh's main-actor code to reach its next await; the async
/// `advance(by:)` does the same on the virtual clock, so the back-off is checked at whole seconds. Each waits up to
/// the fixture dispatcher's `waitLimit`.
@Suite struct FeedModelRunUntilIdleTests {
    @Test @MainActor func aRefreshRunsToCompletionThroughTheAsyncDrain() async throws {
        try await Self.refreshToCompletion()
    }

    /// Done-when scenario, with the async drain: the refresh tested to completion, 200 times in parallel.
    @Test(arguments: 0..<200) @MainActor func aRefreshRunsToCompletionEveryTime(round: Int) async throws {
        try await Self.refreshToCompletion()
    }

    @MainActor static func refreshToCompletion() async throws {
        let fixture = FeedModelFixture.serving()
        let refreshing = fixture.model.refresh()
        let ran = try await fixture.dispatcher.runUntilIdle()
        #expect(ran == 3)
        #expect(fixture.dispatcher.history.map(\.task.label) == ["refresh", "parse", "deliver"])
        #expect(fixture.model.state == .loaded)
        #expect(fixture.model.items.count == 3)
        #expect(try await fixture.dispatcher.value(of: refreshing) == .loaded)
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func theBackOffIsOneTwoThenFourSecondsOfVirtualTime() async throws {
        let fixture = FeedModelFixture.failingEveryFetch()
        let refreshing = fixture.model.refresh()
        try await fixture.dispatcher.settle()
        #expect(fixture.source.fetchCount == 1)
        var elapsed = Duration.zero
        for (wait, fetches) in [(Duration.seconds(1), 2), (.seconds(2), 3), (.seconds(4), 4)] {
            try await fixture.dispatcher.advance(by: wait - .milliseconds(1))
            #expect(fixture.source.fetchCount == fetches - 1, "still backing off at \(elapsed + wait) - 1 ms")
            try await fixture.dispatcher.advance(by: .milliseconds(1))
            #expect(fixture.source.fetchCount == fetches, "retried at \(elapsed + wait)")
            elapsed += wait
        }
        #expect(fixture.dispatcher.now == .seconds(7))
        let expected = FeedModel.State.failed(
            .unavailable(feed: FeedModelFixture.feedName, attempts: 4, reason: FeedModelFixture.outage))
        #expect(fixture.model.state == expected)
        #expect(try await fixture.dispatcher.value(of: refreshing) == expected)
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func runUntilIdleWaitsOutTheWholeBackOffAndDeliversTheRetry() async throws {
        let fixture = FeedModelFixture.failing(times: 2)
        let refreshing = fixture.model.refresh()
        try await fixture.dispatcher.runUntilIdle()
        #expect(fixture.model.state == .loaded)
        #expect(fixture.source.fetchCount == 3)
        #expect(fixture.dispatcher.now == .seconds(3))  // slept 1 s, then 2 s
        #expect(try await fixture.dispatcher.value(of: refreshing) == .loaded)
    }

    /// A refresh that supersedes a callback load waiting to retry: the async drain settles at once, since the
    /// refresh does not wait on the load's callback chain.
    @Test @MainActor func aRefreshDuringALoadsBackOffSettles() async throws {
        let fixture = FeedModelFixture.failing(times: 1)
        fixture.model.load()
        try await fixture.dispatcher.runNextBackground()  // the load's "parse" fails
        try await fixture.dispatcher.runNextForeground()  // its delivery schedules a retry in 1 s
        #expect(fixture.dispatcher.pendingTasks.map(\.label) == ["retry"])
        let refreshing = fixture.model.refresh()  // cancels the retry, and loads again
        try await fixture.dispatcher.runUntilIdle()
        #expect(fixture.model.state == .loaded)
        #expect(fixture.source.fetchCount == 2)
        #expect(fixture.dispatcher.now == .zero)  // the cancelled retry never moved the clock
        #expect(try await fixture.dispatcher.value(of: refreshing) == .loaded)
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func cancellingDuringTheBackOffLeavesNothingBehind() async throws {
        let fixture = FeedModelFixture.failingEveryFetch()
        let refreshing = fixture.model.refresh()
        try await fixture.dispatcher.advance(by: .milliseconds(500))
        #expect(fixture.dispatcher.pendingTasks.map(\.label) == ["refresh: clock sleep until 1 s"])
        fixture.model.cancel()
        try await fixture.dispatcher.runUntilIdle()
        #expect(fixture.model.state == .idle)
        #expect(fixture.dispatcher.now == .milliseconds(500))  // the timer left: the clock had nowhere to go
        _ = await refreshing.result
        try fixture.dispatcher.verifyIdle()
    }
}
