import Dispatch
import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

/// Where a tracked task's body runs: on its operation's own isolation, so the record of its end is made in the same
/// job as the operation's last step, and a task isolated to an actor (the main actor included) needs no thread of
/// the global executor to finish.
@Suite struct TrackedTaskIsolationTests {
    @Test(.timeLimit(.minutes(1)))
    func anActorIsolatedTaskRecordsItsEndInTheJobThatRanItsLastStep() async throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) else { return }
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let counter = ObservedCounter()
        // After each job on the actor's executor: once the operation has returned, how many tasks are unfinished.
        let unfinishedAfterTheLastStep = LockedBox<[Int]>([])
        let recorded = ArrivalCounter()
        counter.executor.afterEachJob {
            guard counter.returned.withLock({ $0 }) else { return }
            unfinishedAfterTheLastStep.withLock { $0.append(dispatcher.unfinishedTaskCount) }
            recorded.signal()
        }
        let task = await counter.start(on: dispatcher)
        #expect(try await dispatcher.value(of: task) == 1)
        // The observer runs after the job, on the executor's queue: the value can reach this test before it does.
        await recorded.reach(1)
        // The first job after the return is the one that returned: the task was already recorded as finished.
        #expect(unfinishedAfterTheLastStep.withLock { $0.first } == 0, "\(unfinishedAfterTheLastStep.withLock { $0 })")
        try dispatcher.verifyIdle()
    }

    /// A main-actor tracked task keeps the main actor across a call that takes an isolation, as a plain
    /// `Task { @MainActor in }` does: a task executor preference would make the runtime send it through the main
    /// queue again there, behind a block enqueued just before.
    @Test func aMainActorTaskKeepsTheMainActorAcrossACallThatTakesAnIsolation() async throws {
        let plain = await Task { @MainActor in await mainQueueRanDuringAnIsolatedCall() }.value
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let tracked = dispatcher.startTask(label: "ui") { @MainActor in await mainQueueRanDuringAnIsolatedCall() }
        #expect(plain == false)
        #expect(try await dispatcher.value(of: tracked) == false)
    }

    @Test func theAwaitableDispatchesAndTheAsyncDrainsRunOnTheCallersIsolation() async throws {
        guard #available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *) else { return }
        let caller = IsolationProbe()
        let seen = try await caller.awaitAndDrain()
        // Each closure ran inline on the thread that called the dispatcher: the caller's executor, not the
        // global one.
        #expect(seen == ["runInBackground": true, "runOnMainActor": false, "runUntilIdle": true, "runNext": true])
    }

    /// Begun on the main actor's thread (`Task.immediate`, where the runtime has it), a nonisolated operation
    /// still runs off the main actor once its start runs, as it would in `Task { }`.
    @Test @MainActor func aNonisolatedTaskStartedOnTheMainActorRunsOffIt() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(
            label: "probe", callSite: CallSite(), operation: nonisolatedOperation { MainQueueProbe.isOnMainQueue })
        try dispatcher.runCurrent()
        #expect(try await dispatcher.value(of: task) == false)
    }

    /// A start that runs after the body parked at its gate and before it suspended there (here, from the parking
    /// itself, on the creator's thread, where `Task.immediate` begins the body) does not resume the body on its
    /// creator's stack: a continuation resumed that early would not suspend the task at all, and the operation
    /// would run inside `startTask`.
    @Test func aStartRunBeforeTheBodySuspendsDoesNotRunTheOperationInsideStartTask() async throws {
        let dispatcher = ManualDispatcher()
        let starts = LockedBox(0)
        dispatcher.observeStartGateParking {
            starts.withLock { $0 += (try? dispatcher.runCurrent()) ?? 0 }
        }
        let ranInsideStartTask = LockedBox<Bool?>(nil)
        // The thread inside `startTask`, while it is there.
        let creator = LockedBox<UInt?>(currentThreadIdentity())
        let task = dispatcher.startTask(
            label: "early start", callSite: CallSite(),
            operation: nonisolatedOperation {
                let here = currentThreadIdentity()
                ranInsideStartTask.withLock { $0 = creator.withLock { $0 } == here }
            })
        creator.withLock { $0 = nil }
        try await dispatcher.value(of: task)
        #expect(ranInsideStartTask.withLock { $0 } == false)
        // Where the body began on another thread (no `Task.immediate`), the start ran from there just the same.
        #expect(starts.withLock { $0 } == 1)
    }

    @Test @MainActor func aMainActorTaskRunsItsWholeBodyOnTheMainActor() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "ui") { () -> Int in
            MainActor.assertIsolated("a main-actor operation runs on the main actor")
            return 7
        }
        #expect(dispatcher.pendingTaskCount(in: .foreground) == 1)  // its start
        try await dispatcher.runNextForeground()
        #expect(try await dispatcher.value(of: task) == 7)
        try dispatcher.verifyIdle()
    }
}

/// A value behind a lock, readable from any thread.
private final class LockedBox<Value: Sendable>: @unchecked Sendable {
    // `value` is only touched while `lock` is held.
    private let lock = NSLock()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        self.lock.withLock { body(&self.value) }
    }
}

/// A counter isolated to an actor on an executor that reports the end of each of its jobs.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
private actor ObservedCounter {
    nonisolated let executor = ObservingExecutor()
    /// Set by the tracked task's operation just before it returns.
    nonisolated let returned = LockedBox(false)
    private var count = 0

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        self.executor.asUnownedSerialExecutor()
    }

    /// Starts a tracked task isolated to this actor.
    func start(on dispatcher: ManualDispatcher) -> Task<Int, any Error> {
        dispatcher.startTask(label: "count") {
            self.count += 1
            self.returned.withLock { $0 = true }
            return self.count
        }
    }
}

/// An actor on its own queue that awaits the dispatcher and records, for each call, whether the work ran on that
/// queue.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
private actor IsolationProbe {
    let executor = ObservingExecutor()

    nonisolated var unownedExecutor: UnownedSerialExecutor {
        self.executor.asUnownedSerialExecutor()
    }

    func awaitAndDrain() async throws -> [String: Bool] {
        let onQueue = LockedBox<[String: Bool]>([:])
        let executor = self.executor
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        // Auto-drain runs the work inside the dispatch call, on the thread that made it.
        try await dispatcher.runInBackground {
            onQueue.withLock { $0["runInBackground"] = executor.isCurrent }
        }
        try await dispatcher.runOnMainActor {
            onQueue.withLock { $0["runOnMainActor"] = executor.isCurrent }
        }
        dispatcher.mode = .manual
        dispatcher.background { onQueue.withLock { $0["runUntilIdle"] = executor.isCurrent } }
        try await dispatcher.runUntilIdle()
        dispatcher.background { onQueue.withLock { $0["runNext"] = executor.isCurrent } }
        try await dispatcher.runNext()
        return onQueue.withLock { $0 }
    }
}

/// A serial executor that runs each job on a serial dispatch queue and then calls an observer.
@available(macOS 14, iOS 17, tvOS 17, watchOS 10, visionOS 1, *)
private final class ObservingExecutor: SerialExecutor {
    private let queue = DispatchQueue(label: "ObservingExecutor")
    private let observer = LockedBox<(@Sendable () -> Void)?>(nil)
    private let key = DispatchSpecificKey<Bool>()

    init() {
        self.queue.setSpecific(key: self.key, value: true)
    }

    /// Whether the calling code runs on this executor's queue.
    var isCurrent: Bool {
        DispatchQueue.getSpecific(key: self.key) == true
    }

    func afterEachJob(_ observer: @escaping @Sendable () -> Void) {
        self.observer.withLock { $0 = observer }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.queue.async {
            job.runSynchronously(on: self.asUnownedSerialExecutor())
            self.observer.withLock { $0 }?()
        }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }
}

/// `body` as an operation with no isolation, made outside any actor's context (a closure written in a main-actor
/// test would inherit the main actor).
private func nonisolatedOperation<Value: Sendable>(_ body: @escaping @Sendable () -> Value)
    -> @Sendable () async -> Value
{
    { body() }
}

/// Takes its caller's isolation, as `withTaskGroup` and `withCheckedContinuation` do.
private func takesTheCallersIsolation(isolation: isolated (any Actor)? = #isolation) async { _ = isolation }

/// Whether a block enqueued on the main queue ran while the main actor called a function that takes its isolation:
/// only if the call gave up the main actor.
@MainActor private func mainQueueRanDuringAnIsolatedCall() async -> Bool {
    let ran = LockedBox(false)
    DispatchQueue.main.async { ran.withLock { $0 = true } }
    await takesTheCallersIsolation()
    return ran.withLock { $0 }
}
