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

func shutDown(_ dispatcher: some BackgroundWorkWaiting) async -> Bool {
    guard await dispatcher.waitForBackgroundTasks(timeout: .seconds(5)) else {
        print("background work still running after 5 s; exiting anyway")
        return false
    }
    return true
}

/// The article's shutdown over both production dispatchers, and each form of the wait as 1.0 code calls it on the
/// concrete types: the blocking one in synchronous code, the async one in async code.
@Test func theShutdownWaitsForTheBackgroundWorkOfEitherDispatcher() async throws {
    let queue = QueueDispatcher()
    let operations = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 2)
    let ran = SearchLog()
    queue.background { ran.append("queue") }
    operations.background { ran.append("operations") }
    #expect(await shutDown(queue))
    #expect(await shutDown(operations))
    #expect(ran.entries.sorted() == ["operations", "queue"])
    #expect(blockingWait(queue) && blockingWait(operations))
    #expect(await queue.waitForBackgroundTasks(timeout: .seconds(5)))
    #expect(await operations.waitForBackgroundTasks())
}

private func blockingWait(_ queue: QueueDispatcher) -> Bool {
    queue.waitForBackgroundTasks(timeout: .seconds(5))
}

private func blockingWait(_ operations: OperationQueueDispatcher) -> Bool {
    operations.waitForBackgroundTasks(timeout: .seconds(5))
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
