import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting

// MARK: - Repeating work and dispatch scopes (1.1)

/// A chain of delayed tasks, each dispatching the next `interval` later: the one-off delayed dispatch-and-run a
/// tick is compared with.
final class DelayedChain: @unchecked Sendable {
    let dispatcher: any TaskDispatcher
    let interval: Duration
    let limit: Int
    var count = 0
    let done: DispatchSemaphore?

    init(_ dispatcher: any TaskDispatcher, interval: Duration, limit: Int, done: DispatchSemaphore? = nil) {
        self.dispatcher = dispatcher
        self.interval = interval
        self.limit = limit
        self.done = done
    }

    func step() {
        self.count += 1
        if self.count >= self.limit {
            self.done?.signal()
            return
        }
        self.dispatcher.background(after: self.interval) { self.step() }
    }
}

/// `ticks` ticks of a series every microsecond on a `ManualDispatcher`, run by one `advance`.
func manualTicks(_ ticks: Int) throws -> Double {
    // One advance runs every tick: the runaway limit (100,000 by default) must not stop the full run's million.
    let dispatcher = ManualDispatcher(runawayLimit: ticks + 1, historyLimit: 0)
    let counter = Counter()
    let elapsed = try time {
        let series = dispatcher.background(every: .microseconds(1)) { counter.value &+= 1 }
        try dispatcher.advance(by: .microseconds(ticks))
        series.cancel()
    }
    try checkCount(counter, ticks)
    return elapsed / Double(ticks)
}

/// The same number of delayed dispatch-and-runs, each task dispatching the next a microsecond later.
func manualDelayedChain(_ ticks: Int) throws -> Double {
    let dispatcher = ManualDispatcher(runawayLimit: ticks + 1, historyLimit: 0)
    let chain = DelayedChain(dispatcher, interval: .microseconds(1), limit: ticks)
    let elapsed = try time {
        dispatcher.background(after: .microseconds(1)) { chain.step() }
        try dispatcher.advance(by: .microseconds(ticks))
    }
    guard chain.count == ticks else { throw BenchmarkError(description: "chain ran \(chain.count) of \(ticks)") }
    return elapsed / Double(ticks)
}

/// `ticks` ticks of a `QueueDispatcher` series every microsecond, in real time.
func queueTicks(_ ticks: Int, timeout: Double) throws -> Double {
    let dispatcher = QueueDispatcher()
    let done = DispatchSemaphore(value: 0)
    let counter = Counter()
    let start = nowNanoseconds()
    let series = dispatcher.background(every: .microseconds(1)) {
        counter.value &+= 1
        if counter.value == ticks { done.signal() }
    }
    guard done.wait(timeout: .now() + timeout) == .success else {
        throw BenchmarkError(description: "timed out after \(Int(timeout)) s")
    }
    let elapsed = Double(nowNanoseconds() - start)
    series.cancel()
    return elapsed / Double(ticks)
}

/// The same number of `QueueDispatcher` delayed dispatch-and-runs, each a microsecond after the one before.
func queueDelayedChain(_ ticks: Int, timeout: Double) throws -> Double {
    let done = DispatchSemaphore(value: 0)
    let chain = DelayedChain(QueueDispatcher(), interval: .microseconds(1), limit: ticks, done: done)
    let start = nowNanoseconds()
    chain.dispatcher.background(after: .microseconds(1)) { chain.step() }
    guard done.wait(timeout: .now() + timeout) == .success else {
        throw BenchmarkError(description: "timed out after \(Int(timeout)) s")
    }
    return Double(nowNanoseconds() - start) / Double(ticks)
}

/// Where ``manualDispatchAndRun(_:through:)`` sends its tasks.
enum ScopeRoute: String {
    /// Straight to the `ManualDispatcher`.
    case direct = "nothing"
    /// Through a `DispatchScope` over it.
    case scope = "a scope"
    /// Through a ``LeastScope`` over it, the least any scope can do.
    case leastScope = "the least scope"
    /// Straight to it, with one lock section at the dispatch and one at the run: the synchronization that any
    /// record of live work needs, and nothing else.
    case twoLockSections = "two lock sections"
    /// The same under the registry's kind of lock: a `pthread_mutex_t`, which the thread sanitizer sees.
    case twoRegistryLockSections = "two sections of the registry's kind of lock"
}

/// A count of live tasks under a lock, and the tasks' counter, in one object: a closure that captures it allocates
/// no context.
final class LockedBookkeeping: @unchecked Sendable {
    let lock = FloorLock()
    @exclusivity(unchecked) var live = 0
    let counter = Counter()
    let registryLock = LockedValue(0, spinning: true)
}

/// `size` immediate background tasks dispatched to a `ManualDispatcher` by `route`, then run.
func manualDispatchAndRun(_ size: Int, through route: ScopeRoute) throws -> Double {
    let dispatcher = ManualDispatcher(historyLimit: 0)
    let target: any TaskDispatcher =
        switch route {
        case .direct, .twoLockSections, .twoRegistryLockSections: dispatcher
        case .scope: DispatchScope(dispatcher)
        case .leastScope: LeastScope(dispatcher)
        }
    if route == .twoLockSections {
        let book = LockedBookkeeping()
        let elapsed = try time {
            for _ in 0..<size {
                book.lock.withLock { book.live += 1 }
                target.background {
                    book.lock.withLock { book.live -= 1 }
                    book.counter.value &+= 1
                }
            }
            try dispatcher.runUntilIdle()
        }
        try checkCount(book.counter, size)
        return elapsed / Double(size)
    }
    let counter = Counter()
    let elapsed = try time {
        for _ in 0..<size { target.background { counter.value &+= 1 } }
        try dispatcher.runUntilIdle()
    }
    try checkCount(counter, size)
    return elapsed / Double(size)
}

/// `size` immediate background tasks dispatched to a `ManualDispatcher` by `route` in bursts of `burst`, each burst
/// run before the next: the per-dispatch cost with the pending tasks in the cache.
func manualDispatchAndRun(_ size: Int, inBurstsOf burst: Int, through route: ScopeRoute) throws -> Double {
    let dispatcher = ManualDispatcher(historyLimit: 0)
    let target: any TaskDispatcher = route == .scope ? DispatchScope(dispatcher) : dispatcher
    let counter = Counter()
    let elapsed = try time {
        for _ in 0..<(size / burst) {
            for _ in 0..<burst { target.background { counter.value &+= 1 } }
            try dispatcher.runUntilIdle()
        }
    }
    try checkCount(counter, size / burst * burst)
    return elapsed / Double(size / burst * burst)
}

func seriesRows(_ configuration: Configuration) -> [Row] {
    var rows: [Row] = []
    let ticks = configuration.manualSizes.last ?? 100_000
    progress("ManualDispatcher: a tick vs a delayed dispatch-and-run")
    do {
        let result = try compare(repetitions: configuration.seriesRepetitions) {
            try manualTicks(ticks)
        } baseline: {
            try manualDelayedChain(ticks)
        }
        rows.append(
            ratioRow(
                "ManualDispatcher: a series tick vs one delayed dispatch-and-run (advance)", size: ticks, result,
                target: 1.2))
    } catch {
        rows.append(.failure("ManualDispatcher series tick", size: formatCount(ticks), "\(error)"))
    }

    let queueTicksCount = configuration.operationTasks
    progress("QueueDispatcher: a tick vs a delayed dispatch-and-run")
    do {
        let result = try compare(repetitions: configuration.seriesRepetitions) {
            try queueTicks(queueTicksCount, timeout: configuration.batchTimeout)
        } baseline: {
            try queueDelayedChain(queueTicksCount, timeout: configuration.batchTimeout)
        }
        rows.append(
            ratioRow(
                "QueueDispatcher: a series tick vs one delayed dispatch-and-run (1 µs apart)", size: queueTicksCount,
                result, target: 1.2))
    } catch {
        rows.append(.failure("QueueDispatcher series tick", size: formatCount(queueTicksCount), "\(error)"))
    }

    let size = configuration.manualSizes.last ?? 100_000
    let floor = "  the scope rows' floor: the same through the least scope (LeastScope) vs direct"
    for (route, measure, target) in [
        (ScopeRoute.scope, "ManualDispatcher: dispatch + run through a DispatchScope vs direct", 1.3),
        (.leastScope, floor, nil),
        (
            .twoLockSections, "  the least bookkeeping: direct, plus a lock section at the dispatch and one at the run",
            nil
        ),
    ] {
        progress("ManualDispatcher: a dispatch through \(route.rawValue) vs direct")
        do {
            let result = try compare(repetitions: configuration.seriesRepetitions) {
                try manualDispatchAndRun(size, through: route)
            } baseline: {
                try manualDispatchAndRun(size, through: .direct)
            }
            rows.append(ratioRow(measure, size: size, result, target: target))
        } catch {
            rows.append(.failure("ManualDispatcher through \(route.rawValue)", size: formatCount(size), "\(error)"))
        }
    }

    progress("ManualDispatcher: a dispatch through a scope vs direct, in bursts of 1,000")
    do {
        let result = try compare(repetitions: configuration.seriesRepetitions) {
            try manualDispatchAndRun(size, inBurstsOf: 1_000, through: .scope)
        } baseline: {
            try manualDispatchAndRun(size, inBurstsOf: 1_000, through: .direct)
        }
        rows.append(
            ratioRow(
                "  the same in bursts of 1,000, each run before the next (the pending tasks in the cache)", size: size,
                result, target: nil))
    } catch {
        rows.append(.failure("ManualDispatcher through a scope in bursts", size: formatCount(size), "\(error)"))
    }

    let count = configuration.dispatchTasks
    let direct = QueueDispatcher()
    for (route, measure, target) in [
        (ScopeRoute.scope, "QueueDispatcher: background through a DispatchScope vs direct", 1.3),
        (.leastScope, floor, nil),
        (
            .twoLockSections,
            "  the least bookkeeping: direct, plus a lock section at the dispatch and one on the worker", nil
        ),
        (.twoRegistryLockSections, "  the same under the registry's kind of lock (a pthread mutex TSan sees)", nil),
    ] {
        progress("QueueDispatcher: a dispatch through \(route.rawValue) vs direct")
        let scoped: any TaskDispatcher = route == .scope ? DispatchScope(direct) : LeastScope(direct)
        let book = LockedBookkeeping()
        do {
            let result = try compare(repetitions: configuration.productionRepetitions) {
                try throughput(count: count, timeout: configuration.batchTimeout) { group in
                    switch route {
                    case .twoLockSections:
                        book.lock.withLock { book.live += 1 }
                        direct.background {
                            book.lock.withLock { book.live -= 1 }
                            group.leave()
                        }
                    case .twoRegistryLockSections:
                        book.registryLock.withLock { $0 += 1 }
                        direct.background {
                            book.registryLock.withLock { $0 -= 1 }
                            group.leave()
                        }
                    case .direct, .scope, .leastScope:
                        scoped.background { group.leave() }
                    }
                }
            } baseline: {
                try throughput(count: count, timeout: configuration.batchTimeout) { group in
                    direct.background { group.leave() }
                }
            }
            rows.append(ratioRow(measure, size: count, result, target: target))
        } catch {
            rows.append(.failure("QueueDispatcher through \(route.rawValue)", size: formatCount(count), "\(error)"))
        }
    }
    rows.append(heldQueueScopeRow(configuration))
    rows.append(scopeChurnRow(configuration))
    return rows
}

/// A dispatch through a scope over a `QueueDispatcher` on a serial queue of the caller's, held by a first block while
/// the tasks are dispatched and then let run, against the same direct: the scope's cost without workers running
/// beside the dispatching thread (which make the interleaved row swing with how often they run dry and park).
private func heldQueueScopeRow(_ configuration: Configuration) -> Row {
    let count = configuration.dispatchTasks
    progress("QueueDispatcher on a held queue: a dispatch through a scope vs direct")
    let queue = DispatchQueue(label: "task-dispatch-benchmark.held")
    let direct = QueueDispatcher(backgroundQueue: queue)
    let scope = DispatchScope(direct)
    func dispatchHeldThenRun(_ target: any TaskDispatcher) throws -> Double {
        let group = DispatchGroup()
        let gate = DispatchSemaphore(value: 0)
        queue.async { gate.wait() }
        let start = nowNanoseconds()
        for _ in 0..<count {
            group.enter()
            target.background { group.leave() }
        }
        gate.signal()
        guard group.wait(timeout: .now() + configuration.batchTimeout) == .success else {
            throw BenchmarkError(description: "timed out after \(Int(configuration.batchTimeout)) s")
        }
        return Double(nowNanoseconds() - start) / Double(count)
    }
    do {
        let result = try compare(repetitions: configuration.productionRepetitions) {
            try dispatchHeldThenRun(scope)
        } baseline: {
            try dispatchHeldThenRun(direct)
        }
        let measure = "  through a DispatchScope vs direct on a serial queue of the caller's, held while dispatching"
        return ratioRow(measure, size: count, result, target: nil)
    } catch {
        return .failure("QueueDispatcher on a held queue through a scope", size: formatCount(count), "\(error)")
    }
}

/// Resident growth over `churnTasks` dispatch-and-run cycles through one scope over a `ManualDispatcher`, drained
/// every 1,000.
private func scopeChurnRow(_ configuration: Configuration) -> Row {
    let total = configuration.churnTasks
    progress("memory: \(formatCount(total)) dispatch-and-run through one scope")
    let dispatcher = ManualDispatcher(historyLimit: 0)
    let scope = DispatchScope(dispatcher)
    let counter = Counter()
    func round() throws {
        for _ in 0..<1_000 { scope.background { counter.value &+= 1 } }
        try dispatcher.runCurrent()
    }
    do {
        for _ in 0..<10 { try round() }
        let before = residentBytes()
        for _ in 0..<(total / 1_000) { try round() }
        let growth = residentBytes() - before
        guard before > 0, scope.liveWorkCount == 0 else {
            throw BenchmarkError(description: "live \(scope.liveWorkCount), resident \(before)")
        }
        return Row(
            measure: "DispatchScope resident growth: N dispatch-and-run through one scope, drained every 1,000",
            size: formatCount(total),
            ours: String(format: "%.1f KiB", Double(growth) / 1_024),
            baseline: "-",
            ratio: nil,
            target: "≤ 1 MiB",
            met: growth <= 1 << 20
        )
    } catch {
        return .failure("DispatchScope memory", size: formatCount(total), "\(error)")
    }
}
