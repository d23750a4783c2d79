// The XCTest snippet of MigratingFromExpectations, verbatim: it steps the landing page's CounterModel.
import TaskDispatchTesting
import XCTest

final class CounterModelXCTests: XCTestCase {
    func testSumsStepByStep() throws {
        try MainActor.assumeIsolated {
            let dispatcher = ManualDispatcher()
            let model = CounterModel(dispatcher: dispatcher)
            model.sum([1, 2, 3])

            try dispatcher.runNextBackground()  // was: wait(for: [done], timeout: 10)
            XCTAssertEqual(model.total, 0)
            try dispatcher.runNextForeground()
            XCTAssertEqual(model.total, 6)
            try dispatcher.verifyIdle()
        }
    }
}
