import Dispatch
import Foundation
import TaskDispatch
import Testing

extension ParkedThreadTests {
    /// `OperationQueueDispatcher`'s width and its cancellation of operations (issue 10).
    @Suite struct OperationQueueDispatcherTests {
        /// Holds every task on a gate, lets them through one at a time, and counts the ones running at once.
        @Test(.timeLimit(.minutes(1)), arguments: [1, 3])
        func neverRunsMoreThanItsWidthAtOnce(width: Int) async throws {
            let dispatcher = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: width)
            let gauge = ConcurrencyGauge()
            let started = DispatchSemaphore(value: 0)
            let gate = DispatchSemaphore(value: 0)
            let tasks = 4 * width + 2
            for _ in 0..<tasks {
                dispatcher.background {
                    gauge.enter()
                    started.signal()
                    _ = gate.wait(timeout: .now() + 60)
                    gauge.leave()
                }
            }
            let observed = await onOwnThread { () -> [Int] in
                var running: [Int] = []
                // The first `width` tasks start and stay held: the queue is full.
                for _ in 0..<width {
                    guard started.wait(timeout: .now() + 50) == .success else { return running }
                }
                running.append(gauge.current)
                // Each release lets exactly one more task start.
                for _ in width..<tasks {
                    gate.signal()
                    guard started.wait(timeout: .now() + 50) == .success else { return running }
                    running.append(gauge.current)
                }
                for _ in 0..<width { gate.signal() }
                return running
            }
            #expect(observed.count == tasks - width + 1, "tasks that started: \(observed)")
            #expect(observed.allSatisfy { $0 <= width }, "tasks running at once: \(observed)")
            #expect(observed.first == width)
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(50)))
            #expect(gauge.maximum == width)
        }

        /// Cancelling a task that waits for a free slot cancels its operation and releases its closure at once;
        /// the operation keeps its place in `operationCount` until a slot frees, then finishes without running.
        @Test(.timeLimit(.minutes(1))) func cancellingAQueuedTaskCancelsItsOperationAndReleasesItsClosure() async throws
        {
            let dispatcher = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 1)
            let started = DispatchSemaphore(value: 0)
            let gate = DispatchSemaphore(value: 0)
            dispatcher.background {
                started.signal()
                _ = gate.wait(timeout: .now() + 60)
            }
            #expect(await onOwnThread { started.wait(timeout: .now() + 50) == .success })
            let ran = OrderLog()
            var captured: Captured? = Captured()
            let weak = try WeakBox(#require(captured))
            let queued = dispatcher.background { [captured] in
                captured?.touch()
                ran.append(1)
            }
            captured = nil
            #expect(dispatcher.backgroundOperationCount == 2)
            #expect(!weak.isReleased)

            #expect(queued.cancel())
            #expect(weak.isReleased, "a cancelled task still holds its closure")
            #expect(queued.isCancelled)
            // `OperationQueue` has no way to take an operation out: a cancelled one waits for a slot like any other,
            // and is then started only to finish at once.
            #expect(dispatcher.backgroundOperationCount == 2)
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .zero) == false)

            gate.signal()
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(50)))
            #expect(ran.values.isEmpty)
        }

        /// A delayed task is not in the queue before its delay has passed, and once cancelled it counts nowhere.
        @Test(.timeLimit(.minutes(1))) func aCancelledDelayedTaskIsNeitherQueuedNorCounted() async throws {
            let dispatcher = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 1)
            let handle = dispatcher.background(after: .seconds(60)) {}
            #expect(dispatcher.backgroundOperationCount == 0)
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .zero) == false)
            #expect(handle.cancel())
            #expect(dispatcher.backgroundOperationCount == 0)
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .zero))
        }
    }
}

extension ParkedThreadTests {
    /// Cancelling releases the closure at once in `QueueDispatcher` too.
    @Suite struct QueueDispatcherCancellationTests {
        @Test(.timeLimit(.minutes(1))) func cancellingADelayedTaskReleasesItsClosureAtOnce() throws {
            let dispatcher = QueueDispatcher()
            var captured: Captured? = Captured()
            let weak = try WeakBox(#require(captured))
            let handle = dispatcher.background(after: .seconds(60)) { [captured] in captured?.touch() }
            captured = nil
            #expect(!weak.isReleased)
            #expect(handle.cancel())
            #expect(weak.isReleased)
            #expect(!handle.cancel())
            #expect(handle.isCancelled)
        }
    }
}
