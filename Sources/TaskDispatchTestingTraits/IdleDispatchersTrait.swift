import TaskDispatch
import TaskDispatchTesting
public import Testing

/// A Swift Testing trait that fails a test which leaves work in any `ManualDispatcher` created while it ran.
///
/// After the test body ends (returning or throwing), the trait checks every `ManualDispatcher` created during
/// that test: by the test itself, by its fixtures, or by the code under test. For each one that still holds
/// work it records an issue with the dispatcher's full `verifyIdle()` error text, at the source location where
/// the dispatcher was created. A dispatcher released before the end with work left (pending tasks, tracked tasks
/// still running, an unclaimed error) is reported too, to the trait alone, not on standard error as well. Work
/// that the error the test threw already lists (its own `verifyIdle()`, say) is not reported a second time.
///
/// Before it checks, the trait lets the tracked tasks that were cancelled end, within each dispatcher's
/// `waitLimit`: a suite that cancels its model's loop in `deinit`, which Swift Testing runs after the test, is idle
/// once the loop ends. A test that was cancelled (`Test.cancel()`) gets the work it left as a warning, not a
/// failure, and is shown as cancelled (from Swift 6.3, whose Swift Testing has warnings).
///
/// ```swift
/// import TaskDispatchTestingTraits
///
/// @Suite(.verifiesIdleDispatchers)
/// struct FeedModelTests {
///     @Test @MainActor func showsParsedItems() throws {
///         let dispatcher = ManualDispatcher()            // an issue here if work is left behind
///         let model = FeedModel(dispatcher: dispatcher)
///         model.refresh()
///         try dispatcher.runNextBackground()
///         // forgot runNextForeground(): the trait records "ManualDispatcher created at
///         // FeedTests/FeedModelTests.swift:6 still holds work at the end of the tracked scope: …"
///     }
/// }
/// ```
///
/// On a suite it applies to every test in it, and to each case of a parameterized test separately. Tracking
/// is scoped by a task-local value (through `ManualDispatcherRegistry`), so tests that run in parallel never
/// see each other's dispatchers, and a dispatcher created in a child task or a `Task {}` of the test counts
/// for that test. A dispatcher created on a thread the test does not own (a Dispatch queue, a detached task)
/// is not tracked. A dispatcher belongs to the one test that created it: one kept in a `static let` or another
/// shared place, created by whichever test touches it first, is checked at the end of that test only, and the
/// work other tests leave in it is not. Create a dispatcher in each test (or in the suite's `init`, which
/// Swift Testing runs for each test).
///
/// ## Random order
///
/// The trait takes no seed range: a parameterized test already runs one case per seed, in parallel, names
/// the failing seed in its arguments, and re-runs one seed alone; the trait checks each case on its own.
///
/// ```swift
/// @Test(.verifiesIdleDispatchers, arguments: 0..<20 as Range<UInt64>)
/// func refreshIsOrderIndependent(seed: UInt64) throws {
///     let dispatcher = ManualDispatcher(order: .random(seed: seed))
///     // …
/// }
/// ```
///
/// ## XCTest
///
/// `ManualDispatcherRegistry` does the same without this module: override `invokeTest()` to run
/// `super.invokeTest()` inside `registry.track { }`, and in `tearDown` fail the test for each of
/// `registry.idleFailures()`, at the line that created its dispatcher.
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
    /// still holds work, at the line that created it, or at `location` when swift-testing cannot show that line.
    /// The trait's scope, callable without a `Test` (the package's own tests call it in an exit test's process).
    package static func verifyingIdleDispatchers(
        elseAt location: SourceLocation,
        _ function: @Sendable () async throws -> Void
    ) async throws {
        let registry = ManualDispatcherRegistry(recordsEveryFailure: true)
        do {
            try await registry.track { try await function() }
        } catch {
            await Self.recordIssues(of: registry, elseAt: location, besides: error)
            throw error
        }
        await Self.recordIssues(of: registry, elseAt: location, besides: nil)
    }

    /// Records an issue for each dispatcher that holds work, once the tracked tasks that were cancelled (a loop
    /// stopped in a suite's `deinit`) have ended, except work that `thrown`, the error the test threw, already listed:
    /// one report for each leftover. The issue is the failure itself, so its first line says what is left. In a test
    /// that was cancelled (`Test.cancel()`, or a time limit that passed, which fails the test itself), the work left
    /// is recorded as a warning where Swift Testing has warnings (Swift 6.3 and later): the test did not run to its
    /// end, and its cancellation is what it reports.
    private static func recordIssues(
        of registry: ManualDispatcherRegistry,
        elseAt fallback: SourceLocation,
        besides thrown: (any Error)?
    ) async {
        #if compiler(>=6.3)
            let cancelled = Task.isCancelled
        #endif
        for failure in await registry.idleFailuresOnceCancelledTasksEnd(besides: thrown) {
            let location = Self.sourceLocation(of: failure.createdAt) ?? fallback
            #if compiler(>=6.3)
                if cancelled {
                    Issue.record(Comment(rawValue: failure.description), severity: .warning, sourceLocation: location)
                    continue
                }
            #endif
            Issue.record(failure, sourceLocation: location)
        }
    }

    /// Where the dispatcher was created, as swift-testing shows it; `nil` for a call site it cannot show (a file ID
    /// that is not `Module/File.swift`, a line of zero or past `Int.max`), which `SourceLocation` would trap on:
    /// the issue is then placed at the test, and its comment still names the call site.
    static func sourceLocation(of callSite: CallSite) -> SourceLocation? {
        let file = callSite.fileID.description
        guard let slash = file.firstIndex(of: "/"), slash != file.startIndex, file.index(after: slash) != file.endIndex,
            callSite.line > 0, let line = Int(exactly: callSite.line)
        else { return nil }
        return SourceLocation(fileID: file, filePath: file, line: line, column: 1)
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
