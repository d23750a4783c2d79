import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct AnyDispatcherClockTests {
    @Test func itReadsTheWrappedClockFromItsCreation() throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(by: .seconds(5))
        let clock = ForwardingDispatcher(base: dispatcher).clock
        #expect(clock.now == AnyDispatcherClock.Instant(offset: .zero))
        try dispatcher.advance(by: .milliseconds(250))
        #expect(clock.now.offset == .milliseconds(250))
        #expect(clock.minimumResolution == .nanoseconds(1))
    }

    /// A scope's clock reads the instants of the clock beneath, a virtual one or an erased one, whenever the scope was
    /// made: a deadline read from one is the same time on the other.
    @Test func aScopesClockReadsTheInstantsOfTheClockBeneath() async throws {
        let dispatcher = ManualDispatcher()
        try await dispatcher.advance(by: .seconds(5))
        let scope = DispatchScope(dispatcher)
        let decorator = ForwardingDispatcher(base: dispatcher)  // its clock's origin: 5 s
        try await dispatcher.advance(by: .seconds(1))
        let overDecorator = DispatchScope(decorator)
        #expect(scope.clock.now == dispatcher.clock.now)
        #expect(overDecorator.clock.now == decorator.clock.now)
        #expect(DispatchScope(scope).clock.now == dispatcher.clock.now)
        let task = scope.startTask(label: "deadline") {
            try await scope.clock.sleep(until: dispatcher.clock.now.advanced(by: .seconds(1)))
        }
        try await dispatcher.runUntilIdle()
        try await dispatcher.value(of: task)
        #expect(dispatcher.now == .seconds(7))
    }

    @Test func eachErasureStartsItsOwnOrigin() throws {
        let dispatcher = ManualDispatcher()
        let kept = AnyDispatcherClock(dispatcher.clock)
        try dispatcher.advance(by: .seconds(1))
        #expect(kept.now.offset == .seconds(1))
        #expect(AnyDispatcherClock(dispatcher.clock).now.offset == .zero)  // why a decorator erases once
    }

    /// What a series through a scope or decorator reads at each tick: nanoseconds since the erasure, from a virtual
    /// clock (also erased twice), and nothing from a real one.
    @Test func anErasedVirtualClockReadsInNanosecondsFromItsOrigin() throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(by: .seconds(3))
        let once = AnyDispatcherClock(dispatcher.clock)
        try dispatcher.advance(by: .seconds(1))
        let twice = AnyDispatcherClock(once)
        try dispatcher.advance(by: .milliseconds(1))
        #expect(once.readsNanoseconds && twice.readsNanoseconds)
        #expect(once.nanosecondReader() == 1_001_000_000)
        #expect(twice.nanosecondReader() == 1_000_000)
        #expect(Duration.nanoseconds(once.nanosecondReader()) == once.now.offset)
        #expect(!AnyDispatcherClock(ContinuousClock()).readsNanoseconds)
    }

    @Test func aSleepThroughAnErasingDecoratorIsATimerOnTheVirtualClock() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
        let clock = ForwardingDispatcher(base: dispatcher).clock
        let sleeper = Task { try await clock.sleep(for: .seconds(2)) }
        try await dispatcher.waitForPendingTasks(1)
        #expect(dispatcher.pendingTasks.first?.label == "clock sleep until 2 s")
        try await dispatcher.advance(by: .seconds(2))
        try await sleeper.value
        try dispatcher.verifyIdle()
    }

    @Test func cancellingASleepThroughItCancelsTheTimer() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
        let clock = ForwardingDispatcher(base: dispatcher).clock
        let sleeper = Task { try await clock.sleep(for: .seconds(2)) }
        try await dispatcher.waitForPendingTasks(1)
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        try dispatcher.verifyIdle()  // the timer left with the sleep
    }

    @Test func overAProductionDispatcherItIsTheRealClock() async throws {
        let clock = ForwardingDispatcher(base: QueueDispatcher()).clock
        let before = clock.now
        try await clock.sleep(until: before)  // a deadline already reached returns at once
        #expect(clock.now >= before)
        #expect(clock.minimumResolution == ContinuousClock().minimumResolution)
    }
}
