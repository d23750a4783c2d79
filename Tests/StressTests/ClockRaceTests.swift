import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

extension StressTests {
    /// The virtual clock's sleeps under races: cancelling a sleeping task against the `advance` that wakes it, and
    /// against the dispatch of its timer.
    ///
    /// A continuation resumed twice traps (checked continuations), and one never resumed hangs the race past the
    /// suite's time limit; every race also checks that the sleep's outcome agrees with what the dispatcher ran.
    @Suite struct ClockRaces {
        /// 10,000 races at any scale, more when the scale asks for more.
        static let races = Swift.max(10_000, StressScale.scaled(10_000))

        @Test(.timeLimit(.minutes(10))) func cancellingASleepRacingTheAdvanceThatWakesItResumesItExactlyOnce()
            async throws
        {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(StressDeadline.seconds), historyLimit: 0)
            let clock = dispatcher.clock
            let advanced = Locked<Result<Int, ManualDispatcherError>?>(nil)
            var woke = 0
            var cancelled = 0
            var violations: [String] = []
            for id in 0..<Self.races {
                let sleeper = Task { try await clock.sleep(for: .seconds(1)) }
                try await dispatcher.waitForPendingTasks(1)
                await onDispatchThreads(2) { worker in
                    if worker == id % 2 {
                        let result = Result { () throws(ManualDispatcherError) in
                            try dispatcher.advance(by: .seconds(1))
                        }
                        advanced.withLock { $0 = result }
                    } else {
                        sleeper.cancel()
                    }
                }
                let ran = advanced.withLock { $0 }
                switch (await sleeper.result, ran) {
                case (.success, .success(1)):
                    woke += 1
                case (.failure(let error), .success(0)) where error is CancellationError:
                    cancelled += 1
                case (let slept, let ran):
                    if violations.count < 10 {
                        violations.append(
                            "race \(id): sleep ended with \(slept), advance gave \(String(describing: ran))")
                    }
                }
                if dispatcher.pendingTaskCount != 0, violations.count < 10 {
                    violations.append("race \(id): \(dispatcher.pendingTaskCount) tasks left pending")
                }
            }
            #expect(violations.isEmpty, "\(violations)")
            #expect(woke + cancelled == Self.races)
            #expect(dispatcher.now == .seconds(Self.races))
            try dispatcher.verifyIdle()
            print(
                "StressTests: clock sleep cancel-vs-advance races: \(Self.races) (advance won \(woke), cancel won \(cancelled))"
            )
        }

        @Test(.timeLimit(.minutes(10))) func cancellingASleepRacingTheDispatchOfItsTimerLeavesNoTimer() async throws {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(StressDeadline.seconds), historyLimit: 0)
            let clock = dispatcher.clock
            var violations: [String] = []
            for id in 0..<Self.races {
                let started = StressArrival()
                let sleeper = Task {
                    started.signal()
                    try await clock.sleep(for: .seconds(1))
                }
                await started.reach(1)
                await onDispatchThreads(1) { _ in sleeper.cancel() }
                let result = await sleeper.result
                let isCancellation: Bool
                if case .failure(let error) = result {
                    isCancellation = error is CancellationError
                } else {
                    isCancellation = false
                }
                if !isCancellation, violations.count < 10 {
                    violations.append("race \(id): sleep ended with \(result) instead of CancellationError")
                }
                if dispatcher.pendingTaskCount != 0, violations.count < 10 {
                    violations.append("race \(id): \(dispatcher.pendingTaskCount) timers left pending")
                }
            }
            #expect(violations.isEmpty, "\(violations)")
            #expect(try await dispatcher.advance(by: .seconds(1)) == 0)
            try dispatcher.verifyIdle()
        }
    }
}
