public import Dispatch

/// How urgent a background task is.
///
/// Production dispatchers map a priority to a Dispatch quality of service (``qualityOfService``);
/// `ManualDispatcher` records it and, when asked, runs due background tasks in
/// priority order. Foreground tasks have no priority: the main queue is serial and runs them in order.
///
/// ```swift
/// dispatcher.background(priority: .utility, label: "prefetch") { cache.prefetch() }
/// ```
public enum BackgroundPriority: Int, Sendable, Hashable, Comparable, CaseIterable, CustomStringConvertible {
    /// Work the user does not see: maintenance, clean-up. Maps to `.background`.
    case background = 0
    /// Long-running work whose progress the user may watch. Maps to `.utility`.
    case utility = 1
    /// The default. Maps to `.default`.
    case medium = 2
    /// Work the user started and waits for. Maps to `.userInitiated`.
    case userInitiated = 3
    /// Work that must finish for the next frame. Maps to `.userInteractive`.
    case userInteractive = 4

    /// The Dispatch quality of service this priority maps to.
    public var qualityOfService: DispatchQoS.QoSClass {
        switch self {
        case .background: .background
        case .utility: .utility
        case .medium: .default
        case .userInitiated: .userInitiated
        case .userInteractive: .userInteractive
        }
    }

    /// Orders priorities from ``background`` (lowest) to ``userInteractive`` (highest).
    public static func < (lhs: BackgroundPriority, rhs: BackgroundPriority) -> Bool {
        lhs.rawValue < rhs.rawValue
    }

    /// The case name, such as `"userInitiated"`.
    public var description: String {
        switch self {
        case .background: "background"
        case .utility: "utility"
        case .medium: "medium"
        case .userInitiated: "userInitiated"
        case .userInteractive: "userInteractive"
        }
    }
}
