import TaskDispatch
import TaskDispatchTesting
import Testing

@Test func serialDispatcherKeepsTheContract() async throws {
    try await DispatcherContract.check { .realTime(SerialDispatcher()) }
}
