import TaskDispatch
import TaskDispatchTesting
import Testing

/// The mapping from `TestScheduler` and `EmbeddedEventLoop` in "Migrating from withMainSerialExecutor, TestClock and
/// ImmediateClock", and its three differences by design.
@Suite struct PeerMappingTests {
    /// `loop.run()`: what is due now, and what that dispatches for now; nothing later, and the clock stays.
    @Test func advanceByZeroRunsWhatIsDueNowAndWhatItDispatchesForNow() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        try dispatcher.advance(by: .seconds(1))
        dispatcher.background(label: "due") {
            log.record("due")
            dispatcher.background(label: "dispatched for now") { log.record("dispatched for now") }
            dispatcher.background(after: .seconds(1), label: "later") { log.record("later") }
        }
        #expect(try dispatcher.advance(by: .zero) == 2)
        #expect(log.events == ["due", "dispatched for now"])
        #expect(dispatcher.now == .seconds(1))
        #expect(dispatcher.pendingTasks.map(\.label) == ["later"])
    }

    /// A task that cancels another due at the same instant stops it; the event loop would run both.
    @Test func aCancelFromATaskDueAtTheSameInstantStopsTheOther() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        let second = Locked<TaskHandle?>(nil)
        let cancelled = Locked(false)
        dispatcher.background(after: .nanoseconds(5), label: "first") {
            log.record("first")
            cancelled.withLock { $0 = second.withLock { $0 }?.cancel() ?? false }
        }
        second.withLock { $0 = dispatcher.background(after: .nanoseconds(5), label: "second") { log.record("second") } }
        try dispatcher.advance(by: .nanoseconds(5))
        #expect(log.events == ["first"])
        #expect(cancelled.withLock { $0 })
        try dispatcher.verifyIdle()
    }

    /// A move of the clock backwards throws, and leaves the clock and the pending work as they were.
    @Test func aMoveOfTheClockBackwardsThrows() throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(by: .seconds(2))
        dispatcher.background(after: .seconds(1), label: "later") {}
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.advance(to: .seconds(1)) }
        #expect(error?.kind == .clockMovedBackwards(from: .seconds(2), to: .seconds(1)))
        #expect(dispatcher.now == .seconds(2))
        #expect(dispatcher.pendingTasks.map(\.label) == ["later"])
    }

    /// Series due at the same instant tick in the order their ticks were dispatched: at 6 s the 3 s series' tick
    /// (dispatched at 3 s) before the 2 s series' (dispatched at 4 s); `TestScheduler` gives `[1, 2, 1, 1, 2]`.
    @Test func seriesDueAtTheSameInstantTickInTheOrderTheirTicksWereDispatched() throws {
        let dispatcher = ManualDispatcher()
        let ticks = Locked<[Int]>([])
        let every2 = dispatcher.background(every: .seconds(2)) { ticks.withLock { $0.append(1) } }
        let every3 = dispatcher.background(every: .seconds(3)) { ticks.withLock { $0.append(2) } }
        try dispatcher.advance(by: .seconds(6))
        #expect(ticks.withLock { $0 } == [1, 2, 1, 2, 1])
        every2.cancel()
        every3.cancel()
        try dispatcher.verifyIdle()
    }
}
