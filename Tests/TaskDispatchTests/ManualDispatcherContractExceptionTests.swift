import TaskDispatch
import TaskDispatchTesting
import Testing

/// Where ManualDispatcher's documented behaviour differs from the production dispatchers' within the contract:
/// virtual time, and the auto-drain exception to "never inline".
@Suite struct ManualDispatcherContractExceptionTests {
    @Test func runsADelayedTaskOnlyWhenVirtualTimeReachesIt() throws {
        let dispatcher = ManualDispatcher()
        let ran = Counter()
        dispatcher.background(after: .milliseconds(50)) { _ = ran.next() }
        try dispatcher.runCurrent()
        try dispatcher.advance(by: .milliseconds(49))
        #expect(ran.next() == 0)
        try dispatcher.advance(by: .milliseconds(1))
        #expect(ran.next() == 2)
    }

    @Test func runsInlineInAutoDrainMode() {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let ran = Counter()
        dispatcher.background { _ = ran.next() }
        #expect(ran.next() == 1)
    }
}
