import Dispatch
import Foundation
import TaskDispatch
import Testing

extension ParkedThreadTests {
    /// Waiting for production background work: cancelled tasks stop counting at once (issue 8, defect 3), and the
    /// async wait with a bound (issue 8, friction) finishes, times out and honours cancellation.
    @Suite struct BackgroundWorkWaitTests {
        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func aCancelledDelayedTaskDoesNotHoldTheBlockingWait(kind: ProductionDispatcherKind) async {
            let dispatcher = kind.makeDispatcher()
            let ran = OrderLog()
            let handle = dispatcher.background(after: .seconds(60)) { ran.append(1) }
            #expect(handle.cancel())
            // Before the fix this returned `false` after the whole timeout: the task counted until its deadline.
            let finished = await onOwnThread { dispatcher.waitForBackgroundTasks(timeout: .seconds(20)) }
            #expect(finished)
            #expect(ran.values.isEmpty)
        }

        /// The wait is for no outstanding work, not for a snapshot (a probe read "accepted so far" as one): a task that
        /// a running task dispatches before it ends keeps a wait already under way waiting, until that task ends too.
        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func theWaitLastsUntilNoBackgroundTaskIsOutstanding(kind: ProductionDispatcherKind) async {
            let dispatcher = kind.makeDispatcher()
            let firstStarted = DispatchSemaphore(value: 0)
            let releaseFirst = DispatchSemaphore(value: 0)
            let firstEnding = DispatchSemaphore(value: 0)
            let releaseSecond = DispatchSemaphore(value: 0)
            let order = OrderLog()
            dispatcher.background {
                firstStarted.signal()
                _ = releaseFirst.wait(timeout: .now() + 60)
                dispatcher.background {  // dispatched by the first, which then ends
                    _ = releaseSecond.wait(timeout: .now() + 60)
                    order.append(2)
                }
                firstEnding.signal()
            }
            #expect(await onOwnThread { firstStarted.wait(timeout: .now() + 60) } == .success)
            // The wait is started while the first task runs: usually before the second exists, and either way it must
            // last until both have ended.
            async let waited = onOwnThread {
                let finished = dispatcher.waitForBackgroundTasks(timeout: .seconds(20))
                order.append(3)
                return finished
            }
            releaseFirst.signal()
            #expect(await onOwnThread { firstEnding.wait(timeout: .now() + 60) } == .success)
            // The first task has ended; the second, still held, keeps every wait waiting.
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .milliseconds(50)) == false)
            releaseSecond.signal()
            #expect(await waited)
            #expect(order.values == [2, 3], "the wait returned only after the second task ended")
        }

        /// Documented: a Swift task started with `startTask` is a plain `Task` in production and does not count, so
        /// the wait returns while it still runs (a probe expected otherwise; counting it made the wait block the main
        /// thread on tasks that hop to the main actor, and a started task's own wait wait for itself, so the
        /// documentation says to await such tasks).
        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func aStartedTaskDoesNotCount(kind: ProductionDispatcherKind) async throws {
            let dispatcher = kind.makeDispatcher()
            let release = DispatchSemaphore(value: 0)
            let upload = dispatcher.startTask(label: "upload") { @concurrent in
                _ = await onOwnThread { release.wait(timeout: .now() + 60) }
            }
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(20)))
            release.signal()
            try await upload.value
        }

        /// Documented, not refused: a background task that waits for the dispatcher's background work waits for
        /// itself, so its wait ends with `false` at the timeout (found by a probe; detecting it would cost every
        /// task a thread-local write).
        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func aBackgroundTaskThatWaitsForTheBackgroundWorkWaitsForItselfUntilTheTimeout(
            kind: ProductionDispatcherKind
        ) async {
            let dispatcher = kind.makeDispatcher()
            let inner = OrderLog()
            dispatcher.background {
                inner.append(dispatcher.waitForBackgroundTasks(timeout: .milliseconds(50)) ? 1 : 0)
            }
            let finished = await onOwnThread { dispatcher.waitForBackgroundTasks(timeout: .seconds(20)) }
            #expect(finished)
            #expect(inner.values == [0])
        }

        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func aCancelledDelayedTaskDoesNotHoldTheAsyncWait(kind: ProductionDispatcherKind) async {
            let dispatcher = kind.makeDispatcher()
            let handle = dispatcher.background(after: .seconds(60)) {}
            #expect(handle.cancel())
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(20)))
        }

        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func aCancelledTaskStopsCountingWhileOtherWorkStillCounts(kind: ProductionDispatcherKind) async {
            let dispatcher = kind.makeDispatcher()
            let gate = DispatchSemaphore(value: 0)
            let started = DispatchSemaphore(value: 0)
            dispatcher.background {
                started.signal()
                _ = gate.wait(timeout: .now() + 60)
            }
            let cancelled = dispatcher.background(after: .seconds(60)) {}
            #expect(cancelled.cancel())
            #expect(await onOwnThread { started.wait(timeout: .now() + 50) == .success })
            #expect(await !dispatcher.waitForBackgroundTasks(timeout: .milliseconds(20)))
            gate.signal()
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(50)))
        }

        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func theAsyncWaitReturnsTrueOnceEveryTaskRan(kind: ProductionDispatcherKind) async {
            let dispatcher = kind.makeDispatcher()
            let ran = OrderLog()
            for index in 0..<200 {
                if index.isMultiple(of: 10) {
                    dispatcher.background(after: .milliseconds(5)) { ran.append(index) }
                } else {
                    dispatcher.background { ran.append(index) }
                }
            }
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(50)))
            #expect(ran.values.sorted() == Array(0..<200))
            // Nothing outstanding: the next wait returns at once.
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .zero))
        }

        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func theAsyncWaitTimesOutWhileATaskIsHeld(kind: ProductionDispatcherKind) async {
            let dispatcher = kind.makeDispatcher()
            let gate = DispatchSemaphore(value: 0)
            dispatcher.background { _ = gate.wait(timeout: .now() + 60) }
            #expect(await !dispatcher.waitForBackgroundTasks(timeout: .milliseconds(20)))
            #expect(await !dispatcher.waitForBackgroundTasks(timeout: .zero))
            gate.signal()
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(50)))
        }

        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func cancellingTheWaitingTaskEndsTheAsyncWaitWithFalse(kind: ProductionDispatcherKind) async {
            let dispatcher = kind.makeDispatcher()
            let gate = DispatchSemaphore(value: 0)
            dispatcher.background { _ = gate.wait(timeout: .now() + 60) }
            let waiter = Task { await dispatcher.waitForBackgroundTasks(timeout: .seconds(600)) }
            waiter.cancel()
            #expect(await waiter.value == false)
            gate.signal()
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(50)))
        }

        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func manyWaitersAreAllWokenWhenTheWorkFinishes(kind: ProductionDispatcherKind) async {
            let dispatcher = kind.makeDispatcher()
            let gate = DispatchSemaphore(value: 0)
            dispatcher.background { _ = gate.wait(timeout: .now() + 60) }
            let results = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 {
                    group.addTask { await dispatcher.waitForBackgroundTasks(timeout: .seconds(50)) }
                }
                group.addTask {
                    await onOwnThread { dispatcher.waitForBackgroundTasks(timeout: .seconds(50)) }
                }
                gate.signal()
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results == Array(repeating: true, count: 21))
        }
    }
}
