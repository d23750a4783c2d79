public import Foundation

/// One entry of a ``Feed``: a post with a title and, usually, a link and a date.
///
/// Decoded from an element of a JSON Feed's `items` array:
///
/// ```json
/// { "id": "42", "title": "Hello", "url": "https://example.com/42", "date_published": "2026-11-02T09:00:00Z" }
/// ```
public struct FeedItem: Sendable, Hashable, Decodable {
    /// The item's identifier, unique within its feed.
    public var id: String
    /// The item's title.
    public var title: String
    /// The address of the item's page, if the feed gives one.
    public var url: URL?
    /// When the item was published, if the feed says.
    public var published: Date?

    /// Creates an item.
    ///
    /// - Parameters:
    ///   - id: The item's identifier, unique within its feed.
    ///   - title: The item's title.
    ///   - url: The address of the item's page.
    ///   - published: When the item was published.
    public init(id: String, title: String, url: URL? = nil, published: Date? = nil) {
        self.id = id
        self.title = title
        self.url = url
        self.published = published
    }

    private enum CodingKeys: String, CodingKey {
        case id
        case title
        case url
        case published = "date_published"
    }
}
