public import Dependencies
public import TaskDispatch

// snippet: dependency-key
/// The dispatcher as a swift-dependencies dependency: `QueueDispatcher()` live, a `ManualDispatcher` in tests.
///
/// There is no `testValue` here: the library target does not import `TaskDispatchTesting`, so a test that
/// forgets to override the dispatcher fails with swift-dependencies' "unimplemented" report rather than
/// silently running on real queues.
public enum TaskDispatcherKey: DependencyKey {
    /// The production dispatcher: the main queue and the global queues.
    public static let liveValue: any TaskDispatcher = QueueDispatcher()
}

extension DependencyValues {
    /// The dispatcher services use for background work, main-actor work, tracked tasks and sleeps.
    public var taskDispatcher: any TaskDispatcher {
        get { self[TaskDispatcherKey.self] }
        set { self[TaskDispatcherKey.self] = newValue }
    }
}
// end-snippet
