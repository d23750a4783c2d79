import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct ManualDispatcherTimeTests {
    @Test func theClockStartsAtZeroAndMovesOnlyWhenAsked() throws {
        let dispatcher = ManualDispatcher()
        #expect(dispatcher.now == .zero)
        dispatcher.background {}
        try dispatcher.runNextBackground()
        #expect(dispatcher.now == .zero)
        try dispatcher.advance(by: .milliseconds(250))
        #expect(dispatcher.now == .milliseconds(250))
        try dispatcher.advance(to: .seconds(3))
        #expect(dispatcher.now == .seconds(3))
        try dispatcher.advance(by: .zero)
        #expect(dispatcher.now == .seconds(3))
    }

    /// The virtual clock counts whole nanoseconds: a delay or a sleep with a fraction of one falls due at the next
    /// whole nanosecond, never before its time (a delay is a lower bound).
    @Test func aDelayWithAFractionOfANanosecondFallsDueAtTheNextWholeOne() async throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(after: .nanoseconds(1) / 2, label: "half") { log.record("half") }
        dispatcher.background(after: .nanoseconds(3) / 2, label: "one and a half") { log.record("one and a half") }
        dispatcher.background(after: .nanoseconds(2), label: "two") { log.record("two") }
        #expect(dispatcher.pendingTasks.map(\.dueTime) == [.nanoseconds(1), .nanoseconds(2), .nanoseconds(2)])
        #expect(try dispatcher.runCurrent() == 0)
        #expect(try await dispatcher.advance(by: .nanoseconds(1)) == 1)
        #expect(try await dispatcher.advance(by: .nanoseconds(1)) == 2)
        #expect(log.events == ["half", "one and a half", "two"])
        let sleeper = dispatcher.startTask(label: "sleeper") {
            try await dispatcher.clock.sleep(until: dispatcher.clock.now.advanced(by: .nanoseconds(1) / 2))
            return dispatcher.now
        }
        try await dispatcher.runUntilIdle()
        #expect(try await dispatcher.value(of: sleeper) == .nanoseconds(3))
    }

    @Test func delayedTasksWaitForTheClock() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(after: .seconds(1), label: "later") { log.record("later") }
        #expect(throws: ManualDispatcherError.self) { try dispatcher.runNextBackground() }
        #expect(try dispatcher.advance(by: .milliseconds(999)) == 0)
        #expect(log.events.isEmpty)
        #expect(try dispatcher.advance(by: .milliseconds(1)) == 1)
        #expect(log.events == ["later"])
        #expect(dispatcher.history.last?.startTime == .seconds(1))
    }

    @Test func advanceRunsTasksByDueTimeThenDispatchOrder() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(after: .seconds(3), label: "c") { log.record("c") }
        dispatcher.background(after: .seconds(1), label: "a1") { log.record("a1") }
        dispatcher.foreground(after: .seconds(1), label: "a2") { log.record("a2") }
        dispatcher.background(after: .seconds(2), label: "b") { log.record("b") }
        dispatcher.background(after: .seconds(1), label: "a3") { log.record("a3") }
        dispatcher.background(label: "now") { log.record("now") }
        #expect(try dispatcher.advance(by: .seconds(3)) == 6)
        #expect(log.events == ["now", "a1", "a2", "a3", "b", "c"])
        #expect(
            dispatcher.history.map(\.startTime) == [
                .zero, .seconds(1), .seconds(1), .seconds(1), .seconds(2), .seconds(3),
            ])
    }

    @Test func aTaskScheduledInsideTheWindowRunsInTheSameCall() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(after: .seconds(1), label: "first") {
            log.record("first at 1 s")
            dispatcher.background(after: .seconds(1), label: "second") { log.record("second at 2 s") }
            dispatcher.background(after: .seconds(5), label: "outside") { log.record("outside") }
        }
        #expect(try dispatcher.advance(by: .seconds(3)) == 2)
        #expect(log.events == ["first at 1 s", "second at 2 s"])
        #expect(dispatcher.pendingTasks.map(\.dueTime) == [.seconds(6)])
        #expect(dispatcher.now == .seconds(3))
    }

    @Test func tasksDispatchedWithoutDelayDuringAdvanceRunAtTheirParentsTime() throws {
        let dispatcher = ManualDispatcher()
        let times = EventLog()
        dispatcher.background(after: .seconds(2)) {
            dispatcher.foreground { times.record("child") }
        }
        dispatcher.background(after: .seconds(3)) { times.record("three") }
        try dispatcher.advance(by: .seconds(5))
        #expect(times.events == ["child", "three"])
        #expect(dispatcher.history.map(\.startTime) == [.seconds(2), .seconds(2), .seconds(3)])
    }

    @Test func runUntilIdleJumpsTheClockToEachDueTask() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(after: .seconds(10), label: "late") { log.record("late") }
        dispatcher.background(after: .seconds(2), label: "early") { log.record("early") }
        #expect(try dispatcher.runUntilIdle() == 2)
        #expect(log.events == ["early", "late"])
        #expect(dispatcher.now == .seconds(10))
    }

    @Test func aNegativeDelayMeansNow() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        try dispatcher.advance(to: .seconds(5))
        dispatcher.background(after: .seconds(-3), label: "past") { log.record("past") }
        #expect(dispatcher.pendingTasks.first?.dueTime == .seconds(5))
        try dispatcher.runNextBackground()
        #expect(log.events == ["past"])
    }

    @Test func retryWithBackOffIsTestedWithoutWaiting() throws {
        // A service that retries with exponential back-off: 1 s, 2 s, 4 s.
        let dispatcher = ManualDispatcher()
        let attempts = EventLog()
        @Sendable func attempt(_ number: Int) {
            attempts.record("attempt \(number)")
            guard number < 4 else { return }
            let delay = Duration.seconds(1 << (number - 1))
            dispatcher.background(after: delay, label: "retry") { attempt(number + 1) }
        }
        dispatcher.background(label: "fetch") { attempt(1) }
        try dispatcher.runNextBackground()
        #expect(attempts.events == ["attempt 1"])
        try dispatcher.advance(by: .milliseconds(999))
        #expect(attempts.events.count == 1)
        try dispatcher.advance(by: .milliseconds(1))
        #expect(attempts.events.count == 2)
        try dispatcher.advance(by: .seconds(2))
        #expect(attempts.events.count == 3)
        try dispatcher.runUntilIdle()
        #expect(attempts.events.count == 4)
        #expect(dispatcher.now == .seconds(7))
    }

    @Test func aHugeDelaySaturatesInsteadOfOverflowing() throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(to: .seconds(1))
        dispatcher.background(after: .seconds(Int64.max)) {}
        let due = try #require(dispatcher.pendingTasks.first?.dueTime)
        #expect(due > .seconds(1_000_000_000))
        #expect(try dispatcher.advance(by: .seconds(1_000)) == 0)
    }
}
