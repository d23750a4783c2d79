import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting

/// Counts events from any thread and lets a task suspend until a number of them has happened, without polling.
///
/// `@unchecked Sendable`: `count` and `waiters` are only touched while `lock` is held.
final class ArrivalSignal: @unchecked Sendable {
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

/// An ordered log written from any thread. `@unchecked Sendable`: `entries` is only touched under `lock`.
final class AwaitLog: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [String] = []

    func record(_ entry: String) {
        self.lock.withLock { self.entries.append(entry) }
    }

    var events: [String] {
        self.lock.withLock { self.entries }
    }
}

/// A slot for a value set on one thread and read on another. `@unchecked Sendable`: guarded by `lock`.
final class AwaitBox<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value

    init(_ value: Value) {
        self.stored = value
    }

    var value: Value {
        get { self.lock.withLock { self.stored } }
        set { self.lock.withLock { self.stored = newValue } }
    }
}

/// Whether the caller runs on the main queue, and so on the main actor (see ADR 0002 on why not `Thread.isMainThread`).
enum OnMainQueue {
    private static let key: DispatchSpecificKey<Int> = {
        let key = DispatchSpecificKey<Int>()
        DispatchQueue.main.setSpecific(key: key, value: 1)
        return key
    }()

    static var now: Bool {
        DispatchQueue.getSpecific(key: self.key) != nil
    }
}

/// A decorator that signals each dispatch once the wrapped dispatcher has accepted it, so a test can wait for
/// the dispatch of an awaitable run without polling.
struct SignallingDispatcher: TaskDispatcher {
    let base: any TaskDispatcher
    let dispatched = ArrivalSignal()

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let handle = self.base.dispatch(task)
        self.dispatched.signal()
        return handle
    }
}

/// The three dispatchers the package ships; the manual one drains automatically, so an await needs no test step.
enum AwaitedDispatcherKind: String, Sendable, CaseIterable, CustomStringConvertible {
    case queue
    case operationQueue
    case manualAutoDrain

    var description: String { self.rawValue }

    func makeDispatcher() -> any TaskDispatcher {
        switch self {
        case .queue: QueueDispatcher()
        case .operationQueue: OperationQueueDispatcher()
        case .manualAutoDrain: ManualDispatcher(mode: .autoDrain)
        }
    }
}

struct ParseFailure: Error, Equatable {
    var line: Int
}
