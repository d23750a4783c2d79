import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

/// Foreground tasks run on the main actor in every dispatcher, and the supported way to check it is
/// `MainActor.assertIsolated()` or `MainActor.assumeIsolated`, not `Thread.isMainThread`: under `swift test` on
/// Linux the main queue (and with it the main actor) is drained by a thread that is not the process's first one.
@Suite struct ForegroundIsolationTests {
    enum Kind: String, CaseIterable, CustomStringConvertible {
        case queue, operationQueue, manual
        var description: String { self.rawValue }
    }

    @Test(arguments: Kind.allCases)
    func foregroundTasksPassTheMainActorIsolationCheck(kind: Kind) async throws {
        let group = DispatchGroup()
        let isolated = LockedFlags()
        let dispatcher: any TaskDispatcher =
            switch kind {
            case .queue: QueueDispatcher()
            case .operationQueue: OperationQueueDispatcher()
            case .manual: ManualDispatcher()
            }
        for index in 0..<3 {
            group.enter()
            dispatcher.foreground(after: index == 2 ? .milliseconds(5) : .zero) {
                MainActor.assertIsolated("a foreground task runs on the main actor")
                isolated.set(index, MainActor.assumeIsolated { true })
                group.leave()
            }
        }
        if let manual = dispatcher as? ManualDispatcher {
            try await manual.runUntilIdle()
        }
        let finished = await groupEmptied(group, withinSeconds: 30)
        #expect(finished)
        #expect(isolated.values == [true, true, true])
    }
}

/// Results written by tasks on other threads; `@unchecked Sendable`: `values` is only touched under `lock`.
private final class LockedFlags: @unchecked Sendable {
    private let lock = NSLock()
    private var flags = [false, false, false]

    func set(_ index: Int, _ value: Bool) {
        self.lock.withLock { self.flags[index] = value }
    }

    var values: [Bool] {
        self.lock.withLock { self.flags }
    }
}
