import Foundation
public import TaskDispatch

/// The state behind a feed screen: loads a feed in the background and delivers its items on the main actor,
/// retrying failed fetches with exponential back-off.
///
/// The model never touches Dispatch. It takes a `TaskDispatcher`: the app passes `QueueDispatcher()`, a test
/// passes `ManualDispatcher` and runs each step itself. One load goes through these tasks:
///
/// 1. `"parse"` (background): fetch the document from the ``FeedSource`` and parse it into a ``Feed``.
/// 2. `"deliver"` (foreground): publish the result in ``items`` and ``state``.
/// 3. When the fetch threw and the ``RetryPolicy`` allows another attempt, the delivery schedules
///    `"retry"` (background, after the policy's delay), which fetches and parses again and is followed by
///    another `"deliver"`.
///
/// ```swift
/// let model = FeedModel(feedName: "swift-notes", source: DirectoryFeedSource(directory: folder),
///                       dispatcher: QueueDispatcher())
/// model.load()
/// let state = await model.finished()      // .loaded, or .failed(error)
/// print(model.items.map(\.title))
/// ```
///
/// A test sees every step:
///
/// ```swift
/// @Test @MainActor func deliversParsedItems() throws {
///     let dispatcher = ManualDispatcher()
///     let model = FeedModel(feedName: "notes", source: fakeSource, dispatcher: dispatcher)
///     model.load()
///     try dispatcher.runNextBackground()       // parse: items still empty
///     try dispatcher.runNextForeground()       // deliver
///     #expect(model.state == .loaded)
///     try dispatcher.verifyIdle()
/// }
/// ```
///
/// ``load()`` chains those tasks with callbacks. ``refresh()`` does the same load with Swift concurrency: it
/// starts a tracked task (`dispatcher.startTask(label: "refresh")`) that awaits each step, sleeps its back-off
/// on the dispatcher's `clock`, and returns the task, whose value is how the load ended:
///
/// ```swift
/// let state = try await model.refresh().value   // .loaded, .failed(error), or .idle when cancelled
/// ```
///
/// With `ManualDispatcher` the back-off sleeps on the virtual clock, so a test checks the whole 1 s, 2 s, 4 s
/// schedule with `advance(by:)` in well under a second of real time.
@MainActor
public final class FeedModel {
    /// The name of the feed this model loads, passed to ``FeedSource/fetch(_:)``.
    public let feedName: String

    /// Where the current load stands.
    public private(set) var state: State = .idle

    /// The title of the last feed delivered, or `nil` before the first delivery.
    public private(set) var title: String?

    /// The items of the last feed delivered; empty before the first delivery.
    ///
    /// A reload keeps the previous items until the new ones are delivered; a failed reload keeps them.
    public private(set) var items: [FeedItem] = []

    /// The number of fetch attempts the current or last load has started; 0 before the first load.
    ///
    /// More than 1 means the fetch failed and was retried.
    public private(set) var attempts = 0

    private let source: any FeedSource
    private let dispatcher: any TaskDispatcher
    private let retryPolicy: RetryPolicy

    /// Identifies the current load; a delivery from an older (cancelled) load is dropped.
    private var generation: UInt64 = 0
    /// The handle of the background attempt that has not started yet, if any.
    private var pendingAttempt: TaskHandle?
    /// Callers of ``finished()`` waiting for the current load to end.
    private var waiters: [CheckedContinuation<State, Never>] = []
    /// The task of the ``refresh()`` that has not ended, if any: another call returns it, ``cancel()`` cancels it.
    private var currentRefresh: RunningRefresh?
    /// The number of refresh tasks started so far; identifies ``currentRefresh``.
    private var refreshCount: UInt64 = 0

    /// Creates a model for one feed; it loads nothing until ``load()``.
    ///
    /// - Parameters:
    ///   - feedName: The feed to load, passed to `source`.
    ///   - source: Where the raw document comes from; called on a background thread.
    ///   - dispatcher: Runs the parsing in the background and the delivery on the main actor.
    ///   - retryPolicy: How often, and after which delays, a failed fetch is tried again.
    public init(
        feedName: String,
        source: any FeedSource,
        dispatcher: any TaskDispatcher,
        retryPolicy: RetryPolicy = .standard
    ) {
        self.feedName = feedName
        self.source = source
        self.dispatcher = dispatcher
        self.retryPolicy = retryPolicy
    }

    /// Starts loading the feed: sets ``state`` to `.loading(attempt: 1)` and dispatches the `"parse"` task.
    ///
    /// Returns at once; the items arrive later, on the main actor. Calling it while a load is in progress, or
    /// while a ``refresh()`` has not ended (even one whose start has not run yet), does nothing; calling it after
    /// a load ended reloads.
    public func load() {
        if case .loading = self.state { return }
        if self.runningRefresh != nil { return }
        self.generation &+= 1
        self.startAttempt(1, after: .zero)
    }

    /// Stops the current load: cancels the step that has not started and drops any delivery still to come.
    ///
    /// ``state`` becomes ``State/idle``; ``items`` keep what was delivered before. For a ``refresh()``, it
    /// cancels the refresh's task: a step or a back-off sleep that has not ended leaves the dispatcher, and a
    /// refresh whose start has not run never begins. Does nothing when no load is in progress.
    ///
    /// ```swift
    /// model.refresh()
    /// model.cancel()      // true: the refresh had not ended
    /// ```
    ///
    /// - Returns: `true` if a load was in progress, or a refresh had been started and not ended.
    @discardableResult
    public func cancel() -> Bool {
        let refresh = self.runningRefresh
        self.currentRefresh = nil
        refresh?.cancel()
        guard case .loading = self.state else { return refresh != nil }
        self.pendingAttempt?.cancel()
        self.pendingAttempt = nil
        self.generation &+= 1
        self.finish(.idle)
        return true
    }

    /// Suspends until the current load ends, and returns how it ended.
    ///
    /// Returns at once when no load is in progress. A cancelled load ends with ``State/idle``. A ``refresh()``
    /// that has not ended counts as a load in progress even before its task's body begins: this waits for the
    /// refresh's task.
    ///
    /// ```swift
    /// model.load()
    /// if case .failed(let error) = await model.finished() { print(error) }
    /// ```
    ///
    /// - Returns: The state the load ended in: ``State/loaded``, ``State/failed(_:)`` or ``State/idle``.
    public func finished() async -> State {
        if let refresh = self.runningRefresh {
            // Throws only `CancellationError`, when the task was cancelled before its body began.
            return (try? await refresh.value) ?? self.state
        }
        guard case .loading = self.state else { return self.state }
        return await withCheckedContinuation { self.waiters.append($0) }
    }

    // MARK: - Loading with Swift concurrency

    /// Starts loading the feed in a tracked task, and returns the task, whose value is how the load ended.
    ///
    /// The Swift-concurrency sibling of ``load()``. It returns at once: the load runs in a task started with the
    /// dispatcher's `startTask(label: "refresh")`, which in production is a plain `Task` on the main actor and
    /// in a test is a task the dispatcher holds, tracks and reports on. The task awaits each step instead of
    /// chaining callbacks:
    ///
    /// 1. `"refresh"` (foreground): the task's start. Its body sets ``state`` to `.loading(attempt: 1)`.
    /// 2. `"parse"` (background, through `runInBackground`): fetch and parse; the main actor stays free.
    /// 3. `"deliver"` (foreground, through `runOnMainActor`): publish ``title`` and ``items``, as a main-actor
    ///    step of its own that a cancelled refresh never runs.
    /// 4. Back in the task, on the main actor: set ``state`` to ``State/loaded`` (or ``State/failed(_:)``) and
    ///    resume the callers of ``finished()``.
    ///
    /// When the fetch throws and the ``RetryPolicy`` allows another attempt, the task sleeps for the policy's
    /// delay on the dispatcher's `clock` (with a `ManualDispatcher`, the virtual clock that `advance(by:)`
    /// moves), with ``state`` already at the next attempt's number, then fetches again in a `"retry"` task.
    ///
    /// ```swift
    /// let refreshing = model.refresh()
    /// let state = try await refreshing.value    // .loaded, .failed(error), or .idle when cancelled
    /// ```
    ///
    /// **Joining.** While a refresh has not ended, another call returns the same task, and ``load()`` does
    /// nothing. A refresh while a ``load()`` is in progress supersedes it: that load is cancelled as by
    /// ``cancel()`` (its callers of ``finished()`` get ``State/idle``) and a new load starts in the task. The
    /// model's ``state`` stays as it was until the task's body begins (in production, on the main actor's next
    /// turn; in a test, once the test runs the start); ``finished()`` waits for the refresh's task all the same.
    ///
    /// **Cancelling.** ``cancel()`` cancels the task: a step that has not started leaves the dispatcher, a
    /// back-off sleep ends with its timer, and the load ends with ``State/idle``; a step that started runs to the
    /// end and its result is dropped. Cancelling the returned task ends the load the same way once the task's body
    /// sees the cancellation, at its next `await` (until then ``state`` still shows the load; a `refresh()` called
    /// meanwhile cancels it at once and starts a new one). The task's body never throws: its value is the state
    /// the load ended in. A task cancelled before its body began loads nothing and leaves
    /// ``state`` as it was: with a dispatcher that holds the start (`ManualDispatcher`) the task then throws
    /// `CancellationError`; with a plain `Task` its value is ``State/idle``.
    ///
    /// A test steps each phase, checks the model in between, and awaits the task to see the end of the load:
    ///
    /// ```swift
    /// let refreshing = model.refresh()
    /// try dispatcher.runNextForeground()                                  // "refresh": the task's start
    /// try await dispatcher.runNextBackground()   // "parse"
    /// #expect(model.state == .loading(attempt: 1))
    /// try await dispatcher.runNextForeground()   // "deliver": items published
    /// #expect(try await dispatcher.value(of: refreshing) == .loaded)     // the rest of the task ran
    /// ```
    ///
    /// - Returns: The refresh's task. Its value is the state the load ended in: ``State/loaded``,
    ///   ``State/failed(_:)`` or ``State/idle``.
    @discardableResult
    public func refresh() -> Task<State, any Error> {
        if let running = self.runningRefresh {
            return running
        }
        if case .loading = self.state {
            // A load() in progress: the refresh supersedes it. Waiting for it instead would wait on a callback
            // chain that no tracked task owns, which a test's async drain could only report as unsettled.
            self.cancel()
        }
        self.refreshCount &+= 1
        let id = self.refreshCount
        let task = self.dispatcher.startTask(label: "refresh") { await self.performRefresh(id) }
        self.currentRefresh = RunningRefresh(id: id, task: task)
        return task
    }

    /// The body of the task ``refresh()`` starts: one load, attempt after attempt, each step awaited.
    private func performRefresh(_ id: UInt64) async -> State {
        defer {
            if self.currentRefresh?.id == id { self.currentRefresh = nil }
        }
        // A task cancelled before its body began (a plain `Task` runs its body all the same) loads nothing and
        // leaves the model alone: a later refresh may already be loading.
        guard !Task.isCancelled else { return .idle }
        // No load began since `refresh()`: `load()` does nothing while this task has not ended, and another
        // refresh starts only after `cancel()` or the returned task's cancellation, which end this one. So a
        // changed generation below always means that this load was cancelled: its value is then `.idle`, whatever
        // a later load shows.
        self.generation &+= 1
        let generation = self.generation
        let feedName = self.feedName
        let source = self.source
        var attempt = 1
        do {
            while true {
                self.beginAttempt(attempt)
                let outcome = try await self.dispatcher.runInBackground(label: attempt == 1 ? "parse" : "retry") {
                    Self.fetchAndParse(feedName, from: source)
                }
                guard generation == self.generation else { return .idle }  // cancel() ended this load
                switch outcome {
                case .parsed(let feed):
                    try await self.dispatcher.runOnMainActor(label: "deliver") {
                        guard generation == self.generation else { return }
                        self.title = feed.title
                        self.items = feed.items
                    }
                    guard generation == self.generation else { return .idle }
                    self.finish(.loaded)
                    return self.state
                case .invalid(let reason):
                    self.finish(.failed(.invalidFeed(feed: self.feedName, reason: reason)))
                    return self.state
                case .fetchFailed(let reason):
                    guard let delay = self.retryPolicy.delay(afterAttempt: attempt) else {
                        self.finish(.failed(.unavailable(feed: self.feedName, attempts: attempt, reason: reason)))
                        return self.state
                    }
                    attempt += 1
                    self.beginAttempt(attempt)  // while backing off, the state shows the coming attempt
                    try await self.dispatcher.clock.sleep(for: delay)
                    guard generation == self.generation else { return .idle }
                }
            }
        } catch {
            // Only `CancellationError` reaches here: the task was cancelled while it awaited a step that had not
            // started, or a back-off sleep.
            if generation == self.generation {
                self.generation &+= 1
                self.finish(.idle)
            }
            return .idle
        }
    }

    /// The task of the refresh that has not ended and was not cancelled, if any.
    private var runningRefresh: Task<State, any Error>? {
        guard let current = self.currentRefresh, !current.task.isCancelled else { return nil }
        return current.task
    }

    // MARK: - Steps

    /// Dispatches attempt `attempt`: fetch and parse in the background, then deliver on the main actor.
    private func startAttempt(_ attempt: Int, after delay: Duration) {
        self.beginAttempt(attempt)
        let generation = self.generation
        let feedName = self.feedName
        let source = self.source
        let dispatcher = self.dispatcher
        let handle = dispatcher.background(after: delay, label: attempt == 1 ? "parse" : "retry") {
            let outcome = Self.fetchAndParse(feedName, from: source)
            dispatcher.foreground(label: "deliver") {
                self.deliver(outcome, ofAttempt: attempt, generation: generation)
            }
        }
        // A dispatcher that runs tasks at once (auto-drain) may already have delivered, or moved on.
        if self.generation == generation && self.state == .loading(attempt: attempt) {
            self.pendingAttempt = handle
        }
    }

    /// Runs on a background thread: the slow part of an attempt.
    nonisolated private static func fetchAndParse(_ feedName: String, from source: any FeedSource) -> FetchOutcome {
        let data: Data
        do {
            data = try source.fetch(feedName)
        } catch {
            return .fetchFailed(reason: String(describing: error))
        }
        do {
            return .parsed(try Feed(parsing: data))
        } catch {
            return .invalid(reason: describeParsingError(error))
        }
    }

    /// Runs on the main actor: publishes the outcome of an attempt, or schedules the next one.
    private func deliver(_ outcome: FetchOutcome, ofAttempt attempt: Int, generation: UInt64) {
        guard generation == self.generation else { return }  // the load was cancelled or replaced
        self.pendingAttempt = nil
        switch outcome {
        case .parsed(let feed):
            self.title = feed.title
            self.items = feed.items
            self.finish(.loaded)
        case .invalid(let reason):
            self.finish(.failed(.invalidFeed(feed: self.feedName, reason: reason)))
        case .fetchFailed(let reason):
            guard let delay = self.retryPolicy.delay(afterAttempt: attempt) else {
                self.finish(.failed(.unavailable(feed: self.feedName, attempts: attempt, reason: reason)))
                return
            }
            self.startAttempt(attempt + 1, after: delay)
        }
    }

    /// Shows attempt `attempt` (from 1) as started: in ``state`` and ``attempts``.
    private func beginAttempt(_ attempt: Int) {
        self.state = .loading(attempt: attempt)
        self.attempts = attempt
    }

    private func finish(_ state: State) {
        self.state = state
        let waiters = self.waiters
        self.waiters = []
        for waiter in waiters {
            waiter.resume(returning: state)
        }
    }
}

/// A refresh task that has not ended, and the number that tells it from later ones.
private struct RunningRefresh {
    let id: UInt64
    let task: Task<FeedModel.State, any Error>
}

/// What one background attempt produced.
private enum FetchOutcome: Sendable {
    case parsed(Feed)
    case fetchFailed(reason: String)
    case invalid(reason: String)
}

/// A short reason for a parsing error: what is wrong and where, without `DecodingError`'s full context dump.
private func describeParsingError(_ error: any Error) -> String {
    guard let error = error as? DecodingError else { return String(describing: error) }
    func path(_ context: DecodingError.Context) -> String {
        let path = context.codingPath.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return path.isEmpty ? "the document" : "`\(path.dropFirst(path.hasPrefix(".") ? 1 : 0))`"
    }
    switch error {
    case .keyNotFound(let key, let context):
        return "missing key \"\(key.stringValue)\" in \(path(context))"
    case .valueNotFound(_, let context):
        return "missing value at \(path(context))"
    case .typeMismatch(_, let context), .dataCorrupted(let context):
        return "\(context.debugDescription) (at \(path(context)))"
    @unknown default:
        return String(describing: error)
    }
}
