import FeedExample
import Foundation
import TaskDispatchTesting

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

/// Computed, not stored: a `static let` holding `Data` stays allocated for the whole process, and LeakSanitizer
/// reports its bytes as leaked (it finds no pointer to them in the lazily initialized global).
enum Fixtures {
    /// A valid feed with three items.
    static var threeItems: Data {
        Data(
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
    }

    /// A valid feed with one item.
    static var oneItem: Data { Data(#"{ "title": "Updated", "items": [{ "id": "9", "title": "Ninth" }] }"#.utf8) }

    /// Not JSON at all.
    static var notJSON: Data { Data("<rss><channel><title>Wrong format</title></channel></rss>".utf8) }

    /// JSON whose second item has no title.
    static var untitledItem: Data {
        Data(#"{ "title": "T", "items": [{ "id": "1", "title": "A" }, { "id": "2" }] }"#.utf8)
    }
}

/// A ``FeedModel`` over a ``ManualDispatcher`` and a ``ScriptedFeedSource``: what a test of a refresh drives.
///
/// ```swift
/// let fixture = FeedModelFixture.failing(times: 2)      // "offline", "offline", then three items
/// let refreshing = fixture.model.refresh()
/// try fixture.dispatcher.runNextForeground()            // the start
/// ```
@MainActor struct FeedModelFixture {
    /// The feed name the model loads.
    static let feedName = "swift-notes"

    /// The reason the scripted failures give.
    static let outage = "offline"

    /// The dispatcher's real-time bound on each async step, wait and drain: generous, since only a failing test
    /// spends it, and shorter than the suites' one-minute time limit, so the dispatcher's message comes first.
    static let waitLimit = Duration.seconds(30)

    let dispatcher: ManualDispatcher
    let source: ScriptedFeedSource
    let model: FeedModel

    /// A model whose source answers with `script`, step after step, repeating the last step.
    init(script: [ScriptedFeedSource.Step], retryPolicy: RetryPolicy = .standard, mode: ManualDispatcher.Mode = .manual)
    {
        self.dispatcher = ManualDispatcher(mode: mode, waitLimit: Self.waitLimit)
        self.source = ScriptedFeedSource(script)
        self.model = FeedModel(
            feedName: Self.feedName,
            source: self.source,
            dispatcher: self.dispatcher,
            retryPolicy: retryPolicy
        )
    }

    /// A model whose source serves `data` at once.
    static func serving(_ data: Data = Fixtures.threeItems, retryPolicy: RetryPolicy = .standard) -> Self {
        Self(script: [.data(data)], retryPolicy: retryPolicy)
    }

    /// A model whose source fails `times` fetches with ``outage``, then serves `data`.
    static func failing(
        times: Int,
        then data: Data = Fixtures.threeItems,
        retryPolicy: RetryPolicy = .standard,
        mode: ManualDispatcher.Mode = .manual
    ) -> Self {
        Self(
            script: Array(repeating: .failure(Self.outage), count: times) + [.data(data)],
            retryPolicy: retryPolicy,
            mode: mode
        )
    }

    /// A model whose source fails every fetch with ``outage``.
    static func failingEveryFetch(retryPolicy: RetryPolicy = .standard, mode: ManualDispatcher.Mode = .manual) -> Self {
        Self(script: [.failure(Self.outage)], retryPolicy: retryPolicy, mode: mode)
    }
}

/// Calls `body` from synchronous code, where the compiler picks the synchronous steps and drains of
/// `ManualDispatcher` over their async forms: for the tests that check exactly what one synchronous step runs.
@discardableResult
func synchronously<Result>(_ body: () throws -> Result) rethrows -> Result {
    try body()
}
