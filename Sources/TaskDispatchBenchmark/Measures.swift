import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting

/// How much to measure.
struct Configuration {
    var name: String
    var repetitions: Int
    /// Repetitions of each production comparison: more and shorter than elsewhere, because a thread-pool
    /// throughput swings with everything else the machine runs, and a median of many alternating pairs
    /// resists that better than a median of a few.
    var productionRepetitions: Int
    /// Repetitions of the repeating-work and scope comparisons on `ManualDispatcher`: their targets sit within a
    /// tenth or two of the ratio, which a median of a few pairs does not resolve on a shared machine.
    var seriesRepetitions: Int
    /// Tasks per repetition for the Dispatch comparisons.
    var dispatchTasks: Int
    /// Tasks per repetition for the OperationQueue comparison (an operation costs several microseconds).
    var operationTasks: Int
    var operationWidths: [Int]
    var manualSizes: [Int]
    /// At least this many tasks per repetition at small sizes: several fresh dispatchers, times summed.
    var minimumTasksPerRepetition: Int
    var memoryTasks: Int
    /// Dispatch-and-cancel cycles, and as many dispatch-and-run cycles, for the resident-growth row.
    var churnTasks: Int
    var listingTasks: Int
    /// Cases of the 3-await main-actor model per repetition.
    var modelCases: Int = 2_000
    /// Longest wait for one batch of production tasks before it counts as failed.
    var batchTimeout: Double

    static let quick = Configuration(
        name: "quick", repetitions: 3, productionRepetitions: 31, seriesRepetitions: 15, dispatchTasks: 10_000,
        operationTasks: 2_000,
        operationWidths: [3],
        manualSizes: [1_000, 10_000, 100_000], minimumTasksPerRepetition: 20_000, memoryTasks: 1_000_000,
        churnTasks: 1_000_000, listingTasks: 100_000, batchTimeout: 20
    )

    static let full = Configuration(
        name: "full", repetitions: 5, productionRepetitions: 31, seriesRepetitions: 21, dispatchTasks: 100_000,
        operationTasks: 20_000,
        operationWidths: [1, 3],
        manualSizes: [1_000, 10_000, 100_000, 1_000_000], minimumTasksPerRepetition: 200_000,
        memoryTasks: 1_000_000, churnTasks: 10_000_000, listingTasks: 100_000, batchTimeout: 120
    )
}

struct BenchmarkError: Error, CustomStringConvertible {
    var description: String
}

/// The outcome of ``compare(repetitions:ours:baseline:)``, in nanoseconds per task.
struct Comparison {
    /// The median of `ours`' repetitions.
    var ours: Double
    /// The median of the baseline's repetitions.
    var baseline: Double
    /// The median over the repetitions of ours ÷ baseline measured back to back: a load that comes and goes
    /// slows both halves of a pair alike, where it can move the two medians apart.
    var ratio: Double
}

/// Runs `ours` and `baseline` alternately (which goes first alternates too), after one warm-up each.
func compare(
    repetitions: Int,
    ours: () throws -> Double,
    baseline: () throws -> Double
) throws -> Comparison {
    _ = try ours()
    _ = try baseline()
    var oursTimes: [Double] = []
    var baselineTimes: [Double] = []
    for repetition in 0..<repetitions {
        if repetition % 2 == 0 {
            baselineTimes.append(try baseline())
            oursTimes.append(try ours())
        } else {
            oursTimes.append(try ours())
            baselineTimes.append(try baseline())
        }
    }
    let ratios = zip(oursTimes, baselineTimes).map { $0 / $1 }
    return Comparison(ours: median(oursTimes), baseline: median(baselineTimes), ratio: median(ratios))
}

/// A row comparing two per-task costs against a ratio target.
func ratioRow(
    _ measure: String,
    size: Int,
    _ result: Comparison,
    target: Double?
) -> Row {
    let ratio = result.ratio
    return Row(
        measure: measure,
        size: formatCount(size),
        ours: formatNanoseconds(result.ours) + "/task",
        baseline: formatNanoseconds(result.baseline) + "/task",
        ratio: ratio,
        target: target.map { String(format: "≤ %.2f×", $0) } ?? "-",
        met: target.map { ratio <= $0 }
    )
}

// MARK: - Production dispatchers

/// Enqueues `count` tasks with `enqueue` (each leaves `group` when it runs) and waits until all have run.
///
/// - Returns: Nanoseconds per task, enqueue and execution included.
func throughput(count: Int, timeout: Double, _ enqueue: (DispatchGroup) -> Void) throws -> Double {
    let group = DispatchGroup()
    let start = nowNanoseconds()
    for _ in 0..<count {
        group.enter()
        enqueue(group)
    }
    guard group.wait(timeout: .now() + timeout) == .success else {
        throw BenchmarkError(description: "timed out after \(Int(timeout)) s")
    }
    return Double(nowNanoseconds() - start) / Double(count)
}

func productionRows(_ configuration: Configuration) -> [Row] {
    var rows: [Row] = []
    let count = configuration.dispatchTasks
    let timeout = configuration.batchTimeout
    let repetitions = configuration.productionRepetitions
    let dispatcher = QueueDispatcher()

    progress("QueueDispatcher background")
    do {
        let result = try compare(repetitions: repetitions) {
            try throughput(count: count, timeout: timeout) { group in dispatcher.background { group.leave() } }
        } baseline: {
            try throughput(count: count, timeout: timeout) { group in DispatchQueue.global().async { group.leave() } }
        }
        rows.append(
            ratioRow("QueueDispatcher.background vs DispatchQueue.global().async", size: count, result, target: 1.10))
    } catch {
        rows.append(.failure("QueueDispatcher.background", size: formatCount(count), "\(error)"))
    }

    // Information: the same raw call with a `DispatchGroup` round trip per task, which is how the dispatcher
    // used to track outstanding background work (it now uses one atomic counter).
    progress("QueueDispatcher background vs a DispatchGroup round trip")
    do {
        let tracking = DispatchGroup()
        let result = try compare(repetitions: repetitions) {
            try throughput(count: count, timeout: timeout) { group in dispatcher.background { group.leave() } }
        } baseline: {
            try throughput(count: count, timeout: timeout) { group in
                DispatchQueue.global().async(group: tracking) { group.leave() }
            }
        }
        rows.append(
            ratioRow(
                "QueueDispatcher.background vs DispatchQueue.global().async(group:)", size: count, result, target: nil))
    } catch {
        rows.append(.failure("QueueDispatcher.background vs async(group:)", size: formatCount(count), "\(error)"))
    }

    progress("QueueDispatcher foreground")
    do {
        let result = try compare(repetitions: repetitions) {
            try throughput(count: count, timeout: timeout) { group in dispatcher.foreground { group.leave() } }
        } baseline: {
            try throughput(count: count, timeout: timeout) { group in DispatchQueue.main.async { group.leave() } }
        }
        rows.append(
            ratioRow("QueueDispatcher.foreground vs DispatchQueue.main.async", size: count, result, target: 1.10))
    } catch {
        rows.append(.failure("QueueDispatcher.foreground", size: formatCount(count), "\(error)"))
    }

    for width in configuration.operationWidths {
        progress("OperationQueueDispatcher width \(width)")
        let operationCount = configuration.operationTasks
        do {
            let ours = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: width)
            let raw = OperationQueue()
            raw.maxConcurrentOperationCount = width
            let result = try compare(repetitions: repetitions) {
                try throughput(count: operationCount, timeout: timeout) { group in ours.background { group.leave() } }
            } baseline: {
                try throughput(count: operationCount, timeout: timeout) { group in raw.addOperation { group.leave() } }
            }
            rows.append(
                ratioRow(
                    "OperationQueueDispatcher vs OperationQueue.addOperation, width \(width)",
                    size: operationCount,
                    result,
                    target: 1.10
                )
            )
        } catch {
            rows.append(
                .failure("OperationQueueDispatcher, width \(width)", size: formatCount(operationCount), "\(error)"))
        }
    }
    return rows
}
