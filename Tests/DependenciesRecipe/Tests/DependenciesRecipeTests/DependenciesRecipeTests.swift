import Dependencies
import DependenciesRecipe
import TaskDispatchTesting
import Testing

// snippet: dependency-test
@Suite struct DependenciesRecipeTests {
    @Test @MainActor func stepsAModelThatReadsItsDispatcherFromDependencies() throws {
        let dispatcher = ManualDispatcher()
        let model = withDependencies {
            $0.taskDispatcher = dispatcher
        } operation: {
            GreetingModel()
        }

        model.load(name: "Ada")
        try dispatcher.runNextBackground()  // "compose"
        #expect(model.greeting.isEmpty)
        try dispatcher.runNextForeground()  // "show"
        #expect(model.greeting == "Hello, Ada!")
        try dispatcher.verifyIdle()
    }
}
// end-snippet
