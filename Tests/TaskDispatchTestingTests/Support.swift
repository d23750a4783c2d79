import Dispatch
import Foundation
import TaskDispatch
import Testing

@testable import TaskDispatchTesting

/// An ordered, thread-safe log of events for assertions.
///
/// `@unchecked Sendable`: `events` is only touched while `lock` is held.
final class EventLog: @unchecked Sendable {
    private let lock = NSLock()
    private var storedEvents: [String] = []

    func record(_ event: String) {
        self.lock.lock()
        defer { self.lock.unlock() }
        self.storedEvents.append(event)
    }

    var events: [String] {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.storedEvents
    }
}

/// Whether the caller runs on the main queue (and so on the main actor), via a key only the main queue has.
///
/// `Thread.isMainThread` cannot tell: under `swift test` on Linux the main queue is drained by another thread.
enum MainQueueProbe {
    private static let key: DispatchSpecificKey<Int> = {
        let key = DispatchSpecificKey<Int>()
        DispatchQueue.main.setSpecific(key: key, value: 1)
        return key
    }()

    static var isOnMainQueue: Bool {
        DispatchQueue.getSpecific(key: self.key) != nil
    }
}

/// A lock with a scoped helper.
final class NSLockBox: Sendable {
    private let lock = NSLock()

    func withLock<T>(_ body: () throws -> T) rethrows -> T {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body()
    }
}

/// A decorator around `any TaskDispatcher`, as a user's logging dispatcher would be: it forwards `dispatch(_:)`,
/// `startTask` and the clock (erased once), and may change each task on the way, as `Rewrite` says.
struct ForwardingDispatcher: ForwardsStartTask {
    /// What the decorator does to each task before forwarding it.
    enum Rewrite: Sendable {
        /// Forwards the task as it is.
        case none
        /// Rebuilds it through `DispatchedTask`'s public initializer with a "rebuilt" label, as a decorator that
        /// renames or re-prioritizes tasks would.
        case rebuild
        /// Dispatches a note of its own to the wrapped dispatcher first, as an auditing decorator might.
        case noteFirst
        /// Dispatches a note of its own first, of the task's call site, then rebuilds the task as `rebuild` does.
        case noteAndRebuild
        /// Copies it and prefixes its label with "relabeled", as a logging decorator might: the copy keeps what the
        /// dispatcher needs that the initializer cannot set.
        case copy
    }

    let base: any TaskDispatcher
    let clock: AnyDispatcherClock
    let rewrite: Rewrite

    init(base: any TaskDispatcher, rewrite: Rewrite = .none) {
        self.base = base
        self.clock = AnyDispatcherClock(base.clock)
        self.rewrite = rewrite
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        switch self.rewrite {
        case .none:
            return self.base.dispatch(task)
        case .rebuild, .noteAndRebuild:
            if self.rewrite == .noteAndRebuild {
                self.base.dispatch(DispatchedTask(.background {}, label: "note", callSite: task.callSite))
            }
            let rebuilt = DispatchedTask(
                task.work,
                label: task.label.map { "rebuilt \($0)" } ?? "rebuilt",
                delay: task.delay,
                priority: task.priority,
                callSite: task.callSite
            )
            return self.base.dispatch(rebuilt)
        case .noteFirst:
            self.base.dispatch(DispatchedTask(.background {}, label: "note", callSite: task.callSite))
            return self.base.dispatch(task)
        case .copy:
            var copy = task
            copy.label = "relabeled \(task.label ?? "-")"
            return self.base.dispatch(copy)
        }
    }
}

/// Calls `body` from synchronous code, where the compiler picks the synchronous steps and drains of
/// `ManualDispatcher` over their async forms: for the tests that check exactly what one synchronous step runs.
@discardableResult
func synchronously<Result>(_ body: () throws -> Result) rethrows -> Result {
    try body()
}

extension ManualDispatcher {
    /// The steps that ran with one of `labels`, with their times, oldest first: `news@1.0 seconds`.
    func steps(labeled labels: Set<String> = ["news", "weather"]) -> [String] {
        self.history.compactMap { run in
            guard let label = run.task.label, labels.contains(label) else { return nil }
            return "\(label)@\(run.startTime)"
        }
    }

    /// Expects `advance(by: 1 s)` to stop with `.unsettledTasks(after: .zero)`, the clock still at zero, as it does
    /// for tasks inside a tracked task whose jobs it cannot count; returns the error's summary ("" if none came).
    func expectAdvanceStopsAtZero(run: Int, sourceLocation: SourceLocation = #_sourceLocation) async -> String {
        let error = await #expect(throws: ManualDispatcherError.self, "run \(run)", sourceLocation: sourceLocation) {
            try await self.advance(by: .seconds(1))
        }
        #expect(error?.kind == .unsettledTasks(after: .zero), "run \(run)", sourceLocation: sourceLocation)
        #expect(self.now == .zero, "run \(run)", sourceLocation: sourceLocation)
        return error?.summary ?? ""
    }

    /// Cancels every pending task and releases their closures outside the lock: the end of a test that stops a task
    /// rescheduling itself on purpose. Its pending instance holds the dispatcher through its closure; left pending,
    /// the two would keep each other alive (LeakSanitizer reports the cycle).
    func cancelAllPendingTasks() {
        let released = self.storage.monitor.withLock { schedule in
            schedule.allPendingTasks.compactMap { schedule.cancel($0) }
        }
        _ = consume released
    }
}

/// A decorator of `base` that forwards `startTask` to it, as every decorator must.
protocol ForwardsStartTask: TaskDispatcher {
    var base: any TaskDispatcher { get }
}

extension ForwardsStartTask {
    func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        self.base.startTask(label: label, callSite: callSite, operation: operation)
    }
}

/// A task executor that runs its jobs one at a time, in order, on a serial queue.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
final class SerialQueueTaskExecutor: TaskExecutor {
    private let queue = DispatchQueue(label: "SerialQueueTaskExecutor")
    /// The jobs enqueued while ``hold()`` holds them; `nil` when jobs go to the queue.
    private let held = Locked<[UnownedJob]?>(nil)

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let kept = self.held.withLock { held -> Bool in
            guard held != nil else { return false }
            held?.append(job)
            return true
        }
        if !kept { self.run(job) }
    }

    /// Runs `body` on the queue after the jobs enqueued before it.
    func enqueueBlock(_ body: @escaping @Sendable () -> Void) {
        self.queue.async(execute: body)
    }

    /// Holds the jobs enqueued from now on until ``release()``.
    func hold() { self.held.withLock { $0 = $0 ?? [] } }

    /// Sends the held jobs to the queue, in order, and the later ones as they come.
    func release() {
        let jobs = self.held.withLock { held in
            defer { held = nil }
            return held ?? []
        }
        for job in jobs { self.run(job) }
    }

    private func run(_ job: UnownedJob) {
        self.queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
