import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

// The ways a 0.2 test could trap, hang or pass with its work undone, each now ended by an error with a message, or by
// the scenario completing. The clock sleeps below are on the ManualDispatcher's virtual clock: they wake only when
// the dispatcher moves it.

private struct SaveError: Error, CustomStringConvertible {
    var description: String { "SaveError.offline" }
}

private actor Shared {
    var value = 7
    func read() -> Int { self.value }
}

/// An actor whose method sleeps twice on the dispatcher's clock: a main-actor task that calls it goes on, inside the
/// actor, without the main actor.
private actor Retrier {
    let dispatcher: ManualDispatcher
    init(dispatcher: ManualDispatcher) { self.dispatcher = dispatcher }

    func retry() async throws {
        try await self.dispatcher.clock.sleep(for: .seconds(1))
        try await self.dispatcher.clock.sleep(for: .seconds(2))
    }
}

/// A nonisolated tracked task that sleeps 1 s, then 2 s: started from here, so it does not inherit the test's actor.
private func startNonisolatedSleeper(on dispatcher: ManualDispatcher) -> Task<Void, any Error> {
    dispatcher.startTask(label: "worker") {
        try await dispatcher.clock.sleep(for: .seconds(1))
        try await dispatcher.clock.sleep(for: .seconds(2))
    }
}

@Suite(.timeLimit(.minutes(1))) struct ManualDispatcherTrustTests {
    // MARK: - An actor a tracked task entered

    /// 0.2 ran a nonisolated tracked task on the dispatcher's task executor, so the actor it entered ran its job there:
    /// held as a pending task, the job held the actor, and the test's own call to the actor never returned.
    @Test func aTestAwaitsAnActorATrackedTaskEnteredWithoutHanging() async throws {
        let dispatcher = ManualDispatcher()
        let shared = Shared()
        let reader = dispatcher.startTask(label: "reader") { await shared.read() }
        try await dispatcher.runNext()  // the start; from here the task runs on the global executor
        #expect(await shared.read() == 7)
        try await dispatcher.runUntilIdle()
        #expect(try await dispatcher.value(of: reader) == 7)
        #expect(dispatcher.pendingTasks.isEmpty)
        try dispatcher.verifyIdle()
    }

    // MARK: - Work left undone in a main-actor test

    @Test @MainActor func verifyIdleReportsATrackedTaskThatHasNotFinished() async throws {
        let dispatcher = ManualDispatcher()
        let line = #line + 1
        let saving = dispatcher.startTask(label: "save") { @MainActor in
            try await dispatcher.clock.sleep(for: .seconds(1))
        }
        // The synchronous step runs the start; the task cannot begin while this test holds the main actor.
        try synchronously { try dispatcher.runNext() }
        #expect(dispatcher.pendingTaskCount == 0)
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error?.kind == .unfinishedTasks)
        #expect(
            error?.summary.hasPrefix(
                "expected every tracked task to have finished, but 1 tracked task did not: \"save\" started at TaskDispatchTestingTests/ManualDispatcherTrustTests.swift:\(line): last seen, its start ran at 0 s"
            ) == true
        )
        try await dispatcher.runUntilIdle()
        try await dispatcher.value(of: saving)
        #expect(dispatcher.now == .seconds(1))
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func verifyIdleNamesTheUnfinishedTrackedTaskBehindAPendingSleep() async throws {
        let dispatcher = ManualDispatcher()
        let line = #line + 1
        let saving = dispatcher.startTask(label: "save") { @MainActor in
            try await dispatcher.clock.sleep(for: .seconds(1))
        }
        try await dispatcher.settle()  // asleep: its timer is the one pending task
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error?.kind == .pendingTasks)
        #expect(
            error?.summary.hasPrefix(
                "expected no pending tasks, but 1 task never ran, and 1 tracked task did not finish: \"save\" started at TaskDispatchTestingTests/ManualDispatcherTrustTests.swift:\(line): last seen, it awaited a sleep on the dispatcher's clock"
            ) == true
        )
        #expect(error?.summary.contains("Drive them to the end with try await dispatcher.runUntilIdle()") == true)
        try await dispatcher.runUntilIdle()
        try await dispatcher.value(of: saving)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func aSynchronousDrainThatEndsWithATrackedTaskRunningSaysSoAndNamesTheAsyncForm() async throws {
        let dispatcher = ManualDispatcher()
        let saving = dispatcher.startTask(label: "save") { @MainActor in
            try await dispatcher.clock.sleep(for: .seconds(1))
            try await dispatcher.clock.sleep(for: .seconds(2))
        }
        let error = #expect(throws: ManualDispatcherError.self) { try synchronously { try dispatcher.runUntilIdle() } }
        #expect(error?.kind == .unsettledTasks(after: .zero))
        #expect(
            error?.summary.contains("\"save\" started at TaskDispatchTestingTests/ManualDispatcherTrustTests.swift:")
                == true)
        #expect(error?.summary.contains("Call it from async code, as try await dispatcher.runUntilIdle()") == true)
        try await dispatcher.runUntilIdle()  // the async form, which async code gets
        try await dispatcher.value(of: saving)
        #expect(dispatcher.now == .seconds(3))
    }

    @Test @MainActor func aSynchronousAdvanceOnTheMainActorWillNotPassAMainActorTaskThatHasNotRun() async throws {
        let dispatcher = ManualDispatcher()
        let line = #line + 1
        let saving = dispatcher.startTask(label: "save") { @MainActor in
            try await dispatcher.clock.sleep(for: .seconds(1))
            try await dispatcher.clock.sleep(for: .seconds(2))
        }
        try synchronously { try dispatcher.runNext() }  // the start; the task waits for the main actor
        let error = #expect(throws: ManualDispatcherError.self) {
            try synchronously { try dispatcher.advance(by: .seconds(7)) }
        }
        #expect(error?.kind == .unsettledTasks(after: .zero))
        #expect(
            error?.summary.hasPrefix(
                "advance(by: 7 s) would move the clock while 1 main-actor tracked task waits to run on the main actor, which this call holds"
            ) == true
        )
        #expect(error?.summary.contains("ManualDispatcherTrustTests.swift:\(line)") == true)
        #expect(dispatcher.now == .zero)  // refused before it moved
        try await dispatcher.runUntilIdle()
        try await dispatcher.value(of: saving)
        #expect(dispatcher.now == .seconds(3))  // 1 s + 2 s, counted from where the task really slept
    }

    @Test @MainActor func aSynchronousAdvanceOnTheMainActorStopsWhereATimerWokeAMainActorTask() async throws {
        // Issue 17, item 3, as a user hit it: the task is settled in its first sleep, so the advance may start; the
        // timer at 1 s wakes it, and the clock must not go on to 7 s while the task cannot run.
        let dispatcher = ManualDispatcher()
        let line = #line + 1
        let saving = dispatcher.startTask(label: "save") { @MainActor in
            try await dispatcher.clock.sleep(for: .seconds(1))
            try await dispatcher.clock.sleep(for: .seconds(2))
            try await dispatcher.clock.sleep(for: .seconds(4))
        }
        try await dispatcher.settle()  // started, and asleep until 1 s
        let error = #expect(throws: ManualDispatcherError.self) {
            try synchronously { try dispatcher.advance(by: .seconds(7)) }
        }
        #expect(error?.kind == .unsettledTasks(after: .zero))
        #expect(
            error?.summary.hasPrefix(
                "advance(by: 7 s) woke tracked tasks at 1 s and would move the clock on, but a synchronous call cannot wait for them to settle first"
            ) == true
        )
        #expect(error?.summary.contains("ManualDispatcherTrustTests.swift:\(line)") == true)
        #expect(error?.summary.contains("try await dispatcher.advance(by: 7 s)") == true)
        #expect(dispatcher.now == .seconds(1))  // stopped where the timer woke the task
        try await dispatcher.advance(by: .seconds(6))  // the async form: to 7 s, settling at each step
        try await dispatcher.value(of: saving)
        #expect(dispatcher.now == .seconds(7))  // 1 + 2 + 4, as if the test had awaited from the start
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func aSynchronousAdvanceToOnTheMainActorAlsoStopsAtTheLastTaskItRan() async throws {
        // The last stretch: the timer at 1 s is the last task before the target, and the clock must stay at 1 s.
        let dispatcher = ManualDispatcher()
        let saving = dispatcher.startTask(label: "save") { @MainActor in
            try await dispatcher.clock.sleep(for: .seconds(1))
            try await dispatcher.clock.sleep(for: .seconds(10))
        }
        try await dispatcher.settle()
        let error = #expect(throws: ManualDispatcherError.self) {
            try synchronously { try dispatcher.advance(to: .seconds(5)) }
        }
        #expect(error?.kind == .unsettledTasks(after: .zero))
        #expect(dispatcher.now == .seconds(1))
        try await dispatcher.advance(to: .seconds(11))
        try await dispatcher.value(of: saving)
        #expect(dispatcher.now == .seconds(11))
    }

    /// The rule looks at what the call did (it woke a task), not at how far the woken task got, so it holds every
    /// time: a main-actor task that goes on inside another actor could otherwise settle before or after the check.
    @Test @MainActor func aSynchronousAdvanceStopsEveryTimeItWakesATaskInsideAnotherActor() async throws {
        for _ in 0..<100 {
            let dispatcher = ManualDispatcher()
            let retrier = Retrier(dispatcher: dispatcher)
            let retry = dispatcher.startTask(label: "retry") { @MainActor in try await retrier.retry() }
            try await dispatcher.settle()  // asleep inside the actor until 1 s
            let error = #expect(throws: ManualDispatcherError.self) {
                try synchronously { try dispatcher.advance(to: .seconds(5)) }
            }
            #expect(error?.kind == .unsettledTasks(after: .zero))
            #expect(dispatcher.now == .seconds(1))
            try await dispatcher.advance(to: .seconds(5))
            try await dispatcher.value(of: retry)
            #expect(dispatcher.now == .seconds(5))
            try dispatcher.verifyIdle()
        }
    }

    @Test @MainActor func aSynchronousAdvanceStopsEveryTimeItWakesANonisolatedTask() async throws {
        for _ in 0..<100 {
            let dispatcher = ManualDispatcher()
            let worker = startNonisolatedSleeper(on: dispatcher)
            // A main-actor task that only awaits the worker: not a reason to refuse the call at its start.
            let waiter = dispatcher.startTask(label: "waiter") { @MainActor in try await dispatcher.value(of: worker) }
            try await dispatcher.settle()
            let error = #expect(throws: ManualDispatcherError.self) {
                try synchronously { try dispatcher.advance(to: .seconds(5)) }
            }
            #expect(error?.kind == .unsettledTasks(after: .zero))
            #expect(error?.summary.hasPrefix("advance(to: 5 s) woke tracked tasks at 1 s") == true)
            #expect(dispatcher.now == .seconds(1))
            try await dispatcher.advance(to: .seconds(5))
            try await dispatcher.value(of: waiter)
            #expect(dispatcher.now == .seconds(5))
        }
    }

    /// Off the main actor too: the woken task runs on its own while the call goes on, so moving the clock on gave
    /// wrong times in about half the runs (a chain of sleeps of 1, 2 and 3 s woke at 6 s, or at 1 s and 6 s).
    @Test func aSynchronousAdvanceOffTheMainActorStopsEveryTimeItWakesATask() async throws {
        for _ in 0..<100 {
            let dispatcher = ManualDispatcher()
            let stamps = Locked<[Duration]>([])
            let chain = dispatcher.startTask(label: "chain") { @concurrent in
                for seconds in 1...3 {
                    try await dispatcher.clock.sleep(for: .seconds(seconds))
                    stamps.withLock { $0.append(dispatcher.now) }
                }
            }
            try await dispatcher.settle()
            let error = #expect(throws: ManualDispatcherError.self) {
                try synchronously { try dispatcher.advance(by: .seconds(6)) }
            }
            #expect(error?.kind == .unsettledTasks(after: .zero))
            #expect(error?.summary.hasPrefix("advance(by: 6 s) woke tracked tasks at 1 s") == true)
            #expect(dispatcher.now == .seconds(1))
            try await dispatcher.advance(to: .seconds(6))
            try await dispatcher.value(of: chain)
            #expect(stamps.withLock { $0 } == [.seconds(1), .seconds(3), .seconds(6)])
        }
    }

    /// A synchronous call cannot know where a task an earlier synchronous call woke has got to either: until an async
    /// drain has waited for the tracked tasks, the drains that would move the clock, or end on their state, throw
    /// every time (the clock moved past the task's next sleep in 173 of 400 runs, and a quick task's drain to idle
    /// passed or threw by the run).
    @Test func aSynchronousDrainAfterAStepThatWokeATaskThrowsEveryTime() async throws {
        for round in 0..<40 {
            let dispatcher = ManualDispatcher()
            let chain = dispatcher.startTask(label: "chain") { @concurrent in
                for seconds in 1...3 { try await dispatcher.clock.sleep(for: .seconds(seconds)) }
            }
            let quick = dispatcher.startTask(label: "quick") { @concurrent in 42 }
            try synchronously { _ = try dispatcher.runCurrent() }  // the two starts
            let calls: [(String, () throws -> Void)] = [
                ("advance(by: 6 s)", { try dispatcher.advance(by: .seconds(6)) }),
                ("runUntilIdle()", { try dispatcher.runUntilIdle() }),
                ("run(untilTaskLabeled: \"x\")", { try dispatcher.run(untilTaskLabeled: "x") }),
            ]
            let (method, call) = calls[round % calls.count]
            let error = #expect(throws: ManualDispatcherError.self) { try call() }
            #expect(dispatcher.now == .zero)
            if round % calls.count == 2 {
                // A drain to a condition stops where it would move the clock, as when the tasks run out.
                #expect(error?.kind == .conditionNotMet, "\(method)")
                #expect(error?.summary.contains("it stops here, before any move of the clock") == true)
                #expect(error?.summary.contains("step with try await dispatcher.runNext()") == true)
            } else {
                #expect(error?.kind == .unsettledTasks(after: .zero), "\(method)")
            }
            try await dispatcher.runUntilIdle()  // it waits for them: synchronous calls may go on from here
            #expect(dispatcher.now == .seconds(6))
            #expect(try await dispatcher.value(of: quick) == 42)
            try await dispatcher.value(of: chain)
            try synchronously { try dispatcher.advance(by: .seconds(1)) }
        }
    }

    /// A wait of the test on the dispatcher ends the race: the test waited for the sleep it then advances past, so the
    /// synchronous advance goes on, every time (it threw in 286 of 400 runs while only a wait that ended with every
    /// task settled counted: the task was still leaving its job).
    @Test func aSynchronousAdvanceAfterAWaitForTheSleepGoesOn() async throws {
        for _ in 0..<100 {
            let dispatcher = ManualDispatcher()
            let wakes = Locked<[Duration]>([])
            let task = dispatcher.startTask(label: "sleeper") { @concurrent in
                for _ in 0..<2 {
                    try await dispatcher.clock.sleep(for: .seconds(1))
                    wakes.withLock { $0.append(dispatcher.now) }
                }
            }
            try synchronously { _ = try dispatcher.runNextBackground() }  // the start: a wake
            try await dispatcher.waitForPendingTasks(1)  // the first sleep
            try synchronously { try dispatcher.advance(by: .seconds(1)) }  // wakes it at its target: no move past it
            try await dispatcher.waitForPendingTasks(1)  // the second sleep
            try synchronously { try dispatcher.advance(by: .seconds(1)) }
            try await dispatcher.value(of: task)
            #expect(wakes.withLock { $0 } == [.seconds(1), .seconds(2)])
        }
    }

    /// Only a wait for tracked work ends the race: an async step that ran a due plain task, waiting for nothing, does
    /// not (the advance throws every time); `value(of:)` of the woken task does, whether it had finished or not.
    @Test func onlyAWaitForTrackedWorkEndsTheRace() async throws {
        for _ in 0..<50 {
            let dispatcher = ManualDispatcher()
            _ = dispatcher.startTask(label: "sleeper") { @concurrent in
                try await dispatcher.clock.sleep(for: .seconds(1))
            }
            dispatcher.background(label: "plain") {}
            try await dispatcher.runNext()  // the start: a wake
            try await dispatcher.runNext()  // "plain"
            let error = #expect(throws: ManualDispatcherError.self) {
                try synchronously { try dispatcher.advance(by: .seconds(2)) }
            }
            #expect(error?.kind == .unsettledTasks(after: .zero))
            try await dispatcher.runUntilIdle()

            let other = ManualDispatcher()
            let quick = other.startTask(label: "quick") { @concurrent in 42 }
            try synchronously { _ = try other.runCurrent() }  // its start: a wake
            #expect(try await other.value(of: quick) == 42)
            try synchronously { try other.advance(by: .seconds(1)) }
            #expect(other.now == .seconds(1))
        }
    }

    @Test @MainActor func aSynchronousRunUntilIdleOnTheMainActorDoesNotJumpPastATaskItWoke() async throws {
        let dispatcher = ManualDispatcher()
        var unrelated = false
        dispatcher.foreground(after: .seconds(10)) { unrelated = true }
        let saving = dispatcher.startTask(label: "save") { @MainActor in
            try await dispatcher.clock.sleep(for: .seconds(1))
            try await dispatcher.clock.sleep(for: .seconds(2))
        }
        try await dispatcher.settle()
        let error = #expect(throws: ManualDispatcherError.self) { try synchronously { try dispatcher.runUntilIdle() } }
        #expect(error?.kind == .unsettledTasks(after: .zero))
        #expect(error?.summary.hasPrefix("runUntilIdle() woke tracked tasks at 1 s") == true)
        #expect(dispatcher.now == .seconds(1))  // 0.2 jumped to 10 s, and the task then finished at 12 s
        #expect(!unrelated)
        try await dispatcher.runUntilIdle()
        try await dispatcher.value(of: saving)
        #expect(unrelated)
        #expect(dispatcher.now == .seconds(10))
        // The start, the two sleeps, the unrelated task.
        #expect(dispatcher.history.map(\.startTime) == [.zero, .seconds(1), .seconds(3), .seconds(10)])
    }

    @Test @MainActor func aSynchronousAdvanceOnTheMainActorStillRunsPlainDelayedTasksThroughout() throws {
        // No tracked task: the rule never holds the clock.
        let dispatcher = ManualDispatcher()
        var ran: [Int] = []
        for second in 1...3 {
            dispatcher.foreground(after: .seconds(Int64(second))) { ran.append(second) }
        }
        try dispatcher.advance(by: .seconds(7))
        #expect(ran == [1, 2, 3])
        #expect(dispatcher.now == .seconds(7))
    }

    // MARK: - value(of:) from the test is bounded

    @Test func valueOfATaskThatNeedsTheTestToMoveTheClockEndsWithAnError() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(200))
        let line = #line + 1
        let sleeper = dispatcher.startTask(label: "sleeper") { () async throws -> Int in
            try await dispatcher.clock.sleep(for: .seconds(4))
            return 1
        }
        try await dispatcher.settle()  // the task now sleeps on the clock
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: sleeper) }
        #expect(error?.kind == .waitTimedOut(after: .milliseconds(200)))
        #expect(
            error?.summary.hasPrefix(
                "value(of:) waited 200 ms of real time, and the task did not finish: \"sleeper\" started at TaskDispatchTestingTests/ManualDispatcherTrustTests.swift:\(line): last seen, it awaited a sleep on the dispatcher's clock"
            ) == true
        )
        try await dispatcher.advance(by: .seconds(4))
        #expect(try await dispatcher.value(of: sleeper) == 1)
        try dispatcher.verifyIdle()
    }

    @Test func aValueOfThatTimedOutDoesNotSwallowTheErrorTheTaskThrowsLater() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(200))
        let late = dispatcher.startTask(label: "late failure") { () async throws -> Int in
            try await dispatcher.clock.sleep(for: .seconds(1))
            throw SaveError()
        }
        try await dispatcher.settle()
        await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: late) }
        try synchronously { try dispatcher.advance(by: .seconds(1)) }
        _ = await late.result  // it threw; nothing has claimed the error
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error?.kind == .unobservedTaskError)
        #expect(error?.summary.contains("threw SaveError.offline") == true)
    }

    @Test func valueOfReportsAnAutoAdvanceRunawayAtOnce() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .seconds(30), runawayLimit: 50)
        let line = #line + 1
        let ticker = dispatcher.startTask(label: "ticker") {
            while true { try await dispatcher.clock.sleep(for: .seconds(1)) }
        }
        // The runaway stops the clock as the ticker runs: value(of:) reports it (at once, or as it happens), instead of
        // waiting out its 30 s for a task that will not finish.
        let started = ContinuousClock.now
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: ticker) }
        #expect(ContinuousClock.now - started < .seconds(20))
        #expect(error?.kind == .runawayTasks(limit: 50))
        #expect(error?.summary.hasPrefix("auto-advance moved the clock 50 times") == true)
        #expect(error?.summary.contains("ManualDispatcherTrustTests.swift:\(line)") == true)
        ticker.cancel()
        dispatcher.mode = .manual
        try await dispatcher.runUntilIdle()
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: ticker) }
    }

    /// A runaway auto-drain wakes `value(of:)` to report it, but another call may take the failure first. The task
    /// has not finished then, and `value(of:)` must wait on within its limit, not await the task without a bound.
    @Test func valueOfWaitsOnWithinItsLimitWhenAnotherCallTookTheRunawayFirst() async throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain, waitLimit: .seconds(1), runawayLimit: 10)
        let sleeper = dispatcher.startTask(label: "sleeper") { try await dispatcher.clock.sleep(for: .seconds(1)) }
        // The sleep is pending: no late dispatch can start a second auto-drain once the runaway's failure is taken.
        try await dispatcher.waitForPendingTasks(1)
        // A watchdog: should value(of:) await the task without a bound, cancelling it ends that await, and the
        // expectations below fail instead of the test hanging.
        DispatchQueue.global().asyncAfter(deadline: .now() + 20) { sleeper.cancel() }
        let registered = dispatcher.countingWaiterRegistrations()
        let waiting = Task { @MainActor in try await dispatcher.value(of: sleeper) }
        await registered.reach(1)
        // Hold the main actor, so that value(of:), once woken, cannot run before the failure is taken.
        let mainHeld = DispatchSemaphore(value: 0)
        let releaseMain = DispatchSemaphore(value: 0)
        DispatchQueue.main.async {
            mainHeld.signal()
            _ = releaseMain.wait(timeout: .now() + 60)
        }
        #expect(mainHeld.wait(timeout: .now() + 60) == .success)
        let runaway = BackgroundCall {
            @Sendable func again() { dispatcher.background(label: "again") { again() } }
            again()  // the auto-drain runs 10 and stops, keeping the failure, and wakes value(of:)
        }
        #expect(try runaway.value() != nil)
        let taken = #expect(throws: ManualDispatcherError.self) { try synchronously { try dispatcher.runNext() } }
        #expect(taken?.kind == .runawayTasks(limit: 10))
        releaseMain.signal()

        let error = await #expect(throws: ManualDispatcherError.self) { try await waiting.value }
        #expect(error?.kind == .waitTimedOut(after: .seconds(1)))
        #expect(
            error?.summary.hasPrefix("value(of:) waited 1 s of real time") == true, "\(String(describing: error))")
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        dispatcher.mode = .manual
        dispatcher.cancelAllPendingTasks()  // the last "again"
        try dispatcher.verifyIdle()
    }

    @Test func valueOfIsCancelledWithTheTestThatAwaitsIt() async throws {
        let dispatcher = ManualDispatcher()
        let sleeper = dispatcher.startTask(label: "sleeper") { try await dispatcher.clock.sleep(for: .seconds(4)) }
        try await dispatcher.settle()
        let waiting = Task { try await dispatcher.value(of: sleeper) }
        waiting.cancel()
        await #expect(throws: CancellationError.self) { try await waiting.value }
        sleeper.cancel()
        try await dispatcher.runUntilIdle()
    }

    // MARK: - An unclaimed error when the dispatcher dies with the test body

    @Test func anUnclaimedErrorOfAReleasedDispatcherIsReportedWhereItWasCreated() async throws {
        let registry = ManualDispatcherRegistry()
        let line = #line + 2
        do {
            let dispatcher: ManualDispatcher = registry.track { ManualDispatcher() }
            let failing = dispatcher.startTask(label: "failing") { () async throws -> Int in throw SaveError() }
            try await dispatcher.runNext()  // the start
            _ = try? await failing.value  // awaited without claiming the error
        }
        let failures = registry.idleFailures()
        #expect(failures.count == 1)
        #expect(failures.first?.wasReleased == true)
        #expect(failures.first?.createdAt.line == UInt(line))
        #expect(failures.first?.description.contains("\"failing\" started at") == true)
        #expect(failures.first?.description.contains("threw SaveError.offline") == true)
    }

    // MARK: - Auto-advance

    @Test func autoAdvanceWakesEverySleepInOrderWithNoCallFromTheTest() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        let wakes = Locked<[Duration]>([])
        let task = dispatcher.startTask(label: "back-off") { () async throws -> Int in
            for delay in [1, 2, 4] as [Int64] {
                try await dispatcher.clock.sleep(for: .seconds(delay))
                wakes.withLock { $0.append(dispatcher.now) }
            }
            return 3
        }
        #expect(try await dispatcher.value(of: task) == 3)
        #expect(wakes.withLock { $0 } == [.seconds(1), .seconds(3), .seconds(7)])
        try dispatcher.verifyIdle()
    }

    @Test func autoAdvanceStopsATimerThatNeverEndsWithTheRunawayError() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance, runawayLimit: 100)
        let timer = dispatcher.startTask(label: "timer") {
            while true { try await dispatcher.clock.sleep(for: .seconds(1)) }
        }
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.runUntilIdle() }
        guard case .runawayTasks? = error?.kind else {
            Issue.record("expected a runaway error, got \(String(describing: error))")
            return
        }
        timer.cancel()
        dispatcher.mode = .manual
        try await dispatcher.runUntilIdle()
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: timer) }
    }

    @Test func valueOfATaskAsleepPastTheEndOfTheClockInAutoAdvanceSaysSo() async throws {
        // 1.0's first message said the task awaited "something the dispatcher does not control" right after naming
        // its sleep on the dispatcher's own clock.
        let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .milliseconds(200))
        let line = #line + 1
        let sleeper = dispatcher.startTask(label: "forever") {
            try await dispatcher.clock.sleep(for: .nanoseconds(Int64.max))
        }

        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: sleeper) }

        #expect(error?.kind == .waitTimedOut(after: .milliseconds(200)))
        let summary = error?.summary ?? ""
        #expect(
            summary.hasPrefix(
                "value(of:) waited 200 ms of real time, and the task did not finish: \"forever\" started at TaskDispatchTestingTests/ManualDispatcherTrustTests.swift:\(line): last seen, it awaited a sleep on the dispatcher's clock"
            ), "\(summary)")
        #expect(
            summary.hasSuffix(
                "Every tracked task is settled, so auto-advance ran every task it could reach: the task waits for work the clock never reaches (a sleep or a delay past the end of the clock, which no advance reaches), or for a tracked task that waits for it in turn. Cancel it, or sleep for less"
            ), "\(summary)")
        #expect(!summary.contains("does not control"))
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: sleeper) }
        try dispatcher.verifyIdle()
    }

    @Test func autoAdvanceDoesNotJumpWhileATrackedTaskIsUnsettled() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        let release = DispatchSemaphore(value: 0)
        let task = dispatcher.startTask(label: "blocked") { () async -> Int in
            await withCheckedContinuation { continuation in
                onOwnThread {
                    release.wait()
                    continuation.resume(returning: 1)
                }
            }
        }
        // The start ran at once; the task now runs, then awaits something the dispatcher does not own: it is not
        // settled, so the clock stays where it is.
        dispatcher.background(after: .seconds(5), label: "later") {}
        #expect(dispatcher.now == .zero)
        #expect(dispatcher.pendingTaskCount == 1)
        release.signal()
        #expect(try await dispatcher.value(of: task) == 1)
        try await dispatcher.runUntilIdle()  // the task's end let the clock move; this waits until it has
        #expect(dispatcher.now == .seconds(5))
        #expect(dispatcher.pendingTaskCount == 0)
    }
}
