import Dispatch
import TaskDispatch
import TaskDispatchTesting

// MARK: - Tracked tasks and the task executor against a plain Task

/// Starts `count` tasks with `start` (each leaves `group` when its operation ran), drives them with `drive`, and
/// waits until all have finished.
///
/// - Returns: Nanoseconds per task, from the first start to the last finish.
func taskThroughput(
    count: Int,
    timeout: Double,
    start: (DispatchGroup) -> Void,
    drive: () throws -> Void = {}
) throws -> Double {
    let group = DispatchGroup()
    let begin = nowNanoseconds()
    for _ in 0..<count {
        group.enter()
        start(group)
    }
    try drive()
    guard group.wait(timeout: .now() + timeout) == .success else {
        throw BenchmarkError(description: "timed out after \(Int(timeout)) s")
    }
    return Double(nowNanoseconds() - begin) / Double(count)
}

/// Information rows (no target): what a tracked task costs from start to finish, and what one job on
/// `ManualDispatcher.taskExecutor` costs, against a plain `Task` on the global concurrent executor, in the same run.
///
/// The tracked side includes its start task, run on this thread, and its operation on the global executor with the
/// dispatcher's records of its start and end; the baseline runs on the runtime's thread pool.
func trackedTaskRows(_ configuration: Configuration) -> [Row] {
    var rows: [Row] = []
    let count = configuration.dispatchTasks
    let timeout = configuration.batchTimeout
    let repetitions = configuration.repetitions
    let plainTask = {
        try taskThroughput(count: count, timeout: timeout) { group in Task { group.leave() } }
    }

    progress("tracked task start to finish")
    do {
        let result = try compare(repetitions: repetitions) {
            let dispatcher = ManualDispatcher(historyLimit: 0)
            return try taskThroughput(count: count, timeout: timeout) { group in
                dispatcher.startTask { group.leave() }
            } drive: {
                // The starts; each operation then runs on the global executor and leaves the group.
                try dispatcher.runCurrent()
            }
        } baseline: {
            try plainTask()
        }
        rows.append(
            ratioRow(
                "ManualDispatcher.startTask + runCurrent vs Task { } (start to finish)", size: count, result,
                target: nil))
    } catch {
        rows.append(.failure("ManualDispatcher.startTask", size: formatCount(count), "\(error)"))
    }

    guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return rows }
    progress("task executor job")
    do {
        let result = try compare(repetitions: repetitions) {
            let dispatcher = ManualDispatcher(historyLimit: 0)
            let executor = dispatcher.taskExecutor
            return try taskThroughput(count: count, timeout: timeout) { group in
                Task(executorPreference: executor) { group.leave() }
            } drive: {
                try dispatcher.runUntilIdle()
            }
        } baseline: {
            try plainTask()
        }
        rows.append(
            ratioRow(
                "Task(executorPreference: ManualDispatcher.taskExecutor) + runUntilIdle vs Task { }", size: count,
                result, target: nil))
    } catch {
        rows.append(.failure("ManualDispatcher.taskExecutor", size: formatCount(count), "\(error)"))
    }
    return rows
}
