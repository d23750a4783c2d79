import TaskDispatch

/// The `TaskDispatcher` contract as a check that the authors of a dispatcher, a decorator or a wrapper run to prove
/// that their type keeps every rule.
///
/// One call checks every ``Rule`` against fresh dispatchers from your factory and throws a
/// ``DispatcherContractViolation`` for the first rule broken. It blocks no thread, ends within `timeLimitPerRule` a
/// rule while its own tasks get threads, and needs the main actor free, as any `async` test leaves it.
///
/// ```swift
/// try await DispatcherContract.check { .realTime(MetricsDispatcher(base: QueueDispatcher())) }
/// ```
///
/// A test dispatcher is checked through a driver that lets its time pass (see ``Subject``). See
/// <doc:WritingYourOwnDispatcher>.
public enum DispatcherContract {
    /// Checks `rules` in order, each against a fresh dispatcher from `makeSubject`, and stops at the first broken.
    ///
    /// - Parameters:
    ///   - rules: The rules to check; all of them by default.
    ///   - timeLimitPerRule: The real-time bound on the waits of each rule; zero or less ends every wait at
    ///     once, so a task that has not run by then is reported as never run. Below the default, a busy machine can
    ///     make a correct dispatcher miss it.
    ///   - fileID: The calling file, printed in a violation; leave the default.
    ///   - line: The calling line, printed in a violation; leave the default.
    ///   - makeSubject: Makes the dispatcher under test. Called once per rule.
    /// - Throws: ``DispatcherContractViolation`` for the first rule the dispatcher breaks, or whose check ran out of
    ///   time (``DispatcherContractViolation/ranOutOfTime``); or what `makeSubject` or a driver's `advance` throws.
    public static func check(
        rules: [Rule] = Rule.allCases,
        timeLimitPerRule: Duration = .seconds(30),
        fileID: StaticString = #fileID,
        line: UInt = #line,
        _ makeSubject: @Sendable () throws -> Subject
    ) async throws {
        let callSite = CallSite(fileID: fileID, line: line)
        for rule in rules {
            let subject = try makeSubject()
            if rule == .neverInline && subject.runsTasksInline { continue }
            let deadline = ContinuousClock.now + timeLimitPerRule.realTimeLimit
            try await RuleCheck(
                rule: rule, subject: subject, timeLimit: timeLimitPerRule, deadline: deadline, callSite: callSite
            ).run()
        }
    }

    /// The `timeLimitPerRule` of ``check(rules:timeLimitPerRule:fileID:line:_:)`` unless the caller gives one.
    static let defaultTimeLimitPerRule = Duration.seconds(30)
}
