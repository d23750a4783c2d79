import Dispatch
import TaskDispatch
import Testing

/// What background work wrote is there for the code after the async wait for background work that it ended, with
/// nothing else ordering the two: the thread sanitizer (this suite runs under it in CI) reports no race on the plain
/// variable, which it did while only the continuation's resume ordered them.
@Suite(.timeLimit(.minutes(1))) struct BackgroundWorkOrderingTests {
    @Test func aQueueDispatchersBackgroundWritesAreSeenAfterTheAsyncWait() async {
        for round in 1...200 {
            let dispatcher = QueueDispatcher(backgroundQueue: DispatchQueue(label: "BackgroundWorkOrderingTests"))
            let written = UnguardedValue()
            dispatcher.background { written.value = round }
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
            #expect(written.value == round)
        }
    }

    @Test func aScopesBackgroundWritesAreSeenAfterTheAsyncWait() async {
        let dispatcher = OperationQueueDispatcher()
        for round in 1...200 {
            let scope = DispatchScope(dispatcher)
            let written = UnguardedValue()
            scope.background { written.value = round }
            #expect(await scope.waitForBackgroundTasks(timeout: .seconds(30)))
            #expect(written.value == round)
        }
    }
}

/// A plain variable, for the sanitizer to watch: `@unchecked Sendable`, since only the ordering the dispatcher
/// promises keeps its writes and reads apart.
private final class UnguardedValue: @unchecked Sendable {
    var value = 0
}
