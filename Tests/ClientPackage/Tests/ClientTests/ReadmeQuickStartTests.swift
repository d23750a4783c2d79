// Only the imports the README's quick start shows for a test.
import TaskDispatchTesting
import Testing

/// The service from the README's quick start, written as a user would, against the public API only.
@MainActor
final class GreetingModel {
    private let dispatcher: any TaskDispatcher
    private(set) var greeting = ""
    private var pending: TaskHandle?

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func load(name: String) {
        self.pending?.cancel()
        self.pending = self.dispatcher.background(label: "compose") { [dispatcher] in
            let text = "Hello, \(name)!"
            dispatcher.foreground(label: "show") { self.greeting = text }
        }
    }
}

@Suite struct ReadmeQuickStartTests {
    @Test @MainActor func stepsTheServiceWithOnlyTheTestingImport() throws {
        let dispatcher = ManualDispatcher()
        let model = GreetingModel(dispatcher: dispatcher)
        model.load(name: "Ada")
        #expect(dispatcher.pendingTaskCount(in: .background) == 1)  // `TaskContext` from TaskDispatch
        try dispatcher.runNextBackground()
        #expect(model.greeting.isEmpty)
        try dispatcher.runNextForeground()
        #expect(model.greeting == "Hello, Ada!")
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func cancelsThroughTheHandle() throws {
        let dispatcher = ManualDispatcher()
        let handle = dispatcher.background(after: .seconds(1)) {}
        #expect(handle.cancel())
        #expect(handle.isCancelled)
        let task = DispatchedTask(.background({}), label: "built by hand", callSite: CallSite())
        dispatcher.dispatch(task)
        #expect(dispatcher.pendingTasks.map(\.label) == ["built by hand"])
        try dispatcher.runUntilIdle()
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func foregroundTasksAssertMainActorIsolationTheSupportedWay() throws {
        let dispatcher = ManualDispatcher()
        var ran = false
        dispatcher.foreground {
            MainActor.assertIsolated("foreground tasks run on the main actor")
            ran = MainActor.assumeIsolated { true }
        }
        try dispatcher.runNextForeground()
        #expect(ran)
    }
}
