import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct ManualDispatcherAutoDrainTests {
    @Test func aDispatchRunsTheTaskAtOnce() {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let log = EventLog()
        dispatcher.background { log.record("ran") }
        #expect(log.events == ["ran"])
        #expect(dispatcher.pendingTaskCount == 0)
    }

    @Test func tasksDispatchedByARunningTaskRunAfterItInOrderNeverNested() {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let log = EventLog()
        dispatcher.background(label: "outer") {
            log.record("outer start")
            dispatcher.background(label: "child 1") {
                log.record("child 1")
                dispatcher.background(label: "grandchild") { log.record("grandchild") }
            }
            dispatcher.background(label: "child 2") { log.record("child 2") }
            log.record("outer end")
        }
        #expect(log.events == ["outer start", "outer end", "child 1", "child 2", "grandchild"])
    }

    @Test @MainActor func foregroundTasksRunInlineOnTheMainActor() {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let model = MainActorModel()
        dispatcher.background(label: "parse") {
            dispatcher.foreground(label: "deliver") { model.items.append("items") }
        }
        #expect(model.items == ["items"])
    }

    @Test func aForegroundTaskDispatchedOffTheMainActorRunsOnTheMainActorBeforeDispatchReturns() {
        // Documented behaviour: the dispatching thread waits (DispatchQueue.main.sync) while the task runs
        // on the main actor, so auto-drain stays "at once" from any thread.
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let log = EventLog()
        #expect(!MainQueueProbe.isOnMainQueue)
        dispatcher.foreground { log.record(MainQueueProbe.isOnMainQueue ? "on main" : "off main") }
        #expect(log.events == ["on main"])
    }

    @Test func delayedTasksStillWaitForTheClock() throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let log = EventLog()
        dispatcher.background(after: .seconds(1)) { log.record("late") }
        #expect(log.events.isEmpty)
        try dispatcher.advance(by: .seconds(1))
        #expect(log.events == ["late"])
    }

    @Test func turningAutoDrainOnRunsWhatIsAlreadyPending() {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background { log.record("a") }
        dispatcher.background { log.record("b") }
        #expect(dispatcher.mode == .manual)
        dispatcher.mode = .autoDrain
        #expect(dispatcher.mode == .autoDrain)
        #expect(log.events == ["a", "b"])
        dispatcher.mode = .manual
        dispatcher.background { log.record("c") }
        #expect(log.events == ["a", "b"])
        #expect(dispatcher.pendingTaskCount == 1)
    }

    @Test func aStepInAutoDrainModeAlsoRunsWhatTheStepDispatches() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(label: "first") {
            log.record("first")
            dispatcher.background(label: "second") { log.record("second") }
        }
        dispatcher.mode = .autoDrain
        #expect(log.events == ["first", "second"])
    }

    @Test func aRunawayAutoDrainStopsAndTheNextCheckThrows() throws {
        let dispatcher = ManualDispatcher(historyLimit: 100)
        @Sendable func spin() {
            dispatcher.background(label: "spin") { spin() }
        }
        spin()
        dispatcher.mode = .autoDrain  // stops after runawayLimit tasks, reports on standard error
        dispatcher.mode = .manual
        #expect(dispatcher.pendingTaskCount == 1)
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error.kind == .runawayTasks(limit: 100_000))
        #expect(error.summary.contains("auto-drain ran 100000 tasks in one go and tasks kept falling due"))
        #expect(error.summary.contains("\"spin\" from TaskDispatchTestingTests/ManualDispatcherAutoDrainTests.swift:"))
        // Reported once: the next check sees the pending task only.
        let next = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(next.kind == .pendingTasks)
        dispatcher.cancelAllPendingTasks()
    }

    @Test func dispatchesFromOtherThreadsDuringADrainAreRunByIt() throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let counter = EventCounter(size: 4 * 500)
        DispatchQueue.concurrentPerform(iterations: 4) { thread in
            for index in 0..<500 {
                dispatcher.background { counter.increment(thread * 500 + index) }
            }
        }
        try dispatcher.runUntilIdle()
        #expect(counter.values.allSatisfy { $0 == 1 })
        #expect(dispatcher.pendingTaskCount == 0)
    }
}

@Suite struct ManualDispatcherRunUntilTests {
    @Test func runUntilALabelStopsRightAfterThatTask() throws {
        let dispatcher = ManualDispatcher()
        let log = EventLog()
        dispatcher.background(label: "fetch") {
            log.record("fetch")
            dispatcher.background(after: .seconds(1), label: "parse") {
                log.record("parse")
                dispatcher.foreground(label: "deliver") { log.record("deliver") }
            }
        }
        let run = try dispatcher.run(untilTaskLabeled: "parse")
        #expect(run.task.label == "parse")
        #expect(run.startTime == .seconds(1))
        #expect(log.events == ["fetch", "parse"])
        #expect(dispatcher.pendingTasks.map(\.label) == ["deliver"])
    }

    @Test func runUntilALabelThatNeverComesThrows() throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background(label: "fetch") {}
        let error = try #require(throws: ManualDispatcherError.self) {
            try dispatcher.run(untilTaskLabeled: "parse")
        }
        #expect(error.kind == .conditionNotMet)
        #expect(
            error.summary
                == "run(untilTaskLabeled: \"parse\") ran 1 task and none was labeled \"parse\"; no task is pending "
                + "any more. Check the label, and that the code under test dispatched that task"
        )
        #expect(error.recentRuns.map(\.task.label) == ["fetch"])
    }

    @Test func runUntilAConditionChecksBeforeEachTask() throws {
        let dispatcher = ManualDispatcher()
        let counter = EventCounter(size: 1)
        for _ in 0..<10 { dispatcher.background(after: .seconds(1)) { counter.increment(0) } }
        #expect(try dispatcher.run(until: { counter.values[0] == 4 }) == 4)
        #expect(dispatcher.pendingTaskCount == 6)
        #expect(try dispatcher.run(until: { true }) == 0)
    }

    @Test func runUntilAConditionThatNeverHoldsThrows() throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background {}
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.run(until: { false }) }
        #expect(error.kind == .conditionNotMet)
        #expect(error.summary.hasPrefix("run(until:) ran 1 task and the condition still does not hold"))
    }

    @Test func runUntilIsBoundedLikeRunUntilIdle() throws {
        let dispatcher = ManualDispatcher(runawayLimit: 10)
        @Sendable func again() { dispatcher.background(label: "again") { again() } }
        again()
        let error = try #require(throws: ManualDispatcherError.self) {
            try dispatcher.run(until: { false })
        }
        #expect(error.kind == .runawayTasks(limit: 10))
        #expect(error.summary.contains("\"again\""))
        dispatcher.cancelAllPendingTasks()
    }

    @Test func aConditionThatRunsTasksIsRefusedFromItsFirstCheck() throws {
        // 1.0's first run(until:) checked the condition once before it took the run, so a run method called there
        // ran tasks on the first check and was refused as re-entrant on every later one.
        let dispatcher = ManualDispatcher()
        dispatcher.background(label: "a") {}
        var refusals: [ManualDispatcherError.Kind] = []
        let error = try #require(throws: ManualDispatcherError.self) {
            try dispatcher.run(until: {
                do throws(ManualDispatcherError) {
                    try dispatcher.runNext()
                } catch {
                    refusals.append(error.kind)
                }
                return false
            })
        }
        #expect(error.kind == .conditionNotMet)
        #expect(refusals == [.reentrantRun, .reentrantRun])  // the first check, and the one after "a"
        #expect(dispatcher.history.map(\.task.label) == ["a"])  // run by run(until:), not by the condition
    }
}

@Suite struct ManualDispatcherHistoryTests {
    @Test func historyRecordsWhatRanInOrderWithTimes() throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background(label: "a") {}
        dispatcher.foreground(after: .seconds(2), label: "b") {}
        try dispatcher.runUntilIdle()
        let history = dispatcher.history
        #expect(history.map(\.task.label) == ["a", "b"])
        #expect(history.map(\.task.context) == [.background, .foreground])
        #expect(history.map(\.startTime) == [.zero, .seconds(2)])
        #expect(history.map(\.task.sequence) == [1, 2])
        #expect(history[1].description.hasSuffix("ran at 2 s"))
    }

    @Test func historyIsBounded() throws {
        let dispatcher = ManualDispatcher(historyLimit: 3)
        for index in 0..<10 { dispatcher.background(label: "t\(index)") {} }
        try dispatcher.runUntilIdle()
        #expect(dispatcher.history.map(\.task.label) == ["t7", "t8", "t9"])
        let none = ManualDispatcher(historyLimit: 0)
        none.background {}
        try none.runUntilIdle()
        #expect(none.history.isEmpty)
    }

    @Test func errorsPrintTheTailOfTheHistory() throws {
        let dispatcher = ManualDispatcher()
        let line = CallSite(line: #line + 1)
        for index in 0..<15 { dispatcher.background(label: "t\(index)") {} }
        try dispatcher.runUntilIdle()
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runNext() }
        #expect(error.recentRuns.count == 15)
        #expect(error.description.contains("Last 10 runs, oldest first:\n  #6 background \"t5\""))
        #expect(error.description.hasSuffix("#15 background \"t14\" at \(line), ran at 0 s"))
    }
}

@MainActor final class MainActorModel {
    var items: [String] = []
}
