/// The position of a task on the dispatcher's timeline: its due time, then its dispatch order (as in swift-nio's
/// embedded loop), so tasks due at the same instant run in the order they were dispatched.
struct TaskKey: Comparable, Sendable {
    /// Due time on the virtual clock, in nanoseconds since the dispatcher was created, or ``never``.
    var due: Int64
    /// Dispatch order, from 1, unique within one dispatcher.
    var sequence: UInt64

    /// The due time of a task that can never fall due: its delay reaches past the last instant the clock can show.
    static let never = Int64.max

    /// The last instant the virtual clock can show: one nanosecond before ``never``.
    static let latestTime = Int64.max - 1

    @inline(__always)
    static func < (lhs: TaskKey, rhs: TaskKey) -> Bool {
        lhs.due != rhs.due ? lhs.due < rhs.due : lhs.sequence < rhs.sequence
    }
}
