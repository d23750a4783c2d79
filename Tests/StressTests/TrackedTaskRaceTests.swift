import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

extension StressTests {
    /// Tracked tasks under races: cancelling a task against the drain that runs its start.
    ///
    /// The body's wait for its start is a checked continuation, so a double resume traps and a missing one hangs
    /// past the time limit; each race also checks that the task's outcome agrees with whether its operation ran.
    @Suite struct TrackedTaskRaces {
        /// 10,000 races at any scale, more when the scale asks for more.
        static let races = Swift.max(10_000, StressScale.scaled(10_000))

        @Test(.timeLimit(.minutes(10))) func cancellingATrackedTaskRacingItsStartEitherRunsItOrCancelsIt() async throws
        {
            let dispatcher = ManualDispatcher(historyLimit: 0)
            var ranCount = 0
            var cancelledCount = 0
            var violations: [String] = []
            for id in 0..<Self.races {
                let ran = Locked(false)
                let task = dispatcher.startTask(label: "race \(id)") { () -> Int in
                    ran.withLock { $0 = true }
                    return id
                }
                await onDispatchThreads(2) { worker in
                    if worker == id % 2 {
                        _ = try? dispatcher.runUntilIdle()
                    } else {
                        task.cancel()
                    }
                }
                _ = try dispatcher.runUntilIdle()  // jobs the race left on the task executor
                let result = await task.result
                let operationRan = ran.withLock { $0 }
                switch result {
                case .success(let value) where value == id && operationRan:
                    ranCount += 1
                case .failure(let error) where error is CancellationError && !operationRan:
                    cancelledCount += 1
                default:
                    if violations.count < 10 {
                        violations.append("race \(id): task ended with \(result), operation ran \(operationRan)")
                    }
                }
                if dispatcher.pendingCount != 0 || dispatcher.unfinishedTaskCount != 0, violations.count < 10 {
                    violations.append(
                        "race \(id): \(dispatcher.pendingCount) pending, \(dispatcher.unfinishedTaskCount) unfinished"
                    )
                }
            }
            #expect(violations.isEmpty, "\(violations)")
            #expect(ranCount + cancelledCount == Self.races)
            try dispatcher.verifyIdle()
            print(
                "StressTests: tracked task cancel-vs-start races: \(Self.races) (start won \(ranCount), cancel won \(cancelledCount))"
            )
        }
    }
}
