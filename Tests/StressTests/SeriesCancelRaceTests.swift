import Dispatch
import TaskDispatch
import Testing

/// A repeating series with a 1 ns interval through a scope over a scope, on each production dispatcher, stopped by
/// either scope's `cancelAll()` while ticks overlap: after the call returns, at most the tick already begun runs, and
/// the handle reads cancelled. The series' state is contended here (a tick begins before the previous one's thread has
/// stored its handle), so the thread sanitizer run checks its lock too.
@Suite struct SeriesCancelRaceTests {
    @Test(.timeLimit(.minutes(5)), arguments: [false, true])
    func aFastSeriesStopsAtCancelAll(operationQueue: Bool) async throws {
        let dispatcher: any TaskDispatcher = operationQueue ? OperationQueueDispatcher() : QueueDispatcher()
        var worst = 0
        for round in 0..<StressScale.scaled(500, minimum: 50) {
            let outer = DispatchScope(dispatcher)
            let inner = DispatchScope(outer)
            let returned = Locked(false)
            let late = Locked(0)
            let firstTick = Locked<CheckedContinuation<Void, Never>?>(nil)
            let series = Locked<TaskHandle?>(nil)
            await withCheckedContinuation { (ticked: CheckedContinuation<Void, Never>) in
                firstTick.withLock { $0 = ticked }
                let handle = inner.background(every: .nanoseconds(1)) {
                    if returned.withLock({ $0 }) { late.withLock { $0 += 1 } }
                    firstTick.withLock { $0.take() }?.resume()
                }
                series.withLock { $0 = handle }
            }
            if round % 2 == 0 { outer.cancelAll() } else { inner.cancelAll() }
            returned.withLock { $0 = true }
            #expect(await inner.waitForBackgroundTasks(timeout: .seconds(30)))
            #expect(await outer.waitForBackgroundTasks(timeout: .seconds(30)))
            #expect(series.withLock { $0?.isCancelled } == true)
            #expect(inner.liveWorkCount == 0 && outer.liveWorkCount == 0)
            worst = Swift.max(worst, late.withLock { $0 })
        }
        #expect(worst <= 1, "ticks that began after cancelAll() returned")
    }
}
