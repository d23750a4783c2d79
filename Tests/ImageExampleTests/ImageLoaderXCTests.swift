import ImageExample
import TaskDispatchTesting
import XCTest

// snippet: expectation-test
/// The usual way: a real dispatcher, an expectation, and a wait bounded by a timeout.
final class ImageLoaderExpectationTests: XCTestCase {
    func testLoadsAnImage() {
        let loader = ImageLoader(source: TableImageSource(), dispatcher: QueueDispatcher())
        let done = expectation(description: "image delivered")
        loader.loadImage(id: "cat") { result in
            XCTAssertEqual(result, .success(cat))
            done.fulfill()
        }
        wait(for: [done], timeout: 10)
        XCTAssertEqual(loader.cachedImage(for: "cat"), cat)
    }

    func testLoadsAnImageInAnAsyncTest() async {
        let loader = ImageLoader(source: TableImageSource(), dispatcher: QueueDispatcher())
        let done = expectation(description: "image delivered")
        loader.loadImage(id: "cat") { result in
            XCTAssertEqual(result, .success(cat))
            done.fulfill()
        }
        await fulfillment(of: [done], timeout: 10)
        XCTAssertEqual(loader.cachedImage(for: "cat"), cat)
    }
}
// end-snippet

// snippet: stepped-xctest
/// The stepped test in XCTest: no expectation, no timeout.
final class ImageLoaderXCTests: XCTestCase {
    func testLoadsAnImageStepByStep() throws {
        try MainActor.assumeIsolated {
            let dispatcher = ManualDispatcher()
            let loader = ImageLoader(source: TableImageSource(), dispatcher: dispatcher)
            let deliveries = Deliveries()
            loader.loadImage(id: "cat") { result in deliveries.record(result) }

            try dispatcher.runNextBackground()  // was: wait(for: [done], timeout: 10)
            XCTAssertTrue(deliveries.results.isEmpty)
            try dispatcher.runNextForeground()
            XCTAssertEqual(deliveries.results, [.success(cat)])
            try dispatcher.verifyIdle()
        }
    }
}
// end-snippet
