import TaskDispatch
import TaskDispatchTesting
import XCTest

/// The two shapes of a main-actor XCTest test that run on Linux, as the reference's XCTest section shows them. A
/// synchronous method marked `@MainActor` would crash the whole XCTest run at discovery there (Swift 6.3.1), so
/// neither method below is one.
final class CounterModelXCTests: XCTestCase {
    private var dispatcher: ManualDispatcher!

    override func setUp() {
        super.setUp()
        dispatcher = ManualDispatcher()
    }

    @MainActor func testSumsInTheBackgroundAndShowsOnTheMainActor() async throws {  // async: runs on Linux too
        let model = CounterModel(dispatcher: dispatcher)
        model.sum([1, 2, 3])
        try await dispatcher.runNextBackground()
        XCTAssertEqual(model.total, 0)
        try await dispatcher.runNextForeground()
        XCTAssertEqual(model.total, 6)
        try dispatcher.verifyIdle()
    }

    func testSumsStepByStep() throws {  // synchronous: no @MainActor on the method
        let dispatcher = self.dispatcher!  // copied out of self before the closure
        try MainActor.assumeIsolated {
            let model = CounterModel(dispatcher: dispatcher)
            model.sum([1, 2, 3])
            try dispatcher.runNextBackground()
            try dispatcher.runNextForeground()
            XCTAssertEqual(model.total, 6)
            try dispatcher.verifyIdle()
        }
    }
}

/// The landing page's model: sums in the background, shows the total on the main actor.
@MainActor
final class CounterModel {
    private(set) var total = 0
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func sum(_ numbers: [Int]) {
        let dispatcher = self.dispatcher
        dispatcher.background(label: "sum") {
            let total = numbers.reduce(0, +)
            dispatcher.foreground(label: "show") { [weak self] in
                self?.total = total
            }
        }
    }
}
