import FeedExample
import TaskDispatch
import TaskDispatchTesting
import Testing

/// End-state tests of `FeedModel` in `ManualDispatcher`'s auto-advance mode: the dispatcher runs each task as it is
/// dispatched and, once every tracked task has settled, moves its virtual clock to the next sleep, so the test
/// neither steps nor moves the clock, and the 1 s, 2 s and 4 s of back-off take no real time.
@Suite(.timeLimit(.minutes(1))) struct FeedModelAutoAdvanceTests {
    @Test @MainActor func theBackOffEndsInFailureWithNoStepAndNoClockMove() async throws {
        let fixture = FeedModelFixture.failingEveryFetch(mode: .autoAdvance)
        let refreshing = fixture.model.refresh()
        let unavailable = FeedError.unavailable(
            feed: FeedModelFixture.feedName,
            attempts: 4,
            reason: FeedModelFixture.outage
        )
        #expect(try await fixture.dispatcher.value(of: refreshing) == .failed(unavailable))
        #expect(fixture.model.attempts == 4)
        #expect(fixture.source.fetchCount == 4)
        #expect(fixture.dispatcher.now == .seconds(7))  // 1 s + 2 s + 4 s, skipped in order
        try fixture.dispatcher.verifyIdle()
    }

    @Test @MainActor func oneRunUntilIdleReachesTheEndStateToo() async throws {
        let fixture = FeedModelFixture.failingEveryFetch(mode: .autoAdvance)
        fixture.model.refresh()
        try await fixture.dispatcher.runUntilIdle()
        #expect(fixture.model.attempts == 4)
        #expect(fixture.dispatcher.now == .seconds(7))
        try fixture.dispatcher.verifyIdle()
    }

    @Test(arguments: 0..<100) @MainActor func theEndStateIsTheSameEveryTime(round: Int) async throws {
        let fixture = FeedModelFixture.failing(times: 2, then: Fixtures.oneItem, mode: .autoAdvance)
        #expect(try await fixture.dispatcher.value(of: fixture.model.refresh()) == .loaded)
        #expect(fixture.model.items.map(\.id) == ["9"])
        #expect(fixture.dispatcher.now == .seconds(3))  // 1 s + 2 s
        try fixture.dispatcher.verifyIdle()
    }
}
