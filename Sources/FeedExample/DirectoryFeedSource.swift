public import Foundation

/// A ``FeedSource`` that reads `<name>.json` from a folder, such as the feeds shipped in a resource bundle.
///
/// ```swift
/// let folder = Bundle.module.url(forResource: "feeds", withExtension: nil)
/// let source = DirectoryFeedSource(directory: folder)
/// let data = try source.fetch("swift-notes")       // reads feeds/swift-notes.json
/// ```
public struct DirectoryFeedSource: FeedSource {
    /// The folder the feeds are read from.
    public let directory: URL

    /// Creates a source over the `.json` files in `directory`.
    ///
    /// - Parameter directory: A file URL of the folder holding the feeds.
    public init(directory: URL) {
        self.directory = directory
    }

    /// Reads `<feedName>.json` from ``directory``.
    ///
    /// - Parameter feedName: The file's name without the `.json` extension.
    /// - Returns: The file's contents.
    /// - Throws: ``MissingFeed`` when there is no such file; the file system's error when it is unreadable.
    public func fetch(_ feedName: String) throws -> Data {
        let url = self.fileURL(for: feedName)
        do {
            return try Data(contentsOf: url)
        } catch CocoaError.fileReadNoSuchFile, CocoaError.fileNoSuchFile {
            throw MissingFeed(feedName: feedName, fileURL: url)
        }
    }

    /// The file ``fetch(_:)`` reads for `feedName`.
    ///
    /// - Parameter feedName: The feed's name.
    /// - Returns: `directory/<feedName>.json`.
    public func fileURL(for feedName: String) -> URL {
        self.directory.appendingPathComponent(feedName, isDirectory: false).appendingPathExtension("json")
    }

    /// The error ``DirectoryFeedSource/fetch(_:)`` throws when the folder has no file for the feed.
    ///
    /// ```swift
    /// catch let error as DirectoryFeedSource.MissingFeed { print(error) }   // no file "x.json" in /feeds
    /// ```
    public struct MissingFeed: Error, Sendable, Hashable, CustomStringConvertible {
        /// The feed that was asked for.
        public var feedName: String
        /// The file that does not exist.
        public var fileURL: URL

        /// Creates the error.
        ///
        /// - Parameters:
        ///   - feedName: The feed that was asked for.
        ///   - fileURL: The file that does not exist.
        public init(feedName: String, fileURL: URL) {
            self.feedName = feedName
            self.fileURL = fileURL
        }

        /// Like `no file "news.json" in /path/to/feeds`.
        public var description: String {
            "no file \"\(self.fileURL.lastPathComponent)\" in \(self.fileURL.deletingLastPathComponent().path)"
        }
    }
}
