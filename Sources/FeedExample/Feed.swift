public import Foundation

/// A parsed feed: its title and its items, newest first as the file lists them.
///
/// The format is a subset of [JSON Feed 1.1](https://jsonfeed.org/version/1.1) in which every item has a
/// `title`; other keys are ignored:
///
/// ```json
/// {
///   "version": "https://jsonfeed.org/version/1.1",
///   "title": "Swift Notes",
///   "items": [{ "id": "1", "title": "Hello", "url": "https://example.com/1" }]
/// }
/// ```
///
/// Parsing is the slow step ``FeedModel`` runs in the background.
public struct Feed: Sendable, Hashable, Decodable {
    /// The feed's title.
    public var title: String
    /// The feed's items, in the order the file lists them.
    public var items: [FeedItem]

    /// Creates a feed from its parts.
    ///
    /// - Parameters:
    ///   - title: The feed's title.
    ///   - items: The feed's items.
    public init(title: String, items: [FeedItem]) {
        self.title = title
        self.items = items
    }

    /// Parses a JSON Feed document.
    ///
    /// Dates are ISO 8601 (`2026-11-02T09:00:00Z`).
    ///
    /// ```swift
    /// let feed = try Feed(parsing: try Data(contentsOf: fileURL))
    /// print(feed.items.map(\.title))
    /// ```
    ///
    /// - Parameter data: The UTF-8 bytes of the document.
    /// - Throws: `DecodingError` when the data is not JSON, or lacks the `title`, `items`, or an item's `id`
    ///   or `title`.
    public init(parsing data: Data) throws {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        self = try decoder.decode(Feed.self, from: data)
    }
}
