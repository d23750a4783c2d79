import Foundation
import TaskDispatch
import TaskDispatchTesting

/// `verifyIdle` and `pendingTasks` on many pending tasks, against the cost of dispatching them.
func listingRows(_ configuration: Configuration) -> [Row] {
    let size = configuration.listingTasks
    var verifyTimes: [Double] = []
    var listingTimes: [Double] = []
    var dispatchTimes: [Double] = []
    progress("verifyIdle and pendingTasks, \(formatCount(size))")
    do {
        for _ in 0..<configuration.repetitions {
            let dispatcher = ManualDispatcher()
            let counter = Counter()
            dispatchTimes.append(
                time {
                    for _ in 0..<size { dispatcher.background(label: "task") { counter.value &+= 1 } }
                }
            )
            var failure: ManualDispatcherError?
            verifyTimes.append(
                time {
                    do { try dispatcher.verifyIdle() } catch { failure = error as? ManualDispatcherError }
                }
            )
            guard let failure, failure.pendingTaskCount == size, failure.pendingTasks.count == 50 else {
                throw BenchmarkError(
                    description: "verifyIdle did not count \(size) pending tasks and list the first 50")
            }
            var listed = 0
            listingTimes.append(time { listed = dispatcher.pendingTasks.count })
            guard listed == size else { throw BenchmarkError(description: "pendingTasks listed \(listed)") }
            try dispatcher.runUntilIdle()
        }
    } catch {
        return [.failure("verifyIdle / pendingTasks", size: formatCount(size), "\(error)")]
    }
    let dispatchPerTask = median(dispatchTimes) / Double(size)
    func row(_ measure: String, _ times: [Double]) -> Row {
        let total = median(times)
        let perTask = total / Double(size)
        return Row(
            measure: measure,
            size: formatCount(size),
            ours: "\(formatNanoseconds(total)) (\(formatNanoseconds(perTask))/task)",
            baseline: formatNanoseconds(dispatchPerTask) + "/task (dispatch)",
            ratio: perTask / dispatchPerTask,
            target: "-",
            met: nil
        )
    }
    return [
        row("ManualDispatcher.verifyIdle() throwing, vs dispatching the tasks", verifyTimes),
        row("ManualDispatcher.pendingTasks listing, vs dispatching the tasks", listingTimes),
    ]
}

/// Resident memory per pending task whose closure captures nothing, against the bare FIFO.
func memoryRows(_ configuration: Configuration) -> [Row] {
    let size = configuration.memoryTasks
    progress("memory, \(formatCount(size)) pending tasks")

    let fifo = BareFIFO()
    let fifoBefore = residentBytes()
    for _ in 0..<size { fifo.dispatch {} }
    let fifoBytes = Double(residentBytes() - fifoBefore) / Double(size)
    fifo.runAll()

    let dispatcher = ManualDispatcher()
    let before = residentBytes()
    for _ in 0..<size { dispatcher.background {} }
    let after = residentBytes()
    let bytes = Double(after - before) / Double(size)
    var ran = 0
    do { ran = try dispatcher.runUntilIdle() } catch {
        return [.failure("memory", size: formatCount(size), "\(error)")]
    }
    guard before > 0, ran == size else {
        return [.failure("memory", size: formatCount(size), "could not read the resident size")]
    }
    return [
        Row(
            measure: "ManualDispatcher memory per pending task (closure captures nothing), vs bare FIFO",
            size: formatCount(size),
            ours: String(format: "%.0f B/task", bytes),
            baseline: String(format: "%.0f B/task", fifoBytes),
            ratio: bytes / fifoBytes,
            target: "≤ 96 B",
            met: bytes <= 96
        )
    ]
}
