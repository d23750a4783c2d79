import Dispatch
import Foundation
import TaskDispatch
import Testing

/// Repeating work and scopes over the production dispatchers: real time, waited on conditions with a bound.
@Suite struct RepeatingWorkProductionTests {
    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func aBackgroundSeriesTicksUntilCancelledFromInsideATick(kind: ProductionDispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let count = AwaitBox(0)
        let series = AwaitBox<TaskHandle?>(nil)
        let stopped = AwaitBox(false)
        let published = DispatchSemaphore(value: 0)
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            series.value = dispatcher.background(every: .milliseconds(5), label: "poll") {
                count.value += 1
                guard count.value == 3 else { return }
                // The handle is stored once `background(every:)` returns, which a stalled test thread can do after
                // the third tick: wait for the store (the bound is reached only if the test is broken).
                _ = published.wait(timeout: .now() + 30)
                stopped.value = series.value?.cancel() ?? false
                done.resume()
            }
            published.signal()
        }
        // The cancel came inside the third tick, before the fourth was dispatched: no tick follows.
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
        #expect(count.value == 3)
        #expect(stopped.value)
        #expect(series.value?.isCancelled == true)
    }

    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    @MainActor
    func aForegroundSeriesTicksOnTheMainActor(kind: ProductionDispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        var count = 0
        var series: TaskHandle?
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            series = dispatcher.foreground(every: .milliseconds(5), after: .zero) {
                MainActor.assertIsolated()
                count += 1
                if count == 3 {
                    series?.cancel()
                    done.resume()
                }
            }
        }
        #expect(count == 3)
        #expect(series?.isCancelled == true)
    }

    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func aTickLoopCountsItsTicksOnTheRealClock(kind: ProductionDispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let start = ContinuousClock.now
        var seen: [Int] = []
        for await tick in dispatcher.ticks(every: .milliseconds(10)) {
            seen.append(tick)
            if seen.count == 3 { break }
        }
        // Drift-free: the third tick seen is due at least 10 ms × its number after the start (less a millisecond:
        // Dispatch times its timers on a clock of its own, which once ended a wait 0.3 ms short by this one).
        let last = try #require(seen.last)
        #expect(ContinuousClock.now - start >= .milliseconds(10) * last - .milliseconds(1))
        #expect(seen == seen.sorted() && Set(seen).count == 3)
    }

    /// A zero first delay is a little past by the time the series dispatches its first tick on a real clock: that tick
    /// runs at once, as tick 1, not an interval later (an hour here, so a late tick fails the bounded wait).
    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func theFirstTickOfAZeroDelayRunsAtOnce(kind: ProductionDispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let ticked = DispatchSemaphore(value: 0)
        let series = dispatcher.background(every: .seconds(3_600), after: .zero, label: "at once") { ticked.signal() }
        let ranInTime = await onOwnThread { ticked.wait(timeout: .now() + 30) == .success }
        #expect(ranInTime, "the first tick of a series with a zero delay did not run within 30 s")
        #expect(series.cancel())
        let first = AwaitBox(0)
        let loop = Task {
            for await tick in dispatcher.ticks(every: .seconds(3_600), after: .zero) {
                first.value = tick
                ticked.signal()
                return
            }
        }
        let loopTickedInTime = await onOwnThread { ticked.wait(timeout: .now() + 30) == .success }
        loop.cancel()
        #expect(loopTickedInTime, "the first tick of a tick loop with a zero delay did not come within 30 s")
        #expect(first.value == 1)
    }

    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func aTickLoopEndsWhenItsTaskIsCancelled(kind: ProductionDispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let task = Task {
            var ticks = 0
            for await _ in dispatcher.ticks(every: .seconds(3_600)) { ticks += 1 }
            return ticks
        }
        task.cancel()
        #expect(await task.value == 0)
    }

    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func aScopeCancelsPendingAndDelayedWorkAndWaitsOnlyForItsOwn(kind: ProductionDispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let scope = DispatchScope(dispatcher)
        let ran = AwaitBox(0)
        let delayed = scope.background(after: .seconds(3_600), label: "delayed") { ran.value += 1 }
        let foreground = scope.foreground(after: .seconds(3_600), label: "delayed foreground") { ran.value += 1 }
        let series = scope.background(every: .seconds(3_600), label: "series") { ran.value += 1 }
        // Work of the dispatcher's own, not the scope's: the scope's wait does not count it.
        let outside = dispatcher.background(after: .seconds(3_600), label: "outside") {}
        #expect(!(await scope.waitForBackgroundTasks(timeout: .zero)))
        #expect(scope.liveWorkCount == 3)
        scope.cancelAll()
        #expect(delayed.isCancelled && foreground.isCancelled && series.isCancelled)
        #expect(!series.cancel(), "the scope had stopped the series already")
        #expect(scope.liveWorkCount == 0)
        #expect(await scope.waitForBackgroundTasks(timeout: .seconds(30)))
        #expect(!(await dispatcher.waitForBackgroundTasks(timeout: .zero)))
        #expect(outside.cancel())
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
        #expect(ran.value == 0)
        await #expect(throws: CancellationError.self) { try await scope.runInBackground { 1 } }
    }

    /// A first delay past any clock's range, directly and through a scope: the series waits for ever, and cancels.
    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func aFirstDelayPastTheClocksRangeWaitsForEver(kind: ProductionDispatcherKind) async {
        let dispatcher = kind.makeDispatcher()
        let ran = AwaitBox(false)
        let series = [
            dispatcher.background(every: .seconds(1), after: Duration(_high: .max, low: .max)) { ran.value = true },
            dispatcher.foreground(every: .seconds(1), after: .seconds(Int64.max)) { ran.value = true },
            DispatchScope(dispatcher).background(every: .seconds(Int64.max), after: .seconds(Int64.max)) {
                ran.value = true
            },
        ]
        #expect(series[0].cancel() && series[1].cancel())
        #expect(series[2].isCancelled, "its scope was released at once")
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
        #expect(!ran.value)
    }

    /// A series its scope stopped lets its closure go while the handle is still held.
    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases, [TaskContext.background, .foreground])
    func aSeriesStoppedByItsScopeLetsItsClosureGo(kind: ProductionDispatcherKind, context: TaskContext) {
        final class Probe: Sendable {}
        let scope = DispatchScope(kind.makeDispatcher())
        weak var released: Probe?
        let series: TaskHandle
        do {
            let probe = Probe()
            released = probe
            series =
                context == .background
                ? scope.background(every: .seconds(3_600)) { _ = probe }
                : scope.foreground(every: .seconds(3_600)) { _ = probe }
        }
        #expect(released != nil, "a live series keeps its closure")
        scope.cancelAll()
        #expect(released == nil, "the scope's cancelAll() released the closure while the handle is still held")
        #expect(series.isCancelled)
        #expect(!series.cancel())
    }

    /// A dispatch through a cancelled scope is refused before the dispatcher beneath publishes it: cancelled at once,
    /// and counted nowhere.
    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func aDispatchAfterCancelAllIsCancelledAndNotCounted(kind: ProductionDispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let scope = DispatchScope(dispatcher)
        scope.cancelAll()
        let ran = AwaitBox(false)
        let background = scope.background(label: "late") { ran.value = true }
        let foreground = scope.foreground(label: "late foreground") { ran.value = true }
        #expect(background.isCancelled && foreground.isCancelled)
        #expect(!background.cancel())
        #expect(scope.liveWorkCount == 0)
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .zero))
        #expect(await scope.waitForBackgroundTasks(timeout: .zero))
        // A task dispatched directly afterwards runs: the queue went on.
        let done = AwaitBox(false)
        dispatcher.background { done.value = true }
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
        #expect(done.value && !ran.value)
    }

    /// After `cancelAll()`, `startTask` returns a cancelled task and runs nothing: a task started and then cancelled
    /// could run its operation, uncancelled, on another thread.
    @Test(.timeLimit(.minutes(5)), arguments: ProductionDispatcherKind.allCases)
    func aStartTaskAfterCancelAllNeverRunsItsOperation(kind: ProductionDispatcherKind) async throws {
        let scope = DispatchScope(kind.makeDispatcher())
        scope.cancelAll()
        let runs = Counter()
        for _ in 0..<2_000 {
            let task = scope.startTask { _ = runs.next() }
            #expect(task.isCancelled)
            await #expect(throws: CancellationError.self) { try await task.value }
        }
        #expect(runs.next() == 0)
        #expect(scope.liveWorkCount == 0)
    }

    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func aScopeWaitsForItsRunningWork(kind: ProductionDispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let scope = DispatchScope(dispatcher)
        let release = DispatchSemaphore(value: 0)
        let finished = AwaitBox(false)
        scope.background(label: "slow") {
            release.wait()
            finished.value = true
        }
        #expect(!(await scope.waitForBackgroundTasks(timeout: .zero)))
        release.signal()
        #expect(await scope.waitForBackgroundTasks(timeout: .seconds(30)))
        #expect(finished.value)
        #expect(scope.liveWorkCount == 0)
    }

    @Test(.timeLimit(.minutes(1)))
    func aScopeReleasedCancelsItsWork() async throws {
        let dispatcher = QueueDispatcher()
        let ran = AwaitBox(false)
        var scope: DispatchScope? = DispatchScope(dispatcher)
        let handle = scope?.background(after: .seconds(3_600)) { ran.value = true }
        scope = nil
        #expect(handle?.isCancelled == true)
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
        #expect(!ran.value)
    }

    /// Tasks whose runs race `cancelAll()`: each either ran, or never runs and its handle says it was cancelled; and
    /// once the dispatcher's own wait returns, the scope has forgotten them all.
    @Test(.timeLimit(.minutes(5)), arguments: ProductionDispatcherKind.allCases)
    func tasksRacingCancelAllEitherRunOrSayTheyWereCancelled(kind: ProductionDispatcherKind) async {
        let dispatcher = kind.makeDispatcher()
        var disagreeing = 0
        var unsettled = 0
        for _ in 0..<20 {
            let scope = DispatchScope(dispatcher)
            let ran = RunIndices()
            let underWay = DispatchSemaphore(value: 0)
            let handles = (0..<1_000).map { index in
                scope.background { if ran.insert(index) == 20 { underWay.signal() } }
            }
            // The queue under way, so that its runs race the cancellation (bounded; a miss only weakens the round).
            _ = await onOwnThread { underWay.wait(timeout: .now() + 10) }
            scope.cancelAll()
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
            if scope.liveWorkCount != 0 { unsettled += 1 }
            let didRun = ran.snapshot
            disagreeing += handles.indices.filter { handles[$0].isCancelled == didRun.contains($0) }.count
        }
        #expect(disagreeing == 0, "handles that say cancelled for a task that ran, or not for one that never did")
        #expect(unsettled == 0, "rounds where the scope still counted work after the dispatcher's wait returned")
    }
}

extension RepeatingWorkProductionTests {
    /// Dispatches on four threads racing `cancelAll()` on a fifth: a task admitted as the cancel runs is either
    /// cancelled with the others or runs, and in both cases the scope forgets it (a task whose membership was
    /// installed after the admission's lock section kept its slot for ever, and the scope's release then crashed).
    @Test(.timeLimit(.minutes(5)), arguments: ProductionDispatcherKind.allCases)
    func dispatchesRacingCancelAllLeaveNoWorkBehind(kind: ProductionDispatcherKind) async {
        let dispatcher = kind.makeDispatcher()
        var unsettled: [DispatchScope] = []  // kept for the test's length: a leaked slot's task may be gone
        for _ in 0..<200 {
            let scope = DispatchScope(dispatcher)
            let underWay = DispatchSemaphore(value: 0)
            let threads = DispatchGroup()
            for thread in 0..<5 {
                threads.enter()
                Thread {
                    defer { threads.leave() }
                    guard thread < 4 else {
                        _ = underWay.wait(timeout: .now() + 10)
                        scope.cancelAll()
                        return
                    }
                    for index in 0..<150 {
                        scope.background {}
                        if thread == 0 && index == 50 { underWay.signal() }
                    }
                }.start()
            }
            #expect(await groupEmptied(threads, withinSeconds: 30))
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
            let scopeFinished = await scope.waitForBackgroundTasks(timeout: .seconds(10))
            if scope.liveWorkCount != 0 || !scopeFinished { unsettled.append(scope) }
        }
        #expect(unsettled.isEmpty, "rounds where the scope still counted work after its dispatcher's wait returned")
    }

    /// A scope released while its tasks end on other threads: the last end lets the scope's registry go, and no end
    /// before it touches the registry after its own slot is freed (a use after free the thread sanitizer reports).
    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func aScopeReleasedWhileItsTasksEndOnOtherThreads(kind: ProductionDispatcherKind) async {
        let dispatcher = kind.makeDispatcher()
        for _ in 0..<300 {
            do {
                let scope = DispatchScope(dispatcher)
                for _ in 0..<8 { scope.background {} }
            }
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
        }
    }
}

extension RepeatingWorkProductionTests {
    /// Over `QueueDispatcher` a scope admits a callback task without its lock (the dispatching thread pushes it onto a
    /// list that the next holder of the lock takes into the table): the scope counts each pending task at once,
    /// forgets each one cancelled through its handle, cancels the rest with `cancelAll()` or its release, and forgets
    /// each task that ran as it ends.
    @Test(.timeLimit(.minutes(1)))
    func tasksAdmittedWithoutTheScopesLockAreCountedCancelledAndForgotten() async {
        let dispatcher = QueueDispatcher()
        let ran = RunIndices()
        let scope = DispatchScope(dispatcher)
        let handles = (0..<1_000).map { index in scope.background(after: .seconds(3_600)) { _ = ran.insert(index) } }
        #expect(scope.liveWorkCount == 1_000)
        #expect(!(await scope.waitForBackgroundTasks(timeout: .zero)))
        for handle in handles[..<400] { #expect(handle.cancel()) }
        #expect(scope.liveWorkCount == 600)
        scope.cancelAll()
        #expect(handles.allSatisfy { $0.isCancelled })
        #expect(scope.liveWorkCount == 0)
        #expect(await scope.waitForBackgroundTasks(timeout: .zero))
        var released: DispatchScope? = DispatchScope(dispatcher)
        let releasedHandles = (0..<100).map { index in
            released?.background(after: .seconds(3_600)) { _ = ran.insert(index) }
        }
        released = nil
        #expect(releasedHandles.allSatisfy { $0?.isCancelled == true })
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))

        let running = DispatchScope(dispatcher)
        for index in 0..<1_000 { running.background { _ = ran.insert(index) } }
        #expect(await running.waitForBackgroundTasks(timeout: .seconds(30)))
        #expect(running.liveWorkCount == 0)
        #expect(ran.snapshot == Set(0..<1_000))
    }
}

/// The indices of the tasks that ran, under a lock.
private final class RunIndices: @unchecked Sendable {
    private let lock = NSLock()
    private var indices: Set<Int> = []

    /// Adds `index` and returns how many have run.
    func insert(_ index: Int) -> Int {
        self.lock.withLock {
            self.indices.insert(index)
            return self.indices.count
        }
    }

    var snapshot: Set<Int> {
        self.lock.withLock { self.indices }
    }
}
