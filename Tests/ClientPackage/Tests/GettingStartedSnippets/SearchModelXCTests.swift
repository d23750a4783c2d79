import TaskDispatchTesting
import XCTest

final class SearchModelTests: XCTestCase {
    func testShowsMatchesAfterFiltering() throws {
        try MainActor.assumeIsolated {
            let dispatcher = ManualDispatcher()
            let model = SearchModel(index: ["swift", "swiftly", "rust"], dispatcher: dispatcher)

            model.search("swift")
            try dispatcher.runNextBackground()
            XCTAssertTrue(model.results.isEmpty)

            try dispatcher.runNextForeground()
            XCTAssertEqual(model.results, ["swift", "swiftly"])
            try dispatcher.verifyIdle()
        }
    }
}
