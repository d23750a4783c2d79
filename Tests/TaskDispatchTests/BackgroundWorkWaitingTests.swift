import Dispatch
import TaskDispatch
import Testing

extension ParkedThreadTests {
    /// The shutdown wait as users call it (issue 33, item 3): through `BackgroundWorkWaiting`, which both production
    /// dispatchers conform to, and on the concrete types as in 1.0. Each test holds the dispatcher's background work
    /// on a semaphore it releases at the end, so every wait below would last its whole timeout unless cancellation
    /// ends it.
    @Suite struct BackgroundWorkWaitingTests {
        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func theProtocolsWaitEndsAtOnceWhenItsTaskIsCancelled(kind: ProductionDispatcherKind) async {
            let dispatcher = kind.makeDispatcher()
            let held = HeldBackgroundTask(on: dispatcher)
            let waiting: any BackgroundWorkWaiting = dispatcher
            let waits: [(String, @Sendable () async -> Bool)] = [
                ("some, 600 s", { await shutDown(dispatcher, timeout: .seconds(600)) }),
                ("any, no limit", { await waiting.waitForBackgroundTasks(timeout: nil) }),
                ("any, no argument", { await waiting.waitForBackgroundTasks() }),
                ("a forwarding type", { await ForwardingShutdown(base: waiting).waitForBackgroundTasks(timeout: nil) }),
            ]
            for (name, wait) in waits {
                let waiter = Task { await wait() }
                waiter.cancel()
                #expect(
                    await value(of: waiter, withinSeconds: 10) == false, "\(name): a cancelled wait ends with false")
            }
            held.release()
            #expect(await shutDown(dispatcher, timeout: .seconds(50)))
            #expect(await ForwardingShutdown(base: dispatcher).waitForBackgroundTasks(timeout: .zero))
        }

        /// Calls written as a 1.0 user writes them, on the concrete types, resolve as they did: the blocking form in
        /// synchronous code, the async form in async code (a blocking wait would ignore the cancel and hold the
        /// waiter for 600 s). `Tests/CompileChecks` shows that async code cannot call the blocking form by accident.
        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func concreteCallsResolveAsIn1_0(kind: ProductionDispatcherKind) async {
            let dispatcher = kind.makeDispatcher()
            let calls = UserCalls(dispatcher)
            let held = HeldBackgroundTask(on: dispatcher)
            #expect(await onOwnThread { calls.blockingBriefly() } == false, "the blocking form times out")
            for (name, wait) in [("600 s", calls.waitLong), ("no argument", calls.waitWithoutLimit)] {
                let waiter = Task { await wait() }
                waiter.cancel()
                #expect(await value(of: waiter, withinSeconds: 10) == false, "\(name): the async form was picked")
            }
            held.release()
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(50)))
            #expect(await onOwnThread { calls.blockingBriefly() })
        }

        /// The trap the production article names: a protocol of the user's own whose requirement takes a `Duration`
        /// is satisfied by the blocking form, so a cancelled wait through it still lasts its whole timeout.
        @Test(.timeLimit(.minutes(1)), arguments: ProductionDispatcherKind.allCases)
        func aProtocolOfYourOwnWithADurationTimeoutGetsTheBlockingForm(kind: ProductionDispatcherKind) async throws {
            let dispatcher = kind.makeDispatcher()
            let homemade = try #require(dispatcher as? any GracefulShutdown)
            let held = HeldBackgroundTask(on: dispatcher)
            let clock = ContinuousClock()
            let start = clock.now
            let waiter = Task { await homemade.waitForBackgroundTasks(timeout: .milliseconds(300)) }
            waiter.cancel()
            #expect(await value(of: waiter, withinSeconds: 10) == false)
            // Most of the timeout, not all: Dispatch times the wait on a clock of its own, which ended it 0.3 ms short
            // of 300 ms by this one in a run (a cancel that ended the wait would end it at once).
            #expect(
                clock.now - start >= .milliseconds(250), "the cancel did not end the wait: it blocked for its timeout")
            held.release()
            #expect(await dispatcher.waitForBackgroundTasks(timeout: .seconds(50)))
        }
    }
}

/// Generic shutdown code, as a user writes it over either production dispatcher.
private func shutDown(_ dispatcher: some BackgroundWorkWaiting, timeout: Duration) async -> Bool {
    await dispatcher.waitForBackgroundTasks(timeout: timeout)
}

/// A type that wraps a dispatcher, as a dispatch scope will: it conforms by forwarding the requirement.
private struct ForwardingShutdown: BackgroundWorkWaiting {
    let base: any BackgroundWorkWaiting

    func waitForBackgroundTasks(timeout: Duration?) async -> Bool {
        await self.base.waitForBackgroundTasks(timeout: timeout)
    }
}

// The protocol users wrote before `BackgroundWorkWaiting` (issue 33), as the production article shows it.
// Not this: the dispatchers meet this requirement with their blocking form.
protocol GracefulShutdown: Sendable {
    func waitForBackgroundTasks(timeout: Duration) async -> Bool
}

extension QueueDispatcher: GracefulShutdown {}
extension OperationQueueDispatcher: GracefulShutdown {}

/// The three calls of the shutdown wait, written on the concrete type as 1.0 code writes them.
private struct UserCalls: Sendable {
    let blockingBriefly: @Sendable () -> Bool
    let waitLong: @Sendable () async -> Bool
    let waitWithoutLimit: @Sendable () async -> Bool

    init(_ dispatcher: any WaitableProductionDispatcher) {
        switch dispatcher {
        case let queue as QueueDispatcher:
            self.blockingBriefly = { queue.waitForBackgroundTasks(timeout: .milliseconds(20)) }
            self.waitLong = { await queue.waitForBackgroundTasks(timeout: .seconds(600)) }
            self.waitWithoutLimit = { await queue.waitForBackgroundTasks() }
        case let operations as OperationQueueDispatcher:
            self.blockingBriefly = { operations.waitForBackgroundTasks(timeout: .milliseconds(20)) }
            self.waitLong = { await operations.waitForBackgroundTasks(timeout: .seconds(600)) }
            self.waitWithoutLimit = { await operations.waitForBackgroundTasks() }
        default:
            preconditionFailure("\(type(of: dispatcher)) is not a production dispatcher this test knows")
        }
    }
}

/// A background task that keeps the dispatcher's work outstanding until ``release()`` (or 60 s).
private struct HeldBackgroundTask {
    private let gate = DispatchSemaphore(value: 0)

    init(on dispatcher: some TaskDispatcher) {
        let gate = self.gate
        dispatcher.background(label: "held") { _ = gate.wait(timeout: .now() + 60) }
    }

    func release() {
        self.gate.signal()
    }
}

/// The value of `task` if it ends within `seconds` of real time; `nil` if it has not by then (it keeps running).
private func value<Success: Sendable>(of task: Task<Success, Never>, withinSeconds seconds: Double) async -> Success? {
    let result = AwaitBox<Success?>(nil)
    let ended = DispatchSemaphore(value: 0)
    Task {
        result.value = await task.value
        ended.signal()
    }
    guard await onOwnThread({ ended.wait(timeout: .now() + seconds) }) == .success else { return nil }
    return result.value
}
