import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

extension StressTests {
    /// Tracked tasks under races: cancelling a task against the drain that runs its start.
    ///
    /// The body's wait for its start is a checked continuation in debug builds, so a double resume traps and a
    /// missing one hangs past the time limit; each race also checks that the task's outcome agrees with whether its operation ran.
    @Suite struct TrackedTaskRaces {
        /// 10,000 races at any scale, more when the scale asks for more.
        static let races = Swift.max(10_000, StressScale.scaled(10_000))

        @Test(.timeLimit(.minutes(10))) func cancellingATrackedTaskRacingItsStartEitherRunsItOrCancelsIt() async throws
        {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(120), historyLimit: 0)
            var ranCount = 0
            var cancelledCount = 0
            let startsRun = Locked(0)
            var violations: [String] = []
            for id in 0..<Self.races {
                let ran = Locked(false)
                let task = dispatcher.startTask(label: "race \(id)") { () -> Int in
                    ran.withLock { $0 = true }
                    return id
                }
                await onDispatchThreads(2) { worker in
                    if worker == id % 2 {
                        // `runCurrent`, not `runUntilIdle`: the synchronous drain reports the started task as
                        // running on its own (rightly), which would hide whether the start ran.
                        let run = (try? dispatcher.runCurrent()) ?? 0
                        startsRun.withLock { $0 += run }
                    } else {
                        task.cancel()
                    }
                }
                _ = try await dispatcher.runUntilIdle()  // jobs the race left on the task executor
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
                if dispatcher.pendingTaskCount != 0 || dispatcher.unfinishedTaskCount != 0, violations.count < 10 {
                    violations.append(
                        "race \(id): \(dispatcher.pendingTaskCount) pending, \(dispatcher.unfinishedTaskCount) unfinished"
                    )
                }
            }
            #expect(violations.isEmpty, "\(violations)")
            #expect(ranCount + cancelledCount == Self.races)
            #expect(startsRun.withLock { $0 } > 0, "the start never took the dispatcher first: the race was one-sided")
            try dispatcher.verifyIdle()
            // A start that takes the dispatcher first lets the body through, and the operation runs, cancelled, as
            // `Task { }`'s does; a cancel that comes first stops it at the gate.
            print(
                "StressTests: tracked task cancel-vs-start races: \(Self.races) (the start ran first in \(startsRun.withLock { $0 }), the operation ran in \(ranCount), cancelled \(cancelledCount))"
            )
        }
    }

    /// Many tracked tasks, each alternating awaited dispatches and sleeps on the virtual clock, driven to the end
    /// by one async drain while their code runs on the global executor,
    /// concurrently with the drain.
    @Suite struct SettlingVolume {
        static let tasks = Swift.max(200, StressScale.scaled(2_000))

        @Test(.timeLimit(.minutes(10)))
        func anAsyncDrainRunsEveryTrackedTaskToTheEnd() async throws {
            let dispatcher = ManualDispatcher(waitLimit: .seconds(120), historyLimit: 0)
            let tasks = Locked<[Int: Task<Int, any Error>]>([:])
            await onDispatchThreads(4) { worker in
                for id in stride(from: worker, to: Self.tasks, by: 4) {
                    let task = dispatcher.startTask(label: "task \(id)") { () async throws -> Int in
                        var total = 0
                        for round in 1...3 {
                            total += try await dispatcher.runInBackground(label: "step \(round)") { id * round }
                            try await dispatcher.clock.sleep(for: .milliseconds(id % 7 + 1))
                        }
                        return total
                    }
                    tasks.withLock { $0[id] = task }
                }
            }
            try await dispatcher.runUntilIdle()
            #expect(dispatcher.unfinishedTaskCount == 0)
            #expect(dispatcher.unsettledTaskCount == 0)
            #expect(dispatcher.now == .milliseconds(3 * 7))  // three sleeps of the longest, one after another
            var wrong: [String] = []
            for (id, task) in tasks.withLock({ $0 }) {
                let value = try await dispatcher.value(of: task)
                if value != id * 6, wrong.count < 10 { wrong.append("task \(id) returned \(value)") }
            }
            #expect(wrong.isEmpty, "\(wrong)")
            try dispatcher.verifyIdle()
            print(
                "StressTests: \(Self.tasks) tracked tasks on the global executor settled through one async drain"
            )
        }
    }
}
