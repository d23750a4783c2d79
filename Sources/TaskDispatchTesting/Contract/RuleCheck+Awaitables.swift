import TaskDispatch

extension RuleCheck {
    // MARK: - A cancel before the start stops the task

    func checkCancelBeforeTheStart() async throws {
        var cancelled: Set<Int> = []
        if !self.subject.runsTasksInline {
            // On the main actor, a foreground task cannot start before the dispatching code gives it up.
            let fromMainActor = await MainActor.run { () -> [(index: Int, stopped: Bool)] in
                (0..<20).map { _ in
                    let task = self.dispatch(
                        .foreground, note: "dispatched and cancelled in one turn of the main actor")
                    return (task.index, task.handle.cancel())
                }
            }
            if let refused = fromMainActor.first(where: { !$0.stopped }) {
                throw self.violation(
                    "cancel() returned false for \(self.log.describe(refused.index)), which could not have started: the main actor was still running the code that dispatched it"
                )
            }
            cancelled.formUnion(fromMainActor.map(\.index))
            if self.subject.manualBase != nil {
                // A ManualDispatcher runs nothing until the check lets time pass.
                for _ in 0..<20 {
                    let task = self.dispatch(.background, note: "cancelled before the check let any time pass")
                    guard task.handle.cancel() else {
                        throw self.violation(
                            "cancel() returned false for \(self.log.describe(task.index)), which could not have started: no time had passed on the ManualDispatcher"
                        )
                    }
                    cancelled.insert(task.index)
                }
            }
        }
        let delay = Duration.milliseconds(200)
        for context in [TaskContext.background, .foreground] {
            for _ in 0..<20 {
                let dispatched = self.subject.now()
                let task = self.dispatch(context, delay: delay, note: "cancelled right after dispatch")
                let stopped = task.handle.cancel()
                let waited = self.subject.now() - dispatched
                if stopped {
                    cancelled.insert(task.index)
                } else if waited < delay {
                    throw self.violation(
                        "cancel() returned false for \(self.log.describe(task.index)), cancelled \(waited.millisecondsText) after its dispatch, before its delay had passed"
                    )
                }
            }
        }
        // Dispatched after all of them with the same delay: waiting for it lets a cancelled task that runs anyway
        // show itself.
        let last = self.dispatch(.foreground, delay: delay, note: "dispatched last").index
        try self.letTimePass(delay)
        try await self.waitForStarts(of: [last])
        try await self.waitForLateRuns()
        let counts = self.log.runCounts
        if let ran = cancelled.sorted().first(where: { counts[$0] > 0 }) {
            throw self.violation("\(self.log.describe(ran)) ran although cancel() had returned true before its start")
        }
    }

    // MARK: - Awaitable dispatches deliver the outcome

    func checkAwaitableOutcomes() async throws {
        for delay in [Duration.zero, .milliseconds(10)] {
            let after = delay == .zero ? "" : "after: \(delay.millisecondsText), "
            let background = try await self.awaitDispatch("runInBackground(\(after)) { 42 }", delay: delay) {
                try await $0.runInBackground(after: delay, label: "contract awaitable") { 42 }
            }
            try self.expectValue(42, from: background, "runInBackground(\(after)) { 42 }")
            let foreground = try await self.awaitDispatch("runOnMainActor(\(after)) { 42 }", delay: delay) {
                try await $0.runOnMainActor(after: delay, label: "contract awaitable") { 42 }
            }
            try self.expectValue(42, from: foreground, "runOnMainActor(\(after)) { 42 }")
            let backgroundError = try await self.awaitDispatch("runInBackground(\(after)) { throw }", delay: delay) {
                try await $0.runInBackground(after: delay, label: "contract awaitable") { () throws -> Int in
                    throw ContractError()
                }
            }
            try self.expectError(from: backgroundError, "runInBackground(\(after)) { throw ContractError() }")
            let foregroundError = try await self.awaitDispatch("runOnMainActor(\(after)) { throw }", delay: delay) {
                try await $0.runOnMainActor(after: delay, label: "contract awaitable") { () throws -> Int in
                    throw ContractError()
                }
            }
            try self.expectError(from: foregroundError, "runOnMainActor(\(after)) { throw ContractError() }")
        }
    }

    private func expectValue(
        _ expected: Int,
        from result: Result<Int, any Error>,
        _ call: String
    ) throws(DispatcherContractViolation) {
        switch result {
        case .success(let value) where value == expected: return
        case .success(let value): throw self.violation("\(call) returned \(value), not \(expected)")
        case .failure(let error): throw self.violation("\(call) threw \(error) instead of returning \(expected)")
        }
    }

    private func expectError(from result: Result<Int, any Error>, _ call: String) throws(DispatcherContractViolation) {
        switch result {
        case .failure(let error) where error is ContractError: return
        case .success(let value): throw self.violation("\(call) returned \(value) instead of throwing ContractError")
        case .failure(let error): throw self.violation("\(call) threw \(error) instead of ContractError")
        }
    }

    // MARK: - Awaitable dispatches follow cancellation

    func checkAwaitableCancellation() async throws {
        // Before the start, a delayed closure: no time passes, so it cannot start.
        let hour = Duration.seconds(3_600)
        for form in AwaitableForm.allCases {
            let call = "\(form)(after: 1 h) cancelled while the closure waited for its delay"
            let (result, ran) = try await self.awaitCancelledRightAfterDispatch(form, after: hour, call)
            try self.expectCancelledBeforeTheStart(result, ran: ran, call)
        }
        // Before the start, immediate: cancelled on the awaiting task's stack right after dispatch(_:) returned;
        // only where nothing runs until the check lets time pass (the awaitable dispatches are nonisolated, so
        // even runOnMainActor's task could start first on a real-time dispatcher).
        if !self.subject.runsTasksInline && self.subject.manualBase != nil {
            for form in AwaitableForm.allCases {
                let call = "\(form) cancelled right after its dispatch(_:) call returned"
                let (result, ran) = try await self.awaitCancelledRightAfterDispatch(form, after: .zero, call)
                try self.letTimePass(.zero)
                try await self.waitForLateRuns()
                try self.expectCancelledBeforeTheStart(result, ran: ran, call)
            }
        }
        // After the start: the closure itself cancels the awaiting task, then returns.
        for form in AwaitableForm.allCases {
            let request = TaskCancelRequest()
            let finished = ContractFlag()
            let call = "\(form) whose awaiting task was cancelled by the running closure"
            let result = try await self.awaitDispatch(call, cancelRequest: request) { dispatcher in
                try await form.call(on: dispatcher, after: .zero) {
                    request.cancel()
                    finished.set()
                    return 42
                }
            }
            guard finished.isSet else {
                throw self.violation("\(call): the closure did not run to the end")
            }
            switch result {
            case .success(42): continue
            case .success(let value): throw self.violation("\(call) returned \(value), not 42")
            case .failure(let error):
                throw self.violation(
                    "\(call) threw \(error) although the closure had started and ran to the end, returning 42")
            }
        }
    }

    private func expectCancelledBeforeTheStart(
        _ result: Result<Int, any Error>,
        ran: ContractFlag,
        _ call: String
    ) throws(DispatcherContractViolation) {
        if ran.isSet {
            throw self.violation("\(call): the closure ran although the awaiting task was cancelled before it started")
        }
        switch result {
        case .failure(let error) where error is CancellationError: return
        case .success(let value):
            throw self.violation("\(call) returned \(value) instead of throwing CancellationError")
        case .failure(let error): throw self.violation("\(call) threw \(error) instead of CancellationError")
        }
    }

    /// Calls `form` through the subject with `delay`, cancels its awaiting task right after the dispatch, and
    /// awaits the outcome, which must come at once (no time passes).
    ///
    /// - Returns: What the await ended with, and whether the closure ran.
    private func awaitCancelledRightAfterDispatch(
        _ form: AwaitableForm,
        after delay: Duration,
        _ call: String
    ) async throws -> (Result<Int, any Error>, ContractFlag) {
        let ran = ContractFlag()
        let result = try await self.awaitDispatch(
            call,
            cancellingAfterDispatch: true,
            hint:
                "; it should have thrown CancellationError at once, once cancel() on the task's handle stopped the task (a cancel that stops nothing leaves the await waiting)"
        ) { dispatcher in
            try await form.call(on: dispatcher, after: delay) {
                ran.set()
                return 42
            }
        }
        return (result, ran)
    }

    // MARK: - Driving one awaitable dispatch

    /// Calls an awaitable dispatch through the subject in a new task, lets `delay` pass once it has dispatched,
    /// and awaits its outcome, all within the rule's deadline.
    ///
    /// - Parameters:
    ///   - what: The call, for the evidence.
    ///   - delay: The time to let pass after the dispatch (none when `cancellingAfterDispatch`).
    ///   - cancellingAfterDispatch: Whether to cancel the awaiting task right after its dispatch returned (on
    ///     its own stack, so the dispatched task cannot have started); then no time passes here, and the call
    ///     must end at once.
    ///   - cancelRequest: Given the awaiting task, for the closure to cancel it.
    ///   - hint: What a timeout means, for the evidence.
    ///   - call: The awaitable dispatch, made on the dispatcher it is given.
    /// - Returns: What the call returned or threw.
    /// - Throws: ``DispatcherContractViolation`` when the call dispatches nothing or does not end by the rule's
    ///   deadline; what the driver's `advance` throws.
    func awaitDispatch(
        _ what: String,
        delay: Duration = .zero,
        cancellingAfterDispatch: Bool = false,
        cancelRequest: TaskCancelRequest? = nil,
        hint: String = "",
        _ call: @escaping @Sendable (any TaskDispatcher) async throws -> Int
    ) async throws -> Result<Int, any Error> {
        let observed = ObservedDispatcher(
            base: self.subject.dispatcher, cancelsCallerAfterDispatch: cancellingAfterDispatch)
        let outcome = ContractSignal<Result<Int, any Error>>()
        let task = Task {
            do {
                outcome.fulfil(.success(try await call(observed)))
            } catch {
                outcome.fulfil(.failure(error))
            }
        }
        cancelRequest?.hold { task.cancel() }
        guard await observed.dispatched.wait(until: self.deadline) != nil else {
            task.cancel()
            throw self.violation(
                "\(what) dispatched nothing within the rule's time limit of \(self.timeLimit.millisecondsText)")
        }
        // Cancelled right after its dispatch, the await must end before any time passes, and no time may pass
        // until it has: `dispatched` is fulfilled inside the `dispatch(_:)` call, before the awaitable holds the
        // handle it cancels, so a step now would race that cancel (and run the closure the cancel would stop).
        if !cancellingAfterDispatch {
            try self.letTimePass(delay)
            // Over a ManualDispatcher, a task a decorator holds later than asked (an added delay) runs now, on the
            // virtual clock; otherwise the await would wait for it in real time, in vain.
            try? self.subject.runHeldTasks?()
        }
        guard let result = await outcome.wait(until: self.deadline) else {
            task.cancel()
            throw self.violation(
                "\(what) neither returned nor threw within the rule's time limit of \(self.timeLimit.millisecondsText)\(hint)"
            )
        }
        return result
    }
}

/// The two awaitable dispatches, called the same way.
enum AwaitableForm: String, CaseIterable, CustomStringConvertible {
    case runInBackground
    case runOnMainActor

    var description: String { self.rawValue }

    func call(
        on dispatcher: any TaskDispatcher,
        after delay: Duration,
        _ work: @escaping @Sendable () -> Int
    ) async throws -> Int {
        switch self {
        case .runInBackground: try await dispatcher.runInBackground(after: delay, label: "contract awaitable", work)
        case .runOnMainActor: try await dispatcher.runOnMainActor(after: delay, label: "contract awaitable", work)
        }
    }
}

/// Forwards to the subject's dispatcher and reports its first dispatch once it has returned; optionally cancels the
/// calling Swift task right after that dispatch returned, on the caller's stack, so the task cannot have started.
struct ObservedDispatcher: TaskDispatcher {
    let base: any TaskDispatcher
    let dispatched = ContractFlag()
    let cancelsCallerAfterDispatch: Bool

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let handle = self.base.dispatch(task)
        if self.cancelsCallerAfterDispatch {
            withUnsafeCurrentTask { $0?.cancel() }
        }
        self.dispatched.set()
        return handle
    }
}

/// The error the contract's closures throw.
struct ContractError: Error, Equatable {}
