import Clocks
import ConcurrencyExtras
import TaskDispatchTesting

/// How a model starts its work: `Task { }` in Point-Free's way, `dispatcher.startTask { }` in TaskDispatch's.
typealias Spawn =
    @MainActor (_ operation: @escaping @MainActor @Sendable () async throws -> Void) -> Task<
        Void, any Error
    >

/// One model for every scenario, written once; each way of testing injects its clock and its way to start a task.
@MainActor
final class ScenarioModel {
    private let clock: any Clock<Duration>
    private let spawn: Spawn
    private let cache: Cache
    private(set) var isLoading = false
    private(set) var value: String?
    private(set) var error: String?
    private(set) var searches: [String] = []
    private(set) var ticks = 0
    private var search: Task<Void, any Error>?

    init(clock: any Clock<Duration>, spawn: @escaping Spawn) {
        self.clock = clock
        self.spawn = spawn
        self.cache = Cache(store: Store(clock: clock))
    }

    /// A spinner while loading: one fetch that takes a second.
    @discardableResult
    func load() -> Task<Void, any Error> {
        self.isLoading = true
        return self.spawn { [clock] in
            defer { self.isLoading = false }
            try await clock.sleep(for: .seconds(1))
            self.value = "loaded"
        }
    }

    /// The error path: a fetch that fails after a second.
    @discardableResult
    func loadFailing() -> Task<Void, any Error> {
        self.spawn { [clock] in
            do {
                try await clock.sleep(for: .seconds(1))
                throw BenchmarkError(description: "offline")
            } catch let error as BenchmarkError {
                self.error = error.description
            }
        }
    }

    /// Debounce: a search runs 300 ms after the last keystroke.
    func type(_ query: String) {
        self.search?.cancel()
        self.search = self.spawn { [clock] in
            try await clock.sleep(for: .milliseconds(300))
            self.searches.append(query)
        }
    }

    /// A timer: a tick a second until cancelled.
    func startTimer() -> Task<Void, any Error> {
        self.spawn { [clock] in
            while true {
                try await clock.sleep(for: .seconds(1))
                self.ticks += 1
            }
        }
    }

    /// A chain of actor calls, with a 50 ms fetch at its end.
    @discardableResult
    func refresh() -> Task<Void, any Error> {
        self.spawn { [cache] in
            self.value = "\(try await cache.value())"
        }
    }
}

actor Store {
    let clock: any Clock<Duration>

    init(clock: any Clock<Duration>) { self.clock = clock }

    func load() async throws -> Int {
        try await self.clock.sleep(for: .milliseconds(50))
        return 42
    }
}

actor Cache {
    let store: Store
    private var cached: Int?

    init(store: Store) { self.store = store }

    func value() async throws -> Int {
        if let cached { return cached }
        let value = try await self.store.load() + 1
        self.cached = value
        return value
    }
}

func expect(_ condition: Bool, _ what: String) throws {
    guard condition else { throw BenchmarkError(description: "scenario check failed: \(what)") }
}

/// A scenario's test, written once per way of testing.
struct Scenario {
    let name: String
    let pointFree: @MainActor () async throws -> Void
    let taskDispatch: @MainActor () async throws -> Void
}

@MainActor
func pointFreeModel(_ clock: TestClock<Duration>) -> ScenarioModel {
    ScenarioModel(clock: clock) { operation in Task { try await operation() } }
}

@MainActor
func taskDispatchModel(_ dispatcher: ManualDispatcher) -> ScenarioModel {
    ScenarioModel(clock: dispatcher.clock) { operation in dispatcher.startTask { try await operation() } }
}

@MainActor
let scenarios: [Scenario] = [
    Scenario(
        name: "spinner while loading",
        pointFree: {
            try await withMainSerialExecutor {
                let clock = TestClock()
                let model = pointFreeModel(clock)
                model.load()
                try expect(model.isLoading, "loading")
                await clock.advance(by: .seconds(1))
                try expect(model.value == "loaded" && !model.isLoading, "loaded")
            }
        },
        taskDispatch: {
            let dispatcher = ManualDispatcher()
            let model = taskDispatchModel(dispatcher)
            model.load()
            try expect(model.isLoading, "loading")
            try await dispatcher.advance(by: .seconds(1))
            try expect(model.value == "loaded" && !model.isLoading, "loaded")
            try dispatcher.verifyIdle()
        }),
    Scenario(
        name: "error path",
        pointFree: {
            try await withMainSerialExecutor {
                let clock = TestClock()
                let model = pointFreeModel(clock)
                model.loadFailing()
                await clock.advance(by: .seconds(1))
                try expect(model.error == "offline", "error shown")
            }
        },
        taskDispatch: {
            let dispatcher = ManualDispatcher()
            let model = taskDispatchModel(dispatcher)
            model.loadFailing()
            try await dispatcher.advance(by: .seconds(1))
            try expect(model.error == "offline", "error shown")
            try dispatcher.verifyIdle()
        }),
    Scenario(
        name: "debounce",
        pointFree: {
            try await withMainSerialExecutor {
                let clock = TestClock()
                let model = pointFreeModel(clock)
                model.type("a")
                await clock.advance(by: .milliseconds(100))
                model.type("ab")
                await clock.advance(by: .milliseconds(300))
                try expect(model.searches == ["ab"], "one search, for the last query")
            }
        },
        taskDispatch: {
            let dispatcher = ManualDispatcher()
            let model = taskDispatchModel(dispatcher)
            model.type("a")
            try await dispatcher.advance(by: .milliseconds(100))
            model.type("ab")
            try await dispatcher.advance(by: .milliseconds(300))
            try expect(model.searches == ["ab"], "one search, for the last query")
            try dispatcher.verifyIdle()
        }),
    Scenario(
        name: "timer",
        pointFree: {
            try await withMainSerialExecutor {
                let clock = TestClock()
                let model = pointFreeModel(clock)
                let timer = model.startTimer()
                await clock.advance(by: .seconds(3))
                try expect(model.ticks == 3, "three ticks")
                timer.cancel()
                _ = await timer.result
            }
        },
        taskDispatch: {
            let dispatcher = ManualDispatcher()
            let model = taskDispatchModel(dispatcher)
            let timer = model.startTimer()
            try await dispatcher.advance(by: .seconds(3))
            try expect(model.ticks == 3, "three ticks")
            timer.cancel()
            try await dispatcher.settle()
            try dispatcher.verifyIdle()
        }),
    Scenario(
        name: "actor chain",
        pointFree: {
            try await withMainSerialExecutor {
                let clock = TestClock()
                let model = pointFreeModel(clock)
                model.refresh()
                await clock.advance(by: .milliseconds(50))
                try expect(model.value == "43", "value through two actors")
            }
        },
        taskDispatch: {
            let dispatcher = ManualDispatcher()
            let model = taskDispatchModel(dispatcher)
            model.refresh()
            try await dispatcher.advance(by: .milliseconds(50))
            try expect(model.value == "43", "value through two actors")
            try dispatcher.verifyIdle()
        }),
]

@MainActor
func scenarioTable(_ configuration: Configuration) async throws {
    var rows: [[String]] = []
    for scenario in scenarios {
        let results = try await compare(
            [
                ("Point-Free", { try await runCases(configuration.cases, scenario.pointFree) }),
                ("TaskDispatch", { try await runCases(configuration.cases, scenario.taskDispatch) }),
            ], units: configuration.cases, repetitions: configuration.repetitions)
        let (pointFree, taskDispatch) = (results[0].nanoseconds / 1_000, results[1].nanoseconds / 1_000)
        rows.append([scenario.name, format(pointFree), format(taskDispatch), ratio(taskDispatch, pointFree)])
    }
    printTable(
        "An app scenario's test, run serially, µs a case (\(configuration.cases) cases, median of \(configuration.repetitions))",
        ["scenario", "TestClock + withMainSerialExecutor", "ManualDispatcher", "ManualDispatcher / TestClock"], rows)
}

@MainActor
func runCases(_ count: Int, _ test: @MainActor () async throws -> Void) async throws -> Double {
    try await timeAsync {
        for _ in 0..<count { try await test() }
    }
}

/// The first scenario (a spinner while loading), `cases` times one way, for a profiler such as `perf stat -e
/// context-switches`.
@MainActor
func profileScenario(pointFree: Bool, cases: Int) async throws {
    let scenario = scenarios[0]
    let seconds = try await runCases(cases, pointFree ? scenario.pointFree : scenario.taskDispatch)
    print(
        "\(scenario.name), \(pointFree ? "Point-Free's way" : "TaskDispatch"): \(format(seconds / Double(cases) * 1e6)) µs a case"
    )
}
