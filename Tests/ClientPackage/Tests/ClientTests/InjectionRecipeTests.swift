// The injection recipes that need no framework: initializer injection and a composition root.
import TaskDispatchTesting
import Testing

// MARK: Initializer injection

@MainActor
final class InboxModel {
    private(set) var unread = 0
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher = QueueDispatcher()) {
        self.dispatcher = dispatcher
    }

    func count(_ messages: [String]) {
        let dispatcher = self.dispatcher
        dispatcher.background(label: "count") {
            let unread = messages.filter { $0.hasPrefix("*") }.count
            dispatcher.foreground(label: "show") { [weak self] in self?.unread = unread }
        }
    }
}

// MARK: A composition root

/// Everything the app shares, built once where the app starts.
struct AppEnvironment {
    let dispatcher: any TaskDispatcher

    static func live() -> AppEnvironment {
        AppEnvironment(dispatcher: QueueDispatcher())
    }

    @MainActor func makeInboxModel() -> InboxModel {
        InboxModel(dispatcher: self.dispatcher)
    }
}

// In the app:  let environment = AppEnvironment.live()
//              let inbox = environment.makeInboxModel()

@Suite struct InjectionRecipeTests {
    @Test @MainActor func initializerInjection() throws {
        let dispatcher = ManualDispatcher()
        let model = InboxModel(dispatcher: dispatcher)
        model.count(["*new", "old", "*newer"])
        try dispatcher.runUntilIdle()
        #expect(model.unread == 2)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func compositionRoot() throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let environment = AppEnvironment(dispatcher: dispatcher)
        let inbox = environment.makeInboxModel()
        inbox.count(["*new"])
        #expect(inbox.unread == 1)
    }

    @Test func theLiveEnvironmentUsesQueues() {
        #expect(AppEnvironment.live().dispatcher is QueueDispatcher)
    }
}
