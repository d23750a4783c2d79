import TaskDispatchTesting
import XCTest

// The reference's XCTest registry, verbatim: it compiles with the upcoming features a careful user turns on.
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

    func testADispatcherLeftIdlePassesTheCheck() throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background {}
        try dispatcher.runUntilIdle()
        XCTAssertEqual(self.dispatchers.createdCount, 1)
    }
}
