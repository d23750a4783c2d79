public import Foundation

/// Where a ``FeedModel`` gets the raw bytes of a feed: the network, a folder, or a test's script.
///
/// ``FeedModel`` calls ``fetch(_:)`` on a background thread, so it may block. Tests pass a fake that returns
/// canned data or throws; the demo passes a ``DirectoryFeedSource`` over the files shipped with it.
///
/// ```swift
/// struct CannedFeedSource: FeedSource {
///     let data: Data
///     func fetch(_ feedName: String) throws -> Data { data }
/// }
/// ```
public protocol FeedSource: Sendable {
    /// Returns the raw document of the feed named `feedName`.
    ///
    /// Called on a background thread; blocking is fine. A thrown error counts as a failed attempt that
    /// ``FeedModel`` retries according to its ``RetryPolicy``.
    ///
    /// - Parameter feedName: The name the model was created with, such as `"swift-notes"`.
    /// - Returns: The bytes of the feed document.
    /// - Throws: Any error when the feed cannot be read right now.
    func fetch(_ feedName: String) throws -> Data
}
