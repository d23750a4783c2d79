import TaskDispatch
import TaskDispatchTesting
import Testing

/// The dispatchers' `waitLimit`, the real-time bound of a call that is expected to settle: generous, since only a
/// failing test spends it.
private let settleLimit = Duration.seconds(60)

/// Decorators in front of a `ManualDispatcher` (issue 17, item 4): a tracked task's wait on work it dispatched
/// through one is still the dispatcher's own, whether the decorator forwards the task or rebuilds it.
@Suite struct ManualDispatcherDecoratorTests {
    @Test func aTaskAwaitingThroughARebuildingDecoratorSettles() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let decorated = ForwardingDispatcher(base: dispatcher, rewrite: .rebuild)
        let task = dispatcher.startTask(label: "rebuilt") { () async throws -> Int in
            try await decorated.runInBackground(after: .seconds(1)) { 42 }
        }
        try await dispatcher.runUntilIdle()
        #expect(dispatcher.now == .seconds(1))
        #expect(try await dispatcher.value(of: task) == 42)
    }

    @Test func aTaskStartedThroughARebuildingDecoratorSettlesOnItsWaits() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let decorated = ForwardingDispatcher(base: dispatcher, rewrite: .rebuild)
        let task = decorated.startTask(label: "through the decorator") { () async throws -> Int in
            let value = try await decorated.runInBackground(after: .seconds(1), label: "later") { 20 }
            try await decorated.clock.sleep(for: .seconds(2))
            let more = try await decorated.runOnMainActor(label: "show") { 1 }
            return value + more
        }
        try await dispatcher.runUntilIdle()
        #expect(dispatcher.now == .seconds(3))
        #expect(
            dispatcher.history.map(\.task.label) == [
                "through the decorator", "rebuilt later", "through the decorator: clock sleep until 3 s",
                "rebuilt show",
            ])
        #expect(try await dispatcher.value(of: task) == 21)
        try dispatcher.verifyIdle()
    }

    @Test func aDecoratorThatDispatchesANoteFirstKeepsTheWait() async throws {
        let dispatcher = ManualDispatcher(waitLimit: settleLimit)
        let decorated = ForwardingDispatcher(base: dispatcher, rewrite: .noteFirst)
        let task = dispatcher.startTask(label: "noted") { () async throws -> Int in
            try await decorated.runInBackground(after: .seconds(1), label: "later") { 41 } + 1
        }
        try await dispatcher.runUntilIdle()
        #expect(dispatcher.now == .seconds(1))
        #expect(try await dispatcher.value(of: task) == 42)
        try dispatcher.verifyIdle()
    }

    /// The test's own await through a decorator that rebuilds the task (found by a probe from a client package:
    /// the rebuilt task lost the await, which then waited for ever with no message). The rebuilt task of the
    /// awaitable call's site and context carries the await again, so the wait limit ends it, and the message names
    /// the call as written. A decorator's note of its own that it gives the same call site is taken for part of the
    /// call and bounded with it: whichever of the two reaches the limit first ends the await.
    @Test(
        .timeLimit(.minutes(1)),
        arguments: [ForwardingDispatcher.Rewrite.rebuild, .noteFirst, .noteAndRebuild, .copy, .none])
    func theTestsAwaitThroughADecoratorEndsAtTheWaitLimit(rewrite: ForwardingDispatcher.Rewrite) async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(200))
        let decorated = ForwardingDispatcher(base: dispatcher, rewrite: rewrite)
        let started = ContinuousClock.now
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await decorated.runInBackground(label: "never run") { 1 }
        }
        #expect(ContinuousClock.now - started < .seconds(30), "ended by the 200 ms limit, not by the test's")
        guard case .waitTimedOut = error?.kind else {
            Issue.record("expected waitTimedOut, got \(String(describing: error))")
            return
        }
        #expect(error?.summary.contains("runInBackground \"never run\"") == true)
        // The first of the call's tasks to reach the limit was cancelled and ended the await; a second task of the
        // call's site (a note) stays pending, for the drain and verifyIdle() (a review saw both orders).
        let carriesANote = rewrite == .noteFirst || rewrite == .noteAndRebuild
        #expect(dispatcher.pendingTaskCount == (carriesANote ? 1 : 0), "\(dispatcher.pendingTasks)")
        try await dispatcher.runUntilIdle()
        #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }  // the ended await, reported once
        try dispatcher.verifyIdle()
    }

    /// The test's own tick loop through a decorator that rebuilds each task (dropping the tick's marker) ends at the
    /// wait limit, and the report names the loop as written, not `runInBackground`.
    @Test func theTestsTickLoopThroughARebuildingDecoratorIsNamedAsWritten() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(100))
        let decorated = ForwardingDispatcher(base: dispatcher, rewrite: .rebuild)
        for await _ in decorated.ticks(every: .seconds(1), label: "own") { Issue.record("a tick ran undriven") }
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error?.summary.contains("cancelled: ticks \"own\" (") == true, "\(String(describing: error))")
    }

    /// The test's own await through a decorator that forwards a copy of the task from a `Task` it creates in
    /// `dispatch(_:)` (which inherits the call), after the call or, with `Task.immediate`, inside it: the copy carries
    /// the call's identity, so the wait limit ends the await, and the message names the call, instead of a hang
    /// with no message.
    @Test(.timeLimit(.minutes(1)), arguments: [TaskForwardingDecorator.Forward.fromATask, .fromAnImmediateTask])
    func theTestsAwaitThroughADecoratorThatForwardsACopyFromATaskEndsAtTheWaitLimit(
        forward: TaskForwardingDecorator.Forward
    ) async throws {
        if forward == .fromAnImmediateTask {
            guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else { return }
        }
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(200))
        let decorated = TaskForwardingDecorator(base: dispatcher, forward: forward)
        let started = ContinuousClock.now
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await decorated.runInBackground(label: "forwarded") { 1 }
        }
        #expect(ContinuousClock.now - started < .seconds(30), "ended by the 200 ms limit, not by the test's")
        guard case .waitTimedOut = error?.kind else {
            Issue.record("expected waitTimedOut, got \(String(describing: error))")
            return
        }
        #expect(error?.summary.contains("runInBackground \"forwarded\"") == true)
        #expect(dispatcher.pendingTaskCount == 0, "\(dispatcher.pendingTasks)")
        #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }  // the ended await, reported once
        try dispatcher.verifyIdle()
    }

    /// The await's identity sits in the padding after the priority: a task is no larger for it, and copying one
    /// retains nothing more for it (on a 64-bit platform). 96 bytes of public fields and the identity, and 8 for the
    /// repeating series' marker (1.1).
    @Test(.enabled(if: MemoryLayout<Int>.size == 8)) func aTaskCarriesTheIdentityOfItsAwaitInItsPadding() {
        #expect(MemoryLayout<DispatchedTask>.size == 96 + MemoryLayout<SeriesMarker?>.size)
    }

    /// A decorator that forwards each task from a `Task` it creates in `dispatch(_:)` builds it after the call has
    /// returned: the task does not carry the await (it could be another call's), so with a wait limit of zero it is
    /// not cancelled at once; it waits for the test to run it.
    @Test(.timeLimit(.minutes(1))) func aTaskBuiltAfterTheCallDoesNotCarryItsAwait() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .zero)
        let decorated = PumpingDecorator(base: dispatcher, pumpPerTask: true)
        async let value = decorated.runInBackground(label: "forwarded later") { 1 }
        try await dispatcher.waitForPendingTasks(1, waitingUpTo: .seconds(60))
        try await dispatcher.runUntilIdle(waitingUpTo: .seconds(60))
        #expect(try await value == 1)
        try dispatcher.verifyIdle()
    }

    /// A review found that a decorator's long-lived pump `Task`, created inside the first call's dispatch, inherits
    /// that call, and gave its await to the tasks of later calls from the same line: with a wait limit of zero the
    /// second call's task was cancelled at once, and its await threw `DroppedWorkError`. A task built anew takes an
    /// await only synchronously inside that await's dispatch call.
    @Test(.timeLimit(.minutes(1))) func aPumpTaskDoesNotGiveAnEarlierCallsAwaitToALaterTask() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .zero)
        let decorated = PumpingDecorator(base: dispatcher, pumpPerTask: false)
        @Sendable func parse(_ value: Int) async throws -> Int {
            try await decorated.runInBackground(label: "parse") { value }
        }
        // Neither call's task, rebuilt in the pump after its call returned, takes an await: each waits to be run.
        async let first = parse(1)
        try await dispatcher.waitForPendingTasks(1, waitingUpTo: .seconds(60))
        async let second = parse(2)
        try await dispatcher.waitForPendingTasks(2, waitingUpTo: .seconds(60))
        try await dispatcher.runUntilIdle(waitingUpTo: .seconds(60))
        #expect(try await first == 1)
        #expect(try await second == 2)
        try dispatcher.verifyIdle()
        decorated.stop()
    }

    @Test func aWaitEndsOnceWhenTheAwaitedTaskDispatchesMoreInAutoDrain() async throws {
        // In auto-drain the awaited task runs inside the dispatch, where its own dispatch sees the same scope:
        // the wait is recorded once and ended once, so the task ends unfinished by nothing.
        let dispatcher = ManualDispatcher(mode: .autoDrain, waitLimit: settleLimit)
        let task = dispatcher.startTask(label: "auto") { () async throws -> Int in
            try await dispatcher.runInBackground(label: "outer") {
                dispatcher.background(label: "inner") {}
                return 42
            }
        }
        try await dispatcher.runUntilIdle()
        #expect(try await dispatcher.value(of: task) == 42)
        #expect(dispatcher.unfinishedTaskCount == 0)
        try dispatcher.verifyIdle()
    }
}

/// Forwards the clock and `startTask`, and a copy of each task from a `Task` it creates in `dispatch(_:)`.
struct TaskForwardingDecorator: ForwardsStartTask {
    enum Forward: Sendable {
        /// From a `Task`, which forwards the copy once the call has returned, or while it is in progress.
        case fromATask
        /// From a `Task.immediate`, which forwards the copy synchronously, inside the call.
        case fromAnImmediateTask
    }

    let base: any TaskDispatcher
    let clock: AnyDispatcherClock
    let forward: Forward

    init(base: any TaskDispatcher, forward: Forward) {
        self.base = base
        self.clock = AnyDispatcherClock(base.clock)
        self.forward = forward
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let base = self.base
        var copy = task
        copy.label = "forwarded \(task.label ?? "-")"
        switch self.forward {
        case .fromATask:
            Task { [copy] in _ = base.dispatch(copy) }
        case .fromAnImmediateTask:
            guard #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) else {
                return base.dispatch(copy)
            }
            Task.immediate { [copy] in _ = base.dispatch(copy) }
        }
        return TaskHandle(canceller: PumpingDecorator.NeverCancels())
    }
}

/// Forwards the clock and `startTask`, and each task from a `Task`: one `Task` per task (`pumpPerTask`), or one
/// long-lived pump, created on the first dispatch, that rebuilds the tasks it receives through `DispatchedTask`'s
/// initializer, as a decorator that forwards asynchronously might.
private struct PumpingDecorator: ForwardsStartTask {
    let base: any TaskDispatcher
    let clock: AnyDispatcherClock
    let pumpPerTask: Bool
    private let pump = Pump()

    init(base: any TaskDispatcher, pumpPerTask: Bool) {
        self.base = base
        self.clock = AnyDispatcherClock(base.clock)
        self.pumpPerTask = pumpPerTask
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let base = self.base
        let rebuild: @Sendable (DispatchedTask) -> Void = { task in
            _ = base.dispatch(
                DispatchedTask(
                    task.work, label: task.label, delay: task.delay, priority: task.priority, callSite: task.callSite))
        }
        if self.pumpPerTask {
            Task { rebuild(task) }
        } else {
            self.pump.send(task, through: rebuild)
        }
        return TaskHandle(canceller: NeverCancels())
    }

    func stop() {
        self.pump.stop()
    }

    /// The long-lived pump: a `Task` created on the first send, reading a stream of tasks.
    private final class Pump: @unchecked Sendable {
        // `continuation` is only touched while `lock` is held.
        private let lock = NSLockBox()
        private var continuation: AsyncStream<DispatchedTask>.Continuation?

        func send(_ task: DispatchedTask, through rebuild: @escaping @Sendable (DispatchedTask) -> Void) {
            let continuation = self.lock.withLock { () -> AsyncStream<DispatchedTask>.Continuation in
                if let continuation = self.continuation { return continuation }
                let (stream, continuation) = AsyncStream<DispatchedTask>.makeStream()
                self.continuation = continuation
                Task {
                    for await task in stream { rebuild(task) }
                }
                return continuation
            }
            continuation.yield(task)
        }

        func stop() {
            self.lock.withLock { self.continuation }?.finish()
        }
    }

    /// The handles of a decorator that has already passed the task on: cancelling stops nothing.
    fileprivate struct NeverCancels: TaskCancelling {
        func cancelTask() -> Bool { false }
        var isTaskCancelled: Bool { false }
    }
}
