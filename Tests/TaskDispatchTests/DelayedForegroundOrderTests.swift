import Dispatch
import Foundation
import TaskDispatch
import Testing

/// Foreground tasks run in dispatch order among equal delays, and in due order across delays (issue 8,
/// defect 1: `OperationQueueDispatcher` used to add each delayed task from a concurrent timer thread).
@Suite struct DelayedForegroundOrderTests {
    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func aBurstOfEqualDelaysRunsInDispatchOrder(kind: ProductionDispatcherKind) async {
        let dispatcher = kind.makeDispatcher()
        let order = OrderLog()
        let done = DispatchGroup()
        for index in 0..<500 {
            done.enter()
            dispatcher.foreground(after: .milliseconds(20)) {
                order.append(index)
                done.leave()
            }
        }
        #expect(await groupEmptied(done, withinSeconds: 50))
        let values = order.values
        let inversions = zip(values, values.dropFirst()).filter { $0 > $1 }.count
        #expect(values == Array(0..<500), "\(inversions) inversions; first positions: \(values.prefix(20))")
    }

    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func mixedDelaysRunInDueOrderThenDispatchOrder(kind: ProductionDispatcherKind) async throws {
        let dispatcher = kind.makeDispatcher()
        let order = OrderLog()
        let done = DispatchGroup()
        // Even indices are due 300 ms after dispatch, odd ones 10 ms: each later-due task is dispatched just
        // before an earlier-due one. Expected: the odd ones in dispatch order, then the even ones.
        let clock = ContinuousClock()
        let start = clock.now
        for index in 0..<200 {
            done.enter()
            dispatcher.foreground(after: index.isMultiple(of: 2) ? .milliseconds(300) : .milliseconds(10)) {
                order.append(index)
                done.leave()
            }
        }
        let dispatching = clock.now - start
        #expect(await groupEmptied(done, withinSeconds: 50))
        // The expectation holds only if every short task fell due before the first long one.
        try #require(dispatching < .milliseconds(250), "dispatching 200 tasks took \(dispatching)")
        let expected = Array(stride(from: 1, to: 200, by: 2)) + Array(stride(from: 0, to: 200, by: 2))
        #expect(order.values == expected)
    }

    @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
    func aCancelledDelayedForegroundTaskNeverRunsAndTheOthersKeepTheirOrder(kind: ProductionDispatcherKind) async {
        let dispatcher = kind.makeDispatcher()
        let order = OrderLog()
        let done = DispatchGroup()
        var handles: [TaskHandle] = []
        for index in 0..<50 {
            done.enter()
            handles.append(
                dispatcher.foreground(after: .milliseconds(20)) {
                    order.append(index)
                    done.leave()
                })
        }
        for index in stride(from: 0, to: 50, by: 5) {
            #expect(handles[index].cancel())
            done.leave()
        }
        #expect(await groupEmptied(done, withinSeconds: 50))
        #expect(order.values == (0..<50).filter { !$0.isMultiple(of: 5) })
    }
}
