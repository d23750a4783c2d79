import Dispatch
import TaskDispatch

extension Schedule {
    /// What ``Storage`` does after an event's critical section, outside the lock.
    enum Action {
        case proceed(Effects)
        /// Run this task (the caller holds the claim), then ask for the next.
        case run(Step)
        /// This thread now holds the claim for an auto-drain: perform the effects, then drain.
        case drain(Effects)
        /// This thread now holds the claim to run the due tasks of the one waiting async drain (`WaitingSettles`).
        case assist
        /// Throw this failure. A run that holds the claim releases it first.
        indirect case fail(Failure)
        /// A run that pauses between tasks stops here, holding the claim, for the caller's condition.
        case paused

        static let none = Action.proceed(Effects())

        var effects: Effects {
            switch self {
            case .proceed(let effects), .drain(let effects): effects
            case .run, .assist, .fail, .paused: Effects()
            }
        }
    }

    /// What an event leaves to do outside the lock: small, the rare fields in one box, so an `Action` copies cheaply.
    struct Effects {
        /// The waiters the event woke, to resume in order.
        var woken: [WaitResumer]?
        /// Set the waiters' timer for this deadline.
        var arm: DispatchTime?
        /// Wake the synchronous run methods blocked until the claim is released.
        var broadcast = false
        /// The rare fields, read through the box and set by ``setRare(_:)``.
        private(set) var rare: RareBox?

        struct Rare: Sendable {
            /// A tracked task's body to let through its start gate, or to fail there.
            var gate: (continuation: TrackedTaskScope.StartContinuation, outcome: Result<Void, any Error>)?
            /// A closure released by the event (a cancelled task's), dropped outside the lock.
            var released: DispatchedTask.Work?
            /// A note for standard error.
            var report: String?
            /// A package test's observer, called as the test would call it: outside the tracked task.
            var observe: (@Sendable () -> Void)?
            /// Waiters that end otherwise than woken by their condition: timed out, or cancelled.
            var ended: (resumers: [WaitResumer], outcome: WaitOutcome)?
            /// An await to end with the failure, releasing the awaited task's closure (see ``TaskAwaiter``).
            var failedAwait: (awaiter: any TaskAwaiter, failure: Failure, work: DispatchedTask.Work)?
        }

        /// The rare fields' box: replaced, never changed, when one is set, so copies do not share a change.
        final class RareBox: Sendable {
            let value: Rare
            init(_ value: Rare) { self.value = value }
        }

        var isEmpty: Bool {
            self.woken == nil && self.arm == nil && !self.broadcast && self.rare == nil
        }

        mutating func setRare(_ change: (inout Rare) -> Void) {
            var rare = self.rare?.value ?? Rare()
            change(&rare)
            self.rare = RareBox(rare)
        }
    }
}
