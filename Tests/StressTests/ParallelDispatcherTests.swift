import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

/// Many dispatchers used by tests that Swift Testing runs at once: each must see only its own tasks, history
/// and clock. (Not serialized: the point is to run the 64 arguments in parallel.)
@Suite struct ParallelDispatcherTests {
    @Test(.timeLimit(.minutes(2)), arguments: 0..<64)
    func eachTestSeesOnlyItsOwnTasksHistoryAndClock(instance: Int) async throws {
        let dispatcher = ManualDispatcher(
            order: instance.isMultiple(of: 2) ? .dispatch : .random(seed: UInt64(instance)),
            historyLimit: 10_000
        )
        let prefix = "test \(instance) "
        let ran = Locked<[String]>([])
        let rounds = 20
        let offset = Duration.microseconds(instance)
        for round in 0..<rounds {
            var cancelled: [TaskHandle] = []
            for step in 0..<10 {
                let label = "\(prefix)round \(round) step \(step)"
                let handle: TaskHandle
                if step.isMultiple(of: 3) {
                    handle = dispatcher.foreground(after: .milliseconds(step) + offset, label: label) {
                        ran.withLock { $0.append(label) }
                    }
                } else {
                    handle = dispatcher.background(after: .milliseconds(step) + offset, label: label) {
                        ran.withLock { $0.append(label) }
                        // A task dispatched from a task lands in the same dispatcher, and nowhere else.
                        dispatcher.background(label: label + " child") { ran.withLock { $0.append(label + " child") } }
                    }
                }
                if step == 4 || step == 7 { cancelled.append(handle) }
            }
            for handle in cancelled { #expect(handle.cancel()) }
            // Runs steps 0...5 (due by 5 ms + offset), and the children of those that ran.
            try await self.advance(dispatcher, by: .milliseconds(5) + offset)
            // Each round starts where the previous drain left the clock: at its last task, step 9.
            let roundStart = (.milliseconds(9) + offset) * round
            #expect(dispatcher.now == roundStart + .milliseconds(5) + offset)
            try await self.drain(dispatcher)
            #expect(dispatcher.pendingTaskCount == 0)
        }

        let expected = (0..<rounds).flatMap { round in
            (0..<10).filter { $0 != 4 && $0 != 7 }.flatMap { step in
                let label = "\(prefix)round \(round) step \(step)"
                return step.isMultiple(of: 3) ? [label] : [label, label + " child"]
            }
        }
        let observed = ran.withLock { $0 }
        #expect(observed.sorted() == expected.sorted())
        let history = dispatcher.history
        #expect(history.count == expected.count)
        #expect(history.allSatisfy { $0.task.label?.hasPrefix(prefix) == true })
        try dispatcher.verifyIdle()
    }

    /// Runs the clock off the main actor, on a thread of the global pool, so foreground tasks hop to the main
    /// queue while other tests do the same.
    private func advance(_ dispatcher: ManualDispatcher, by duration: Duration) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            DispatchQueue.global().async {
                do {
                    try dispatcher.advance(by: duration)
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }

    private func drain(_ dispatcher: ManualDispatcher) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            DispatchQueue.global().async {
                do {
                    try dispatcher.runUntilIdle()
                    continuation.resume()
                } catch {
                    continuation.resume(throwing: error)
                }
            }
        }
    }
}
