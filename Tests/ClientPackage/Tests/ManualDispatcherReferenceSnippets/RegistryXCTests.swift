import TaskDispatchTesting
import XCTest

// The reference's XCTest registry, verbatim: it compiles with the upcoming features a careful user turns on.
final class ManualDispatcherRegistryXCTests: XCTestCase {
    private let dispatchers = ManualDispatcherRegistry()

    override func invokeTest() {
        dispatchers.track { super.invokeTest() }  // tracks setUp, the test and tearDown
    }

    @concurrent override func tearDown() async throws {
        // Once the tasks the test's end cancelled have ended; each failure at the line that created its dispatcher.
        for failure in await dispatchers.idleFailuresOnceCancelledTasksEnd() {
            XCTFail("\(failure)", file: failure.createdAt.fileID, line: failure.createdAt.line)
        }
        try await super.tearDown()
    }

    func testADispatcherLeftIdlePassesTheCheck() throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background {}
        try dispatcher.runUntilIdle()
        XCTAssertEqual(self.dispatchers.createdCount, 1)
    }
}
