import TaskDispatch

extension RuleCheck {
    // MARK: - A cancel before the start stops the task

    func checkCancelBeforeTheStart() async throws {
        var cancelled: Set<Int> = []
        if !self.subject.runsTasksInline {
            // On the main actor, a foreground task cannot start before the dispatching code gives it up.
            let note = "dispatched and cancelled in one turn of the main actor"
            let why = "which could not have started: the main actor was still running the code that dispatched it"
            try await cancelled.formUnion(
                MainActor.run { try self.dispatchCancelling(.foreground, note: note) { _ in why } })
            if self.subject.manualBase != nil {
                // A ManualDispatcher runs nothing until the check lets time pass.
                let note = "cancelled before the check let any time pass"
                let why = "which could not have started: no time had passed on the ManualDispatcher"
                try cancelled.formUnion(self.dispatchCancelling(.background, note: note) { _ in why })
            }
        }
        let delay = Duration.milliseconds(200)
        for context in [TaskContext.background, .foreground] {
            try cancelled.formUnion(
                self.dispatchCancelling(context, delay: delay, note: "cancelled right after dispatch") {
                    $0 < delay
                        ? "cancelled \($0.millisecondsText) after its dispatch, before its delay had passed" : nil
                })
        }
        // Dispatched after all of them with the same delay: waiting for it lets a cancelled task that runs anyway
        // show itself.
        let last = self.dispatch(.foreground, delay: delay, note: "dispatched last").index
        try await self.waitForStarts(of: [last], after: delay)
        try await self.waitForLateRuns()
        let counts = self.log.current.runCounts
        if let ran = cancelled.sorted().first(where: { counts[$0] > 0 }) {
            throw self.violation("\(self.log.describe(ran)) ran although cancel() had returned true before its start")
        }
    }

    /// Dispatches 20 tasks in `context`, each cancelled right after its dispatch, and returns those that `cancel()`
    /// stopped; a `cancel()` that returns false is a violation when `refusal`, given the time the dispatch and the
    /// cancel took, says why.
    private func dispatchCancelling(
        _ context: TaskContext,
        delay: Duration = .zero,
        note: String,
        refusal: (Duration) -> String?
    ) throws(DispatcherContractViolation) -> [Int] {
        var stopped: [Int] = []
        for _ in 0..<20 {
            let dispatched = self.subject.now()
            let task = self.dispatch(context, delay: delay, note: note)
            if task.handle.cancel() {
                stopped.append(task.index)
            } else if let refusal = refusal(self.subject.now() - dispatched) {
                throw self.violation("cancel() returned false for \(self.log.describe(task.index)), \(refusal)")
            }
        }
        return stopped
    }

    // MARK: - Awaitable dispatches deliver the outcome

    func checkAwaitableOutcomes() async throws {
        for delay in [Duration.zero, .milliseconds(10)] {
            let after = delay == .zero ? "" : "after: \(delay.millisecondsText)"
            for form in AwaitableForm.allCases {
                let result = try await self.awaitDispatch(form, "\(form)(\(after)) { 42 }", after: delay) { 42 }
                try self.expect(result, "\(form)(\(after)) { 42 }", toReturn: 42)
                let thrown = try await self.awaitDispatch(form, "\(form)(\(after)) { throw }", after: delay) {
                    throw ContractError()
                }
                try self.expect(thrown, "\(form)(\(after)) { throw ContractError() }", toThrow: ContractError.self)
            }
        }
    }

    /// Throws unless `result` is the value `expected`; `threw` says what a thrown error contradicts.
    private func expect(
        _ result: Result<Int, any Error>,
        _ call: String,
        toReturn expected: Int,
        threw: String? = nil
    ) throws(DispatcherContractViolation) {
        switch result {
        case .success(expected): return
        case .success(let value): throw self.violation("\(call) returned \(value), not \(expected)")
        case .failure(let error):
            throw self.violation("\(call) threw \(error) \(threw ?? "instead of returning \(expected)")")
        }
    }

    /// Throws unless `result` is an error of type `Expected`.
    private func expect<Expected: Error>(
        _ result: Result<Int, any Error>,
        _ call: String,
        toThrow _: Expected.Type
    ) throws(DispatcherContractViolation) {
        switch result {
        case .failure(let error) where error is Expected: return
        case .success(let value): throw self.violation("\(call) returned \(value) instead of throwing \(Expected.self)")
        case .failure(let error): throw self.violation("\(call) threw \(error) instead of \(Expected.self)")
        }
    }

    // MARK: - Awaitable dispatches follow cancellation

    func checkAwaitableCancellation() async throws {
        // Before the start: a delayed closure (no time passes; auto-advance runs it inside dispatch(_:), by
        // design), then an immediate one cancelled right after dispatch(_:) returned, only where nothing runs until
        // the check lets time pass (the awaitable dispatches are nonisolated, so even runOnMainActor's task could
        // start first on a real-time dispatcher).
        var beforeTheStart: [(Duration, String)] = []
        if self.subject.manualBase?.mode != .autoAdvance {
            beforeTheStart.append((.seconds(3_600), "(after: 1 h) cancelled while the closure waited for its delay"))
        }
        if !self.subject.runsTasksInline && self.subject.manualBase != nil {
            beforeTheStart.append((.zero, " cancelled right after its dispatch(_:) call returned"))
        }
        for (delay, what) in beforeTheStart {
            for form in AwaitableForm.allCases {
                let call = "\(form)\(what)"
                let ran = ContractFlag()
                let result = try await self.awaitDispatch(form, call, after: delay, cancellingAfterDispatch: true) {
                    ran.set()
                    return 42
                }
                if delay == .zero {
                    try self.subject.advance?(.zero)
                    try await self.waitForLateRuns()
                }
                if ran.isSet {
                    throw self.violation(
                        "\(call): the closure ran although the awaiting task was cancelled before it started")
                }
                try self.expect(result, call, toThrow: CancellationError.self)
            }
        }
        // After the start: the closure itself cancels the awaiting task, then returns.
        for form in AwaitableForm.allCases {
            let request = TaskCancelRequest()
            let finished = ContractFlag()
            let call = "\(form) whose awaiting task was cancelled by the running closure"
            let result = try await self.awaitDispatch(form, call, cancelRequest: request) {
                request.cancel()
                finished.set()
                return 42
            }
            guard finished.isSet else { throw self.violation("\(call): the closure did not run to the end") }
            let threw = "although the closure had started and ran to the end, returning 42"
            try self.expect(result, call, toReturn: 42, threw: threw)
        }
    }

    // MARK: - Driving one awaitable dispatch

    /// Calls `form` (described by `what`) through the subject in a new task, lets `delay` pass once it has
    /// dispatched, and returns its outcome; a violation if it dispatches nothing or does not end by the deadline.
    /// `cancellingAfterDispatch` cancels the awaiting task on its own stack right after the dispatch returned, and
    /// lets no time pass; `cancelRequest` is given the awaiting task, for the closure to cancel it.
    func awaitDispatch(
        _ form: AwaitableForm,
        _ what: String,
        after delay: Duration = .zero,
        cancellingAfterDispatch: Bool = false,
        cancelRequest: TaskCancelRequest? = nil,
        _ work: @escaping @Sendable () throws -> Int
    ) async throws -> Result<Int, any Error> {
        let observed = ObservedDispatcher(
            base: self.subject.dispatcher, cancelsCallerAfterDispatch: cancellingAfterDispatch)
        let began = ContractFlag()
        let (outcome, task) = ContractSignal.outcome { () async throws -> Int in
            began.set()
            return switch form {
            case .runInBackground: try await observed.runInBackground(after: delay, label: "contract awaitable", work)
            case .runOnMainActor: try await observed.runOnMainActor(after: delay, label: "contract awaitable", work)
            }
        }
        cancelRequest?.hold { task.cancel() }
        guard await observed.dispatched.wait(until: self.deadline) != nil else {
            task.cancel()
            let limit = self.timeLimit.millisecondsText
            guard began.isSet else {
                throw self.ranOutOfTime(
                    "the check's task that calls \(what) had not started within the time limit of \(limit)")
            }
            throw self.timedOut("\(what) dispatched nothing within the rule's time limit of \(limit)")
        }
        // Cancelled right after its dispatch, the await must end before any time passes, and no time may pass
        // until it has: `dispatched` is fulfilled inside the `dispatch(_:)` call, before the awaitable holds the
        // handle it cancels, so a step now would race that cancel (and run the closure the cancel would stop).
        if !cancellingAfterDispatch {
            try self.subject.advance?(delay)
            self.runHeldTasks()
        }
        guard let result = await outcome.wait(until: self.deadline) else {
            task.cancel()
            throw self.timedOut(
                "\(what) neither returned nor threw within the rule's time limit of \(self.timeLimit.millisecondsText)\(cancellingAfterDispatch ? "; it should have thrown CancellationError at once, once cancel() on the task's handle stopped the task (a cancel that stops nothing leaves the await waiting)" : "")"
            )
        }
        return result
    }
}

/// The two awaitable dispatches, interpolated as their names.
enum AwaitableForm: CaseIterable {
    case runInBackground, runOnMainActor
}

/// Forwards to the subject's dispatcher and reports its first dispatch once it has returned; optionally cancels the
/// calling Swift task right after that dispatch returned, on the caller's stack, so the task cannot have started.
struct ObservedDispatcher: TaskDispatcher {
    let base: any TaskDispatcher
    let dispatched = ContractFlag()
    let cancelsCallerAfterDispatch: Bool

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let handle = self.base.dispatch(task)
        if self.cancelsCallerAfterDispatch { withUnsafeCurrentTask { $0?.cancel() } }
        self.dispatched.set()
        return handle
    }
}

/// The error the contract's closures throw.
struct ContractError: Error, Equatable {}
