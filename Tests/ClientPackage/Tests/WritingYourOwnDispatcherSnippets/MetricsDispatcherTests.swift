import TaskDispatch
import TaskDispatchTesting
import Testing

@Test func metricsDispatcherKeepsTheContract() async throws {
    try await DispatcherContract.check {
        .realTime(MetricsDispatcher(base: QueueDispatcher(), metrics: Metrics()))
    }
}
