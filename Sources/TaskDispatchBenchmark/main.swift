// The TaskDispatch benchmark: `swift run -c release task-dispatch-benchmark [--quick | --full]`.
//
// The measurements run on a background thread while the main thread drains the main queue (dispatchMain),
// so foreground dispatch can be compared with `DispatchQueue.main.async`. Every wait is bounded, and a
// watchdog ends the process, so the benchmark never hangs CI. Timing never changes the exit status.
import Dispatch
import Foundation
import TaskDispatch

#if canImport(Darwin)
    import Darwin
#elseif canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#endif

func progress(_ message: String) {
    FileHandle.standardError.write(Data("… \(message)\n".utf8))
}

let usage = """
    usage: task-dispatch-benchmark [--quick | --full] [--tracked | --series]
      --quick  a few seconds: fewer tasks and repetitions, sizes up to 100,000 (the default; CI runs it)
      --full   a minute or two: sizes up to 1,000,000, median of 5 repetitions (31 for production dispatchers and the
               thread-pool rows of --tracked, 21 for the ManualDispatcher rows of --series)
      --tracked  only the tracked-task and async-model rows
      --series  only the repeating-work and dispatch-scope rows (1.1)
      --profile  only the ManualDispatcher hot paths, once, for valgrind --tool=callgrind
      --profile-series  only 100,000 series ticks and a chain of 100,000 delayed tasks, once, for the same
      --profile-scope  only 100,000 dispatch-and-runs through a DispatchScope, 100,000 direct and 100,000 through the
                       least scope, once, for the same
      --profile-auto-drain  only 100,000 dispatches in auto-drain, once, for the same
      --profile-tracked  only 10,000 tracked tasks from start to finish, once, for the same
      --profile-plain  only 10,000 plain Tasks, the tracked-task row's baseline, once, for the same
      --profile-floor  only 10,000 held tasks with the runtime pieces of a tracked task and no dispatcher, once, for the same
      --profile-floor-start  the same, each task's start a pending task on a ManualDispatcher, run by runCurrent()
      --profile-queue-scope  only 100 batches of 10,000 background tasks through a DispatchScope over a
                             QueueDispatcher, as the scope row runs them, for perf (callgrind serializes the threads)
      --profile-queue-direct  the same straight to the QueueDispatcher
    """

/// Runs one profiling workload and ends the process: 0 when it finished, 1 (with the error) when it did not.
func profileOnce(_ workload: () throws -> Void) -> Never {
    do {
        try workload()
    } catch {
        FileHandle.standardError.write(Data("\(error)\n".utf8))
        exit(1)
    }
    exit(0)
}

var configuration = Configuration.quick
var onlyTracked = false
var onlySeries = false
for argument in CommandLine.arguments.dropFirst() {
    switch argument {
    case "--quick": configuration = .quick
    case "--full": configuration = .full
    case "--tracked": onlyTracked = true
    case "--series": onlySeries = true
    case "--profile":
        // One ManualDispatcher run of 100,000 immediate tasks and 100,000 delayed ones, nothing else: for
        // `valgrind --tool=callgrind`, which counts instructions repeatably.
        _ = try? manualImmediate(100_000)
        _ = try? manualDelayed(randomDelays(100_000))
        exit(0)
    case "--profile-series":
        // 100,000 ticks of one series, then a chain of 100,000 delayed dispatches, each run by advance(by:): for the same.
        profileOnce {
            _ = try manualTicks(100_000)
            _ = try manualDelayedChain(100_000)
        }
    case "--profile-scope":
        // 100,000 dispatch-and-runs through a DispatchScope, then 100,000 direct ones: for the same.
        profileOnce {
            _ = try manualDispatchAndRun(100_000, through: .scope)
            _ = try manualDispatchAndRun(100_000, through: .direct)
            _ = try manualDispatchAndRun(100_000, through: .leastScope)
        }
    case "--profile-queue-scope", "--profile-queue-direct":
        // 100 batches of 10,000 background tasks through a DispatchScope over a QueueDispatcher, or straight to it:
        // for `perf`, which sees the threads that callgrind serializes.
        profileOnce {
            let direct = QueueDispatcher()
            let target: any TaskDispatcher = argument == "--profile-queue-scope" ? DispatchScope(direct) : direct
            for _ in 0..<100 {
                _ = try throughput(count: 10_000, timeout: 120) { group in target.background { group.leave() } }
            }
        }
    case "--profile-auto-drain":
        // 100,000 dispatches in auto-drain, each run inside its dispatch, once: for the same.
        profileOnce { _ = try manualAutoDrain(100_000, .nonAllocating) }
    case "--profile-tracked":
        // The tracked-task row's work, once: 10,000 `startTask` calls, their starts, and their operations.
        profileOnce { try profileTrackedTasks(10_000) }
    case "--profile-plain":
        // Its baseline, once: 10,000 plain `Task`s.
        profileOnce { _ = try plainTasks(10_000, timeout: 120) }
    case "--profile-floor":
        // The floor with the runtime pieces, once: what any design that keeps a tracked task's guarantees pays.
        profileOnce {
            if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
                _ = try heldTasksWithTheRuntimePieces(10_000, timeout: 120)
            }
        }
    case "--profile-floor-start":
        // The same with the documented start: each task's start a pending task that `runCurrent()` runs.
        profileOnce {
            if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
                _ = try heldTasksWithPendingStarts(10_000, timeout: 120)
            }
        }
    case "-h", "--help":
        print(usage)
        exit(0)
    default:
        FileHandle.standardError.write(Data("unknown argument \(argument)\n\(usage)\n".utf8))
        exit(2)
    }
}

let selected = configuration
let selectedOnlyTracked = onlyTracked
let selectedOnlySeries = onlySeries
let watchdogSeconds = selected.name == "full" ? 1_500.0 : 110.0
DispatchQueue.global().asyncAfter(deadline: .now() + watchdogSeconds) {
    FileHandle.standardError.write(Data("watchdog: the benchmark took over \(Int(watchdogSeconds)) s; stopping\n".utf8))
    exit(0)
}

let worker = Thread {
    let started = nowNanoseconds()
    print("TaskDispatch benchmark, \(selected.name) mode")
    print(machineDescription())
    print("")
    var rows: [Row] = []
    if selectedOnlyTracked {
        rows += trackedTaskRows(selected)
    } else if selectedOnlySeries {
        rows += seriesRows(selected)
    } else {
        rows += memoryRows(selected)
        rows += productionRows(selected)
        rows += manualRows(selected)
        rows += trackedTaskRows(selected)
        rows += churnRows(selected)
        rows += seriesRows(selected)
        rows += listingRows(selected)
    }
    print("")
    printTable(rows)
    print("")
    let seconds = Double(nowNanoseconds() - started) / 1e9
    let missed = rows.filter { $0.met == false }.count
    print(
        String(
            format:
                "%d rows, %d targets not met; ran %.1f s. ours and baseline: medians of %d alternating repetitions (%d for the production dispatchers and the tracked-task rows on the thread pool, %d for the ManualDispatcher rows of --series); ratio: the median of ours ÷ baseline over the back-to-back pairs.",
            rows.count, missed, seconds, selected.repetitions, selected.productionRepetitions,
            selected.seriesRepetitions
        )
    )
    exit(0)
}
worker.stackSize = 16 << 20
worker.start()
dispatchMain()
