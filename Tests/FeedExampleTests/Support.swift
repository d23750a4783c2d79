import FeedExample
import Foundation

/// A ``FeedSource`` that answers each fetch with the next step of a script and counts the fetches.
///
/// Once the script runs out, the last step repeats. `@unchecked Sendable`: `steps` and `fetchCount` are
/// only touched under `lock`.
final class ScriptedFeedSource: FeedSource, @unchecked Sendable {
    enum Step {
        case data(Data)
        case failure(String)
    }

    private let lock = NSLock()
    private var steps: [Step]
    private var count = 0
    private var names: [String] = []

    init(_ steps: [Step]) {
        precondition(!steps.isEmpty, "a script needs at least one step")
        self.steps = steps
    }

    /// The number of fetches so far.
    var fetchCount: Int {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.count
    }

    /// The feed names fetched so far, in order.
    var fetchedNames: [String] {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.names
    }

    func fetch(_ feedName: String) throws -> Data {
        self.lock.lock()
        let step = self.steps.count > 1 ? self.steps.removeFirst() : self.steps[0]
        self.count += 1
        self.names.append(feedName)
        self.lock.unlock()
        switch step {
        case .data(let data): return data
        case .failure(let message): throw FakeOutage(message: message)
        }
    }
}

struct FakeOutage: Error, CustomStringConvertible {
    var message: String
    var description: String { self.message }
}

enum Fixtures {
    /// A valid feed with three items.
    static let threeItems = Data(
        """
        {
          "version": "https://jsonfeed.org/version/1.1",
          "title": "Swift Notes",
          "items": [
            { "id": "3", "title": "Third", "url": "https://example.com/3", "date_published": "2026-11-16T09:00:00Z" },
            { "id": "2", "title": "Second", "url": "https://example.com/2" },
            { "id": "1", "title": "First" }
          ]
        }
        """.utf8
    )

    /// A valid feed with one item.
    static let oneItem = Data(#"{ "title": "Updated", "items": [{ "id": "9", "title": "Ninth" }] }"#.utf8)

    /// Not JSON at all.
    static let notJSON = Data("<rss><channel><title>Wrong format</title></channel></rss>".utf8)

    /// JSON whose second item has no title.
    static let untitledItem = Data(#"{ "title": "T", "items": [{ "id": "1", "title": "A" }, { "id": "2" }] }"#.utf8)
}
