import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

/// Work still in progress when the test checks, and runs started where they do not belong: found by a probe from a
/// client package, where `verifyIdle()` passed while another thread was still running a task that dispatched more
/// after the check, and a tracked task's synchronous drain ran the test's tasks and moved the clock.
@Suite(.timeLimit(.minutes(1))) struct WorkInProgressTests {
    /// The generous bound on every real-thread wait here: only a failing test spends it.
    private static var bound: DispatchTime { .now() + .seconds(60) }

    /// Dispatches background task "slow", which dispatches `then` when it is let go, runs it with `runNext()` on a
    /// thread of its own, and returns once it has started: `release` lets it go, `finished` is signalled when the
    /// run returned.
    private static func runSlowTask(
        on dispatcher: ManualDispatcher,
        then: @escaping @Sendable () -> Void = {}
    ) -> (release: DispatchSemaphore, finished: DispatchSemaphore) {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        dispatcher.background(label: "slow") {
            started.signal()
            _ = release.wait(timeout: Self.bound)
            then()
        }
        onOwnThread {
            _ = try? dispatcher.runNext()
            finished.signal()
        }
        #expect(started.wait(timeout: Self.bound) == .success)
        return (release, finished)
    }

    @Test func verifyIdleNamesATaskAnotherThreadIsStillRunningOnceItWaitedTheLimit() throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(200))
        let (release, finished) = Self.runSlowTask(on: dispatcher) { dispatcher.foreground(label: "deliver") {} }

        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error.kind == .pendingTasks)
        #expect(error.summary.hasPrefix("expected no work left, but task #1 background \"slow\" at "))
        #expect(
            error.summary.contains(
                "was still running on another thread, inside runNext(), when verifyIdle() had waited up to 200 ms"))
        #expect(error.summary.contains("try await dispatcher.runUntilIdle() waits for that run"))

        release.signal()
        #expect(finished.wait(timeout: Self.bound) == .success)
        let left = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(left.kind == .pendingTasks && left.pendingTasks.map(\.label) == ["deliver"])
        try dispatcher.runUntilIdle()
        try dispatcher.verifyIdle()
    }

    @Test func withoutAHistoryTheRunningTaskIsNamedByItsNumber() throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(100), historyLimit: 0)
        let (release, finished) = Self.runSlowTask(on: dispatcher)
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(
            error.summary.hasPrefix(
                "expected no work left, but task #1 background (its label is not known: this dispatcher keeps no history) was still running"
            ))
        release.signal()
        #expect(finished.wait(timeout: Self.bound) == .success)
        try dispatcher.verifyIdle()
    }

    /// The probe's realistic case: in auto-drain, code under test dispatches from a Dispatch thread, so the task
    /// runs there, and the check at the end of the test (or the idle trait's) came while it was running.
    @Test func verifyIdleNamesATaskAnAutoDrainIsRunningOnAnotherThread() async throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain, waitLimit: .milliseconds(200))
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let delivered = Locked(false)
        onOwnThread {
            dispatcher.background(label: "fetch") {
                started.signal()
                _ = release.wait(timeout: Self.bound)
                dispatcher.background(label: "deliver") { delivered.withLock { $0 = true } }
            }
            finished.signal()
        }
        #expect(started.wait(timeout: Self.bound) == .success)

        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error.summary.contains("background \"fetch\""))
        #expect(error.summary.contains("was still running on another thread, inside auto-drain"))

        release.signal()
        #expect(finished.wait(timeout: Self.bound) == .success)
        #expect(delivered.withLock { $0 })
        try dispatcher.verifyIdle()
    }

    /// The window a reviewer found: the task's last statement wakes the test, which checks before the other
    /// thread's run has noted the task's end. The check waits for that end (here, the task is held until the check
    /// waits), and passes.
    @Test func verifyIdleWaitsForATaskAnotherThreadIsEndingAndThenPasses() throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
        let started = DispatchSemaphore(value: 0)
        let checkWaits = DispatchSemaphore(value: 0)
        let checked = DispatchSemaphore(value: 0)
        let ran = Locked(false)
        dispatcher.observeIdleCheckWaits { checkWaits.signal() }
        dispatcher.background(label: "ending") {
            started.signal()
            _ = checkWaits.wait(timeout: Self.bound)  // the check is waiting for this task
            ran.withLock { $0 = true }
        }
        onOwnThread { _ = try? dispatcher.runNext() }
        #expect(started.wait(timeout: Self.bound) == .success)
        let outcome = Locked<Result<Void, ManualDispatcherError>?>(nil)
        onOwnThread {
            let result = Result { () throws(ManualDispatcherError) in try dispatcher.verifyIdle() }
            outcome.withLock { $0 = result }
            checked.signal()
        }
        #expect(checked.wait(timeout: Self.bound) == .success)
        #expect(ran.withLock { $0 })
        let result = try #require(outcome.withLock { $0 })
        #expect(throws: Never.self) { try result.get() }
    }

    /// A foreground task that an off-main run executes on the main actor, and that calls `verifyIdle()` there: the
    /// check cannot wait for it (it runs inside it, on the main actor), and says so at once.
    @Test @MainActor func verifyIdleOnTheMainActorAForegroundTaskNeedsSaysSo() async throws {
        let dispatcher = ManualDispatcher()
        let seen = Locked<ManualDispatcherError?>(nil)
        dispatcher.foreground(label: "checks on main") {
            do { try dispatcher.verifyIdle() } catch { seen.withLock { $0 = error as? ManualDispatcherError } }
        }
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            onOwnThread {
                _ = try? dispatcher.runNext()
                done.resume()
            }
        }
        let error = try #require(seen.withLock { $0 })
        #expect(error.kind == .pendingTasks)
        // Where `DispatchQueue.main.sync` runs the block on the calling thread (a main queue that no thread drains),
        // the task runs on the run's own thread; where the main thread drains it, on the main thread.
        let onTheRunsThread = error.summary.hasPrefix(
            "verifyIdle() was called from inside task #1 foreground \"checks on main\"")
        let onTheMainThread =
            error.summary.hasPrefix("expected no work left, but foreground task #1 foreground \"checks on main\"")
            && error.summary.contains("which runNext() runs from another thread, has not ended")
        #expect(onTheRunsThread || onTheMainThread, "\(error.summary)")
        try dispatcher.verifyIdle()
    }

    /// A foreground task that an off-main run executes on the main actor has ended once the main actor goes on: code it
    /// resumed there (the test's `verifyIdle()` after its `value(of:)`; here, a block it queued) finds the dispatcher
    /// idle, rather than a task that "has not ended" while the run's thread wakes.
    @Test func verifyIdleOnTheMainActorRightAfterAForegroundTaskFindsItEnded() async throws {
        for run in 0..<50 {
            let dispatcher = ManualDispatcher()
            typealias Outcome = Result<Void, ManualDispatcherError>
            let outcome = await withCheckedContinuation { (done: CheckedContinuation<Outcome, Never>) in
                dispatcher.foreground(label: "show") {
                    DispatchQueue.main.async {
                        let checked = Result { () throws(ManualDispatcherError) in try dispatcher.verifyIdle() }
                        done.resume(returning: checked)
                    }
                }
                onOwnThread { _ = try? dispatcher.runNext() }
            }
            #expect(throws: Never.self, "run \(run)") { try outcome.get() }
        }
    }

    /// `run(until:)` checks its condition between tasks: `verifyIdle()` there sees no task running.
    @Test func verifyIdleInARunUntilConditionSeesNoTaskRunning() throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background(label: "only") {}
        var idleAt: Int?
        var checks = 0
        try dispatcher.run(until: {
            checks += 1
            if (try? dispatcher.verifyIdle()) != nil { idleAt = checks }
            return idleAt != nil
        })
        #expect(idleAt == 2, "idle after the one task, checked between tasks")
    }

    @Test func verifyIdleFromInsideARunningTaskSaysTheDispatcherIsNotIdle() throws {
        let dispatcher = ManualDispatcher()
        let seen = Locked<ManualDispatcherError?>(nil)
        dispatcher.background(label: "checks") {
            do { try dispatcher.verifyIdle() } catch { seen.withLock { $0 = error as? ManualDispatcherError } }
        }
        try dispatcher.runNext()
        let error = try #require(seen.withLock { $0 })
        #expect(error.kind == .pendingTasks)
        #expect(error.summary.hasPrefix("verifyIdle() was called from inside task #1 background \"checks\" at "))
        #expect(error.summary.contains("which runNext() is still running"))
        try dispatcher.verifyIdle()
    }

    @Test(arguments: ["runUntilIdle()", "advance(by: 1 s)", "runNext()"])
    func aSynchronousRunMethodInsideATrackedTaskIsRefusedAndRunsNothing(method: String) async throws {
        let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
        let task = dispatcher.startTask(label: "drainer") { () async throws -> Void in
            dispatcher.background(after: .milliseconds(500), label: "work") {}
            try Self.runSynchronously(method, on: dispatcher)
        }
        try await dispatcher.runNext()  // its start
        let error = await #expect(throws: ManualDispatcherError.self) { try await dispatcher.value(of: task) }
        #expect(error?.kind == .reentrantRun)
        #expect(error?.summary.hasPrefix("\(method) was called from inside tracked task \"drainer\"") == true)
        #expect(error?.summary.contains("it would run the test's tasks there") == true)
        #expect(dispatcher.pendingTaskCount == 1, "the refused drain ran nothing")
        #expect(dispatcher.now == .zero, "and moved no clock")
        try await dispatcher.runUntilIdle()
        try dispatcher.verifyIdle()
    }

    /// The synchronous forms, from a synchronous function: in the async body the compiler would pick the async ones.
    private static func runSynchronously(_ method: String, on dispatcher: ManualDispatcher) throws {
        switch method {
        case "runUntilIdle()": try dispatcher.runUntilIdle()
        case "advance(by: 1 s)": try dispatcher.advance(by: .seconds(1))
        default: try dispatcher.runNext()
        }
    }

    @Test func aRunawayOfOneTaskOrOneJumpIsCountedInTheSingular() throws {
        let drained = ManualDispatcher(runawayLimit: 1)
        @Sendable func again() { drained.background(label: "again") { again() } }
        drained.mode = .autoDrain
        again()
        let drainError = try #require(throws: ManualDispatcherError.self) { try drained.verifyIdle() }
        #expect(drainError.summary.hasPrefix("auto-drain ran 1 task in one go"), "\(drainError.summary)")

        let advanced = ManualDispatcher(mode: .autoAdvance, waitLimit: .zero, runawayLimit: 1)
        @Sendable func tick() { advanced.background(after: .seconds(1), label: "tick") { tick() } }
        tick()
        let jumpError = try #require(throws: ManualDispatcherError.self) { try advanced.verifyIdle() }
        #expect(jumpError.summary.hasPrefix("auto-advance moved the clock 1 time, to "), "\(jumpError.summary)")
    }
}
