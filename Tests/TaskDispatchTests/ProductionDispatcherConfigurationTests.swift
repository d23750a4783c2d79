import Dispatch
import Foundation
import TaskDispatch
import Testing

extension ParkedThreadTests {
    @Suite struct ProductionDispatcherConfigurationTests {
        @Test(arguments: [0, -1, Int.min])
        func operationQueueDispatcherRejectsANonPositiveWidth(width: Int) throws {
            let error = try #require(throws: DispatcherConfigurationError.self) {
                try OperationQueueDispatcher(maxConcurrentBackgroundTasks: width)
            }
            #expect(error == .invalidMaxConcurrentBackgroundTasks(width))
            #expect(
                error.description
                    == "maxConcurrentBackgroundTasks was \(width), but it must be in 1...\(Int.max): pass 1 for a serial "
                    + "background queue, or a larger number to run that many tasks at once"
            )
        }

        @Test(.timeLimit(.minutes(1))) func operationQueueDispatcherAppliesItsWidthAndName() throws {
            let dispatcher = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 2, name: "images")
            #expect(dispatcher.maxConcurrentBackgroundTasks == 2)
            let names = OrderLog()
            dispatcher.background { names.append(OperationQueue.current?.name == "images" ? 1 : 0) }
            #expect(dispatcher.waitForBackgroundTasks(timeout: .seconds(60)))
            #expect(names.values == [1])

            let classic = OperationQueueDispatcher()
            #expect(classic.maxConcurrentBackgroundTasks == 3)
            classic.background {
                names.append(OperationQueue.current?.name == "TaskDispatch.OperationQueueDispatcher" ? 2 : 0)
            }
            #expect(classic.waitForBackgroundTasks(timeout: .seconds(60)))
            #expect(names.values == [1, 2])
        }

        @Test(.timeLimit(.minutes(1))) func queueDispatcherRunsBackgroundTasksOnTheCallersSerialQueueInOrder() {
            let queue = DispatchQueue(label: "serial")
            let key = DispatchSpecificKey<Int>()
            queue.setSpecific(key: key, value: 7)
            let dispatcher = QueueDispatcher(backgroundQueue: queue)
            let order = OrderLog()
            for index in 0..<100 {
                dispatcher.background { order.append(DispatchQueue.getSpecific(key: key) == 7 ? index : -1) }
            }
            #expect(dispatcher.waitForBackgroundTasks(timeout: .seconds(60)))
            #expect(order.values == Array(0..<100))
        }

        @Test(.timeLimit(.minutes(1))) func waitForBackgroundTasksTimesOutWhileATaskIsBlocked() {
            let dispatcher = QueueDispatcher()
            let gate = DispatchSemaphore(value: 0)
            dispatcher.background { _ = gate.wait(timeout: .now() + 60) }
            #expect(!dispatcher.waitForBackgroundTasks(timeout: .milliseconds(50)))
            gate.signal()
            #expect(dispatcher.waitForBackgroundTasks(timeout: .seconds(60)))
        }

        @Test func prioritiesMapToQualityOfService() {
            #expect(
                BackgroundPriority.allCases.map(\.qualityOfService) == [
                    .background, .utility, .default, .userInitiated, .userInteractive,
                ])
            #expect(BackgroundPriority.allCases == BackgroundPriority.allCases.sorted())
            #expect(BackgroundPriority.medium.description == "medium")
        }

        @Test func callSitesPrintAndCompareByFileAndLine() {
            let site = CallSite(line: 12)
            #expect(site.description == "TaskDispatchTests/ProductionDispatcherConfigurationTests.swift:12")
            #expect(site == CallSite(line: 12))
            #expect(site != CallSite(line: 13))
            #expect(Set([site, CallSite(line: 12)]).count == 1)
        }

        @Test func aTaskDescriptionKnowsItsContextAndDelay() {
            let foreground = DispatchedTask(.foreground {}, callSite: CallSite())
            let background = DispatchedTask(.background {}, delay: .milliseconds(-5), callSite: CallSite())
            #expect(foreground.context == .foreground)
            #expect(background.context == .background)
            #expect(!background.isDelayed)
            #expect(DispatchedTask(.background {}, delay: .seconds(1), callSite: CallSite()).isDelayed)
        }
    }
}

/// Values appended from a serial queue and read by the test. `@unchecked Sendable`: `storage` is guarded by `lock`.
final class OrderLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [Int] = []

    func append(_ value: Int) { self.lock.withLock { self.storage.append(value) } }
    var values: [Int] { self.lock.withLock { self.storage } }
}
