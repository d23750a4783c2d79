extension FeedModel {
    /// Where a ``FeedModel``'s load stands.
    ///
    /// ```swift
    /// switch model.state {
    /// case .idle: showPlaceholder()
    /// case .loading(let attempt): showSpinner(retrying: attempt > 1)
    /// case .loaded: showItems(model.items)
    /// case .failed(let error): showError(error)
    /// }
    /// ```
    public enum State: Sendable, Hashable {
        /// No load has started, or the last one was cancelled.
        case idle
        /// A load is in progress: attempt `attempt` (from 1) is waiting, fetching, parsing or delivering.
        ///
        /// While the model waits out a back-off delay, `attempt` is already the number of the next attempt.
        case loading(attempt: Int)
        /// The last load delivered its items.
        case loaded
        /// The last load failed.
        case failed(FeedError)
    }
}
