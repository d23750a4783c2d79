import Dispatch
import Foundation
import TaskDispatch
import Testing

/// The two production dispatchers, for tests that run against both.
enum ProductionDispatcherKind: String, CaseIterable, CustomTestStringConvertible, Sendable {
    case queue
    case operationQueue

    var testDescription: String {
        switch self {
        case .queue: "QueueDispatcher"
        case .operationQueue: "OperationQueueDispatcher"
        }
    }

    /// A fresh dispatcher of this kind, with the bounded and the async waits for its background work.
    func makeDispatcher() -> any WaitableProductionDispatcher {
        switch self {
        case .queue: QueueDispatcher()
        case .operationQueue: OperationQueueDispatcher()
        }
    }
}

/// What both production dispatchers offer for waiting, so a test can run against either: the async wait of
/// `BackgroundWorkWaiting`, and the blocking form each of them has.
protocol WaitableProductionDispatcher: TaskDispatcher, BackgroundWorkWaiting {
    func waitForBackgroundTasks(timeout: Duration) -> Bool
}

extension QueueDispatcher: WaitableProductionDispatcher {}
extension OperationQueueDispatcher: WaitableProductionDispatcher {}

/// Waits for `group` on a thread of its own, not on the test's: `false` if it is not empty within `seconds`.
func groupEmptied(_ group: DispatchGroup, withinSeconds seconds: Double) async -> Bool {
    await onOwnThread { group.wait(timeout: .now() + seconds) == .success }
}

/// Runs `body` on a thread of its own and returns its result, so a blocking wait holds no thread that Swift
/// concurrency or Dispatch shares with the other tests. (On Linux, Dispatch's global queues and the cooperative
/// pool draw on one pool of worker threads, which grows only about once a second: a test that parks such a thread
/// stalls every other test running beside it.)
func onOwnThread<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: body()) }.start()
    }
}

/// Counts tasks running at once, and the most seen. `@unchecked Sendable`: the counts are guarded by `lock`.
final class ConcurrencyGauge: @unchecked Sendable {
    private let lock = NSLock()
    private var running = 0
    private var peak = 0

    func enter() {
        self.lock.withLock {
            self.running += 1
            self.peak = max(self.peak, self.running)
        }
    }

    func leave() { self.lock.withLock { self.running -= 1 } }
    var current: Int { self.lock.withLock { self.running } }
    var maximum: Int { self.lock.withLock { self.peak } }
}

/// An object whose release a test observes through a weak reference.
final class Captured: Sendable {
    func touch() {}
}

/// A weak reference readable from any thread. `@unchecked Sendable`: `object` is guarded by `lock`.
final class WeakBox: @unchecked Sendable {
    private let lock = NSLock()
    private weak var object: Captured?

    init(_ object: Captured) { self.object = object }
    var isReleased: Bool { self.lock.withLock { self.object == nil } }
}
