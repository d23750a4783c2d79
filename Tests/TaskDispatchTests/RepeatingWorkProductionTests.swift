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
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            series.value = dispatcher.background(every: .milliseconds(5), label: "poll") {
                count.value += 1
                guard count.value == 3 else { return }
                stopped.value = series.value?.cancel() ?? false
                done.resume()
            }
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
        // Drift-free: the third tick seen is due at least 10 ms × its number after the start.
        let last = try #require(seen.last)
        #expect(ContinuousClock.now - start >= .milliseconds(10) * last)
        #expect(seen == seen.sorted() && Set(seen).count == 3)
    }

    /// A zero first delay is a little past by the time the series dispatches its first tick on a real clock: that tick
    /// runs at once, as tick 1, not an interval later (an hour here, so a late tick fails the bounded wait).
    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func theFirstTickOfAZeroDelayRunsAtOnce(kind: ProductionDispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let ticked = DispatchSemaphore(value: 0)
        let series = dispatcher.background(every: .seconds(3_600), after: .zero, label: "at once") { ticked.signal() }
        let ranInTime = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            DispatchQueue.global().async { done.resume(returning: ticked.wait(timeout: .now() + 30) == .success) }
        }
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
        let loopTickedInTime = await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
            DispatchQueue.global().async { done.resume(returning: ticked.wait(timeout: .now() + 30) == .success) }
        }
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
        #expect(scope.liveWorkCount == 0)
        #expect(await scope.waitForBackgroundTasks(timeout: .seconds(30)))
        #expect(!(await dispatcher.waitForBackgroundTasks(timeout: .zero)))
        #expect(outside.cancel())
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(30)))
        #expect(ran.value == 0)
        await #expect(throws: CancellationError.self) { try await scope.runInBackground { 1 } }
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
}
