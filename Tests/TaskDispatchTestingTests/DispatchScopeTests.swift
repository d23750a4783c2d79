import Foundation
import Testing

@testable import TaskDispatch
@testable import TaskDispatchTesting

/// A model that owns a scope, as an app's view model would: a poll series, a delayed refresh, and a load in a
/// started task that awaits a background run.
@MainActor final class PollingModel {
    private let scope: DispatchScope
    let errors: Locked<[any Error]>
    var polls = 0

    init(dispatcher: any TaskDispatcher, errors: Locked<[any Error]>) {
        self.scope = DispatchScope(dispatcher)
        self.errors = errors
        self.scope.foreground(every: .seconds(1), label: "poll") { [weak self] in self?.polls += 1 }
        self.scope.background(after: .seconds(30), label: "refresh") {}
        // The task awaits through the dispatcher beneath: capturing the scope (or the model) would keep it alive.
        // Cancelling the task, as the scope's release does, ends the await.
        self.scope.startTask(label: "load") {
            do {
                _ = try await dispatcher.runInBackground(after: .seconds(60), label: "fetch") { 42 }
            } catch {
                errors.withLock { $0.append(error) }
            }
        }
    }
}

@Suite struct DispatchScopeTests {
    @Test @MainActor func releasingAModelThatOwnsAScopeLeavesTheDispatcherIdle() async throws {
        let dispatcher = ManualDispatcher()
        let errors = Locked<[any Error]>([])
        var model: PollingModel? = PollingModel(dispatcher: dispatcher, errors: errors)
        try await dispatcher.advance(by: .seconds(2))
        #expect(model?.polls == 2)
        #expect(dispatcher.pendingTaskCount == 3)  // the next poll, the refresh, the fetch
        model = nil
        try await dispatcher.settle()
        try dispatcher.verifyIdle()
        let ended = errors.withLock { $0 }
        #expect(ended.count == 1)
        #expect(ended.first is CancellationError, "\(ended)")
    }

    /// The owner's last reference goes with the first callback a drain runs: the drain lets go of that closure before
    /// the clock moves, so the scope's release cancels the polls and the refresh, as in production.
    @Test(arguments: [false, true]) @MainActor
    func anOwnerReleasedInADrainsFirstCallbackStopsItsWorkBeforeTheClockMovesOn(async: Bool) async throws {
        let dispatcher = ManualDispatcher()
        do {
            let owner = ScopeOwner(dispatcher)
            dispatcher.foreground(label: "last") { _ = owner }
        }
        if async {
            try await dispatcher.advance(by: .seconds(40))
        } else {
            try synchronously { try dispatcher.advance(by: .seconds(40)) }
        }
        #expect(dispatcher.history.compactMap(\.task.label) == ["last"])
        try dispatcher.verifyIdle()
    }

    @Test func cancelAllCancelsEachKindOfWorkAndForgetsIt() async throws {
        let dispatcher = ManualDispatcher()
        let scope = DispatchScope(dispatcher)
        let ran = Locked(0)
        let callback = scope.background(after: .seconds(3), label: "callback") { ran.withLock { $0 += 1 } }
        let series = scope.foreground(every: .seconds(1), label: "series") { ran.withLock { $0 += 1 } }
        let started = scope.startTask(label: "sleeper") { try await scope.clock.sleep(for: .seconds(100)) }
        try await dispatcher.settle()
        #expect(scope.liveWorkCount == 3)
        scope.cancelAll()
        #expect(scope.isCancelled)
        #expect(scope.liveWorkCount == 0)
        #expect(callback.isCancelled)
        #expect(series.isCancelled)
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: started) }
        try await dispatcher.advance(by: .seconds(5))
        #expect(ran.withLock { $0 } == 0)
        try dispatcher.verifyIdle()
    }

    @Test func aTaskThatRunsInsideItsOwnDispatchIsForgottenAndItsSlotFreed() throws {
        // Auto-drain runs each task inside `dispatch(_:)`: it ends before the scope hears from the dispatcher.
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let scope = DispatchScope(dispatcher)
        let ran = Locked(0)
        for _ in 0..<100 { scope.background { ran.withLock { $0 += 1 } } }
        #expect(ran.withLock { $0 } == 100)
        #expect(scope.liveWorkCount == 0)
        #expect(scope.occupiedSlotCount == 0)
        let held = ManualDispatcher()
        let heldScope = DispatchScope(held)
        let handles = (0..<3).map { _ in heldScope.background {} }
        #expect(heldScope.occupiedSlotCount == 3)
        #expect(handles[1].cancel())
        #expect(heldScope.occupiedSlotCount == 2)
        try held.runUntilIdle()
        #expect(heldScope.occupiedSlotCount == 0)
        #expect(heldScope.liveWorkCount == 0)
    }

    @Test func aCallbackThatCancelsItsScopeInsideItsOwnDispatchEndsCleanly() throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let scope = DispatchScope(dispatcher)
        scope.background { scope.cancelAll() }
        #expect(scope.isCancelled)
        #expect(scope.liveWorkCount == 0)
        #expect(scope.occupiedSlotCount == 0)
        let late = scope.background { Issue.record("a task ran after cancelAll()") }
        #expect(late.isCancelled)
        try dispatcher.verifyIdle()
    }

    /// In auto-drain, work runs inside the call that dispatched it, which keeps the scope alive: the owner's release
    /// inside a callback comes after the work queued behind it ran, unless the callback cancels the scope first, as
    /// the reference says.
    @Test(arguments: [false, true])
    func aCallbackThatEndsItsOwnerInAutoDrain(cancelsTheScopeFirst: Bool) throws {
        final class Owner: Sendable {
            let scope: DispatchScope
            init(_ dispatcher: any TaskDispatcher) { self.scope = DispatchScope(dispatcher) }
        }
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let holder = Locked<Owner?>(Owner(dispatcher))
        let log = EventLog()
        holder.withLock { $0 }?.scope.background(label: "outer") {
            let owner = holder.withLock { $0 }
            owner?.scope.background(label: "queued") { log.record("queued ran") }
            if cancelsTheScopeFirst { owner?.scope.cancelAll() }
            holder.withLock { $0 = nil }
        }
        #expect(log.events == (cancelsTheScopeFirst ? [] : ["queued ran"]))
        try dispatcher.verifyIdle()
    }

    @Test func aDispatcherUsedThroughAScopeIsReleasedWithIt() throws {
        weak var storage: Storage?
        try {
            let dispatcher = ManualDispatcher()
            let scope = DispatchScope(dispatcher)
            storage = dispatcher.storage
            scope.background {}
            #expect(scope.background(after: .seconds(1)) {}.cancel())
            try dispatcher.runUntilIdle()
        }()
        // The run's record and the cancelled task stay in the dispatcher; neither may hold the scope, which holds it.
        #expect(storage == nil)
    }

    @Test func aCancelledProductionTaskLetsGoOfItsScopeAtOnce() {
        weak var weakDispatcher: OperationQueueDispatcher?
        do {
            let dispatcher = OperationQueueDispatcher()
            weakDispatcher = dispatcher
            let scope = DispatchScope(dispatcher)
            // Its timer keeps the task until the deadline, an hour from now.
            #expect(scope.background(after: .seconds(3_600)) {}.cancel())
        }
        #expect(weakDispatcher == nil)
    }

    @Test func theScopeHasForgottenItsWorkWhenTheDispatcherBeneathSaysItIsDone() async {
        let dispatcher = QueueDispatcher()
        let scope = DispatchScope(dispatcher)
        for _ in 0..<200 {
            scope.background {}
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
            #expect(scope.liveWorkCount == 0)
        }
    }

    @Test func finishedWorkIsForgottenAtOnce() throws {
        let dispatcher = ManualDispatcher()
        let scope = DispatchScope(dispatcher)
        for _ in 0..<1_000 { scope.background {} }
        scope.foreground(after: .seconds(1)) {}
        #expect(scope.liveWorkCount == 1_001)
        try dispatcher.runNextBackground()
        #expect(scope.liveWorkCount == 1_000)
        try synchronously { try dispatcher.runUntilIdle() }
        #expect(scope.liveWorkCount == 0)
        let handle = scope.background(after: .seconds(1)) {}
        #expect(handle.cancel())
        #expect(scope.liveWorkCount == 0)
        #expect(dispatcher.pendingTaskCount == 0)
    }

    @Test func workLeavesTheScopeInAnyOrder() throws {
        // The scope links its live work into a list: the oldest entry, one between two others and the newest (the
        // list's head) each leave it, and the rest is still found by cancelAll.
        let dispatcher = ManualDispatcher()
        let scope = DispatchScope(dispatcher)
        let handles = (0..<5).map { index in scope.background(after: .seconds(1), label: "task \(index)") {} }
        #expect(handles[2].cancel())
        #expect(handles[4].cancel())
        #expect(handles[0].cancel())
        #expect(scope.liveWorkCount == 2)
        #expect(!handles[2].cancel())
        #expect(scope.liveWorkCount == 2)
        scope.cancelAll()
        for handle in handles { #expect(handle.isCancelled) }
        #expect(scope.liveWorkCount == 0)
        #expect(dispatcher.pendingTaskCount == 0)
        try dispatcher.verifyIdle()
    }

    @Test func workTheDispatcherBeneathCancelledIsForgotten() async throws {
        // An await from outside the tracked tasks that nobody runs: the dispatcher's wait limit cancels the task
        // beneath and ends the await; the scope must not keep the task as live work.
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(50))
        let scope = DispatchScope(dispatcher)
        let error = await #expect(throws: ManualDispatcherError.self) {
            try await scope.runInBackground(label: "never run") { 1 }
        }
        #expect(error?.kind == .waitTimedOut(after: .milliseconds(50)))
        #expect(dispatcher.pendingTaskCount == 0)
        #expect(scope.liveWorkCount == 0)
        #expect(await scope.waitForBackgroundTasks(timeout: .seconds(10)))
    }

    @Test func aCancelThroughTheScopeOfWorkCancelledBeneathForgetsIt() async throws {
        // The awaiting task is cancelled once the dispatcher beneath has accepted the task: the awaiter cancels the
        // task beneath, then the scope's handle, which finds it cancelled already and must retire its entry.
        let dispatcher = ManualDispatcher()
        let scope = DispatchScope(CancelsTheCallerOnceAccepted(base: dispatcher))
        let awaiting = Task { try await scope.runInBackground(label: "cancelled while dispatched") { 1 } }
        await #expect(throws: CancellationError.self) { try await awaiting.value }
        #expect(dispatcher.pendingTaskCount == 0)
        #expect(scope.liveWorkCount == 0)
        #expect(await scope.waitForBackgroundTasks(timeout: .seconds(10)))
    }

    /// A decorator beneath the scope that cancels each task through the handle it got, or drops it unforwarded: the
    /// scope forgets the task, and an await on it ends with `DroppedWorkError` as it does without the scope.
    @Test(.timeLimit(.minutes(1)), arguments: DecoratorBeneath.allCases, TaskContext.allCases)
    func anAwaitThroughAScopeEndsWhenTheDecoratorBeneathDropsItsTask(
        _ decorator: DecoratorBeneath, _ context: TaskContext
    ) async throws {
        let dispatcher = ManualDispatcher()
        let scope = DispatchScope(decorator.over(dispatcher))
        let error = await #expect(throws: DroppedWorkError.self) {
            switch context {
            case .background: try await scope.runInBackground(label: "load") { 1 }
            case .foreground: try await scope.runOnMainActor(label: "load") { 1 }
            }
        }
        #expect(error?.label == "load")
        #expect(scope.liveWorkCount == 0)
        #expect(await scope.waitForBackgroundTasks(timeout: .seconds(10)))
        try dispatcher.verifyIdle()
    }

    @Test(.timeLimit(.minutes(1)), arguments: DecoratorBeneath.allCases)
    func aTickLoopThroughAScopeEndsWhenTheDecoratorBeneathDropsATick(_ decorator: DecoratorBeneath) async throws {
        let dispatcher = ManualDispatcher()
        let scope = DispatchScope(decorator.over(dispatcher))
        let loop = Task {
            var ticks = 0
            for await _ in scope.ticks(every: .seconds(1), label: "poll") { ticks += 1 }
            return ticks
        }
        #expect(await loop.value == 0)
        #expect(scope.liveWorkCount == 0)
        try dispatcher.verifyIdle()
    }

    @Test(arguments: DecoratorBeneath.allCases, TaskContext.allCases)
    func aSeriesAndACallbackThroughAScopeAreForgottenWhenTheDecoratorBeneathDropsThem(
        _ decorator: DecoratorBeneath, _ context: TaskContext
    ) async throws {
        let dispatcher = ManualDispatcher()
        let scope = DispatchScope(decorator.over(dispatcher))
        let ran = Locked(0)
        let (series, callback) =
            switch context {
            case .background:
                (
                    scope.background(every: .seconds(1), label: "poll") { ran.withLock { $0 += 1 } },
                    scope.background(after: .seconds(1), label: "refresh") { ran.withLock { $0 += 1 } }
                )
            case .foreground:
                (
                    scope.foreground(every: .seconds(1), label: "poll") { ran.withLock { $0 += 1 } },
                    scope.foreground(after: .seconds(1), label: "refresh") { ran.withLock { $0 += 1 } }
                )
            }
        #expect(series.isCancelled && callback.isCancelled)
        #expect(scope.liveWorkCount == 0)
        #expect(await scope.waitForBackgroundTasks(timeout: .seconds(10)))
        try await dispatcher.advance(by: .seconds(5))
        #expect(ran.withLock { $0 } == 0)
        try dispatcher.verifyIdle()
    }

    @Test func aDispatchAfterCancelAllIsCancelledAtOnce() async throws {
        let dispatcher = ManualDispatcher()
        let scope = DispatchScope(dispatcher)
        scope.cancelAll()
        let ran = Locked(false)
        let handle = scope.background(label: "late") { ran.withLock { $0 = true } }
        #expect(handle.isCancelled)
        #expect(!handle.cancel())
        #expect(dispatcher.pendingTaskCount == 0)
        await #expect(throws: CancellationError.self) {
            try await scope.runInBackground(label: "late await") { ran.withLock { $0 = true } }
        }
        let task = scope.startTask(label: "late task") { Task.isCancelled }
        try await dispatcher.settle()
        // Never started: the scope returns a cancelled task, and the dispatcher beneath sees nothing.
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: task) }
        #expect(task.isCancelled)
        #expect(dispatcher.history.isEmpty)
        #expect(!ran.withLock { $0 })
        #expect(scope.liveWorkCount == 0)
        try dispatcher.verifyIdle()
    }

    /// A drain on one thread, the scope's `cancelAll()` on another: each task either ran (and the history says so) or
    /// was cancelled (and its handle says so), never skipped as a run. Both on threads of their own: the test blocks
    /// neither the cooperative pool nor a Dispatch worker.
    @Test(.timeLimit(.minutes(5))) func aDrainRacingCancelAllRunsOrCancelsEachTask() async throws {
        for _ in 0..<20 {
            let dispatcher = ManualDispatcher(historyLimit: 10_000)
            let scope = DispatchScope(dispatcher)
            let ran = Locked(Set<Int>())
            let underWay = DispatchSemaphore(value: 0)
            let handles = (0..<1_000).map { index in
                scope.background {
                    ran.withLock { _ = $0.insert(index) }
                    if index == 100 { underWay.signal() }
                }
            }
            let finished = await withCheckedContinuation { continuation in
                onOwnThread {
                    let cancelled = DispatchSemaphore(value: 0)
                    onOwnThread {
                        _ = underWay.wait(timeout: .now() + 30)
                        scope.cancelAll()
                        cancelled.signal()
                    }
                    let drained = (try? dispatcher.runUntilIdle()) != nil
                    continuation.resume(returning: drained && cancelled.wait(timeout: .now() + 30) == .success)
                }
            }
            #expect(finished)
            let didRun = ran.withLock { $0 }
            let disagreeing = handles.indices.filter { handles[$0].isCancelled == didRun.contains($0) }
            #expect(disagreeing.isEmpty, "handles that disagree with whether their task ran: \(disagreeing.count)")
            #expect(dispatcher.history.count == didRun.count)
            #expect(scope.liveWorkCount == 0)
            try dispatcher.verifyIdle()
        }
    }

    /// A production task delayed past any clock is dropped by its queue: its slot holds it until the scope cancels it
    /// (it was freed at once, and the scope's `cancelAll()` then used it).
    @Test(arguments: [false, true]) func aProductionTaskThatNeverRunsLivesWhileItsSlotIsOccupied(operationQueue: Bool) {
        let dispatcher: any TaskDispatcher = operationQueue ? OperationQueueDispatcher() : QueueDispatcher()
        let scope = DispatchScope(dispatcher)
        weak var captured: Sentinel?
        do {
            let sentinel = Sentinel()
            captured = sentinel
            scope.background(after: .seconds(1_000_000_000), label: "never") { _ = sentinel }  // the handle dropped
        }
        #expect(scope.occupiedSlotCount == 1)
        let alive = captured != nil
        #expect(alive, "the task was freed while its slot is occupied")
        guard alive else {
            _ = Unmanaged.passRetained(scope)  // its release would cancel the freed task
            return
        }
        scope.cancelAll()
        #expect(scope.occupiedSlotCount == 0 && scope.liveWorkCount == 0)
        #expect(captured == nil)
    }

    @Test func aDelayedDispatchIntoACancelledScopeDoesNotMoveAutoAdvancesClock() throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        let scope = DispatchScope(dispatcher)
        scope.cancelAll()
        let handle = scope.background(after: .seconds(10), label: "late") { Issue.record("a refused task ran") }
        #expect(handle.isCancelled)
        #expect(dispatcher.now == .zero)
        try dispatcher.verifyIdle()
    }

    @Test func aLateCallbackInAutoDrainCannotRunWorkOfACancelledScope() throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let scope = DispatchScope(dispatcher)
        let ran = Locked(0)
        scope.background { ran.withLock { $0 += 1 } }
        #expect(ran.withLock { $0 } == 1)
        scope.cancelAll()
        scope.background { ran.withLock { $0 += 1 } }
        #expect(ran.withLock { $0 } == 1)
        try dispatcher.verifyIdle()
    }

    @Test func aScopeOverADecoratorCancelsThroughIt() throws {
        let dispatcher = ManualDispatcher()
        let scope = DispatchScope(ForwardingDispatcher(base: dispatcher, rewrite: .copy))
        let series = scope.background(every: .seconds(1), label: "poll") {}
        scope.background(after: .seconds(5), label: "later") {}
        try dispatcher.advance(by: .seconds(2))
        #expect(dispatcher.pendingTaskCount == 2)
        scope.cancelAll()
        #expect(series.isCancelled)
        #expect(dispatcher.pendingTaskCount == 0)
        try dispatcher.verifyIdle()
    }

    /// Work of every kind through a cancelled scope over a decorator never reaches the dispatcher beneath: no pending
    /// task, no jump of the auto-advancing clock, and a tracked task's await ends with `CancellationError`.
    @Test func aCancelledScopeOverADecoratorDispatchesNothingBeneath() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        let scope = DispatchScope(ForwardingDispatcher(base: dispatcher, rewrite: .copy))
        scope.cancelAll()
        let late = scope.background(after: .seconds(10), label: "late") { Issue.record("a refused task ran") }
        let series = scope.background(every: .seconds(1), label: "poll") { Issue.record("a refused tick ran") }
        #expect(late.isCancelled && series.isCancelled)
        let awaiting = dispatcher.startTask(label: "awaits") {
            try await scope.runInBackground(label: "late run") { 1 }
        }
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: awaiting) }
        #expect(dispatcher.now == .zero)
        #expect(scope.liveWorkCount == 0)
        try dispatcher.verifyIdle()
    }

    @Test func aTickLoopThroughAScopeEndsWithTheScope() async throws {
        let dispatcher = ManualDispatcher()
        let scope = DispatchScope(dispatcher)
        let ticks = Locked(0)
        let task = scope.startTask(label: "loop") {
            for await _ in scope.ticks(every: .seconds(1)) { ticks.withLock { $0 += 1 } }
        }
        try await dispatcher.advance(by: .seconds(3))
        #expect(ticks.withLock { $0 } == 3)
        scope.cancelAll()
        try await dispatcher.settle()
        _ = try? await dispatcher.value(of: task)
        try dispatcher.verifyIdle()
    }

    /// A scope over a scope is cancelled with it: all its work ran through the outer one, so it forgets that work,
    /// lets go of its closures, ends its waits, and its series read cancelled; one made over a cancelled scope starts
    /// cancelled. The inner scope's own cancellation leaves the outer one's work alone.
    @Test func aScopeOverAScopeIsCancelledWithIt() async throws {
        final class Probe: Sendable {}
        let dispatcher = ManualDispatcher()
        let outer = DispatchScope(dispatcher)
        let inner = DispatchScope(outer)
        let sibling = DispatchScope(outer)
        weak var released: Probe?
        do {
            let probe = Probe()
            released = probe
            inner.background(after: .seconds(60), label: "inner work") { _ = probe }
        }
        let series = inner.background(every: .seconds(1), label: "inner series") {}
        let outerWork = outer.background(after: .seconds(60), label: "outer work") {}
        sibling.cancelAll()
        #expect(!outer.isCancelled && !outerWork.isCancelled)
        #expect(inner.liveWorkCount == 2)
        outer.cancelAll()
        #expect(inner.isCancelled)
        #expect(inner.liveWorkCount == 0)
        #expect(released == nil, "the inner scope kept the closure of work its outer scope cancelled")
        #expect(series.isCancelled)
        #expect(await inner.waitForBackgroundTasks(timeout: .seconds(30)))
        #expect(DispatchScope(outer).isCancelled)
        try dispatcher.verifyIdle()
    }

    /// The outer scope holds an inner one weakly: released, the inner scope goes, and cancels its own work.
    @Test func anOuterScopeDoesNotKeepAnInnerOneAlive() throws {
        let dispatcher = ManualDispatcher()
        let outer = DispatchScope(dispatcher)
        weak var released: DispatchScope?
        let work: TaskHandle
        do {
            let inner = DispatchScope(outer)
            released = inner
            work = inner.background(after: .seconds(1), label: "inner work") {}
        }
        #expect(released == nil)
        #expect(work.isCancelled)
        #expect(outer.liveWorkCount == 0)
        #expect(!outer.isCancelled)
        try dispatcher.verifyIdle()
    }

    /// An inner scope holds the outer one it forwards to: the outer scope outlives its owner's reference while the
    /// inner scope lives, and its `cancelAll()` ends both scopes' work; it goes with the last inner scope.
    @Test func anInnerScopeKeepsTheOuterOneAlive() throws {
        let dispatcher = ManualDispatcher()
        var outer: DispatchScope? = DispatchScope(dispatcher)
        weak let released = outer
        var inner: DispatchScope? = DispatchScope(outer!)
        let outerWork = outer!.background(after: .seconds(1), label: "outer work") {}
        let innerWork = inner!.background(after: .seconds(1), label: "inner work") {}
        outer = nil
        #expect(released != nil && inner?.isCancelled == false && !outerWork.isCancelled)
        released?.cancelAll()
        #expect(inner?.isCancelled == true && outerWork.isCancelled && innerWork.isCancelled)
        try dispatcher.verifyIdle()
        inner = nil
        #expect(released == nil)
    }

    @Test func theScopeKeepsTheContract() async throws {
        // The sanitizer run's longer limit, as in `ContractTests.timeLimit`.
        let timeLimit = max(Duration.seconds(30), ManualDispatcher.defaultWaitLimit * 2)
        try await DispatcherContract.check(timeLimitPerRule: timeLimit) {
            let manual = ManualDispatcher()
            return DispatcherContract.Subject(
                DispatchScope(manual), now: { manual.now }, advance: { try manual.advance(by: $0) })
        }
    }

    /// A scope cancelled before the check cancels every task: the check says so at once instead of waiting out each
    /// rule's time limit for ticks and runs that cannot come.
    @Test(arguments: [DispatcherContract.Rule.exactlyOnce, .repeatingWorkTicksAtItsDueTimes])
    func theContractCheckOfACancelledScopeSaysSoAtOnce(_ rule: DispatcherContract.Rule) async throws {
        let started = ContinuousClock.now
        let violation = await #expect(throws: DispatcherContractViolation.self) {
            try await DispatcherContract.check(rules: [rule], timeLimitPerRule: .seconds(60)) {
                let manual = ManualDispatcher()
                let scope = DispatchScope(manual)
                scope.cancelAll()
                return DispatcherContract.Subject(scope, now: { manual.now }, advance: { try manual.advance(by: $0) })
            }
        }
        #expect(violation?.evidence.contains("DispatchScope that was cancelled before the check") == true)
        #expect(ContinuousClock.now - started < .seconds(30), "the check waited for the rule's time limit")
    }

    /// A tracked task's dispatches through a cancelled scope are refused, never pending: auto-advance keeps no record
    /// of them as tracked work (a review: three entries were left for good, each step paying for them).
    @Test func aTrackedTasksDispatchACancelledScopeRefusesLeavesNoRecord() async throws {
        for run in 0..<20 {
            let dispatcher = ManualDispatcher(mode: .autoAdvance, waitLimit: .seconds(60))
            let scope = DispatchScope(dispatcher)
            scope.cancelAll()
            let task = dispatcher.startTask(label: "refused") {
                for _ in 0..<3 { scope.background(after: .seconds(1), label: "refused") {} }
            }
            try await dispatcher.value(of: task)
            try dispatcher.verifyIdle()
            #expect(dispatcher.invariantViolations() == [], "run \(run)")
            #expect(dispatcher.storage.read { $0.clockHold.trackedWork.isEmpty }, "run \(run)")
        }
    }
}

/// What a decorator beneath a scope does with each task that stops it from running.
enum DecoratorBeneath: CaseIterable, Sendable {
    /// Forwards it, then cancels it through the handle it got back, as a decorator that coalesces work might.
    case cancelsThroughItsHandle
    /// Forwards nothing: the closure is released inside `dispatch(_:)`.
    case drops

    func over(_ base: ManualDispatcher) -> some TaskDispatcher { StopsEachTask(base: base, how: self) }
}

private struct StopsEachTask: TaskDispatcher {
    let base: ManualDispatcher
    let how: DecoratorBeneath

    var clock: ManualDispatcher.Clock { self.base.clock }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        guard self.how == .cancelsThroughItsHandle else { return TaskHandle(canceller: RefusedTask()) }
        let handle = self.base.dispatch(task)
        handle.cancel()
        return handle
    }
}

/// A decorator that cancels the awaiting task (the one calling it) once the wrapped dispatcher has accepted the task,
/// before the dispatch returns to the scope.
private struct CancelsTheCallerOnceAccepted: TaskDispatcher {
    let base: ManualDispatcher

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        let handle = self.base.dispatch(task)
        withUnsafeCurrentTask { $0?.cancel() }
        return handle
    }
}

/// An object whose release a test watches through a weak reference.
private final class Sentinel: Sendable {}

/// An owner of a scope with a poll series and a delayed refresh, both stopped by its release.
private final class ScopeOwner: Sendable {
    private let scope: DispatchScope

    init(_ dispatcher: ManualDispatcher) {
        self.scope = DispatchScope(dispatcher)
        self.scope.foreground(every: .seconds(1), label: "poll") {}
        self.scope.background(after: .seconds(30), label: "refresh") {}
    }
}
