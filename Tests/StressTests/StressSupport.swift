import Dispatch
import Foundation
import Testing

/// How much work the stress suites do, read once from the environment.
///
/// `TASKDISPATCH_STRESS_SCALE` multiplies every volume: `1` (the default) is the full volume the reliability
/// issue asks for (8 threads × 100,000 tasks, 20,000 cancellation races, …); the thread sanitizer slows code
/// 5–15×, so CI runs the sanitized build with `TASKDISPATCH_STRESS_SCALE=0.1`. Every scaled volume stays at
/// least `minimum`, so even a tiny scale still races threads against each other.
enum StressScale {
    static let factor: Double = {
        guard let text = ProcessInfo.processInfo.environment["TASKDISPATCH_STRESS_SCALE"],
            let value = Double(text), value > 0, value.isFinite
        else { return 1 }
        return value
    }()

    /// `full` multiplied by the scale factor, and at least `minimum`.
    static func scaled(_ full: Int, minimum: Int = 100) -> Int {
        Swift.max(minimum, Int((Double(full) * self.factor).rounded()))
    }
}

/// A value guarded by a lock.
///
/// `@unchecked Sendable` is sound: `value` is read and written only inside `withLock`, which holds `lock`
/// for the whole access. (The standard `Mutex` would let the compiler check this, but it needs macOS 15.)
final class Locked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        self.lock.lock()
        defer { self.lock.unlock() }
        return try body(&self.value)
    }
}

/// One counter per task identity: each task adds one to its own slot, and every slot must end at exactly one.
final class RunTally: Sendable {
    private let counts: Locked<[UInt32]>

    init(count: Int) {
        self.counts = Locked([UInt32](repeating: 0, count: count))
    }

    /// Records one run of task `id`.
    func record(_ id: Int) {
        self.counts.withLock { $0[id] &+= 1 }
    }

    /// The total number of runs recorded.
    var total: Int {
        self.counts.withLock { counts in counts.reduce(0) { $0 + Int($1) } }
    }

    /// The identities that did not run exactly once, as `id×count`, at most `limit` of them.
    func anomalies(limit: Int = 10) -> [String] {
        self.counts.withLock { counts in
            var found: [String] = []
            for (id, count) in counts.enumerated() where count != 1 {
                found.append("\(id)×\(count)")
                if found.count == limit { break }
            }
            return found
        }
    }
}

/// The start and end of each task in a cancellation race, and what `cancel()` returned for it.
final class RaceRecord: Sendable {
    struct Slot: Sendable {
        var started = false
        var ended = false
        var cancelReturned: Bool?
        var isCancelled: Bool?
    }

    private let slots: Locked<[Slot]>

    init(count: Int) {
        self.slots = Locked([Slot](repeating: Slot(), count: count))
    }

    func start(_ id: Int) { self.slots.withLock { $0[id].started = true } }
    func end(_ id: Int) { self.slots.withLock { $0[id].ended = true } }

    func cancelled(_ id: Int, returned: Bool, isCancelled: Bool) {
        self.slots.withLock {
            $0[id].cancelReturned = returned
            $0[id].isCancelled = isCancelled
        }
    }

    /// How the races ended: runs that won, cancels that won, and every slot that broke the all-or-nothing rule.
    func verdict(limit: Int = 10) -> (ran: Int, cancelled: Int, violations: [String]) {
        self.slots.withLock { slots in
            var ran = 0
            var cancelled = 0
            var violations: [String] = []
            for (id, slot) in slots.enumerated() {
                if slot.started { ran += 1 } else { cancelled += 1 }
                let problem: String? =
                    if slot.started != slot.ended {
                        "task \(id) started but did not finish"
                    } else if slot.cancelReturned == nil {
                        "task \(id) was never cancelled"
                    } else if slot.cancelReturned == slot.started {
                        "task \(id): started \(slot.started) but cancel() returned \(slot.cancelReturned == true)"
                    } else if slot.isCancelled != slot.cancelReturned {
                        "task \(id): isCancelled disagrees with cancel()"
                    } else {
                        nil
                    }
                if let problem, violations.count < limit { violations.append(problem) }
            }
            return (ran, cancelled, violations)
        }
    }
}

/// Starts `count` Foundation threads running `body(index)`; the group is left when each returns.
func startThreads(_ count: Int, name: String, _ body: @escaping @Sendable (Int) -> Void) -> DispatchGroup {
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        let thread = Thread {
            body(index)
            group.leave()
        }
        thread.name = "\(name) \(index)"
        thread.stackSize = 1 << 20
        thread.start()
    }
    return group
}

/// Suspends until `group` is empty or `seconds` pass; returns whether the group finished. Never blocks a thread.
func finished(_ group: DispatchGroup, withinSeconds seconds: Int) async -> Bool {
    let resumed = Locked(false)
    return await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
        let resumeOnce: @Sendable (Bool) -> Void = { outcome in
            let first = resumed.withLock { done in
                defer { done = true }
                return !done
            }
            if first { continuation.resume(returning: outcome) }
        }
        group.notify(queue: .global()) { resumeOnce(true) }
        DispatchQueue.global().asyncAfter(deadline: .now() + .seconds(seconds)) { resumeOnce(false) }
    }
}

/// Runs `body` on a new thread and suspends until it returns or `seconds` pass; returns whether it finished.
func finishedOnThread(name: String, withinSeconds seconds: Int, _ body: @escaping @Sendable () -> Void) async -> Bool {
    await finished(startThreads(1, name: name) { _ in body() }, withinSeconds: seconds)
}

/// Gives up the processor when a thread has nothing to do; returns at once if no other thread is ready.
func yieldProcessor() {
    sched_yield()
}

/// The deadlines used by the suites: generous, so a slow machine fails with a message instead of a hang.
enum StressDeadline {
    /// The bound on producers, drainers and races.
    static let seconds = 300
    /// The bound on waiting for a production dispatcher's background work once everything is dispatched.
    static let backgroundSeconds = 60
}
