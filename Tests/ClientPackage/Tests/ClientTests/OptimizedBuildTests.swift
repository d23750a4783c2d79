// What an optimized build (`swift test -c release`, as `.ci/run` also runs this package) must not change: after an
// `await`, the dispatcher names the thread the code runs on now, not the one it ran on before.
import Foundation
import TaskDispatchTesting
import Testing

/// A task executor with two threads of its own that takes turns: each job runs on the other thread than the job
/// before it, so code that awaits resumes on another thread than the one it suspended on, every time.
@available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *)
private final class TakingTurnsExecutor: TaskExecutor, @unchecked Sendable {
    /// The jobs waiting for each thread, and whether the executor stopped; guarded by `condition`.
    private var queues: [[UnownedJob]] = [[], []]
    private var turn = 0
    private var stopped = false
    private let condition = NSCondition()

    init() {
        for index in 0..<2 {
            Thread { [self] in self.work(index) }.start()
        }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        self.condition.withLock {
            self.queues[self.turn].append(job)
            self.turn = 1 - self.turn
            self.condition.broadcast()
        }
    }

    /// Lets both threads end once their queues are empty.
    func stop() {
        self.condition.withLock {
            self.stopped = true
            self.condition.broadcast()
        }
    }

    private func work(_ index: Int) {
        while true {
            let job: UnownedJob? = self.condition.withLock {
                while self.queues[index].isEmpty && !self.stopped { self.condition.wait() }
                return self.queues[index].isEmpty ? nil : self.queues[index].removeFirst()
            }
            guard let job else { return }
            job.runSynchronously(on: self.asUnownedTaskExecutor())
        }
    }
}

@Suite(.timeLimit(.minutes(1))) struct OptimizedBuildTests {
    /// What the task that an async drain runs calls on its dispatcher: each must know it runs inside the drain.
    enum CallInsideTheDrain: CaseIterable, Sendable {
        /// Reports the task it was called from at once.
        case verifyIdle
        /// Is refused (not left waiting for the run it is part of).
        case runUntilIdle
    }

    /// An async drain off the main actor hands the foreground task to the main queue and resumes on the executor's
    /// other thread; the background task it runs there calls the dispatcher.
    @Test(arguments: CallInsideTheDrain.allCases)
    func aTaskKnowsItRunsInsideTheDrainAfterTheDrainResumedOnAnotherThread(call: CallInsideTheDrain) async throws {
        guard #available(macOS 15, iOS 18, tvOS 18, watchOS 11, visionOS 2, *) else { return }
        let executor = TakingTurnsExecutor()
        defer { executor.stop() }
        for _ in 0..<20 {
            let dispatcher = ManualDispatcher()
            let reported = Reported()
            dispatcher.foreground(label: "hand-off") {}
            dispatcher.background(label: "calls") {
                switch call {
                case .verifyIdle: reported.set(Result { try dispatcher.verifyIdle() }.error)
                case .runUntilIdle: reported.set(Result { try dispatcher.runUntilIdle() }.error)
                }
            }
            _ = try await Task(executorPreference: executor) { try await dispatcher.runUntilIdle() }.value
            let error = try #require(reported.value as? ManualDispatcherError)
            switch call {
            case .verifyIdle:
                #expect(error.summary.contains("verifyIdle() was called from inside task"), "\(error.summary)")
            case .runUntilIdle:
                #expect(error.kind == .reentrantRun, "\(error.summary)")
            }
        }
    }
}

/// The error a task reported, set on the drain's thread and read by the test after the drain.
private final class Reported: @unchecked Sendable {
    private let lock = NSLock()
    private var error: (any Error)?

    func set(_ error: (any Error)?) { self.lock.withLock { self.error = error } }

    var value: (any Error)? { self.lock.withLock { self.error } }
}

extension Result {
    fileprivate var error: Failure? {
        if case .failure(let error) = self { error } else { nil }
    }
}
