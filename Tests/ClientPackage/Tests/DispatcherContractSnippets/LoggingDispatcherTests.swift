import TaskDispatch
import TaskDispatchTesting
import Testing

@Test func myDispatcherKeepsTheContract() async throws {
    try await DispatcherContract.check { .realTime(LoggingDispatcher(base: QueueDispatcher())) }
}

@Test func theArticlesLoggingDispatcherForwardsEveryTask() async throws {
    let value = try await dispatcher.runInBackground(label: "answer") { 42 }
    #expect(value == 42)
}
