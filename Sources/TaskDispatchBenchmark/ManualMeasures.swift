import Foundation
import TaskDispatch
import TaskDispatchTesting

// MARK: - ManualDispatcher against its floors

/// What the measured closures capture.
///
/// A Swift closure that captures one class reference uses that object as its context and allocates nothing; one
/// that captures a reference and an integer allocates a context box per closure. Both sides of a row run the
/// same closures, so the row compares the bookkeeping, not the allocator.
enum ClosureKind: CaseIterable {
    case nonAllocating
    case allocating

    var name: String {
        switch self {
        case .nonAllocating: "closures capture one reference (no allocation)"
        case .allocating: "closures allocate a context"
        }
    }
}

/// Runs `body` on fresh state until at least `minimum` tasks were measured; returns nanoseconds per task.
///
/// `body(size)` returns the nanoseconds its measured part took for `size` tasks.
func perTask(size: Int, minimum: Int, _ body: (Int) throws -> Double) rethrows -> Double {
    let rounds = max(1, minimum / size)
    var total = 0.0
    for _ in 0..<rounds { total += try body(size) }
    return total / Double(rounds * size)
}

func checkCount(_ counter: Counter, _ expected: Int) throws {
    guard counter.value == expected else {
        throw BenchmarkError(description: "ran \(counter.value) tasks of \(expected)")
    }
}

/// Dispatch `size` immediate background tasks, then `runUntilIdle`.
func manualImmediate(_ size: Int, _ kind: ClosureKind = .nonAllocating) throws -> Double {
    let dispatcher = ManualDispatcher()
    let counter = Counter()
    let one = 1
    let elapsed = try time {
        switch kind {
        case .nonAllocating: for _ in 0..<size { dispatcher.background { counter.value &+= 1 } }
        case .allocating: for _ in 0..<size { dispatcher.background { counter.value &+= one } }
        }
        try dispatcher.runUntilIdle()
    }
    try checkCount(counter, size)
    return elapsed
}

/// Dispatch `size` immediate tasks into a fresh `fifo`, then run them all.
@inline(__always)
func floorImmediate(_ size: Int, _ kind: ClosureKind, _ fifo: some FloorFIFO) throws -> Double {
    let counter = Counter()
    let one = 1
    let elapsed = time {
        switch kind {
        case .nonAllocating: for _ in 0..<size { fifo.dispatch { counter.value &+= 1 } }
        case .allocating: for _ in 0..<size { fifo.dispatch { counter.value &+= one } }
        }
        fifo.runAll()
    }
    try checkCount(counter, size)
    return elapsed
}

/// Dispatch `size` background tasks with random delays up to 1 ms, then `advance(by: 1 ms)`.
func manualDelayed(_ delays: [Int64], _ kind: ClosureKind = .nonAllocating) throws -> Double {
    let dispatcher = ManualDispatcher()
    let counter = Counter()
    let one = 1
    let elapsed = try time {
        switch kind {
        case .nonAllocating:
            for delay in delays { dispatcher.background(after: .nanoseconds(delay)) { counter.value &+= 1 } }
        case .allocating:
            for delay in delays { dispatcher.background(after: .nanoseconds(delay)) { counter.value &+= one } }
        }
        try dispatcher.advance(by: .milliseconds(1))
    }
    try checkCount(counter, delays.count)
    return elapsed
}

func floorDelayed(_ delays: [Int64], _ kind: ClosureKind) throws -> Double {
    let heap = BareHeap()
    let counter = Counter()
    let one = 1
    let elapsed = time {
        switch kind {
        case .nonAllocating: for delay in delays { heap.dispatch(after: delay) { counter.value &+= 1 } }
        case .allocating: for delay in delays { heap.dispatch(after: delay) { counter.value &+= one } }
        }
        heap.advance(by: 1_000_000)
    }
    try checkCount(counter, delays.count)
    return elapsed
}

/// Dispatch `size` tasks one by one in auto-drain mode: each runs before its dispatch returns.
func manualAutoDrain(_ size: Int, _ kind: ClosureKind) throws -> Double {
    let dispatcher = ManualDispatcher(mode: .autoDrain)
    let counter = Counter()
    let one = 1
    let elapsed = time {
        switch kind {
        case .nonAllocating: for _ in 0..<size { dispatcher.background { counter.value &+= 1 } }
        case .allocating: for _ in 0..<size { dispatcher.background { counter.value &+= one } }
        }
    }
    try checkCount(counter, size)
    return elapsed
}

func floorAutoDrain(_ size: Int, _ kind: ClosureKind) throws -> Double {
    let fifo = BareFIFO()
    let counter = Counter()
    let one = 1
    let elapsed = time {
        for _ in 0..<size {
            switch kind {
            case .nonAllocating: fifo.dispatch { counter.value &+= 1 }
            case .allocating: fifo.dispatch { counter.value &+= one }
            }
            fifo.runAll()
        }
    }
    try checkCount(counter, size)
    return elapsed
}

func manualRows(_ configuration: Configuration) -> [Row] {
    typealias Measure = (Int, ClosureKind) throws -> Double
    struct Path {
        var name: String
        var ours: Measure
        var floor: Measure
        var floorName: String
        var target: Double?
        var scalingTarget: Double?
    }
    let paths = [
        Path(
            name: "ManualDispatcher immediate: dispatch + runUntilIdle", ours: manualImmediate,
            floor: { try floorImmediate($0, $1, PlainFIFO()) }, floorName: "lock + array FIFO", target: 3.0,
            scalingTarget: 1.5
        ),
        // The earlier floor, one task per lock turn as ManualDispatcher runs them: kept to show where the cost goes.
        Path(
            name: "ManualDispatcher immediate: dispatch + runUntilIdle", ours: manualImmediate,
            floor: { try floorImmediate($0, $1, BareFIFO()) }, floorName: "one-per-turn FIFO", target: nil,
            scalingTarget: nil
        ),
        Path(
            name: "ManualDispatcher delayed (random ≤ 1 ms): dispatch + advance",
            ours: { try manualDelayed(randomDelays($0), $1) }, floor: { try floorDelayed(randomDelays($0), $1) },
            floorName: "heap", target: 1.5, scalingTarget: nil
        ),
        Path(
            name: "ManualDispatcher auto-drain: dispatch (runs at once)", ours: manualAutoDrain, floor: floorAutoDrain,
            floorName: "FIFO", target: 3.0, scalingTarget: nil
        ),
    ]
    var rows: [Row] = []
    for path in paths {
        for kind in ClosureKind.allCases {
            rows += pathRows(
                path.name, kind, configuration, ours: path.ours, floor: path.floor, floorName: path.floorName,
                target: path.target, scalingTarget: path.scalingTarget)
        }
    }
    return rows
}

private func pathRows(
    _ name: String,
    _ kind: ClosureKind,
    _ configuration: Configuration,
    ours: (Int, ClosureKind) throws -> Double,
    floor: (Int, ClosureKind) throws -> Double,
    floorName: String,
    target: Double?,
    scalingTarget: Double?
) -> [Row] {
    var rows: [Row] = []
    var perSize: [(size: Int, ours: Double, floor: Double)] = []
    let minimum = configuration.minimumTasksPerRepetition
    for size in configuration.manualSizes {
        progress("\(name), \(kind.name), \(formatCount(size))")
        do {
            let result = try compare(repetitions: configuration.repetitions) {
                try perTask(size: size, minimum: minimum) { try ours($0, kind) }
            } baseline: {
                try perTask(size: size, minimum: minimum) { try floor($0, kind) }
            }
            perSize.append((size, result.ours, result.baseline))
            rows.append(ratioRow("\(name) vs bare \(floorName); \(kind.name)", size: size, result, target: target))
        } catch {
            rows.append(.failure(name, size: formatCount(size), "\(error)"))
        }
    }
    if let first = perSize.first, let last = perSize.last, last.size > first.size {
        let ours = last.ours / first.ours
        let floor = last.floor / first.floor
        rows.append(
            Row(
                measure: "  scaling: per task at \(formatCount(last.size)) ÷ at \(formatCount(first.size))",
                size: "\(formatCount(last.size)) ÷ \(formatCount(first.size))",
                ours: String(format: "%.2f", ours),
                baseline: String(format: "%.2f (bare)", floor),
                ratio: nil,
                target: scalingTarget.map { String(format: "≤ %.2f", $0) } ?? "-",
                met: scalingTarget.map { ours <= $0 }
            )
        )
    }
    return rows
}

// MARK: - Memory bounded by pending work

/// Resident growth of a dispatcher that holds one task far in the future while it dispatches and cancels
/// `churnTasks` tasks and dispatches and runs as many, draining every 1,000.
func churnRows(_ configuration: Configuration) -> [Row] {
    let total = configuration.churnTasks
    progress("memory under churn, \(formatCount(total)) dispatch-and-cancel + \(formatCount(total)) dispatch-and-run")
    let dispatcher = ManualDispatcher()
    let counter = Counter()
    dispatcher.background(after: .seconds(1_000_000), label: "far future") {}
    func round() throws {
        for _ in 0..<1_000 { dispatcher.background { counter.value &+= 1 }.cancel() }
        for _ in 0..<1_000 { dispatcher.background { counter.value &+= 1 } }
        try dispatcher.runCurrent()
    }
    do {
        for _ in 0..<10 { try round() }  // warm up: the history fills, the queues reach their working size
        let before = residentBytes()
        for _ in 0..<(total / 1_000) { try round() }
        let growth = residentBytes() - before
        guard before > 0, dispatcher.pendingTaskCount == 1 else {
            throw BenchmarkError(description: "pending \(dispatcher.pendingTaskCount), resident \(before)")
        }
        return [
            Row(
                measure:
                    "ManualDispatcher resident growth: N dispatch-and-cancel + N dispatch-and-run, drained every 1,000, one task pending far ahead",
                size: formatCount(total),
                ours: String(format: "%.1f KiB", Double(growth) / 1_024),
                baseline: "-",
                ratio: nil,
                target: "≤ 1 MiB",
                met: growth <= 1 << 20
            )
        ]
    } catch {
        return [.failure("memory under churn", size: formatCount(total), "\(error)")]
    }
}
