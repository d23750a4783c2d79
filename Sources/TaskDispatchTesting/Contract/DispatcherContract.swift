import TaskDispatch

/// The `TaskDispatcher` contract as a check that any dispatcher can run: the test that the authors of a
/// dispatcher, a decorator or a wrapper run to prove that their type keeps every rule.
///
/// One call checks every ``Rule`` against fresh dispatchers made by your factory, and throws a
/// ``DispatcherContractViolation`` that names the first rule broken, what was seen, and the rule's text. It
/// imports neither XCTest nor Testing: a thrown error fails a test in both.
///
/// ```swift
/// import TaskDispatch
/// import TaskDispatchTesting
/// import Testing
///
/// @Test func metricsDispatcherKeepsTheContract() async throws {
///     try await DispatcherContract.check { .realTime(MetricsDispatcher(base: QueueDispatcher())) }
/// }
/// ```
///
/// ```swift
/// final class MetricsDispatcherTests: XCTestCase {
///     func testKeepsTheContract() async throws {
///         try await DispatcherContract.check { .realTime(MetricsDispatcher(base: QueueDispatcher())) }
///     }
/// }
/// ```
///
/// A test dispatcher that holds tasks until the test runs them is checked through a driver that lets its
/// time pass: ``Subject/manual(_:)`` for ``ManualDispatcher``, ``Subject/init(_:runsTasksInline:now:advance:)``
/// for your own.
///
/// ## Run time
///
/// Each rule's waits together are bounded in real time by `timeLimitPerRule`, and no wait blocks a thread: a
/// dispatcher that drops a task fails within that bound instead of hanging the test, so the whole check ends
/// within about `rules.count × timeLimitPerRule`. The default, 30 seconds, is generous on purpose: on a shared,
/// loaded machine, parallel tests can hold the main queue for seconds. A dispatcher that keeps the
/// contract passes all rules in a little over a second: the delays the check uses are at most 50 ms, but for
/// one of 1.05 s in the delay rule, which catches a dispatcher that drops the whole seconds of a delay.
///
/// The check runs off the main actor and needs the main actor free, as it is in any `async` test of Swift
/// Testing or XCTest: foreground tasks run there, and it dispatches some tasks from there.
///
/// ## Awaitable dispatches and decorators
///
/// The check also drives `runInBackground` and `runOnMainActor` through the subject: the value and the error
/// arrive, and the awaiting task's cancellation stops a closure that has not started and leaves one that has
/// alone. A decorator over a ``ManualDispatcher``, given as ``Subject/manual(_:over:)``, is also checked for what
/// tests rely on underneath it: the clock, `startTask`, and a tracked task's waits. New rules are added to
/// ``Rule``; code that calls this check with the default `rules` checks them without a change.
public enum DispatcherContract {
    /// Checks `rules` against dispatchers made by `makeSubject`, one fresh dispatcher per rule.
    ///
    /// Runs the rules in order and stops at the first one broken.
    ///
    /// - Parameters:
    ///   - rules: The rules to check; all of them by default.
    ///   - timeLimitPerRule: The real-time bound on the waits of each rule; zero or less ends every wait at
    ///     once, so a task that has not run by then is reported as never run.
    ///   - fileID: The calling file, printed in a violation; leave the default.
    ///   - line: The calling line, printed in a violation; leave the default.
    ///   - makeSubject: Makes the dispatcher under test. Called once per rule.
    /// - Throws: ``DispatcherContractViolation`` for the first rule the dispatcher breaks; or what
    ///   `makeSubject` or a driver's `advance` throws.
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
            let check = RuleCheck(rule: rule, subject: subject, timeLimit: timeLimitPerRule, callSite: callSite)
            try await check.run()
        }
    }
}
