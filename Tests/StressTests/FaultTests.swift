import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

extension StressTests {
    /// Faults the issue lists: dispatching from inside a drain, re-entrant runs, a dispatcher released with
    /// pending tasks, and a task that reschedules itself forever.
    @Suite struct Faults {
        // MARK: Dispatching from inside a drain

        /// A tree of tasks, each dispatching two children (background, foreground or delayed) until depth 10:
        /// a drain runs all 2,047 exactly once, the children after their parents.
        @Test func tasksThatDispatchFromInsideADrainAreAllRunExactlyOnce() async throws {
            let dispatcher = ManualDispatcher(historyLimit: 0)
            let depth = 10
            let tally = RunTally(count: (1 << (depth + 1)) - 1)
            Self.spawn(on: dispatcher, node: 0, depth: depth, tally: tally)
            let ran = try await Self.offMainActor { try dispatcher.runUntilIdle() }
            #expect(ran == (1 << (depth + 1)) - 1)
            #expect(tally.anomalies().isEmpty, "tasks that did not run exactly once (id×runs): \(tally.anomalies())")
            try dispatcher.verifyIdle()
        }

        /// `runCurrent()` runs one turn: what was pending when called, not what those tasks dispatch.
        @Test func runCurrentLeavesTasksDispatchedDuringTheTurnPending() throws {
            let dispatcher = ManualDispatcher()
            let log = Locked<[String]>([])
            for index in 0..<3 {
                dispatcher.background(label: "parent \(index)") {
                    log.withLock { $0.append("parent \(index)") }
                    dispatcher.background(label: "child \(index)") { log.withLock { $0.append("child \(index)") } }
                }
            }
            #expect(try dispatcher.runCurrent() == 3)
            #expect(log.withLock { $0 } == ["parent 0", "parent 1", "parent 2"])
            #expect(dispatcher.pendingTasks.map(\.label) == ["child 0", "child 1", "child 2"])
            #expect(try dispatcher.runCurrent() == 3)
            try dispatcher.verifyIdle()
        }

        // MARK: Re-entrant runs

        /// Every run method called from inside a running task throws `.reentrantRun` with the exact message,
        /// instead of deadlocking or corrupting the queue; the remaining tasks still run once each.
        @Test func everyRunMethodCalledFromATaskIsRejectedAndTheQueueSurvives() throws {
            let dispatcher = ManualDispatcher()
            let calls = RunMethod.allCases
            let errors = Locked<[ManualDispatcherError?]>([])
            let tally = RunTally(count: calls.count)
            var lines: [UInt] = []
            for (index, entry) in calls.enumerated() {
                lines.append(#line + 1)
                dispatcher.background(label: "outer \(index)") {
                    tally.record(index)
                    do throws(ManualDispatcherError) {
                        try entry.call(on: dispatcher)
                        errors.withLock { $0.append(nil) }
                    } catch {
                        errors.withLock { $0.append(error) }
                    }
                }
            }
            dispatcher.background(label: "bystander") {}

            #expect(try dispatcher.runUntilIdle() == calls.count + 1)
            let thrown = errors.withLock { $0 }
            try #require(thrown.count == calls.count)
            for (index, entry) in calls.enumerated() {
                let error = try #require(thrown[index], "\(entry.name) inside a task did not throw")
                #expect(error.kind == .reentrantRun)
                #expect(
                    error.summary
                        == "\(entry.name) was called while runUntilIdle() is running tasks (inside "
                        + "task #\(index + 1) background \"outer \(index)\" at StressTests/FaultTests.swift:"
                        + "\(lines[index]), ran at 0 s). A task must not run other tasks: dispatch the work instead, "
                        + "and let the test run it"
                )
            }
            #expect(tally.anomalies().isEmpty)
            #expect(dispatcher.now == .zero)
            try dispatcher.verifyIdle()
        }

        /// Thousands of re-entrant calls, from background and foreground tasks, drained from another thread
        /// while producers dispatch: all rejected, nothing lost, run once each, no deadlock.
        @Test(.timeLimit(.minutes(3))) func reentrantCallsUnderLoadAreAllRejected() async throws {
            let dispatcher = ManualDispatcher(historyLimit: 4)
            // Each rejection builds an error listing every pending task (O(n log n) under the lock), so the
            // volume stays modest: 1,000 tasks.
            let total = StressScale.scaled(1_000)
            let tally = RunTally(count: total)
            let rejections = Locked(0)
            let otherOutcomes = Locked<[String]>([])
            let producerGroup = startThreads(2, name: "producer") { thread in
                for index in stride(from: thread, to: total, by: 2) {
                    let work: @Sendable () -> Void = {
                        tally.record(index)
                        do throws(ManualDispatcherError) {
                            try dispatcher.runNext()
                            otherOutcomes.withLock { $0.append("task \(index): runNext() did not throw") }
                        } catch  where error.kind == .reentrantRun {
                            rejections.withLock { $0 += 1 }
                        } catch {
                            otherOutcomes.withLock { $0.append("task \(index): \(error.kind)") }
                        }
                    }
                    if index % 10 == 0 {
                        dispatcher.foreground { work() }
                    } else {
                        dispatcher.background(work)
                    }
                }
            }
            let producersDone = await finished(producerGroup, withinSeconds: StressDeadline.seconds)
            try #require(producersDone)
            let ran = try await Self.offMainActor { try dispatcher.runUntilIdle() }
            #expect(ran == total)
            #expect(rejections.withLock { $0 } == total)
            #expect(otherOutcomes.withLock { $0 }.isEmpty)
            #expect(tally.anomalies().isEmpty)
            try dispatcher.verifyIdle()
        }

        /// A task run by auto-drain that calls a run method is rejected the same way, naming auto-drain.
        @Test func aRunMethodCalledFromAnAutoDrainedTaskIsRejected() throws {
            let dispatcher = ManualDispatcher(mode: .autoDrain)
            let thrown = Locked<ManualDispatcherError?>(nil)
            let line: UInt = #line + 1
            dispatcher.background(label: "inner") {
                do throws(ManualDispatcherError) {
                    try dispatcher.runUntilIdle()
                } catch {
                    thrown.withLock { $0 = error }
                }
            }
            let error = try #require(thrown.withLock { $0 })
            #expect(error.kind == .reentrantRun)
            #expect(
                error.summary
                    == "runUntilIdle() was called while auto-drain is running tasks (inside task #1 "
                    + "background \"inner\" at StressTests/FaultTests.swift:\(line), ran at 0 s). A task must not run "
                    + "other tasks: dispatch the work instead, and let the test run it"
            )
            try dispatcher.verifyIdle()
        }

        // MARK: Released with pending tasks

        // Exit tests need Swift 6.2, and a platform that can spawn a process: not iOS, tvOS, watchOS or visionOS.
        #if compiler(>=6.2) && (os(macOS) || os(Linux) || os(Windows))
            /// Releasing a dispatcher that still holds a task does not crash: the process exits normally and
            /// standard error names the task, its call site and the random seed.
            @Test func aDispatcherReleasedWithPendingTasksReportsThemAndDoesNotCrash() async throws {
                let result = try #require(
                    await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                        do {
                            let dispatcher = ManualDispatcher(order: .random(seed: 42))
                            dispatcher.background(label: "orphan") {}
                            dispatcher.foreground(after: .seconds(2), label: "late") {}
                        }
                        exit(0)
                    }
                )
                let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
                #expect(
                    standardError.contains(
                        "ManualDispatcher (random order seed 42) was deinitialized with 2 pending tasks; they never "
                            + "ran. Run them with runUntilIdle() or check with verifyIdle() at the end of the test:\n"
                            + "  #1 background \"orphan\" at StressTests/FaultTests.swift:"
                    ),
                    "standard error was: \(standardError)"
                )
                #expect(standardError.contains("  #2 foreground \"late\" at StressTests/FaultTests.swift:"))
                #expect(standardError.contains(", due 2 s\n"))
            }

            /// The same while the registry itself lives on after its last check (a task the test left running keeps
            /// it, a task-local it inherited; here, a local): a check that ran takes no report.
            @Test func aDispatcherReleasedAfterItsRegistrysLastCheckReportsOnStandardError() async throws {
                let result = try #require(
                    await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                        do {
                            let registry = ManualDispatcherRegistry(recordsEveryFailure: true)
                            var dispatcher: ManualDispatcher? = registry.track { ManualDispatcher() }
                            #expect(await registry.idleFailuresOnceCancelledTasksEnd(besides: nil).isEmpty)
                            dispatcher?.background(label: "handed on") {}
                            dispatcher = nil
                        }
                        exit(0)
                    }
                )
                let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
                #expect(
                    standardError.contains("was deinitialized with 1 pending task; it never ran."),
                    "standard error was: \(standardError)")
            }

            /// A dispatcher that outlives the idle trait's registry (handed on to a later test) reports its release on
            /// standard error: no check is left to take the report.
            @Test func aDispatcherReleasedAfterItsRegistryReportsOnStandardError() async throws {
                let result = try #require(
                    await #expect(processExitsWith: .success, observing: [\.standardErrorContent]) {
                        do {
                            var dispatcher: ManualDispatcher?
                            do {
                                let registry = ManualDispatcherRegistry(recordsEveryFailure: true)
                                dispatcher = registry.track { ManualDispatcher() }
                            }
                            dispatcher?.background(label: "handed on") {}
                        }
                        exit(0)
                    }
                )
                let standardError = String(decoding: result.standardErrorContent, as: UTF8.self)
                #expect(
                    standardError.contains(
                        "ManualDispatcher was deinitialized with 1 pending task; it never ran. Run it with "
                            + "runUntilIdle() or check with verifyIdle() at the end of the test:\n"
                            + "  #1 background \"handed on\" at StressTests/FaultTests.swift:"
                    ),
                    "standard error was: \(standardError)"
                )
            }
        #endif

        // MARK: Self-rescheduling tasks

        @Test func aTaskThatReschedulesItselfAtOnceStopsRunUntilIdleAndIsNamed() throws {
            let dispatcher = ManualDispatcher(runawayLimit: 99)  // one pending at the start, plus 99
            let runs = Locked(0)
            let stopped = Locked(false)
            let line = Self.poll(on: dispatcher, every: .zero, runs: runs, until: stopped)
            let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runUntilIdle() }
            #expect(error.kind == .runawayTasks(limit: 99))
            #expect(
                error.summary
                    == "runUntilIdle() ran 100 tasks and tasks keep falling due; the tasks that keep "
                    + "coming back are \"poll\" from StressTests/FaultTests.swift:\(line) (100 of the last 100 "
                    + "runs). Stop the task that reschedules itself, or raise the dispatcher's runawayLimit if that many tasks are expected"
            )
            #expect(runs.withLock { $0 } == 100)
            // The next instance is still pending, not lost.
            #expect(dispatcher.pendingTasks.map(\.label) == ["poll"])
            #expect(error.pendingTasks.map(\.label) == ["poll"])
            try Self.stop(stopped, on: dispatcher)
        }

        @Test func aTimerThatReschedulesItselfStopsAdvanceAndIsNamed() throws {
            let dispatcher = ManualDispatcher(runawayLimit: 99)
            let runs = Locked(0)
            let stopped = Locked(false)
            let line = Self.poll(on: dispatcher, every: .seconds(1), runs: runs, until: stopped)
            let error = try #require(throws: ManualDispatcherError.self) {
                try dispatcher.advance(by: .seconds(3_600))
            }
            #expect(error.kind == .runawayTasks(limit: 99))
            #expect(
                error.summary
                    == "advance(by: 3600 s) ran 100 tasks and tasks keep falling due; the tasks that keep "
                    + "coming back are \"poll\" from StressTests/FaultTests.swift:\(line) (100 of the last 100 "
                    + "runs). Stop the task that reschedules itself, or raise the dispatcher's runawayLimit if that many tasks are expected"
            )
            #expect(runs.withLock { $0 } == 100)
            #expect(dispatcher.now == .seconds(100))
            #expect(dispatcher.pendingTasks.map(\.dueTime) == [.seconds(101)])
            // Bounded also when unbounded in time: runUntilIdle jumps the clock from timer to timer.
            let idle = try #require(throws: ManualDispatcherError.self) { try dispatcher.runUntilIdle() }
            #expect(idle.kind == .runawayTasks(limit: 99))
            #expect(
                idle.summary.contains("\"poll\" from StressTests/FaultTests.swift:\(line) (100 of the last 100 runs)"))
            #expect(dispatcher.now == .seconds(200))
            try Self.stop(stopped, on: dispatcher)
        }

        // MARK: Helpers

        /// Dispatches a task labeled `"poll"` that dispatches itself again after `interval` until `stopped` is set.
        ///
        /// - Returns: The line of the dispatch, which every error must name.
        @discardableResult
        private static func poll(
            on dispatcher: ManualDispatcher,
            every interval: Duration,
            runs: Locked<Int>,
            until stopped: Locked<Bool>
        ) -> UInt {
            let line: UInt = #line + 1
            dispatcher.background(after: interval, label: "poll") {
                runs.withLock { $0 += 1 }
                guard !stopped.withLock({ $0 }) else { return }
                Self.poll(on: dispatcher, every: interval, runs: runs, until: stopped)
            }
            return line
        }

        /// Stops the poll and runs its last instance. The pending instance holds the dispatcher through its closure:
        /// left pending, the two would keep each other alive (LeakSanitizer reports the cycle).
        private static func stop(_ stopped: Locked<Bool>, on dispatcher: ManualDispatcher) throws {
            stopped.withLock { $0 = true }
            try dispatcher.runUntilIdle()
            try dispatcher.verifyIdle()
        }

        private static func spawn(on dispatcher: ManualDispatcher, node: Int, depth: Int, tally: RunTally) {
            let work: @Sendable () -> Void = {
                tally.record(node)
                guard depth > 0 else { return }
                Self.spawn(on: dispatcher, node: 2 * node + 1, depth: depth - 1, tally: tally)
                Self.spawn(on: dispatcher, node: 2 * node + 2, depth: depth - 1, tally: tally)
            }
            switch node % 3 {
            case 0: dispatcher.background(work)
            case 1: dispatcher.foreground { work() }
            default: dispatcher.background(after: .milliseconds(node % 7), work)
            }
        }

        /// Runs `body` on a global-queue thread, so foreground tasks hop to the main queue instead of blocking it.
        private static func offMainActor<Value: Sendable>(
            _ body: @escaping @Sendable () throws -> Value
        ) async throws -> Value {
            try await withCheckedThrowingContinuation { continuation in
                DispatchQueue.global().async {
                    continuation.resume(with: Result { try body() })
                }
            }
        }
    }
}

/// The synchronous run methods, as values the re-entrancy test can list. An enum rather than stored closures:
/// a closure type with typed throws (`() throws(ManualDispatcherError) -> Void`) needs runtime metadata that
/// only macOS 15 / iOS 18 have, below the package's deployment targets.
private enum RunMethod: CaseIterable {
    case runNextBackground, runNextForeground, runNext, runCurrent, runUntilIdle, advanceBy, advanceTo
    case runUntilTaskLabeled, runUntilCondition

    /// The call as the error message names it.
    var name: String {
        switch self {
        case .runNextBackground: "runNextBackground()"
        case .runNextForeground: "runNextForeground()"
        case .runNext: "runNext()"
        case .runCurrent: "runCurrent()"
        case .runUntilIdle: "runUntilIdle()"
        case .advanceBy: "advance(by: 1 s)"
        case .advanceTo: "advance(to: 5 s)"
        case .runUntilTaskLabeled: "run(untilTaskLabeled: \"x\")"
        case .runUntilCondition: "run(until:)"
        }
    }

    /// Calls the method on `dispatcher`.
    func call(on dispatcher: ManualDispatcher) throws(ManualDispatcherError) {
        switch self {
        case .runNextBackground: try dispatcher.runNextBackground()
        case .runNextForeground: try dispatcher.runNextForeground()
        case .runNext: try dispatcher.runNext()
        case .runCurrent: try dispatcher.runCurrent()
        case .runUntilIdle: try dispatcher.runUntilIdle()
        case .advanceBy: try dispatcher.advance(by: .seconds(1))
        case .advanceTo: try dispatcher.advance(to: .seconds(5))
        case .runUntilTaskLabeled: try dispatcher.run(untilTaskLabeled: "x")
        case .runUntilCondition: try dispatcher.run(until: { false })
        }
    }
}
