import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

/// The article's debounce, inside a test that gives it a dispatcher and a search to call.
@Test @MainActor func aNewSearchCancelsThePendingOne() throws {
    let dispatcher = ManualDispatcher()
    let searched = SearchLog()
    @Sendable func search(_ text: String) { searched.append(text) }
    var pending: TaskHandle?
    func searchTextChanged(_ text: String) {
        pending?.cancel()  // debounce: drop the previous search
        pending = dispatcher.background(after: .milliseconds(300), label: "search") { search(text) }
    }
    searchTextChanged("s")
    try dispatcher.advance(by: .milliseconds(200))
    searchTextChanged("sw")
    try dispatcher.advance(by: .milliseconds(300))
    #expect(searched.entries == ["sw"])
    try dispatcher.verifyIdle()
}

@Test func theThreeProductionDispatchersAreMadeInOneLineEach() throws {
    let dispatcher = QueueDispatcher()  // main queue + global queues
    let serial = QueueDispatcher(backgroundQueue: DispatchQueue(label: "db"))  // your own queue
    let bounded = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 3)  // main + bounded OperationQueue
    #expect(bounded.maxConcurrentBackgroundTasks == 3)
    #expect(dispatcher.waitForBackgroundTasks(timeout: .zero))
    #expect(serial.waitForBackgroundTasks(timeout: .zero))
}

/// The searches that ran, from any thread.
final class SearchLog: @unchecked Sendable {
    // `searches` is only touched while `lock` is held.
    private let lock = NSLock()
    private var searches: [String] = []

    func append(_ text: String) {
        self.lock.withLock { self.searches.append(text) }
    }

    var entries: [String] {
        self.lock.withLock { self.searches }
    }
}
