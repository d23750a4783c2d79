public import TaskDispatch

/// The error ``DispatcherContract/check(rules:timeLimitPerRule:fileID:line:_:)`` throws when a dispatcher
/// breaks a rule of the `TaskDispatcher` contract, or when the check ran out of time to tell (``ranOutOfTime``):
/// which rule, what was seen, and what the rule says.
///
/// ```
/// DispatcherContract: DroppingDispatcher broke the rule "exactly once" (checked at MyTests/MyTests.swift:9):
/// task 99 (background, immediate) never ran within the rule's time limit of 5 s (and 5 more, such as task
/// 199); 494 of 500 tasks ran. The rule: Each task accepted by dispatch(_:) runs at most once. … Fix the
/// dispatcher, then run the check again.
/// ```
public struct DispatcherContractViolation: Error, Sendable, CustomStringConvertible {
    /// The rule the dispatcher broke, or whose check ran out of time.
    public let rule: DispatcherContract.Rule

    /// What the check saw, such as `"task 17 (background, immediate) ran 2 times"`.
    public let evidence: String

    /// The type of the dispatcher under test.
    public let dispatcherType: String

    /// Where the check was called.
    public let callSite: CallSite

    /// Whether the rule's time limit passed before the check could tell if the rule holds, with evidence that the
    /// dispatcher had done its part: the check's own task had not started, or the `ManualDispatcher` underneath had
    /// run the work the check waited for. A busy machine, or work that blocks threads, is the likely cause: run the
    /// check again with a longer `timeLimitPerRule`.
    public let ranOutOfTime: Bool

    /// Creates a violation; only the check (and the package's own tests) create them.
    package init(rule: DispatcherContract.Rule, evidence: String, dispatcherType: String, callSite: CallSite) {
        self.init(
            rule: rule, evidence: evidence, dispatcherType: dispatcherType, callSite: callSite, ranOutOfTime: false)
    }

    /// Creates a violation, or with `ranOutOfTime` a check that ran out of time.
    package init(
        rule: DispatcherContract.Rule,
        evidence: String,
        dispatcherType: String,
        callSite: CallSite,
        ranOutOfTime: Bool
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
            "DispatcherContract: the check of \(self.dispatcherType) ran out of time on the rule \"\(self.rule.name)\" (checked at \(self.callSite)): \(self.evidence). The rule: \(self.rule.text) The check's own work ran too late to tell whether the rule holds (a busy machine, or other work blocking threads): run the check again with a longer timeLimitPerRule (\(formatRealTimeLimit(DispatcherContract.defaultTimeLimitPerRule)) by default); if it happens again at the default, look at what the evidence names."
    }
}
