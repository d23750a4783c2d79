public import TaskDispatch

/// A misuse of ``ManualDispatcher`` or a test scenario that went wrong, with everything needed to see why.
///
/// Thrown by the run methods and ``ManualDispatcher/verifyIdle()``. A thrown error fails the test in both
/// Swift Testing and XCTest; its ``description`` says what happened, lists the pending tasks with their
/// call sites, shows the tail of the run history, and prints the random seed when one is in use.
///
/// ```swift
/// #expect(throws: ManualDispatcherError.self) { try dispatcher.runNextBackground() }
/// ```
///
/// Only the dispatcher creates these errors.
public struct ManualDispatcherError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Kind: Sendable, Hashable {
        /// A step found no due task in the context it was asked to run (`nil`: in either context).
        case noTaskToRun(TaskContext?)
        /// A drain ran more tasks than the dispatcher's ``ManualDispatcher/runawayLimit`` allows while tasks kept
        /// falling due, or auto-advance moved the clock that many times without a call from the test.
        case runawayTasks(limit: Int)
        /// ``ManualDispatcher/verifyIdle()`` found pending tasks, or a task still running (on another thread, or
        /// the task that called it).
        case pendingTasks
        /// ``ManualDispatcher/verifyIdle()`` found tracked tasks that have not finished.
        case unfinishedTasks
        /// The clock was asked to move backwards.
        case clockMovedBackwards(from: Duration, to: Duration)
        /// A run method was called from inside a task the dispatcher was running.
        case reentrantRun
        /// A synchronous run method was called on the main actor while another thread was running tasks, or an async
        /// run method waited its real-time limit for another thread's run to end.
        case concurrentRun
        /// `run(untilTaskLabeled:)` or `run(until:)` ran out of tasks before its condition held.
        case conditionNotMet
        /// A wait reached its real-time limit: an async step before its work was dispatched,
        /// ``ManualDispatcher/value(of:)-(Task<Success,Error>)`` before its task finished, or an await from outside the
        /// tracked tasks before its task ran, which the dispatcher then cancelled (see <doc:Limits>).
        case waitTimedOut(after: Duration)
        /// A task started with ``ManualDispatcher/startTask(label:callSite:operation:)`` threw an error that nothing
        /// claimed through ``ManualDispatcher/value(of:)-(Task<Success,Error>)``; in production it would vanish.
        case unobservedTaskError
        /// An async drain waited its real-time limit for tracked tasks that awaited something the dispatcher does not
        /// control; or (`after` is zero) a synchronous drain ended with tracked tasks still running, which only the async
        /// form can wait for, or could not tell whether the tasks inside a tracked task whose jobs it cannot count
        /// (children of an actor-isolated task, a `Task { }` it created) had reached their waits (see
        /// <doc:TestingAsyncCode>).
        case unsettledTasks(after: Duration)
    }

    /// What went wrong.
    public let kind: Kind
    /// What happened and what to do: the description's first line, after its `ManualDispatcher: ` prefix. It names at
    /// most 20 tracked tasks (or errors, or awaits) and counts the rest.
    public let summary: String
    /// The earliest pending tasks when the error was thrown, in the order dispatch order would run them: at most
    /// 50; ``pendingTaskCount`` counts them all.
    public let pendingTasks: [ManualDispatcher.PendingTask]
    /// The number of tasks pending when the error was thrown, including those ``pendingTasks`` leaves out.
    public let pendingTaskCount: Int
    /// The most recent runs, oldest first (bounded by the dispatcher's history limit; the description shows the
    /// last 10).
    public let recentRuns: [ManualDispatcher.TaskRun]
    /// The seed of the random order in force, if any.
    public let seed: UInt64?
    /// The registration of the dispatcher that threw it (see `Schedule.registration`).
    let registration: UInt64?
    /// The await the dispatcher cancelled at its bound, for the error that ended it (as the dispatcher's later checks
    /// name it, so that the idle trait can tell that the test already threw about it).
    let cancelledAwait: String?
    /// The tracked tasks the summary lists as left after a wait, each with its standing as shown (as the registry's
    /// check compares them, so that the idle trait can tell that the test already threw about a task left where it
    /// was).
    let listedTrackedTasks: [UInt64: String]

    init(_ failure: Failure) {
        let snapshot = failure.snapshot
        self.kind = failure.misuse.kind
        self.summary = Self.summary(failure.misuse, snapshot)
        self.pendingTasks = snapshot.pending.map { ManualDispatcher.PendingTask($0, callSites: snapshot.callSites) }
        self.pendingTaskCount = snapshot.pendingCount
        self.recentRuns = snapshot.recentRuns.map { ManualDispatcher.TaskRun($0, callSites: snapshot.callSites) }
        self.seed = snapshot.seed
        self.registration = snapshot.registration
        if case .awaitNotRun(let what, _, _, _) = failure.misuse {
            self.cancelledAwait = what
        } else {
            self.cancelledAwait = nil
        }
        self.listedTrackedTasks = Dictionary(
            Self.trackedTasks(listedBy: failure.misuse, snapshot).map { ($0.id, $0.standing) },
            uniquingKeysWith: { first, _ in first })
    }

    /// The summary, then the seed (if any, with the line that replays it), the pending tasks (at most 20 shown) and
    /// the last runs (at most 10).
    public var description: String {
        var text = "ManualDispatcher: \(self.summary)"
        if let seed = self.seed {
            text += "\nRandom order seed: \(seed) (replay with ManualDispatcher(order: .random(seed: \(seed))))"
        }
        if self.pendingTaskCount > 0 {
            text += "\nPending tasks (\(self.pendingTaskCount)):"
            for task in self.pendingTasks.prefix(20) { text += "\n  \(task)" }
            let hidden = self.pendingTaskCount - Swift.min(20, self.pendingTasks.count)
            if hidden > 0 { text += "\n  … and \(hidden) more" }
        }
        if !self.recentRuns.isEmpty {
            let shown = self.recentRuns.suffix(10)
            text += "\nLast \(shown.count) runs, oldest first:"
            for run in shown { text += "\n  \(run)" }
        }
        return text
    }
}

extension ManualDispatcherError {
    /// The summary of each failure: every message of the dispatcher, each in one place.
    private static func summary(_ misuse: Failure.Misuse, _ snapshot: Snapshot) -> String {
        switch misuse {
        case .unobservedTaskErrors(let method, let errors):
            "\(method) found \(count(errors.count, "error")) thrown by tracked tasks that nothing awaited: \((errors.prefix(Self.tasksShown).map { "\(quoted($0.label)) started at \($0.callSite) threw \($0.error)" } + Self.more(errors.count)).joined(separator: "; ")). In production such an error vanishes unless code awaits the task: handle it inside the task, or await the task with try await dispatcher.value(of: task), in the test or in the code that awaits it (the dispatcher cannot see task.value)"
        case .tasksNotSettled(let method, let limit?, let tasks, _) where limit <= .zero:
            "\(method) checked once without waiting, since the dispatcher's waitLimit is \(formatRealTimeLimit(limit)), and \(count(tasks.count, "tracked task")) had not settled: \(Self.listing(tasks)). A tracked task needs a moment of real time to reach its next wait on the dispatcher, and a drain with no wait limit gives it none: a waitLimit of zero suits previews, where nothing drains; in a test, leave the default"
        case .tasksNotSettled(let method, let limit?, let tasks, let since):
            "\(method) waited \(formatRealTimeLimit(limit)) of real time\(since.map { " after it moved the clock to \(formatTime($0))" } ?? ""), and \(count(tasks.count, "tracked task")) did not settle: \(Self.listing(tasks)). \(Self.unsettledAdvice(tasks, delayedTasksPending: snapshot.pending.contains { $0.key.due > snapshot.now }))"
        case .tasksNotSettled(let method, nil, let tasks, _):
            "\(method) ran every due task, but \(Self.stillRunning(tasks, unseenBy: "a synchronous drain")). Call it from async code, as \(Self.awaited(method)), which waits for tracked tasks to settle; a main-actor task cannot even start while a synchronous main-actor test holds the main actor"
        case .clockMovedWhileUnsettled(let method, let tasks):
            "\(method) would move the clock while \(count(tasks.count, "main-actor tracked task")) \(tasks.count == 1 ? "waits" : "wait") to run on the main actor, which this call holds, so the clock would pass the sleeps and delays \(tasks.count == 1 ? "it is" : "they are") about to start: \(Self.listing(tasks)). Call it from async code, as \(Self.awaited(method)), which lets tracked tasks settle before the clock moves"
        case .clockMovedAfterWaking(let method, let byThisCall, let tasks):
            "\(byThisCall ? "\(method) woke tracked tasks at \(formatTime(snapshot.now)) and" : "tracked tasks woken earlier, and not waited for since, may not have settled, and \(method)") would \(Self.endsIdle(method, snapshot) ? "return as idle" : "move the clock on"), but a synchronous call cannot wait for them to settle first, so \(Self.endsIdle(method, snapshot) ? "it cannot tell whether they have finished or are about to dispatch more" : "the clock would pass the sleeps and delays they are about to start")\(tasks.isEmpty ? "; they have finished since, but a synchronous call cannot know that in time" : ": \(Self.listing(tasks))"). Call it from async code, as \(Self.awaited(method)), which lets tracked tasks settle \(Self.endsIdle(method, snapshot) ? "first" : "before the clock moves")"
        case .uncountedTasks(let method, let task) where task.isolation == .nonisolatedWithoutTaskExecutors:
            "\(method) cannot know whether every child task of \(task.name) has reached its wait: one of them (async let, a task group, or a Task { } it created) waited on the dispatcher, and before macOS 15, iOS 18 and the matching releases the runtime has no task executors, so the dispatcher cannot count the jobs of a tracked task's child tasks. \(Self.whyThisCallThrows(task, "a sibling")). Await the work one call after another, without child tasks, where its times matter, or run the test on Linux, macOS 15, iOS 18 or later"
        case .uncountedTasks(let method, let task) where task.isolation == .underAnotherExecutor:
            "\(method) cannot know whether every child task of \(task.name) has reached its wait: one of them waited on the dispatcher from under a task executor preference of its own (withTaskExecutorPreference, Task(executorPreference:), addTask(executorPreference:)), where its jobs, and its children's, run uncounted: the dispatcher counts the jobs of a nonisolated tracked task's child tasks only on the executor it gives the task. \(Self.whyThisCallThrows(task, "a sibling", alone: "one child alone stops it too: the dispatcher cannot tell that it has no sibling")). Leave the preference out of the task's children (the task's own body may keep one), and run work that needs that executor through the dispatcher's runInBackground; or await the work in the task's own body, one call after another, without child tasks"
        case .uncountedTasks(let method, let task) where task.isolation == .inUnstructuredTask:
            "\(method) cannot know whether every task inside \(task.name) has reached its wait: a Task { } or Task.immediate { } created inside it (by its own code, or by code it calls, such as swift-async-algorithms' debounce, merge and combineLatest, which each start one) waited on the dispatcher, and such a task inherits no task executor preference, so its jobs, and its children's, run uncounted on the global executor. \(Self.whyThisCallThrows(task, "that task, or a sibling,", alone: "one such task alone stops it too: the dispatcher cannot tell that it has no sibling")). Start that work with dispatcher.startTask, or as async let or a task group, whose jobs the task counts; for a debounce, on each input cancel the last such task and start one with dispatcher.startTask that sleeps first"
        case .uncountedTasks(let method, let task):
            "\(method) cannot know whether every child task of \(task.name) has reached its wait: one of them (async let, a task group, or a Task { } it created) waited on the dispatcher, and the dispatcher counts the jobs of child tasks only in a nonisolated tracked task, while this one runs \(task.isolation == .mainActor ? "on the main actor" : "on an actor"). \(Self.whyThisCallThrows(task, "a sibling")). Start the task nonisolated, as dispatcher.startTask(label:) { @concurrent in … }, and \(task.isolation == .mainActor ? "update main-actor state there through try await dispatcher.runOnMainActor { … }" : "call the actor from there with await"); or await the work one call after another, without child tasks. A Task { } the task's code creates (a debounce, say) stays uncounted wherever it runs: start that work with dispatcher.startTask instead"
        case .unfinishedTasks(let tasks):
            "expected every tracked task to have finished, but \(count(tasks.count, "tracked task")) did not: \(Self.listing(tasks)). \(Self.unfinishedAdvice(tasks, orAwait: true))"
        case .taskNotFinished(let limit, let task, let mode, let holding):
            "value(of:) waited \(formatRealTimeLimit(limit)) of real time, and the task did not finish: \(Self.listing([task])). \(Self.waitAdvice(mode, holding: holding, snapshot))\(mode == .autoAdvance && snapshot.pending.contains { $0.series != nil } ? ". Live repeating series keep auto-advance moving while the test waits, and the clock stands at \(formatTime(snapshot.now)): if the task waits for a series that never ends, cancel the series, or drive it with advance(by:)" : "")"
        case .runFromTrackedTask(let method, let task, let isAsync):
            "\(method) was called from inside \(task), which this dispatcher tracks: \(isAsync ? "its drains wait for that task to settle, so the call would wait for itself" : "it would run the test's tasks there (and a drain would move the clock) under the other tracked tasks, without waiting for them to settle"). A task must not run other tasks: dispatch or await the work inside the task, and let the test run it"
        case .taskStillRunning(let task, let runner, .insideTheTask):
            "verifyIdle() was called from inside task \(Self.runningTask(task, snapshot)), which \(runner) is still running, so the dispatcher is not idle. Call verifyIdle() from the test, once the drain has returned"
        case .taskStillRunning(let task, let runner, .onTheMainActorItNeeds):
            "expected no work left, but foreground task \(Self.runningTask(task, snapshot)), which \(runner) runs from another thread, has not ended: it runs on the main actor, where verifyIdle() was called (from inside it, or while it waits for the main actor). Call verifyIdle() once that run has ended: in async code, try await dispatcher.runUntilIdle() waits for it without holding the main actor"
        case .taskStillRunning(let task, let runner, .elsewhere(let waited)):
            "expected no work left, but task \(Self.runningTask(task, snapshot)) was still running on another thread, inside \(runner), when verifyIdle() had waited up to \(formatRealTimeLimit(waited)) for the tasks it found running to end, and may dispatch more. Let the work finish before the check: try await dispatcher.runUntilIdle() waits for that run, then runs what it left"
        case .untrackedTaskNotFinished(let limit):
            "value(of:) waited \(formatRealTimeLimit(limit)) of real time for a task this dispatcher did not start (a plain Task, or one another ManualDispatcher started), and it did not finish. \(snapshot.pendingCount == 0 ? "This dispatcher runs nothing that task waits for" : "If that task waits for this dispatcher's work (\(count(snapshot.pendingCount, "task")) pending, listed below: a sleep on its clock, say), this wait does not run it: run that work before this call, or start the task with dispatcher.startTask, whose waits the drains run. Otherwise"): await a plain Task with try await task.value; await one another ManualDispatcher started with value(of:) on that dispatcher, and drive that one (its runs, or an auto mode)"
        case .awaitNotRun(let what, let limit, let mode, let delayed):
            "\(what), awaited from code this dispatcher does not track, did not run within \(formatRealTimeLimit(limit)) of real time, so the dispatcher cancelled it and ended the await with this error. \(Self.notRunAdvice(mode, delayed: delayed, now: snapshot.now))"
        case .awaitsCancelled(let method, let whats, let limit):
            "\(method) found \(count(whats.count, "await")) from code this dispatcher does not track that did not run within \(formatRealTimeLimit(limit)) of real time, which the dispatcher cancelled: \((whats.prefix(Self.tasksShown) + Self.more(whats.count)).joined(separator: "; ")). The awaiting code got a waitTimedOut error\(whats.contains { $0.hasPrefix("ticks ") } ? " (a ticks(every:) loop, which cannot throw, ended instead)" : ""); unless it passed the error on, the work it awaited was never done. Start such code with dispatcher.startTask and drive it with try await dispatcher.runUntilIdle(), or run the work before the limit"
        case .noTaskToRun(let method, let scope):
            "\(method) found no \(scope.map { "\($0) task" } ?? "task") due at \(formatTime(snapshot.now)); \(Self.otherWork(besides: scope, snapshot))"
        case .reentrantRun(let method, let running, let culprit):
            "\(method) was called while \(running) is running tasks\(culprit.map { " (inside task \(Self.runningTask($0, snapshot)))" } ?? ""). A task must not run other tasks: dispatch the work instead, and let the test run it"
        case .concurrentRun(let method, let running, let executing):
            "\(method) was called on the main actor while another thread is running tasks with \(running)\(Self.executing(executing, snapshot)); waiting would deadlock, because that run needs the main actor for foreground tasks. Run tasks from one place at a time"
        case .runNotReleased(let method, let running, let limit, let executing):
            "\(method) could not run tasks within its limit of \(formatRealTimeLimit(limit)) of real time: another thread's run (\(running)) is still running\(Self.executing(executing, snapshot)). Run tasks from one place at a time, or raise the dispatcher's waitLimit if that run is expected to take longer (and leave waitingUpTo: out)"
        case .clockMovedBackwards(let method, let from, let to):
            "\(method) would move the clock backwards, from \(formatTime(from)) to \(formatDuration(.nanoseconds(to))); virtual time only moves forward. Pass a later time, or a positive duration"
        case .runawayTasks(let method, _, let ran):
            "\(method) ran \(count(ran, "task")) and tasks keep falling due; \(Self.recurringTasks(last: ran, snapshot))"
        case .autoDrainRunaway(let ran, nil):
            "auto-drain ran \(count(ran, "task")) in one go and tasks kept falling due; \(Self.recurringTasks(last: ran, snapshot))"
        case .autoDrainRunaway(_, let jumps?):
            "auto-advance moved the clock \(count(jumps, "time")), to \(formatTime(snapshot.now)), in one go (inside one call of the test's, or while it waited, with no other call in between), and tasks keep falling due; \(Self.recurringTasks(last: jumps, snapshot)). A timer or poll loop that never ends keeps an auto-advancing clock moving: cancel it before the end of the test"
        case .liveSeries(let method, let tick, _):
            "\(method) would move the clock for ever: the repeating series \(quoted(tick.label)) started at \(tick.series?.callSite ?? snapshot.callSites[Int(tick.callSite)]) ticks every \(tick.series.map { formatDuration($0.interval) } ?? "?") for as long as it lives, and its next tick is due at \(formatTime(tick.key.due)). Run its ticks with advance(by:) or advance(to:), or cancel the series before draining to idle: its handle, the DispatchScope it was started through, or, for a ticks(every:) loop, the task that iterates it"
        case .pendingTasks(let unfinished) where unfinished.isEmpty:
            "expected no pending tasks, but \(count(snapshot.pendingCount, "task")) never ran\(Self.seriesNote(snapshot)). \(Self.seriesAdvice(snapshot) ?? "Run them (runUntilIdle()), cancel them, or fix the code that dispatched them")"
        case .pendingTasks(let unfinished):
            "expected no pending tasks, but \(count(snapshot.pendingCount, "task")) never ran\(Self.seriesNote(snapshot)), and \(count(unfinished.count, "tracked task")) did not finish: \(Self.listing(unfinished)). \(Self.seriesAdvice(snapshot).map { "\($0). Then \(Self.unfinishedAdvice(unfinished, orAwait: false).lowercasedFirst)" } ?? Self.unfinishedAdvice(unfinished, orAwait: false))"
        case .conditionNotMet(let method, let label, let ran, let unsettled, true):
            "\(method) ran \(count(ran, "task")) and \(label.map { "none was labeled \"\($0)\"" } ?? "the condition still does not hold"); it stops here, before any move of the clock: \(unsettled.isEmpty ? "tracked tasks that it or an earlier synchronous call woke may have \(label == nil ? "changed the state" : "dispatched it") since, and this synchronous call cannot wait for them" : "\(Self.stillRunning(unsettled, unseenBy: "this synchronous call")), and may \(label == nil ? "change the state" : "dispatch it") later"). From async code, step with try await dispatcher.runNext(), which waits for them to dispatch their next task, and check after each step; a step does not move the clock: when the next task waits for it, try await dispatcher.advance(by:) moves it and runs what falls due, and check after that"
        case .conditionNotMet(let method, let label, let ran, let unsettled, _) where !unsettled.isEmpty:
            "\(method) ran \(count(ran, "task")) and \(label.map { "none was labeled \"\($0)\"" } ?? "the condition still does not hold"); no task is pending any more, but \(Self.stillRunning(unsettled, unseenBy: "this synchronous call")), and may \(label == nil ? "change the state" : "dispatch it") later. From async code, step with try await dispatcher.runNext(), which waits for them to dispatch their next task, and check after each step; a step does not move the clock: when the next task waits for it, try await dispatcher.advance(by:) moves it and runs what falls due, and check after that"
        case .conditionNotMet(let method, let label, let ran, _, _):
            "\(method) ran \(count(ran, "task")) and \(label.map { "none was labeled \"\($0)\"" } ?? "the condition still does not hold"); no task is pending any more. \(label == nil ? "Check the condition, and what the tasks above did" : "Check the label, and that the code under test dispatched that task")"
        case .dueTaskNotDispatched(let method, let scope, let limit):
            "\(method) found no \(scope.map { "\($0) task" } ?? "task") due within \(formatRealTimeLimit(limit)) of real time (the virtual clock stands at \(formatTime(snapshot.now))); \(Self.otherWork(besides: scope, snapshot))"
        case .pendingTasksNotReached(let method, let wanted, let context, let limit):
            "\(method) waited \(formatRealTimeLimit(limit)) of real time for \(count(wanted, "pending \(context.map { "\($0) task" } ?? "task")")), but \(Self.pending(in: context, snapshot)) pending; check that the code under test was started (in a Task, before this wait), that it was given this dispatcher, and that it dispatches that many tasks"
        }
    }

    /// The tracked tasks the summary of `misuse` shows as left after a wait or at a check (not those a synchronous call
    /// names as still running, which may stop anywhere after it).
    private static func trackedTasks(listedBy misuse: Failure.Misuse, _ snapshot: Snapshot)
        -> ArraySlice<TrackedTasks.UnsettledTask>
    {
        switch misuse {
        case .tasksNotSettled(_, let limit?, let tasks, _) where limit > .zero:
            tasks.prefix(Self.tasksShown)
        case .unfinishedTasks(let tasks), .pendingTasks(let tasks):
            tasks.prefix(Self.tasksShown)
        case .taskNotFinished(_, let task, let mode, let holding):
            // `waitAdvice` lists the tasks that hold the clock in auto-advance, or any run when nothing is pending.
            [task] + (mode == .autoAdvance || snapshot.pendingCount == 0 ? holding.prefix(Self.tasksShown) : [])
        default:
            []
        }
    }

    /// What to do about a task `value(of:)` waited for in vain, by mode; `holding`: the unsettled tracked tasks, which
    /// keep an auto-advancing clock where it is, and which no run moves on when nothing is pending.
    private static func waitAdvice(
        _ mode: ManualDispatcher.Mode, holding: [TrackedTasks.UnsettledTask], _ snapshot: Snapshot
    ) -> String {
        switch mode {
        case .manual where !holding.isEmpty && snapshot.pendingCount == 0,
            .autoDrain where !holding.isEmpty && snapshot.pendingCount == 0:
            "Nothing is pending, so no run of the dispatcher's moves it on, and \(count(holding.count, "tracked task")) \(holding.count == 1 ? "has" : "have") not settled: \(Self.listing(holding)). \(Self.unsettledAdvice(holding, delayedTasksPending: false))"
        case .manual:
            "A task waiting on the dispatcher needs the test to run that work first (runUntilIdle(), advance(by:)), or mode .autoDrain / .autoAdvance"
        case .autoDrain:
            "In auto-drain, a delayed task or a sleep still waits for the clock: move it with advance(by:), or use mode .autoAdvance"
        case .autoAdvance where holding.isEmpty:
            "Every tracked task is settled, so auto-advance ran every task it could reach: the task waits for work the clock never reaches (a sleep or a delay past the end of the clock, which no advance reaches), or for a tracked task that waits for it in turn. Cancel it, or sleep for less"
        case .autoAdvance:
            "Auto-advance moves the clock only while every tracked task is settled, and these hold it: \(Self.listing(holding)). Each awaits something the dispatcher does not control (a network call, another actor, Task.sleep, a continuation resumed by another thread, or a task's value awaited without dispatcher.value(of:)): send that work through the dispatcher, await tasks with try await dispatcher.value(of: task), or finish the work before this call"
        }
    }

    /// What to do about an await from outside the tracked tasks that did not run, by mode and whether its task was
    /// delayed.
    private static func notRunAdvice(_ mode: ManualDispatcher.Mode, delayed: Bool, now: Int64) -> String {
        switch (mode, delayed) {
        case (.manual, false):
            "In manual mode only the test runs tasks, and a test that awaits the work itself cannot also run it: start the awaiting code with dispatcher.startTask and drive it with try await dispatcher.runUntilIdle(), run the work before the limit, or use mode .autoDrain"
        case (.manual, true), (.autoDrain, true):
            "It was still waiting for the clock, at \(formatTime(now)), and a test that awaits the work itself cannot also move the clock: start the awaiting code with dispatcher.startTask and drive it with try await dispatcher.runUntilIdle(), advance the clock before the limit, or use mode .autoAdvance. Code the test started alongside (async let) may reach its sleep after the test's advance, which then does not wake it: wait for the sleep first with try await dispatcher.waitForPendingTasks(1), then advance"
        case (.autoDrain, false):
            "It was due, so another thread's run or a runaway auto-drain held it: check what else runs tasks on this dispatcher"
        case (.autoAdvance, _):
            "Auto-advance moves the clock only while every tracked task is settled: check that the tracked tasks await only work sent through the dispatcher"
        }
    }

    /// `try await dispatcher.runUntilIdle()`; a method with a duration also as code writes it:
    /// `try await dispatcher.advance(by: 7 s) (in code, try await dispatcher.advance(by: .seconds(7)))`.
    private static func awaited(_ method: String) -> String {
        let code = asCode(method)
        return "try await dispatcher.\(method)\(code == method ? "" : " (in code, try await dispatcher.\(code))")"
    }

    /// The number of tasks pending in `context` (either, if `nil`), with its verb: `1 is`, `3 are`.
    private static func pending(in context: TaskContext?, _ snapshot: Snapshot) -> String {
        let foreground = snapshot.pendingForeground
        let found = context == .foreground ? foreground : snapshot.pendingCount - (context == nil ? 0 : foreground)
        return "\(found) \(found == 1 ? "is" : "are")"
    }

    /// `1 tracked task is still running on its own executor, which this synchronous call cannot wait for: …`, with
    /// `caller` naming what cannot wait.
    private static func stillRunning(_ tasks: [TrackedTasks.UnsettledTask], unseenBy caller: String) -> String {
        "\(count(tasks.count, "tracked task")) \(tasks.count == 1 ? "is" : "are") still running on \(tasks.count == 1 ? "its" : "their") own executor, which \(caller) cannot wait for: \(Self.listing(tasks))"
    }

    /// ` (executing task …)`, naming the task another thread's run executes now, if any.
    private static func executing(_ task: ExecutingTask?, _ snapshot: Snapshot) -> String {
        task.map { " (executing task \(Self.runningTask($0, snapshot)))" } ?? ""
    }

    /// A task a run is executing, as the history shows it (`#4 background "parse" at Feed.swift:31, ran at 0 s`), or
    /// by its number and context when the dispatcher keeps no history.
    private static func runningTask(_ task: ExecutingTask, _ snapshot: Snapshot) -> String {
        guard let run = task.run else {
            return "#\(task.sequence) \(task.context) (its label is not known: this dispatcher keeps no history)"
        }
        return "\(ManualDispatcher.TaskRun(run, callSites: snapshot.callSites))"
    }

    /// `"fetch" started at File.swift:12: last seen, …`, for each task, joined with semicolons.
    private static func listing(_ tasks: [TrackedTasks.UnsettledTask]) -> String {
        let shown = tasks.prefix(Self.tasksShown).map { task in
            let awaiting = task.awaiting.map { ", and it awaits \($0)" } ?? ""
            let cancelled = task.isCancelled ? " (cancelled)" : ""
            return
                "\(quoted(task.label)) started at \(task.callSite)\(cancelled): last seen, \(task.lastSeen)\(awaiting)"
        }
        return (shown + Self.more(tasks.count)).joined(separator: "; ")
    }

    /// How many tracked tasks, errors or awaits a summary names; it counts the rest.
    static let tasksShown = 20

    /// `["… and 3 more"]` past ``tasksShown`` of `count`, else nothing.
    private static func more(_ count: Int) -> [String] {
        count > Self.tasksShown ? ["… and \(count - Self.tasksShown) more"] : []
    }

    /// Whether a synchronous drain stopped by the wake rule would have returned as idle, not moved the clock.
    private static func endsIdle(_ method: String, _ snapshot: Snapshot) -> Bool {
        snapshot.pendingCount == 0 && !method.hasPrefix("advance")
    }

    /// What to do about tracked tasks that did not settle within a wait limit: those that loop on waits that end at
    /// once, and those that await something the dispatcher does not control.
    private static func unsettledAdvice(_ tasks: [TrackedTasks.UnsettledTask], delayedTasksPending: Bool) -> String {
        let looping = tasks.filter(\.keepsRunning)
        let delayedCallback =
            ". A continuation resumed by one of this dispatcher's delayed tasks (a callback API wrapped in withCheckedContinuation) counts as such work too: the dispatcher cannot see that wait, so no drain moves the clock to the callback. Await the work with runInBackground(after:) or a sleep on dispatcher.clock instead, which it sees"
        let cancelledNote =
            tasks.contains { $0.isCancelled && !$0.keepsRunning }
            ? " (a task marked cancelled awaits work that does not end when it is cancelled)" : ""
        let elsewhere =
            "each awaits something the dispatcher does not control\(cancelledNote): a network call, another actor, Task.sleep, a continuation resumed by another thread, a for-await loop over a stream that such work feeds, or a task's value awaited without dispatcher.value(of:), or with it, of a task this dispatcher did not start (a plain Task { }). Send that work through the dispatcher (runInBackground, runOnMainActor, a sleep on dispatcher.clock, startTask), or await it in the test before this call\(delayedTasksPending ? delayedCallback : "")"
        guard !looping.isEmpty else { return "Since then \(elsewhere)" }
        let names = looping.map { quoted($0.label) }.joined(separator: ", ")
        let loop =
            "\(names) \(looping.count == 1 ? "loops" : "loop") on sleeps or awaitable dispatches that end at once, without waiting on the dispatcher. In a cancelled task each sleep on dispatcher.clock and each awaitable dispatch throws CancellationError at once, and a sleep until a time that has come returns at once, so a loop that swallows the error (try? await dispatcher.clock.sleep(…)) or sleeps for no time never settles: end the loop when its task is cancelled (let the error end it, or check Task.isCancelled), and sleep for a positive duration"
        return looping.count == tasks.count ? loop : "\(loop). Of the others, \(elsewhere)"
    }

    /// What to do about tracked tasks that have not finished at a check: drive them or cancel them; a task already
    /// cancelled is about to end (the check came right after the cancel), or ignores its cancellation.
    private static func unfinishedAdvice(_ tasks: [TrackedTasks.UnsettledTask], orAwait: Bool) -> String {
        let cancelled = tasks.filter(\.isCancelled).count
        if cancelled == tasks.count {
            let one = tasks.count == 1
            let them = one ? "it" : "them"
            // A check that also found pending tasks says what they need first.
            let subject =
                orAwait
                ? (one ? "It was" : "Each was")
                : "Run the pending tasks (runUntilIdle()) or cancel them. \(one ? "The tracked task was" : "Each tracked task was")"
            return
                "\(subject) cancelled and has not ended yet. Right after a cancel, let \(them) end before the check with try await dispatcher.settle() (or runUntilIdle()), which waits for \(them); a task that does not end then ignores its cancellation (a loop that swallows CancellationError with try?, or work that does not stop when cancelled), and must end when it is cancelled"
        }
        let cancelThem =
            "cancel them and let them end with try await dispatcher.settle() (a timer or poll loop that never ends must be cancelled before the end of the test)"
        let drive =
            orAwait
            ? "Drive them to the end with try await dispatcher.runUntilIdle(), await them with try await dispatcher.value(of: task), or \(cancelThem)"
            : "Drive them to the end with try await dispatcher.runUntilIdle(), \(cancelThem), or fix the code that dispatched them"
        // With nothing pending (`orAwait`: the check found none), no drain moves on a task that awaits other work.
        let unsettled = orAwait ? tasks.filter { !$0.isSettled && !$0.isCancelled } : []
        let one = unsettled.count == 1
        let outside =
            unsettled.isEmpty
            ? ""
            : "\(unsettled.map { quoted($0.label) }.joined(separator: ", ")) \(one ? "has" : "have") not settled since last seen. If \(one ? "it still runs" : "they still run"), try await dispatcher.runUntilIdle() waits for \(one ? "it" : "them"); a task that awaits something the dispatcher does not control (a network call, another actor, Task.sleep, a stream such work feeds) no drain moves on: send that work through the dispatcher (runInBackground, a sleep on dispatcher.clock), or cancel the task and let it end with try await dispatcher.settle()"
        if !unsettled.isEmpty && unsettled.count == tasks.count { return outside }
        let driving = unsettled.isEmpty ? drive : "\(drive). Of those, \(outside)"
        guard cancelled > 0 else { return driving }
        let which = cancelled == 1 ? "The one marked cancelled has" : "Those marked cancelled have"
        return
            "\(driving). \(which) not ended yet: right after a cancel, try await dispatcher.settle() before the check lets \(cancelled == 1 ? "it" : "them") end"
    }

    /// `, among them the next tick of 1 live repeating series ("poll" every 1 s, started at Feed.swift:12)` (without
    /// "among them" when only ticks are pending), or nothing when no listed task is a tick.
    static func seriesNote(_ snapshot: Snapshot) -> String {
        let ticks = snapshot.pending.filter { $0.series != nil }
        guard !ticks.isEmpty else { return "" }
        let named = ticks.prefix(3).compactMap { tick in
            tick.series.map { "\(quoted(tick.label)) every \(formatDuration($0.interval)), started at \($0.callSite)" }
        }
        return
            ",\(ticks.count == snapshot.pendingCount ? "" : " among them") the next \(ticks.count == 1 ? "tick" : "ticks") of \(ticks.count) live repeating series (\(named.joined(separator: "; "))\(ticks.count > 3 ? "; …" : ""))"
    }

    /// What to do about live repeating series among the pending tasks, which a drain to idle never gets past: cancel
    /// them first; `nil` when no listed task is a tick.
    static func seriesAdvice(_ snapshot: Snapshot) -> String? {
        let ticks = snapshot.pending.filter { $0.series != nil }.count
        guard ticks > 0 else { return nil }
        let others = snapshot.pending.count > ticks || snapshot.pendingCount > snapshot.pending.count
        return
            "Cancel the series before the end of the test (its handle, the DispatchScope it was started through, or, for a ticks(every:) loop, the task that iterates it): runUntilIdle() throws while one lives\(others ? "; run the other pending tasks (runUntilIdle()) or cancel them" : "")"
    }

    /// Names the call sites that ran most often in the last `runs` runs, grouped by call site (a timer loop's label
    /// changes each time), each with its first and last label in the window.
    private static func recurringTasks(last runs: Int, _ snapshot: Snapshot) -> String {
        let window = snapshot.recentRuns.suffix(runs)
        guard !window.isEmpty else {
            return
                "this dispatcher keeps no history (historyLimit: 0), so the tasks that ran cannot be named here (the pending ones are listed below). Raise the dispatcher's runawayLimit if that many tasks are expected, or stop the task that reschedules itself"
        }
        let labels = Dictionary(grouping: window, by: \.task.callSite).mapValues { $0.map { quoted($0.task.label) } }
        var seen: Set<UInt32> = []
        let firstSeen = window.map(\.task.callSite).filter { seen.insert($0).inserted }
        // A stable sort: of the call sites that ran as often, the one seen first comes first.
        let top = firstSeen.sorted { (labels[$0]?.count ?? 0) > (labels[$1]?.count ?? 0) }.prefix(3).map { site in
            let seen = labels[site] ?? []
            let first = seen.first ?? ""
            let shown = seen.contains { $0 != first } ? "\(first) … \(seen.last ?? "")" : first
            return "\(shown) from \(snapshot.callSites[Int(site)]) (\(seen.count) of the last \(window.count) runs)"
        }
        return
            "the tasks that keep coming back are \(top.joined(separator: ", ")). Stop the task that reschedules itself, or raise the dispatcher's runawayLimit if that many tasks are expected"
    }

    /// A sentence about what is pending besides `scope`, with the next step to take.
    private static func otherWork(besides scope: Schedule.Scope, _ snapshot: Snapshot) -> String {
        func list(_ tasks: [ScheduledTask], total: Int) -> String {
            let named = tasks.prefix(3).map { "\(quoted($0.label)) from \(snapshot.callSites[Int($0.callSite)])" }
            return named.joined(separator: ", ") + (total > 3 ? ", …" : "")
        }
        let waitingCount = snapshot.pendingCount - snapshot.dueForeground - snapshot.dueBackground
        let due: [(TaskContext, Int, String)] = [
            (.foreground, scope == .background ? snapshot.dueForeground : 0, "runNextForeground()"),
            (.background, scope == .foreground ? snapshot.dueBackground : 0, "runNextBackground()"),
        ]
        var parts = due.filter { $0.1 > 0 }.map { context, count, method in
            let tasks = snapshot.pending.filter { $0.key.due <= snapshot.now && $0.context == context }
            return
                "\(TaskDispatchTesting.count(count, "\(context) task")) \(count == 1 ? "is" : "are") due (\(list(tasks, total: count))): run it with \(method) or runNext()"
        }
        if let first = snapshot.pending.first(where: { $0.key.due > snapshot.now }) {
            parts.append(
                first.key.due == TaskKey.never
                    ? "\(TaskDispatchTesting.count(waitingCount, "delayed task")) never \(waitingCount == 1 ? "falls" : "fall") due, the first (\(list([first], total: 1))): its delay reaches past the clock's range of about 292 years. Cancel it, or give it a shorter delay"
                    : "\(TaskDispatchTesting.count(waitingCount, "delayed task")) \(waitingCount == 1 ? "waits" : "wait") for the clock, the first (\(list([first], total: 1))) due at \(formatTime(first.key.due)): move the clock with advance(by:) or advance(to:), or use runUntilIdle()"
            )
        }
        if parts.isEmpty {
            // A drain that ran the task along with what woke it (advance(by:), settle(), an auto mode) looks the same.
            return snapshot.recentRuns.isEmpty
                ? "nothing else is pending either: check that the code under test was given this dispatcher and dispatched its work"
                : "nothing else is pending either: it may have run already (the last runs are below); if not, check that the code under test was given this dispatcher and dispatched its work"
        }
        return parts.joined(separator: "; ")
    }
}

extension ManualDispatcherError {
    /// What a call does about `task`'s uncounted tasks, `who` being those that may not have started their sleep: it
    /// stops before the clock moves, or, once the task finished after the clock moved, reports what the move may have
    /// passed.
    fileprivate static func whyThisCallThrows(
        _ task: TrackedTasks.TaskWithUncountedTasks, _ who: String, alone: String? = nil
    ) -> String {
        task.finishedAfterTheClockMoved
            ? "The clock moved while the task ran, and such a task waited after the move (whether it was created before the move or after, the dispatcher cannot tell), so the clock may have passed \(who) before its sleep began, and the times the test saw may be wrong; the tracked task finished before any drain stopped for it, so this call reports it"
            : "Rather than move the clock, or return, while \(who) may not have started its sleep yet, it stops here\(alone.map { " (\($0))" } ?? "")"
    }
}

extension Failure.Misuse {
    /// The kind of error each misuse throws.
    var kind: ManualDispatcherError.Kind {
        switch self {
        case .noTaskToRun(_, let scope): .noTaskToRun(scope)
        case .reentrantRun, .runFromTrackedTask: .reentrantRun
        case .concurrentRun, .runNotReleased: .concurrentRun
        case .clockMovedBackwards(_, let from, let to):
            .clockMovedBackwards(from: .nanoseconds(from), to: .nanoseconds(to))
        // A live series is a runaway in the making: the kind a test already matches for work that keeps coming back.
        case .runawayTasks(_, let limit, _), .liveSeries(_, _, let limit): .runawayTasks(limit: limit)
        case .autoDrainRunaway(let ran, let jumps): .runawayTasks(limit: jumps ?? ran)
        case .pendingTasks, .taskStillRunning: .pendingTasks
        case .unfinishedTasks: .unfinishedTasks
        case .conditionNotMet: .conditionNotMet
        case .dueTaskNotDispatched(_, _, let limit), .pendingTasksNotReached(_, _, _, let limit),
            .taskNotFinished(let limit, _, _, _), .untrackedTaskNotFinished(let limit),
            .awaitNotRun(_, let limit, _, _),
            .awaitsCancelled(_, _, let limit):
            .waitTimedOut(after: limit)
        case .unobservedTaskErrors: .unobservedTaskError
        case .tasksNotSettled(_, let limit, _, _): .unsettledTasks(after: limit ?? .zero)
        case .clockMovedWhileUnsettled, .clockMovedAfterWaking, .uncountedTasks: .unsettledTasks(after: .zero)
        }
    }
}

extension String {
    /// The string with its first character lowercased, to go on a sentence.
    fileprivate var lowercasedFirst: String { self.prefix(1).lowercased() + self.dropFirst() }
}
