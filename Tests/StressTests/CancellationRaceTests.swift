import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

extension StressTests {
    /// Cancellation racing execution: each task sets a start flag, then an end flag; another thread cancels it
    /// while it may be starting. Every task must run completely or not at all, and `cancel()` must say which.
    @Suite struct CancellationRaces {
        static let races = StressScale.scaled(20_000)

        @Test(.timeLimit(.minutes(5))) func manualDispatcherCancelRacingADrainIsAllOrNothing() async throws {
            let dispatcher = ManualDispatcher(historyLimit: 0)
            let races = Self.races
            let record = RaceRecord(count: races)
            let drainErrors = Locked<[String]>([])
            let finishedRace = await finishedOnThread(name: "racer", withinSeconds: StressDeadline.seconds) {
                for id in 0..<races {
                    let handle = dispatcher.background {
                        record.start(id)
                        record.end(id)
                    }
                    // Two workers start together: one drains, the other cancels. They swap roles every race,
                    // because the calling thread usually takes the first iteration.
                    DispatchQueue.concurrentPerform(iterations: 2) { worker in
                        if worker == id % 2 {
                            do {
                                try dispatcher.runUntilIdle()
                            } catch {
                                drainErrors.withLock { $0.append("\(error)") }
                            }
                        } else {
                            let returned = handle.cancel()
                            record.cancelled(id, returned: returned, isCancelled: handle.isCancelled)
                        }
                    }
                }
            }
            try #require(finishedRace, "the races did not finish in \(StressDeadline.seconds) s")
            #expect(drainErrors.withLock { $0 }.isEmpty)
            let verdict = record.verdict()
            #expect(verdict.violations.isEmpty, "\(verdict.violations)")
            #expect(verdict.ran + verdict.cancelled == races)
            #expect(dispatcher.pendingTaskCount == 0)
            print(
                "StressTests: ManualDispatcher cancel races: \(races) (run won \(verdict.ran), cancel won \(verdict.cancelled))"
            )
        }

        @Test(.timeLimit(.minutes(5))) func queueDispatcherCancelRacingTheQueueIsAllOrNothing() async throws {
            let dispatcher = QueueDispatcher()
            try await Self.race(on: dispatcher, name: "QueueDispatcher") { timeout in
                dispatcher.waitForBackgroundTasks(timeout: timeout)
            }
        }

        @Test(.timeLimit(.minutes(5))) func operationQueueDispatcherCancelRacingTheQueueIsAllOrNothing() async throws {
            let dispatcher = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 2)
            try await Self.race(on: dispatcher, name: "OperationQueueDispatcher") { timeout in
                dispatcher.waitForBackgroundTasks(timeout: timeout)
            }
        }

        /// A background task cancelled before its operation starts must still count as finished for
        /// `waitForBackgroundTasks(timeout:)`: the race test above depends on it, this one shows it without a race.
        @Test(.timeLimit(.minutes(1))) func operationQueueDispatcherCountsACancelledTaskAsFinished() throws {
            let dispatcher = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 1)
            let gate = DispatchSemaphore(value: 0)
            // Occupies the only slot, so the next task cannot start before it is cancelled.
            dispatcher.background { _ = gate.wait(timeout: .now() + .seconds(10)) }
            let handle = dispatcher.background {}
            #expect(handle.cancel())
            gate.signal()
            #expect(
                dispatcher.waitForBackgroundTasks(timeout: .seconds(30)),
                "waitForBackgroundTasks timed out: the cancelled task was never counted as finished"
            )
        }

        /// The same for `QueueDispatcher`, whose cancelled tasks are skipped when their turn comes.
        @Test(.timeLimit(.minutes(1))) func queueDispatcherCountsACancelledTaskAsFinished() {
            let queue = DispatchQueue(label: "serial")
            let dispatcher = QueueDispatcher(backgroundQueue: queue)
            let gate = DispatchSemaphore(value: 0)
            dispatcher.background { _ = gate.wait(timeout: .now() + .seconds(10)) }
            let handle = dispatcher.background {}
            #expect(handle.cancel())
            gate.signal()
            #expect(dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
        }

        /// Foreground tasks racing a cancel from a background thread, through the main queue.
        @Test(.timeLimit(.minutes(5))) func queueDispatcherCancelRacingTheMainQueueIsAllOrNothing() async throws {
            let dispatcher = QueueDispatcher()
            let races = StressScale.scaled(5_000)
            let record = RaceRecord(count: races)
            let canceller = DispatchQueue(label: "canceller")
            let done = DispatchGroup()
            done.enter()
            for id in 0..<races {
                let handle = dispatcher.foreground {
                    record.start(id)
                    record.end(id)
                }
                canceller.async { record.cancelled(id, returned: handle.cancel(), isCancelled: handle.isCancelled) }
            }
            // Foreground tasks run in dispatch order, and the canceller queue in its order: once both
            // sentinels have run, every race is decided.
            canceller.async {
                dispatcher.foreground { done.leave() }
            }
            let settled = await finished(done, withinSeconds: StressDeadline.seconds)
            try #require(settled, "the foreground races did not settle in \(StressDeadline.seconds) s")
            let verdict = record.verdict()
            #expect(verdict.violations.isEmpty, "\(verdict.violations)")
            print(
                "StressTests: QueueDispatcher foreground cancel races: \(races) (run won \(verdict.ran), cancel won \(verdict.cancelled))"
            )
        }

        /// Dispatches `races` background tasks and cancels each from a serial canceller queue while the
        /// dispatcher's queue may be starting it.
        private static func race(
            on dispatcher: some TaskDispatcher,
            name: String,
            waitForBackground: @escaping @Sendable (Duration) -> Bool
        ) async throws {
            let races = Self.races
            let record = RaceRecord(count: races)
            let canceller = DispatchQueue(label: "canceller")
            let cancels = DispatchGroup()
            let finishedRace = await finishedOnThread(name: "racer", withinSeconds: StressDeadline.seconds) {
                for id in 0..<races {
                    let handle = dispatcher.background {
                        record.start(id)
                        record.end(id)
                    }
                    canceller.async(group: cancels) {
                        record.cancelled(id, returned: handle.cancel(), isCancelled: handle.isCancelled)
                    }
                }
            }
            try #require(finishedRace, "the races did not finish in \(StressDeadline.seconds) s")
            let cancelsDone = await finished(cancels, withinSeconds: StressDeadline.seconds)
            try #require(cancelsDone, "the cancels did not finish in \(StressDeadline.seconds) s")
            let backgroundDone = Locked(false)
            let waited = await finishedOnThread(name: "waiter", withinSeconds: StressDeadline.backgroundSeconds + 10) {
                let done = waitForBackground(.seconds(StressDeadline.backgroundSeconds))
                backgroundDone.withLock { $0 = done }
            }
            try #require(waited && backgroundDone.withLock { $0 }, "background tasks still running after the deadline")
            let verdict = record.verdict()
            #expect(verdict.violations.isEmpty, "\(verdict.violations)")
            #expect(verdict.ran + verdict.cancelled == races)
            print(
                "StressTests: \(name) cancel races: \(races) (run won \(verdict.ran), cancel won \(verdict.cancelled))")
        }
    }
}
