import FeedExample
import Foundation

/// A ``FeedSource`` that fails the first fetch of each listed feed, as a flaky network would, then reads
/// from `base`; it shows ``FeedModel``'s retry path with real files.
///
/// `@unchecked Sendable`: the only mutable state, `failedOnce`, is read and written under `lock`.
final class FlakyFeedSource: FeedSource, @unchecked Sendable {
    private let base: any FeedSource
    private let flakyFeeds: Set<String>
    private let lock = NSLock()
    private var failedOnce: Set<String> = []

    init(wrapping base: any FeedSource, failingFirstFetchOf flakyFeeds: Set<String>) {
        self.base = base
        self.flakyFeeds = flakyFeeds
    }

    func fetch(_ feedName: String) throws -> Data {
        self.lock.lock()
        let fails = self.flakyFeeds.contains(feedName) && self.failedOnce.insert(feedName).inserted
        self.lock.unlock()
        if fails {
            print("  [source] \(feedName): simulated network outage on the first fetch")
            throw SimulatedOutage()
        }
        return try self.base.fetch(feedName)
    }
}

/// The error ``FlakyFeedSource`` throws on a feed's first fetch.
struct SimulatedOutage: Error, CustomStringConvertible {
    var description: String { "simulated network outage" }
}
