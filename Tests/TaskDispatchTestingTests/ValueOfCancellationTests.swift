import Dispatch
import TaskDispatch
import TaskDispatchTesting
import Testing

/// The test's `value(of:)` cancelled just as the task throws: the error reaches the caller, whose claim took it,
/// rather than vanish (a probe lost it in up to 14 runs in 200: the cancelled call threw `CancellationError`, and
/// the claim had kept the error from the report). Here the order is fixed: the caller runs on a task executor
/// whose jobs are held while the cancel comes and the task throws, so its wait ends as cancelled after the end.
@Suite(.timeLimit(.minutes(1))) struct ValueOfCancellationTests {
    struct Failed: Error, Equatable {}

    @Test(arguments: [ManualDispatcher.Mode.manual, .autoDrain, .autoAdvance])
    func anErrorThrownAsTheAwaitIsCancelledReachesTheCaller(mode: ManualDispatcher.Mode) async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let dispatcher = ManualDispatcher(mode: mode, waitLimit: .seconds(30))
        let release = ArrivalCounter()
        let tracked = dispatcher.startTask(label: "fails") { () async throws -> Int in
            await release.reach(1)
            throw Failed()
        }
        if mode == .manual { try await dispatcher.runNext() }  // its start
        let registered = dispatcher.countingWaiterRegistrations()
        let executor = SerialQueueTaskExecutor()
        let caller = Task(executorPreference: executor) { try await dispatcher.value(of: tracked) }
        await registered.reach(1)  // the caller waits on the task's end
        executor.hold()
        caller.cancel()  // its wait ends as cancelled; the caller runs on only once the queue resumes
        release.signal()
        _ = await tracked.result
        executor.release()
        await #expect(throws: Failed.self) { try await caller.value }
        try dispatcher.verifyIdle()
    }
}
