import Foundation
import TaskDispatch

#if canImport(Darwin)
    typealias FloorLock = PlatformLock
#else
    import Synchronization

    /// The floors' lock on Linux: the standard library's `Mutex`, one atomic each way uncontended.
    final class FloorLock: @unchecked Sendable {
        private let mutex = Mutex(())

        @inline(__always)
        func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
            try self.mutex.withLock { _ in try body() }
        }
    }
#endif

/// The floor of the scope rows: the least any scope can do for a dispatch and keep its one promise, that
/// `cancelAll()` cancels the live work dispatched through it and forgets work once it has run.
///
/// Per dispatch it keeps one record of the live task (a class: the run's closure captures it alone, so the closure
/// needs no box of its own), links it into a list under one lock, forwards a copy of the task with the record's
/// closure in place of the caller's, and unlinks the record under the lock when the task runs (or does not link it,
/// when the run came first). It does less than `DispatchScope`: it neither counts background work for a shutdown
/// wait nor ends an awaitable call it cancels, and a dispatch after `cancelAll()` is forwarded all the same.
final class LeastScope: TaskDispatcher, @unchecked Sendable {
    /// One live task: guarded by the scope's lock.
    final class Record: TaskCancelling, @unchecked Sendable {
        @exclusivity(unchecked) var next: Record?
        @exclusivity(unchecked) var previous: Unmanaged<Record>?
        @exclusivity(unchecked) var work: DispatchedTask.Work?
        let scope: LeastScope
        // Not optional: an optional's destroy takes the generic path.
        @exclusivity(unchecked) var inner = TaskHandle(canceller: NoTask())

        init(scope: LeastScope) {
            self.scope = scope
        }

        func run() {
            guard case .background(let work)? = self.scope.lock.withLock({ self.scope.unlink(self) }) else { return }
            work()
        }

        @MainActor func runOnMainActor() {
            guard case .foreground(let work)? = self.scope.lock.withLock({ self.scope.unlink(self) }) else { return }
            work()
        }

        func cancelTask() -> Bool {
            let inner = self.scope.lock.withLock { () -> TaskHandle in
                _ = self.scope.unlink(self)
                return self.inner
            }
            return inner.cancel()
        }

        var isTaskCancelled: Bool { self.scope.lock.withLock { self.inner.isCancelled } }
    }

    /// The canceller of a record's handle before the dispatcher beneath returns its own.
    struct NoTask: TaskCancelling {
        func cancelTask() -> Bool { false }
        var isTaskCancelled: Bool { false }
    }

    private let base: any TaskDispatcher
    fileprivate let lock = FloorLock()
    // Guarded by `lock`.
    @exclusivity(unchecked) private var head: Record?

    let clock: AnyDispatcherClock

    init(_ base: some TaskDispatcher) {
        self.base = base
        self.clock = AnyDispatcherClock(base.clock)
    }

    @discardableResult
    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let record = Record(scope: self)
        var forwarded = task
        var work: DispatchedTask.Work =
            switch task.work {
            case .foreground: .foreground { record.runOnMainActor() }
            case .background: .background { record.run() }
            }
        swap(&work, &forwarded.work)
        record.work = work
        let inner = self.base.dispatch(forwarded)
        self.lock.withLock {
            record.inner = inner
            guard record.work != nil else { return }  // it ran already (a dispatcher with threads of its own)
            let first = self.head.take()
            first?.previous = Unmanaged.passUnretained(record)
            record.next = first
            self.head = record
        }
        return TaskHandle(canceller: record)
    }

    /// Takes `record`'s closure and unlinks it if it is linked: under `lock`.
    fileprivate func unlink(_ record: Record) -> DispatchedTask.Work? {
        let work = record.work.take()
        guard record.previous != nil || self.head === record else { return work }
        let next = record.next.take()
        next?.previous = record.previous
        if let previous = record.previous {
            previous._withUnsafeGuaranteedRef { $0.next = next }
        } else {
            self.head = next
        }
        record.previous = nil
        return work
    }

    func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        self.base.startTask(label: label, callSite: callSite, operation: operation)
    }

    nonisolated(nonsending) func value<Success: Sendable>(of task: Task<Success, any Error>) async throws -> Success {
        try await self.base.value(of: task)
    }

    /// Cancels every live task, newest first.
    func cancelAll() {
        var live: [TaskHandle] = []
        self.lock.withLock {
            while let record = self.head {
                live.append(record.inner)
                _ = self.unlink(record)
            }
        }
        for inner in live { inner.cancel() }
    }
}
