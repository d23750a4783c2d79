import TaskDispatch
import TaskDispatchTesting
import TaskDispatchTestingTraits
import Testing

@Suite(.verifiesIdleDispatchers)
struct FeedModelTests {
    @Test @MainActor func showsParsedItems() throws {
        let dispatcher = ManualDispatcher()
        let model = FeedModel(dispatcher: dispatcher)
        model.refresh()
        try dispatcher.runNextBackground()  // "parse"
        #expect(model.isLoading)
        try dispatcher.runNextForeground()  // "deliver"
        #expect(model.items == ["a", "b"])
    }
}
