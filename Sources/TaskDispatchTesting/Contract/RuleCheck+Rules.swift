import Dispatch
import TaskDispatch

extension RuleCheck {
    func checkExactlyOnce() async throws {
        // 300 background and 100 foreground tasks at once, then 60 and 40 with delays of 1, 2, 3, 1, … ms.
        var indices = (0..<400).map { self.dispatch($0 < 300 ? .background : .foreground).index }
        indices += (0..<100).map {
            self.dispatch($0 < 60 ? .background : .foreground, delay: .milliseconds(1 + $0 % 60 % 3)).index
        }
        try await self.waitForStarts(of: indices, after: .milliseconds(3))
        try self.checkNoTaskRanTwice()
        try await self.waitForLateRuns()
        try self.checkNoTaskRanTwice()
    }

    func checkNeverInline() async throws {
        let indices = (0..<100).map { self.dispatch($0 < 50 ? .background : .foreground).index }
        let fromMainActor = await MainActor.run {
            (0..<20).map {
                self.dispatch($0 % 2 == 0 ? .foreground : .background, note: "dispatched from the main actor").index
            }
        }
        try await self.waitForStarts(of: indices + fromMainActor)
        let runs = self.log.current.runs
        if let inline = runs.first(where: \.inline) {
            throw self.violation(
                "\(self.log.describe(inline.task)) ran inline, inside dispatch(_:), on the caller's stack")
        }
        // Only a run on the main actor of a task dispatched there can tell: a task run elsewhere (which breaks the
        // foreground rule, checked next) races the dispatching code by nature.
        let watched = Set(fromMainActor)
        if let early = runs.first(where: { $0.onMainActor && !$0.dispatcherMovedOn && watched.contains($0.task) }) {
            throw self.violation(
                "\(self.log.describe(early.task)) started before the dispatching code on the main actor had moved past its dispatch call"
            )
        }
        try await self.checkDispatchDoesNotWaitForTheTask()
    }

    /// A dispatch call that waits for its task on another thread deadlocks a caller that holds what the task needs
    /// (the main actor, a lock): this task waits for its own dispatch call to return, in vain with such a dispatcher.
    /// The call is made from a queue of its own, so that it blocks no thread of the cooperative pool.
    private func checkDispatchDoesNotWaitForTheTask() async throws {
        let patience = Swift.min(Duration.seconds(5), (self.deadline - ContinuousClock.now) / 2)
        // Less than a second left to wait in: a short wait would call a dispatcher that does a little work after it
        // hands the task on (a decorator that logs) one that waits for its task.
        guard patience >= .seconds(1) else { return }
        let waitedInVain = ContractFlag()
        let returned = DispatchSemaphore(value: 0)
        let index = await withCheckedContinuation { (dispatched: CheckedContinuation<Int, Never>) in
            DispatchQueue(label: "TaskDispatchTesting.DispatcherContract.dispatchCall").async {
                let thread = currentThreadIdentity()
                let index = self.dispatch(.background, note: "it waits for its dispatch call to return") {
                    // Run inside the call, it would wait for itself: that is the inline rule's to report, above (run
                    // on that thread after the call returned, it has nothing to wait for).
                    guard currentThreadIdentity() != thread else { return }
                    if returned.wait(timeout: patience.dispatchDeadline) != .success { waitedInVain.set() }
                }.index
                returned.signal()
                dispatched.resume(returning: index)
            }
        }
        // With a dispatcher that waits for the task, the body has given up by the time the call above returned.
        if waitedInVain.isSet {
            throw self.violation(
                "dispatch(_:) did not return while \(self.log.describe(index)) ran on another thread: the task waited \(patience.millisecondsText) for its dispatch call to return, in vain. A dispatch must not wait for its task: a caller that holds what the task needs (the main actor, a lock) would deadlock"
            )
        }
        try await self.waitForStarts(of: [index])
    }

    // MARK: - Foreground on the main actor, in order

    func checkForegroundOrder() async throws {
        // Immediate tasks, dispatched in a burst from one thread.
        let immediate = (0..<300).map { _ in self.dispatch(.foreground).index }
        try await self.waitForStarts(of: immediate)
        try self.checkOnMainActorInOrder([("immediate foreground tasks", immediate)])

        // Equal delays, dispatched in a burst; a few rounds, since a dispatcher that races its timers may keep the
        // order in one round and break it in the next.
        for round in 1...4 {
            let equal = (0..<500).map { _ in self.dispatch(.foreground, delay: .milliseconds(20)).index }
            try await self.waitForStarts(of: equal, after: .milliseconds(20))
            let group = "foreground tasks with equal delays (20 ms) dispatched in a burst (round \(round) of 4)"
            try self.checkOnMainActorInOrder([(group, equal)])
        }

        // A mix of delays, the later-due task dispatched first each time.
        var (later, sooner): ([Int], [Int]) = ([], [])
        for _ in 0..<150 {
            later.append(self.dispatch(.foreground, delay: .milliseconds(30)).index)
            sooner.append(self.dispatch(.foreground, delay: .milliseconds(10)).index)
        }
        try await self.waitForStarts(of: later + sooner, after: .milliseconds(30))
        try self.checkOnMainActorInOrder([
            ("foreground tasks with a 10 ms delay, each dispatched after one with 30 ms", sooner),
            ("foreground tasks with a 30 ms delay, each dispatched before one with 10 ms", later),
        ])
        try self.checkNoTaskRanTwice()
    }

    /// Throws unless every run so far was on the main actor, and each group's first starts came in dispatch order.
    private func checkOnMainActorInOrder(_ groups: [(String, [Int])]) throws(DispatcherContractViolation) {
        let runs = self.log.current.runs
        let offMain = runs.filter { !$0.onMainActor }
        if let first = offMain.first {
            throw self.violation(
                "\(self.log.describe(first.task)) ran off the main actor (not on the main queue); \(offMain.count) foreground runs did"
            )
        }
        for (group, indices) in groups {
            var firstStarts = Set(indices)
            let order = runs.map(\.task).filter { firstStarts.remove($0) != nil }
            let expected = indices.sorted()
            guard order != expected else { continue }
            let inversions = zip(order, order.dropFirst()).filter { $0 > $1 }.count
            let position = zip(order, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? 0
            throw self.violation(
                "\(group) ran out of dispatch order: position \(position) ran \(self.log.describe(order[position])) where \(self.log.describe(expected[position])) was due; \(inversions) inversions in \(indices.count) tasks"
            )
        }
    }

    func checkDelayIsLowerBound() async throws {
        // Each context's longest delay goes past a whole second, so that a dispatcher that converts only part of a
        // delay (the fraction of `components`, with the seconds dropped) or loses long timers is caught; left out
        // when the rule's time limit is too short to wait for it in real time.
        let wholeSeconds = self.subject.advance != nil || self.timeLimit >= Self.wholeSecondDelay * 2
        // The fractions of a millisecond catch a dispatcher that rounds a delay down to whole milliseconds (on the
        // virtual clock always; in real time whenever its timer fires within the half millisecond it dropped).
        let fractions: [Duration] = [
            .milliseconds(-50), .zero, .milliseconds(1), .microseconds(1_500), .milliseconds(5), .microseconds(5_500),
            .milliseconds(10), .milliseconds(25), .milliseconds(50),
        ]
        // On a driven clock, time costs nothing: delays of an hour catch a dispatcher that caps long delays.
        let delays: [Duration] =
            (wholeSeconds ? [Self.wholeSecondDelay] : []) + fractions.flatMap { [$0, $0, $0] }
            + (self.subject.advance != nil ? [.seconds(3_600)] : [])
        let indices = delays.flatMap { delay in
            [TaskContext.background, .foreground].map { self.dispatch($0, delay: delay).index }
        }
        let reason = " (zero and negative delays mean as soon as possible)"
        try await self.waitForStarts(of: indices, after: delays.max() ?? .zero, reason: reason)
        let (tasks, runs, _) = self.log.current
        for run in runs {
            let task = tasks[run.task]
            let waited = run.startTime - task.dispatchTime
            guard task.delay > .zero, waited < task.delay else { continue }
            throw self.violation(
                "\(self.log.describe(run.task)) started \(waited.millisecondsText) after it was dispatched, before its delay had passed"
            )
        }
    }

    /// The longest delay of the delay rule in real time: past a whole second.
    static let wholeSecondDelay = Duration.milliseconds(1_050)

    // MARK: - Cancellation is all or nothing

    /// Delayed tasks of both contexts, every other one cancelled before it is due.
    func checkCancellingBeforeTheStart() async throws {
        let dispatched = (0..<120).map {
            self.dispatch($0 % 2 == 0 ? .background : .foreground, delay: .milliseconds(30))
        }
        var cancelled: Set<Int> = []
        for (offset, task) in dispatched.enumerated() where offset % 4 < 2 {
            let first = task.handle.cancel()
            let second = task.handle.cancel()
            if second { throw self.violation("cancel() returned true twice for \(self.log.describe(task.index))") }
            if task.handle.isCancelled != first {
                throw self.violation(
                    "isCancelled is \(task.handle.isCancelled) for \(self.log.describe(task.index)) after cancel() returned \(first)"
                )
            }
            if first { cancelled.insert(task.index) }
        }
        // A foreground task with the same delay, dispatched after all of them, runs after every one of them that
        // runs; waiting for it lets a cancelled task that still runs show itself.
        let last = self.dispatch(.foreground, delay: .milliseconds(30), note: "dispatched last").index
        let expected = dispatched.map(\.index).filter { !cancelled.contains($0) } + [last]
        try await self.checkCancelledTasksDidNotRun(cancelled, waitingFor: expected, after: .milliseconds(30))
    }

    /// Immediate background tasks, each cancelled right after its dispatch, racing its start.
    func checkCancellingRacingTheStart() async throws {
        var expected: [Int] = []
        var cancelled: Set<Int> = []
        for _ in 0..<500 {
            let task = self.dispatch(.background, note: "cancelled right after dispatch")
            guard task.handle.cancel() else {
                expected.append(task.index)
                continue
            }
            cancelled.insert(task.index)
            if !task.handle.isCancelled {
                throw self.violation(
                    "isCancelled is false for \(self.log.describe(task.index)) after cancel() returned true")
            }
        }
        let reason = "; cancel() had returned false for each of them"
        try await self.checkCancelledTasksDidNotRun(cancelled, waitingFor: expected, reason: reason)
    }

    /// A task that ran cannot be cancelled.
    func checkCancellingAfterTheRun() async throws {
        let task = self.dispatch(.background, note: "cancelled after it ran")
        try await self.waitForStarts(of: [task.index])
        if task.handle.cancel() {
            throw self.violation("cancel() returned true for \(self.log.describe(task.index)), which had already run")
        }
        if task.handle.isCancelled {
            throw self.violation("isCancelled is true for \(self.log.describe(task.index)), which had already run")
        }
    }

    /// Waits for `expected` to start (see ``waitForStarts(of:after:reason:)``) and for late runs, then throws if a
    /// task ran twice or a task of `cancelled` ran.
    private func checkCancelledTasksDidNotRun(
        _ cancelled: Set<Int>,
        waitingFor expected: [Int],
        after duration: Duration = .zero,
        reason: String = ""
    ) async throws {
        try await self.waitForStarts(of: expected, after: duration, reason: reason)
        try await self.waitForLateRuns()
        try self.checkNoTaskRanTwice()
        let counts = self.log.current.runCounts
        let ran = cancelled.sorted().filter { counts[$0] > 0 }
        guard let first = ran.first else { return }
        throw self.violation(
            "\(self.log.describe(first)) ran although cancel() had returned true; \(ran.count) of \(cancelled.count) cancelled tasks ran"
        )
    }
}
