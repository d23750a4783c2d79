public import TaskDispatch

/// The error ``DispatcherContract/check(rules:timeLimitPerRule:fileID:line:_:)`` throws when a dispatcher
/// breaks a rule of the `TaskDispatcher` contract: which rule, what was seen, and what the rule says.
///
/// ```
/// DispatcherContract: DroppingDispatcher broke the rule "exactly once" (checked at MyTests/MyTests.swift:9):
/// task 99 (background, immediate) never ran within the rule's time limit of 5 s (and 5 more, such as task
/// 199); 494 of 500 tasks ran. The rule: Each task accepted by dispatch(_:) runs at most once. … Fix the
/// dispatcher, then run the check again.
/// ```
public struct DispatcherContractViolation: Error, Sendable, CustomStringConvertible {
    /// The rule the dispatcher broke.
    public let rule: DispatcherContract.Rule

    /// What the check saw, such as `"task 17 (background, immediate) ran 2 times"`.
    public let evidence: String

    /// The type of the dispatcher under test.
    public let dispatcherType: String

    /// Where the check was called.
    public let callSite: CallSite
    /// Whether the check ran out of time on evidence of the machine's load (its own task started late), not of the
    /// dispatcher's fault.
    let ranOutOfTime: Bool

    /// Creates a violation; only the check (and the package's own tests) create them.
    package init(
        rule: DispatcherContract.Rule,
        evidence: String,
        dispatcherType: String,
        callSite: CallSite,
        ranOutOfTime: Bool = false
    ) {
        self.rule = rule
        self.evidence = evidence
        self.dispatcherType = dispatcherType
        self.callSite = callSite
        self.ranOutOfTime = ranOutOfTime
    }

    /// The rule's name, the evidence, the rule's text, and what to do next, in one paragraph; for a check that ran out
    /// of time on evidence of the machine's load, it says so, and to run it again with a longer limit.
    public var description: String {
        guard self.ranOutOfTime else {
            return
                "DispatcherContract: \(self.dispatcherType) broke the rule \"\(self.rule.name)\" (checked at \(self.callSite)): \(self.evidence). The rule: \(self.rule.text) Fix the dispatcher, then run the check again."
        }
        return
            "DispatcherContract: the check of \(self.dispatcherType) ran out of time on the rule \"\(self.rule.name)\" (checked at \(self.callSite)): \(self.evidence). The rule: \(self.rule.text) The machine ran the check's own work too late to tell: run the check again with a longer timeLimitPerRule (30 s by default), or beside fewer tests that block threads."
    }
}
