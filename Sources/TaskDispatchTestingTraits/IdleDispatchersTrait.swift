import Foundation
import TaskDispatch
import TaskDispatchTesting
public import Testing

/// A Swift Testing trait that fails a test which leaves work in any `ManualDispatcher` created while it ran.
///
/// After the test body ends, the trait checks every `ManualDispatcher` that the test, its fixtures or the code
/// under test created, and records an issue with its full `verifyIdle()` text at the line that created each one
/// still holding work; one released early with work left is reported too. It first lets cancelled tracked tasks end
/// (a loop stopped in a suite's `deinit`), within each dispatcher's `waitLimit`, in a cancelled test too. Work that
/// the test's own thrown error lists is not reported twice, and a cancelled test gets warnings (Swift 6.3 and later).
///
/// On a suite it checks each test, and each case of a parameterized test (one random-order seed a case, say), on
/// its own. Tracking is task-local (through `ManualDispatcherRegistry`), so parallel tests never see each other's
/// dispatchers. A dispatcher created on a thread the test does not own, or in `Task.detached` (which inherits no
/// task-local value), is not tracked, and one shared in a
/// `static let` belongs to the first test that touched it: create one in each test. XCTest gets the same check
/// from `ManualDispatcherRegistry`.
public struct IdleDispatchersTrait: TestTrait, SuiteTrait, TestScoping {
    /// Creates the trait; use ``Testing/Trait/verifiesIdleDispatchers`` instead.
    public init() {}

    /// `true`: on a suite, the trait applies to every test in it.
    public var isRecursive: Bool {
        true
    }

    /// Scopes each test case, never a whole suite or a whole parameterized test, so each case is checked
    /// alone.
    ///
    /// - Parameters:
    ///   - test: The test or suite the trait applies to.
    ///   - testCase: The test case about to run, or `nil` for a suite or a whole test function.
    /// - Returns: The trait for a test case, `nil` otherwise.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    /// Runs the test case while tracking the `ManualDispatcher`s it creates, then records an issue for each one
    /// that still holds work.
    ///
    /// - Parameters:
    ///   - test: The test that runs.
    ///   - testCase: The test case that runs.
    ///   - function: The test case's body.
    /// - Throws: What the body throws, after the dispatchers were checked.
    public func provideScope(
        for test: Test,
        testCase: Test.Case?,
        performing function: @Sendable () async throws -> Void
    ) async throws {
        try await Self.verifyingIdleDispatchers(elseAt: test.sourceLocation, function)
    }

    /// Runs `function` while tracking the `ManualDispatcher`s it creates, then records an issue for each one that
    /// still holds work (once cancelled tracked tasks have ended, except work the error `function` threw listed), at
    /// the line that created it, or at `location` when swift-testing cannot show that line. In a cancelled test
    /// (`Test.cancel()`, a time limit) each is a warning where Swift Testing has warnings (Swift 6.3 and later): the
    /// cancellation is what the test reports. The trait's scope, callable without a `Test` (the package's own tests
    /// call it in an exit test's process).
    package static func verifyingIdleDispatchers(
        elseAt fallback: SourceLocation,
        _ function: @Sendable () async throws -> Void
    ) async throws {
        let registry = ManualDispatcherRegistry(recordsEveryFailure: true)
        var thrown: (any Error)?
        do {
            try await registry.track { try await function() }
        } catch {
            thrown = error
        }
        #if compiler(>=6.3)
            let wasCancelled = Task.isCancelled
        #endif
        // In a task of its own, which is not cancelled: a cancelled test's check still lets cancelled tracked tasks end
        // (the registry's wait returns at once to a cancelled caller), within each dispatcher's wait limit.
        let failures = await Task { [thrown] in
            await registry.idleFailuresOnceCancelledTasksEnd(besides: thrown)
        }.value
        #if compiler(>=6.3)
            // Also when the cancel (a time limit) came while the check waited.
            let cancelled = wasCancelled || Task.isCancelled
        #endif
        for failure in failures {
            let location = Self.sourceLocation(of: failure.createdAt, near: fallback) ?? fallback
            #if compiler(>=6.3)
                if cancelled {
                    Issue.record(Comment(rawValue: failure.description), severity: .warning, sourceLocation: location)
                    continue
                }
            #endif
            Issue.record(failure, sourceLocation: location)
        }
        if let thrown { throw thrown }
    }

    /// Where the dispatcher was created, as swift-testing shows it; `nil` for a call site it cannot show (a file ID
    /// that is not `Module/File.swift`, a line of zero or past `Int.max`), which `SourceLocation` would trap on:
    /// the issue is then placed at the test, and its comment still names the call site.
    ///
    /// A call site keeps only the file ID, so the path comes from the test's location `test`: its own file, or a file
    /// of that name beside it (a fixture). Elsewhere the path is the file ID, which an editor may not find.
    static func sourceLocation(of callSite: CallSite, near test: SourceLocation) -> SourceLocation? {
        let file = callSite.fileID.description
        guard let slash = file.firstIndex(of: "/"), slash != file.startIndex, file.index(after: slash) != file.endIndex,
            callSite.line > 0, let line = Int(exactly: callSite.line)
        else { return nil }
        var path = file
        if file == test.fileID {
            path = test.filePath
        } else if file[..<slash] == test.moduleName, let end = test.filePath.lastIndex(of: "/") {
            let beside = String(test.filePath[...end] + file[file.index(after: slash)...])
            if FileManager.default.fileExists(atPath: beside) { path = beside }
        }
        return SourceLocation(fileID: file, filePath: path, line: line, column: 1)
    }
}

extension Trait where Self == IdleDispatchersTrait {
    /// Fails a test, or every test of a suite, that leaves work in a `ManualDispatcher` created while it ran.
    ///
    /// ```swift
    /// @Test(.verifiesIdleDispatchers) func loadsTheFeed() throws { … }
    /// @Suite(.verifiesIdleDispatchers) struct FeedTests { … }
    /// ```
    public static var verifiesIdleDispatchers: Self {
        IdleDispatchersTrait()
    }
}
