import FeedExample
import Foundation
import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct FeedParsingTests {
    @Test func parsesTitlesLinksAndDates() throws {
        let feed = try Feed(parsing: Fixtures.threeItems)

        #expect(feed.title == "Swift Notes")
        #expect(feed.items.map(\.id) == ["3", "2", "1"])
        let first = try #require(feed.items.first)
        #expect(first.url == URL(string: "https://example.com/3"))
        // 2026-11-16T09:00:00Z
        #expect(first.published == Date(timeIntervalSince1970: 1_794_819_600))
        #expect(feed.items.last?.url == nil)
    }

    @Test @MainActor func documentThatIsNotJSONFailsWithoutRetry() throws {
        let dispatcher = ManualDispatcher()
        let source = ScriptedFeedSource([.data(Fixtures.notJSON)])
        let model = FeedModel(feedName: "rss", source: source, dispatcher: dispatcher)

        model.load()
        try dispatcher.runNextBackground()
        #expect(model.state == .loading(attempt: 1))  // the failure is delivered like a result
        try dispatcher.runNextForeground()

        guard case .failed(.invalidFeed(let feed, _)) = model.state else {
            Issue.record("expected .failed(.invalidFeed), got \(model.state)")
            return
        }
        #expect(feed == "rss")
        #expect(source.fetchCount == 1)
        #expect(dispatcher.now == .zero)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func missingKeyIsNamedInTheError() throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let model = FeedModel(
            feedName: "notes",
            source: ScriptedFeedSource([.data(Fixtures.untitledItem)]),
            dispatcher: dispatcher
        )

        model.load()

        #expect(model.state == .failed(.invalidFeed(feed: "notes", reason: #"missing key "title" in `items[1]`"#)))
        #expect(model.items.isEmpty)
        try dispatcher.verifyIdle()
    }

    @Test func directorySourceReadsJSONFilesAndNamesMissingOnes() throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("FeedExampleTests-\(UUID().uuidString)", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        try Fixtures.oneItem.write(to: folder.appendingPathComponent("news.json"))
        let source = DirectoryFeedSource(directory: folder)

        #expect(try source.fetch("news") == Fixtures.oneItem)
        let error = try #require(throws: DirectoryFeedSource.MissingFeed.self) { try source.fetch("other") }
        #expect(error.feedName == "other")
        #expect(error.description.hasPrefix(#"no file "other.json" in "#))
    }
}
