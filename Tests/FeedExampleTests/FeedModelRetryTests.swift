import FeedExample
import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct FeedModelRetryTests {
    @Test @MainActor func retriesAfterOneSecondThenTwo() throws {
        let dispatcher = ManualDispatcher()
        let source = ScriptedFeedSource([.failure("offline"), .failure("offline"), .data(Fixtures.oneItem)])
        let model = FeedModel(feedName: "news", source: source, dispatcher: dispatcher, retryPolicy: .standard)

        model.load()
        try dispatcher.runNextBackground()  // first fetch fails
        try dispatcher.runNextForeground()  // the delivery schedules the retry
        #expect(model.state == .loading(attempt: 2))
        let retry = try #require(dispatcher.pendingTasks.first)
        #expect(retry.label == "retry")
        #expect(retry.dueTime == .seconds(1))

        try dispatcher.advance(by: .milliseconds(999))
        #expect(source.fetchCount == 1)  // still backing off
        #expect(dispatcher.now == .milliseconds(999))

        try dispatcher.advance(by: .milliseconds(1))
        #expect(source.fetchCount == 2)  // retried at 1 s, failed again
        #expect(model.state == .loading(attempt: 3))
        #expect(dispatcher.pendingTasks.map(\.dueTime) == [.seconds(3)])  // next wait: 2 s

        try dispatcher.advance(by: .milliseconds(1_999))
        #expect(source.fetchCount == 2)
        try dispatcher.advance(by: .milliseconds(1))
        #expect(source.fetchCount == 3)
        #expect(model.state == .loaded)
        #expect(model.items.map(\.title) == ["Ninth"])
        #expect(model.attempts == 3)
        #expect(dispatcher.now == .seconds(3))
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func givesUpAfterMaxAttempts() throws {
        let dispatcher = ManualDispatcher()
        let source = ScriptedFeedSource([.failure("connection refused")])
        let model = FeedModel(feedName: "news", source: source, dispatcher: dispatcher, retryPolicy: .standard)

        model.load()
        try dispatcher.runUntilIdle()

        #expect(model.state == .failed(.unavailable(feed: "news", attempts: 4, reason: "connection refused")))
        #expect(source.fetchCount == 4)
        #expect(dispatcher.now == .seconds(7))  // waited 1 s + 2 s + 4 s
        let runs = dispatcher.history.map { "\($0.task.label ?? "-")@\($0.startTime)" }
        #expect(
            runs == [
                "parse@0.0 seconds", "deliver@0.0 seconds",
                "retry@1.0 seconds", "deliver@1.0 seconds",
                "retry@3.0 seconds", "deliver@3.0 seconds",
                "retry@7.0 seconds", "deliver@7.0 seconds",
            ]
        )
        #expect(model.items.isEmpty)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func noRetryPolicyFailsAtOnce() throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let model = FeedModel(
            feedName: "news",
            source: ScriptedFeedSource([.failure("offline")]),
            dispatcher: dispatcher,
            retryPolicy: .never
        )

        model.load()

        #expect(model.state == .failed(.unavailable(feed: "news", attempts: 1, reason: "offline")))
        #expect(dispatcher.now == .zero)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func cancelDuringBackOffCancelsTheRetry() throws {
        let dispatcher = ManualDispatcher()
        let source = ScriptedFeedSource([.failure("offline"), .data(Fixtures.oneItem)])
        let model = FeedModel(feedName: "news", source: source, dispatcher: dispatcher)
        model.load()
        try dispatcher.runNextBackground()
        try dispatcher.runNextForeground()
        #expect(dispatcher.pendingTaskCount == 1)  // the retry, due at 1 s

        #expect(model.cancel())

        #expect(model.state == .idle)
        #expect(dispatcher.pendingTaskCount == 0)
        try dispatcher.advance(by: .seconds(10))
        #expect(source.fetchCount == 1)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func cancelBeforeTheParseStartsFetchesNothing() throws {
        let dispatcher = ManualDispatcher()
        let source = ScriptedFeedSource([.data(Fixtures.oneItem)])
        let model = FeedModel(feedName: "news", source: source, dispatcher: dispatcher)
        model.load()

        #expect(model.cancel())

        #expect(model.state == .idle)
        #expect(source.fetchCount == 0)
        #expect(!model.cancel())  // nothing left to cancel
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func cancelAfterTheParseDropsTheDelivery() throws {
        let dispatcher = ManualDispatcher()
        let model = FeedModel(
            feedName: "news",
            source: ScriptedFeedSource([.data(Fixtures.oneItem)]),
            dispatcher: dispatcher
        )
        model.load()
        try dispatcher.runNextBackground()  // parsed; the delivery is queued

        model.cancel()
        try dispatcher.runNextForeground()

        #expect(model.state == .idle)
        #expect(model.items.isEmpty)
        try dispatcher.verifyIdle()
    }

    @Test func backOffDoubles() {
        let policy = RetryPolicy(maxAttempts: 4, baseDelay: .milliseconds(250))
        #expect(
            (1...4).map { policy.delay(afterAttempt: $0) } == [
                .milliseconds(250), .milliseconds(500), .seconds(1), nil,
            ])
        #expect(RetryPolicy.standard.delay(afterAttempt: 3) == .seconds(4))
        #expect(RetryPolicy.never.delay(afterAttempt: 1) == nil)
    }
}
