import TaskDispatch
import TaskDispatchTesting
import XCTest

final class ManualDispatcherXCTests: XCTestCase {
    func testStepsAServiceInOrder() throws {
        let dispatcher = ManualDispatcher()
        let log = Log()
        dispatcher.background { log.append("loaded") }
        dispatcher.foreground { log.append("shown") }
        XCTAssertThrowsError(try dispatcher.verifyIdle())
        try dispatcher.runNextBackground()
        XCTAssertEqual(log.entries, ["loaded"])
        try dispatcher.runNextForeground()
        XCTAssertEqual(log.entries, ["loaded", "shown"])
        XCTAssertThrowsError(try dispatcher.runNextForeground()) { error in
            XCTAssert(String(describing: error).contains("no foreground task"), "\(error)")
        }
        try dispatcher.verifyIdle()
    }
}

/// Entries appended by tasks. `@unchecked Sendable`: `lock` guards `storage`.
final class Log: @unchecked Sendable {
    private let lock = NSLock()
    private var storage: [String] = []

    func append(_ entry: String) { self.lock.withLock { self.storage.append(entry) } }
    var entries: [String] { self.lock.withLock { self.storage } }
}
