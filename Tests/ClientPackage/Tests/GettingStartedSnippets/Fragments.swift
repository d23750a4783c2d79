import TaskDispatch
import TaskDispatchTesting
import Testing

/// The article's fragments, each inside a test that gives it what it names.
@Suite struct GettingStartedFragments {
    @Test @MainActor func theModelTakesAProductionDispatcher() {
        let names = ["swift", "swiftly", "rust"]
        let model = SearchModel(index: names, dispatcher: QueueDispatcher())
        #expect(model.results.isEmpty)
        #expect(!model.isSearching)
    }

    @Test func aToolWaitsForItsBackgroundWorkBeforeItExits() async {
        let dispatcher = QueueDispatcher()
        // … run the tool …
        if await !dispatcher.waitForBackgroundTasks(timeout: .seconds(5)) {
            print("background work still running after 5 s; exiting anyway")
        }
        #expect(await dispatcher.waitForBackgroundTasks(timeout: .zero))  // nothing was left running
    }

    @Test @MainActor func oneDrainRunsTheFilterAndTheDelivery() throws {
        let dispatcher = ManualDispatcher()
        let model = SearchModel(index: ["swift", "swiftly", "rust"], dispatcher: dispatcher)
        model.search("swift")
        try dispatcher.runUntilIdle()
        #expect(model.results == ["swift", "swiftly"])
        try dispatcher.verifyIdle()
    }
}
