// The README's snippets, verbatim, with only the imports the README shows. Keep them in sync with README.md:
// a test of the main package (DocumentationSnippetTests) fails when a README snippet is missing here.
import TaskDispatchTesting
import Testing

@MainActor
final class HeadlinesModel {
    private(set) var headlines: [String] = []
    private(set) var isLoading = false
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func show(_ json: String) {
        self.isLoading = true
        let dispatcher = self.dispatcher
        dispatcher.background(label: "parse") {
            let headlines = json.split(separator: "\n").map(String.init)  // any thread
            dispatcher.foreground(label: "deliver") { [weak self] in  // the main actor
                self?.headlines = headlines
                self?.isLoading = false
            }
        }
    }

    func refresh(_ json: String) async throws {
        let parsed = try await dispatcher.runInBackground(label: "parse") {
            json.split(separator: "\n").map(String.init)  // any thread
        }
        try await dispatcher.runOnMainActor(label: "deliver") { self.headlines = parsed }
    }
}

@Suite struct ReadmeLandingPageTests {
    @Test func withoutTaskDispatch() async {
        let service = LegacyThumbnailService()  // calls DispatchQueue itself
        let size = await withCheckedContinuation { done in
            service.makeThumbnail(of: Array(repeating: 0, count: 64)) { done.resume(returning: $0) }
        }
        #expect(size == 16)  // it arrived; when, and on which thread, nobody checked
    }

    @Test @MainActor func withTaskDispatch() throws {
        let dispatcher = ManualDispatcher()
        let service = ThumbnailService(dispatcher: dispatcher)
        var size: Int?
        service.makeThumbnail(of: Array(repeating: 0, count: 64)) { size = $0 }

        try dispatcher.runNextBackground()  // "scale", on this thread
        #expect(size == nil)  // scaled, not delivered yet
        try dispatcher.runNextForeground()  // "deliver", on the main actor
        #expect(size == 16)
        try dispatcher.verifyIdle()  // nothing left behind
    }

    @Test @MainActor func parsesInTheBackgroundAndDeliversInTheForeground() throws {
        let dispatcher = ManualDispatcher()
        let model = HeadlinesModel(dispatcher: dispatcher)

        model.show("Swift 6 ships\nTests stop flaking")
        #expect(model.isLoading)  // nothing has run yet

        try dispatcher.runNextBackground()  // "parse"
        #expect(model.headlines.isEmpty)  // parsed, not delivered yet

        try dispatcher.runNextForeground()  // "deliver"
        #expect(model.headlines == ["Swift 6 ships", "Tests stop flaking"])
        #expect(!model.isLoading)

        try dispatcher.verifyIdle()  // no work left behind
    }

    @Test @MainActor func refreshParsesThenDelivers() async throws {
        let dispatcher = ManualDispatcher()
        let model = HeadlinesModel(dispatcher: dispatcher)

        let refreshing = Task { try await model.refresh("One\nTwo") }
        try await dispatcher.runNextBackground()  // "parse": waits for the dispatch, then runs it
        #expect(model.headlines.isEmpty)
        try await dispatcher.runNextForeground()  // "deliver"
        #expect(model.headlines == ["One", "Two"])
        try await refreshing.value  // the rest of refresh() has run
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func refreshEndState() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)  // every task runs as it is dispatched
        let model = HeadlinesModel(dispatcher: dispatcher)

        try await model.refresh("One\nTwo")
        #expect(model.headlines == ["One", "Two"])
    }
}
