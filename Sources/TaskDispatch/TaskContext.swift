/// Where a task runs: on the main actor, or in the background.
///
/// The two contexts are the two verbs of ``TaskDispatcher``: the foreground is the main actor (the main
/// queue, where UI state lives), the background is any other thread.
public enum TaskContext: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// The main actor. Foreground tasks run there, one at a time, in dispatch order.
    case foreground

    /// A background thread. Background tasks may run concurrently with each other.
    case background

    /// `"foreground"` or `"background"`.
    public var description: String {
        switch self {
        case .foreground: "foreground"
        case .background: "background"
        }
    }
}
