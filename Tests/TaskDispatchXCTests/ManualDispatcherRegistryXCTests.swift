import TaskDispatch
import TaskDispatchTesting
import XCTest

/// The XCTest equivalent of the `.verifiesIdleDispatchers` trait: a registry around `invokeTest()`, checked in
/// `tearDown`, with no XCTest import in the library. The checks are placed as the reference's XCTest section shows,
/// so that a failure points at a line of the test, not at `<EXPR>:0` as an error thrown in `tearDown` does on Linux.
final class ManualDispatcherRegistryXCTests: XCTestCase {
    private let dispatchers = ManualDispatcherRegistry()

    override func invokeTest() {
        dispatchers.track { super.invokeTest() }  // tracks setUp, the test and tearDown
    }

    override func tearDown() async throws {
        guard testRun?.hasBeenSkipped != true else { return }  // a skipped test is not failed for what it left
        // Once the tasks the test's end cancelled have ended; each failure at the line that created its dispatcher.
        for failure in await dispatchers.idleFailuresOnceCancelledTasksEnd() {
            XCTFail("\(failure)", file: failure.createdAt.fileID, line: failure.createdAt.line)
        }
        // No super.tearDown(): XCTestCase's does nothing, and calling it sends self under NonisolatedNonsendingByDefault
    }
}

extension ManualDispatcherRegistryXCTests {
    func testTracksTheDispatchersTheCodeUnderTestCreates() throws {
        let model = ModelThatMakesItsOwnDispatcher()
        model.load()
        XCTAssertEqual(self.dispatchers.createdCount, 1)
        XCTAssertEqual(self.dispatchers.idleFailures().count, 1)
        try model.dispatcher.runUntilIdle()
        // tearDown's verifyIdle() passes: the work ran.
    }

    func testAScopeWithWorkLeftBehindFailsWithTheCreationLine() throws {
        let inner = ManualDispatcherRegistry()
        let (dispatcher, line) = inner.track { (ManualDispatcher(), #line) }
        dispatcher.background(label: "left behind") {}
        XCTAssertThrowsError(try inner.verifyIdle()) { error in
            let text = String(describing: error)
            XCTAssert(text.contains("ManualDispatcherRegistryXCTests.swift:\(line) still holds work"), text)
            XCTAssert(text.contains("\"left behind\""), text)
        }
        try dispatcher.runUntilIdle()
    }

    /// A test that skips itself with work left is shown as skipped, not failed: the recipe's `tearDown` failed it
    /// for the work (a probe, 10 runs of 10). Without the guard this test fails.
    func testASkippedTestIsNotFailedForTheWorkItLeft() throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background(label: "left as the test skipped") {}
        XCTAssertEqual(self.dispatchers.idleFailures().count, 1)
        throw XCTSkip("skipped with a task pending, as a test that finds its environment lacking would")
    }

    func testOneDispatcherNeedsOnlyATeardownBlock() {
        let dispatcher = ManualDispatcher()
        addTeardownBlock { XCTAssertNoThrow(try dispatcher.verifyIdle()) }  // a failure points at this line
        dispatcher.background {}
        XCTAssertEqual(dispatcher.pendingTaskCount, 1)
        XCTAssertNoThrow(try dispatcher.runUntilIdle())
    }

    /// A model released as the test ends cancels its tick loop, which ends on its own thread: the async tearDown's
    /// check waits for that end instead of reporting the loop as still running (a check at once failed most runs).
    func testAModelReleasedAtTheEndCancelsItsLoopAndTheCheckWaitsForItsEnd() throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        MainActor.assumeIsolated {
            let model = PollingModel(dispatcher: dispatcher)
            XCTAssertEqual(model.polls, 0)  // its loop starts once the test lets go of the main actor
        }
    }

    func testTheContractCheckRunsFromXCTest() async throws {
        try await DispatcherContract.check { .realTime(QueueDispatcher()) }
        try await DispatcherContract.check { .manual(ManualDispatcher()) }
    }
}

/// Code under test that creates its own dispatcher.
final class ModelThatMakesItsOwnDispatcher: Sendable {
    let dispatcher = ManualDispatcher()

    func load() {
        self.dispatcher.background(label: "load") {}
    }
}

/// A model that polls from a tick loop started through its scope, which its release cancels.
@MainActor final class PollingModel {
    private let scope: DispatchScope
    private(set) var polls = 0

    init(dispatcher: any TaskDispatcher) {
        self.scope = DispatchScope(dispatcher)
        self.scope.startTask(label: "poll loop") { [weak self, dispatcher] in
            for await _ in dispatcher.ticks(every: .seconds(1), after: .zero, label: "poll tick") {
                let polled = try await dispatcher.runInBackground(label: "poll") { 1 }
                self?.polls += polled
            }
        }
    }
}
