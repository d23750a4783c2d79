import TaskDispatch
import TaskDispatchTesting
import Testing

/// Random scripts of tracked tasks, checked by their end state, and by the dispatcher's invariants after every step:
/// when each task's steps interleave with the others' depends on the Swift runtime, so the order of the runs is not
/// predicted here (the model-based test compares what can be predicted of it), but where they all end is.
///
/// Each task, started with `startTask`, awaits `runInBackground` and sleeps on the dispatcher's clock in a random
/// order. The async drains move the clock only when every tracked task has settled, so a task resumes at its exact
/// deadline, and the clock ends at the longest script's total sleep. After each async drain every tracked task has
/// settled; the invariants are checked while the tasks still run, too (the check takes the dispatcher's lock).
@Suite struct TrackedTaskScenarioTests {
    private enum Step: Sendable {
        case background(String)
        /// A sleep on the dispatcher's virtual clock, in nanoseconds.
        case sleep(Int64)
    }

    private struct Script: Sendable {
        var label: String
        var steps: [Step]

        var totalSleep: Int64 {
            self.steps.reduce(0) { total, step in
                if case .sleep(let nanoseconds) = step { return total + nanoseconds }
                return total
            }
        }

        var backgroundLabels: [String] {
            self.steps.compactMap { step in
                if case .background(let label) = step { return label }
                return nil
            }
        }
    }

    private static func scripts(seed: UInt64) -> [Script] {
        var generator = ModelGenerator(seed: seed)
        return (0..<1 + generator.below(4)).map { task in
            Script(
                label: "t\(task)",
                steps: (0..<1 + generator.below(5)).map { step in
                    generator.below(2) == 0
                        ? .background("t\(task).\(step)") : .sleep([0, 1, 5, 1_000][generator.below(4)])
                }
            )
        }
    }

    private static func start(_ script: Script, on dispatcher: ManualDispatcher, log: EventLog) -> Task<Void, any Error>
    {
        dispatcher.startTask(label: script.label) {
            for step in script.steps {
                switch step {
                case .background(let label):
                    try await dispatcher.runInBackground(label: label) { log.record(label) }
                case .sleep(let nanoseconds):
                    try await dispatcher.clock.sleep(for: .nanoseconds(nanoseconds))
                }
            }
        }
    }

    /// Starts each script, checking the invariants after each start.
    private static func start(
        _ scripts: [Script],
        on dispatcher: ManualDispatcher,
        log: EventLog
    ) -> [Task<Void, any Error>] {
        var tasks: [Task<Void, any Error>] = []
        for script in scripts {
            tasks.append(Self.start(script, on: dispatcher, log: log))
            dispatcher.checkInvariants()
        }
        return tasks
    }

    /// Checks the end state: every task finished, each ran its background steps in its own order, and nothing is
    /// left pending.
    private static func checkEnd(
        _ scripts: [Script],
        _ tasks: [Task<Void, any Error>],
        on dispatcher: ManualDispatcher,
        log: EventLog,
        seed: UInt64
    ) async throws {
        for task in tasks {
            try await dispatcher.value(of: task)
            dispatcher.checkInvariants()
        }
        #expect(dispatcher.unfinishedTaskCount == 0, "seed \(seed)")
        try dispatcher.verifyIdle()
        let events = log.events
        #expect(events.sorted() == scripts.flatMap(\.backgroundLabels).sorted(), "seed \(seed)")
        for script in scripts {
            #expect(events.filter { $0.hasPrefix("\(script.label).") } == script.backgroundLabels, "seed \(seed)")
        }
    }

    @Test func oneAsyncDrainEndsAtTheLongestScriptsTotalSleep() async throws {
        for seed in UInt64(0)..<60 {
            let scripts = Self.scripts(seed: seed)
            let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
            let log = EventLog()
            let tasks = Self.start(scripts, on: dispatcher, log: log)
            try await dispatcher.runUntilIdle()
            dispatcher.checkInvariants()
            #expect(dispatcher.unsettledTaskCount == 0, "seed \(seed)")
            #expect(dispatcher.now == .nanoseconds(scripts.map(\.totalSleep).max() ?? 0), "seed \(seed)")
            try await Self.checkEnd(scripts, tasks, on: dispatcher, log: log, seed: seed)
        }
    }

    @Test func smallAsyncAdvancesEndWhereTheyMovedTheClock() async throws {
        for seed in UInt64(1_000)..<1_060 {
            let scripts = Self.scripts(seed: seed)
            let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
            let log = EventLog()
            let tasks = Self.start(scripts, on: dispatcher, log: log)
            var generator = ModelGenerator(seed: seed)
            var advanced: Int64 = 0
            let end = scripts.map(\.totalSleep).max() ?? 0
            repeat {
                let step = Int64(generator.below(4) * 2)
                try await dispatcher.advance(by: .nanoseconds(step))
                dispatcher.checkInvariants()
                #expect(dispatcher.unsettledTaskCount == 0, "seed \(seed)")
                advanced += step
            } while advanced < end
            try await dispatcher.runUntilIdle()  // the steps after the last sleep; no timer is left to move the clock
            dispatcher.checkInvariants()
            #expect(dispatcher.now == .nanoseconds(advanced), "seed \(seed)")
            try await Self.checkEnd(scripts, tasks, on: dispatcher, log: log, seed: seed)
        }
    }
}
