import ImageExample
import TaskDispatchTesting
import XCTest

/// The stepped test in XCTest, as the guide from expectations shows it: no expectation, no timeout.
final class ImageLoaderXCTests: XCTestCase {
    func testLoadsAnImageStepByStep() throws {
        try MainActor.assumeIsolated {
            let dispatcher = ManualDispatcher()
            let loader = ImageLoader(source: TableImageSource(), dispatcher: dispatcher)
            let deliveries = Deliveries()
            loader.loadImage(id: "cat") { result in deliveries.record(result) }

            try dispatcher.runNextBackground()  // was: wait(for: [expectation], timeout: 5)
            XCTAssertTrue(deliveries.results.isEmpty)
            try dispatcher.runNextForeground()
            XCTAssertEqual(deliveries.results, [.success(cat)])
            try dispatcher.verifyIdle()
        }
    }
}
