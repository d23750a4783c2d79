import Foundation
import TaskDispatchTesting

/// Counts events from any thread and lets a task suspend until a number of them has happened.
///
/// No polling: each `signal()` resumes the waiters whose target it reaches. `@unchecked Sendable`: `count` and
/// `waiters` are only touched while `lock` is held.
final class ArrivalCounter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    private var waiters: [(target: Int, continuation: CheckedContinuation<Void, Never>)] = []

    func signal() {
        self.lock.lock()
        self.count += 1
        let count = self.count
        let ready = self.waiters.filter { $0.target <= count }
        self.waiters.removeAll { $0.target <= count }
        self.lock.unlock()
        for waiter in ready { waiter.continuation.resume() }
    }

    var value: Int {
        self.lock.withLock { self.count }
    }

    /// Suspends until `signal()` has been called at least `target` times in all.
    func reach(_ target: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            self.lock.lock()
            guard self.count < target else {
                self.lock.unlock()
                continuation.resume()
                return
            }
            self.waiters.append((target, continuation))
            self.lock.unlock()
        }
    }
}

extension ManualDispatcher {
    /// A counter of the waits that registered and suspended on this dispatcher.
    func countingWaiterRegistrations() -> ArrivalCounter {
        let counter = ArrivalCounter()
        self.observeWaiterRegistrations { counter.signal() }
        return counter
    }
}

/// A value guarded by a lock, for results captured on other threads.
///
/// `@unchecked Sendable`: `value` is only touched inside `withLock`, which holds `lock`.
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLockBox()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        try self.lock.withLock { try body(&self.value) }
    }
}

/// Starts `body` on a thread of its own: a blocking wait there holds no thread that Swift concurrency or Dispatch
/// shares with the other tests. (On Linux, Dispatch's global queues and the cooperative pool draw on one pool of
/// worker threads, which grows only about once a second: a test that parks such a thread stalls every other test
/// running beside it.)
func onOwnThread(_ body: @escaping @Sendable () -> Void) {
    Thread(block: body).start()
}
