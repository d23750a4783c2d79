import Dispatch
import Foundation
import TaskDispatch
import Testing

extension StressTests {
    @Suite struct ProductionDispatcherVolume {
        /// 8 producers × 100,000 background tasks and 100,000 foreground tasks at full scale.
        @Test(.timeLimit(.minutes(10))) func queueDispatcherRunsEveryTaskExactlyOnceAndTheForegroundInOrder()
            async throws
        {
            let dispatcher = QueueDispatcher()
            try await runVolume(
                on: dispatcher,
                name: "QueueDispatcher",
                producers: 8,
                perProducer: StressScale.scaled(100_000),
                foreground: StressScale.scaled(100_000)
            ) { timeout in
                dispatcher.waitForBackgroundTasks(timeout: timeout)
            }
        }

        /// 8 producers × 100,000 background tasks (at most 4 running at once) and 100,000 foreground tasks
        /// through `OperationQueue.main`, at full scale.
        @Test(.timeLimit(.minutes(10))) func operationQueueDispatcherRunsEveryTaskExactlyOnceAndTheForegroundInOrder()
            async throws
        {
            let dispatcher = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 4)
            try await runVolume(
                on: dispatcher,
                name: "OperationQueueDispatcher",
                producers: 8,
                perProducer: StressScale.scaled(100_000),
                foreground: StressScale.scaled(100_000)
            ) { timeout in
                dispatcher.waitForBackgroundTasks(timeout: timeout)
            }
        }

        /// Dispatches from `producers` threads at once plus one foreground producer, then checks that every
        /// background task ran exactly once and the foreground tasks ran once each, on the main actor, in order.
        private func runVolume(
            on dispatcher: some TaskDispatcher,
            name: String,
            producers: Int,
            perProducer: Int,
            foreground: Int,
            waitForBackground: @escaping @Sendable (Duration) -> Bool
        ) async throws {
            let tally = RunTally(count: producers * perProducer)
            let record = ForegroundOrderRecord(producers: 1)
            let foregroundDone = DispatchGroup()
            foregroundDone.enter()

            let producerGroup = startThreads(producers + 1, name: "producer") { thread in
                guard thread < producers else {
                    for index in 0..<foreground {
                        dispatcher.foreground { record.observe(producer: 0, index: index) }
                    }
                    dispatcher.foreground { foregroundDone.leave() }
                    return
                }
                let priorities = BackgroundPriority.allCases
                for index in 0..<perProducer {
                    let id = thread * perProducer + index
                    let priority = priorities[index % priorities.count]
                    if index % 1_000 == 0 {
                        dispatcher.background(priority: priority, after: .milliseconds(index % 5 + 1)) {
                            tally.record(id)
                        }
                    } else {
                        dispatcher.background(priority: priority) { tally.record(id) }
                    }
                }
            }

            let producersDone = await finished(producerGroup, withinSeconds: StressDeadline.seconds)
            try #require(producersDone, "the producers did not finish in \(StressDeadline.seconds) s")
            let backgroundDone = Locked(false)
            let waited = await finishedOnThread(name: "waiter", withinSeconds: StressDeadline.backgroundSeconds + 10) {
                let done = waitForBackground(.seconds(StressDeadline.backgroundSeconds))
                backgroundDone.withLock { $0 = done }
            }
            try #require(waited && backgroundDone.withLock { $0 }, "background tasks still running after the deadline")
            let foregroundFinished = await finished(foregroundDone, withinSeconds: StressDeadline.seconds)
            try #require(foregroundFinished, "foreground tasks still pending after \(StressDeadline.seconds) s")

            #expect(tally.total == producers * perProducer)
            #expect(tally.anomalies().isEmpty, "tasks that did not run exactly once (id×runs): \(tally.anomalies())")
            let summary = await record.summary
            #expect(summary.counts == [foreground])
            #expect(summary.outOfOrder.isEmpty, "foreground tasks out of dispatch order: \(summary.outOfOrder)")
            #expect(summary.offMainActor == 0)
            print(
                "StressTests: \(name), \(producers) producers × \(perProducer) background + \(foreground) foreground tasks"
            )
        }
    }
}
