/// Why a ``FeedModel`` load failed; carried by ``FeedModel/State/failed(_:)``.
///
/// ```swift
/// if case .failed(.unavailable(_, let attempts, let reason)) = model.state {
///     print("gave up after \(attempts) attempts: \(reason)")
/// }
/// ```
public enum FeedError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Every attempt to fetch the feed threw; `reason` describes the last error.
    case unavailable(feed: String, attempts: Int, reason: String)
    /// The feed was fetched but is not a valid feed document; `reason` says what is wrong with it.
    case invalidFeed(feed: String, reason: String)

    /// A sentence for logs and the demo's output.
    public var description: String {
        switch self {
        case .unavailable(let feed, let attempts, let reason):
            "feed \"\(feed)\" unavailable after \(attempts) attempt\(attempts == 1 ? "" : "s"): \(reason)"
        case .invalidFeed(let feed, let reason):
            "feed \"\(feed)\" is not a valid JSON Feed: \(reason)"
        }
    }
}
