import Testing

@testable import TaskDispatch

/// A production task delayed for ever (``Duration/realTimeForever`` or more) never runs, so no timer holds it: once
/// cancelled and its handle dropped, its state is freed, directly or through a scope. (A finite delay's timer holds
/// the state until its due time, as `ProductionDispatchers` documents.)
@Suite struct CancelledDelayedTaskLifetimeTests {
    enum Base: CaseIterable, Sendable {
        case queue, operationQueue, queueThroughAScope

        func make() -> any TaskDispatcher {
            switch self {
            case .queue: QueueDispatcher()
            case .operationQueue: OperationQueueDispatcher()
            case .queueThroughAScope: DispatchScope(QueueDispatcher())
            }
        }
    }

    @Test(arguments: Base.allCases, [TaskContext.foreground, .background])
    func aTaskDelayedForEverIsFreedOnceCancelled(base: Base, context: TaskContext) {
        let dispatcher = base.make()
        weak var state: AnyObject?
        do {
            let work: DispatchedTask.Work = context == .foreground ? .foreground {} : .background {}
            let task = DispatchedTask(
                work, label: "never", delay: .seconds(Int64.max), callSite: CallSite(fileID: #fileID, line: #line))
            let handle = dispatcher.dispatch(task)
            state = handle._canceller as AnyObject
            #expect(handle.cancel())
        }
        #expect(state == nil, "the cancelled task's state outlived its handle")
    }
}
