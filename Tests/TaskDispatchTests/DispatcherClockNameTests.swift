import TaskDispatch
import TaskDispatchTesting
import Testing

// 0.2 named the protocol's associated type `Clock`, so inside any extension of `TaskDispatcher` the standard library's
// `Clock` protocol could not be named: `some Clock<Duration>` failed with "cannot specialize non-generic type
// 'Self.Clock'". This file compiling is half of the test.
extension TaskDispatcher {
    /// Sleeps `duration` on `clock`, a clock other than the dispatcher's.
    fileprivate func sleep(for duration: Duration, on clock: some Clock<Duration>) async throws {
        try await clock.sleep(for: duration)
    }

    /// Sleeps `duration` on the dispatcher's own clock, through the same generic helper.
    fileprivate func sleepOnOwnClock(for duration: Duration) async throws {
        try await self.sleep(for: duration, on: self.clock)
    }
}

@Suite struct DispatcherClockNameTests {
    @Test func anExtensionOfTaskDispatcherNamesTheStandardClockProtocol() async throws {
        let dispatcher = ManualDispatcher()
        let sleeper = dispatcher.startTask(label: "sleeper") { try await dispatcher.sleepOnOwnClock(for: .seconds(2)) }
        try await dispatcher.runUntilIdle()  // wakes the sleep on the virtual clock
        try await dispatcher.value(of: sleeper)
        #expect(dispatcher.now == .seconds(2))
        #expect(type(of: dispatcher.clock) == ManualDispatcher.DispatcherClock.self)
        #expect(QueueDispatcher.DispatcherClock.self == ContinuousClock.self)
    }
}
