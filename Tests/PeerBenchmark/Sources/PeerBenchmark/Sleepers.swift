import Clocks
import ConcurrencyExtras
import TaskDispatchTesting

/// `count` tasks that each sleep a second on a `TestClock`, woken by one `advance`, on the main serial executor.
@MainActor
func sleepersOnTestClock(_ count: Int) async throws -> Double {
    let counter = Counter()
    let elapsed = try await timeAsync {
        try await withMainSerialExecutor {
            let clock = TestClock()
            let tasks = (0..<count).map { _ in
                Task {
                    try await clock.sleep(for: .seconds(1))
                    counter.value += 1
                }
            }
            await clock.advance(by: .seconds(1))
            for task in tasks { try await task.value }
        }
    }
    try check(counter, count, "TestClock")
    return elapsed
}

/// The same sleepers as tracked tasks on a `ManualDispatcher`'s clock, woken by one async `advance`.
@MainActor
func sleepersOnManualDispatcher(_ count: Int) async throws -> Double {
    let counter = Counter()
    let dispatcher = ManualDispatcher()
    let elapsed = try await timeAsync {
        for _ in 0..<count {
            dispatcher.startTask {
                try await dispatcher.clock.sleep(for: .seconds(1))
                counter.value += 1
            }
        }
        try await dispatcher.advance(by: .seconds(1))
    }
    try check(counter, count, "ManualDispatcher")
    try dispatcher.verifyIdle()
    return elapsed
}

@MainActor
func sleeperTable(_ configuration: Configuration) async throws {
    var rows: [[String]] = []
    for count in configuration.sleepers {
        let results = try await compare(
            [
                ("TestClock", { try await sleepersOnTestClock(count) }),
                ("ManualDispatcher", { try await sleepersOnManualDispatcher(count) }),
            ], units: count, repetitions: configuration.repetitions)
        rows.append([
            "\(count)", format(results[0].nanoseconds), format(results[1].nanoseconds),
            ratio(results[1].nanoseconds, results[0].nanoseconds),
        ])
    }
    printTable(
        "Sleepers woken by one advance, ns a sleeper (median of \(configuration.repetitions))",
        ["sleepers", "TestClock + withMainSerialExecutor", "ManualDispatcher", "ManualDispatcher / TestClock"], rows)
}
