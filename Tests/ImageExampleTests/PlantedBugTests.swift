import ImageExample
import TaskDispatchTesting
import Testing
import XCTest

// snippet: planted-bug
/// The expectation test passes on the buggy loader: the image arrives, and it does not ask on which thread.
final class PlantedBugExpectationTests: XCTestCase {
    func testTheExpectationTestMissesTheBug() {
        let loader = BuggyImageLoader(source: TableImageSource(), dispatcher: QueueDispatcher())
        let done = expectation(description: "image delivered")
        loader.loadImage(id: "cat") { result in
            XCTAssertEqual(result, .success(cat))
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
    }
}

/// The stepped test fails on it: the image arrives during the background step, and no delivery step follows.
@Suite struct PlantedBugTests {
    @Test @MainActor func theSteppedTestCatchesTheBug() {
        let dispatcher = ManualDispatcher()
        let loader = BuggyImageLoader(source: TableImageSource(), dispatcher: dispatcher)
        withKnownIssue("BuggyImageLoader calls the completion from the background task") {
            try stepThroughALoad(loader, on: dispatcher)
        }
    }
}
// end-snippet

extension PlantedBugTests {
    /// The wait in Swift Testing, a continuation under a time limit, misses the bug too.
    @Test(.timeLimit(.minutes(1))) func theContinuationTestMissesTheBug() async {
        let loader = BuggyImageLoader(source: TableImageSource(), dispatcher: QueueDispatcher())
        let result = await loadThroughTheCallback(loader, id: "cat")
        #expect(result == .success(cat))
    }
}
