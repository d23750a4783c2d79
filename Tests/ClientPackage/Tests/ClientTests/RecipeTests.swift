// The recipes for recurring shapes: production code and a test for each.
import TaskDispatchTesting
import Testing

// MARK: A repeating poll loop

@MainActor
final class StatusPoller {
    private(set) var checks = 0
    private let dispatcher: any TaskDispatcher
    private var polling: TaskHandle?

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func start(every interval: Duration) {
        self.polling = self.dispatcher.foreground(every: interval, after: .zero, label: "poll") { [weak self] in
            self?.checks += 1
        }
    }

    func stop() {
        self.polling?.cancel()
    }
}

@Test @MainActor func pollsEveryFiveSeconds() throws {
    let dispatcher = ManualDispatcher()
    let poller = StatusPoller(dispatcher: dispatcher)
    poller.start(every: .seconds(5))

    try dispatcher.runCurrent()  // the first check, due at once
    #expect(poller.checks == 1)
    try dispatcher.advance(by: .milliseconds(4_999))
    #expect(poller.checks == 1)  // a millisecond short of the interval
    try dispatcher.advance(by: .milliseconds(1))
    #expect(poller.checks == 2)  // at 5 s
    try dispatcher.advance(by: .seconds(10))
    #expect(poller.checks == 4)  // at 10 s and 15 s
    poller.stop()
    try dispatcher.verifyIdle()
}

// MARK: Throttle

@MainActor
final class DraftSaver {
    private(set) var saved: [String] = []
    private let dispatcher: any TaskDispatcher
    private var isCoolingDown = false
    private var latest: String?

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    /// Saves at once, then at most once a second: the last draft typed during the pause is saved after it.
    func save(_ draft: String) {
        guard !self.isCoolingDown else {
            self.latest = draft
            return
        }
        self.saved.append(draft)
        self.isCoolingDown = true
        self.dispatcher.foreground(after: .seconds(1), label: "throttle") { [weak self] in
            guard let self else { return }
            self.isCoolingDown = false
            if let latest = self.latest {
                self.latest = nil
                self.save(latest)
            }
        }
    }
}

@Test @MainActor func savesAtMostOnceASecond() throws {
    let dispatcher = ManualDispatcher()
    let saver = DraftSaver(dispatcher: dispatcher)

    saver.save("H")
    saver.save("He")
    saver.save("Hey")
    #expect(saver.saved == ["H"])
    try dispatcher.advance(by: .seconds(1))
    #expect(saver.saved == ["H", "Hey"])
    try dispatcher.advance(by: .seconds(1))  // the window closes with nothing left to save
    try dispatcher.verifyIdle()
}

// MARK: Retry with back-off

/// Runs `operation` up to `attempts` times, sleeping on the dispatcher's clock between tries: 1 s, 2 s, 4 s, …
@MainActor
func retrying<Value>(
    attempts: Int,
    firstDelay: Duration,
    on dispatcher: any TaskDispatcher,
    _ operation: @MainActor () async throws -> Value
) async throws -> Value {
    var delay = firstDelay
    for _ in 1..<max(1, attempts) {
        do {
            return try await operation()
        } catch {
            try await dispatcher.clock.sleep(for: delay)
            delay *= 2
        }
    }
    return try await operation()
}

struct Offline: Error {}

@Test @MainActor func retriesWithBackOff() async throws {
    let dispatcher = ManualDispatcher(mode: .autoAdvance)
    var calls = 0
    let task = dispatcher.startTask(label: "fetch") {
        try await retrying(attempts: 4, firstDelay: .seconds(1), on: dispatcher) {
            calls += 1
            if calls < 3 { throw Offline() }
            return "data"
        }
    }
    #expect(try await dispatcher.value(of: task) == "data")
    #expect(calls == 3)
    #expect(dispatcher.now == .seconds(3))  // 1 s, then 2 s
}

// MARK: Timeout

struct TimedOut: Error {}

/// The operation's value, or `TimedOut` when the dispatcher's clock passes `limit` first.
func withTimeout<Value: Sendable>(
    _ limit: Duration,
    on dispatcher: any TaskDispatcher,
    _ operation: @escaping @Sendable () async throws -> Value
) async throws -> Value {
    try await withThrowingTaskGroup(of: Value.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await dispatcher.clock.sleep(for: limit)
            throw TimedOut()
        }
        defer { group.cancelAll() }
        guard let first = try await group.next() else { throw CancellationError() }
        return first
    }
}

@Test @MainActor func timesOutOnTheDispatchersClock() async throws {
    let dispatcher = ManualDispatcher(mode: .autoAdvance)
    let task = dispatcher.startTask(label: "load") { @concurrent in  // off the main actor: see below
        try await withTimeout(.seconds(5), on: dispatcher) {
            try await dispatcher.runInBackground(after: .seconds(10), label: "slow fetch") { "late" }
        }
    }
    // The clock moves while the test awaits the task, which claims the error.
    await #expect(throws: TimedOut.self) { try await dispatcher.value(of: task) }
    #expect(dispatcher.now == .seconds(5))  // the slow fetch was cancelled with its child task
    try dispatcher.verifyIdle()
}

// MARK: Cancellation on deinit

@MainActor
final class TickingModel {
    private(set) var ticks = 0
    // Written once on the main actor in `start()`, read in `deinit` when nothing else holds the model.
    nonisolated(unsafe) private var ticking: Task<Void, any Error>?

    func start(on dispatcher: any TaskDispatcher) {
        self.ticking = dispatcher.startTask(label: "tick") { [weak self] in
            while true {
                try await dispatcher.clock.sleep(for: .seconds(1))
                guard let self else { return }
                self.ticks += 1
            }
        }
    }

    deinit {
        self.ticking?.cancel()
    }
}

@Test @MainActor func stopsTickingWhenTheModelGoesAway() async throws {
    let dispatcher = ManualDispatcher()
    var model: TickingModel? = TickingModel()
    model?.start(on: dispatcher)
    try await dispatcher.advance(by: .seconds(2))
    #expect(model?.ticks == 2)

    model = nil  // deinit cancels the task
    try await dispatcher.settle()
    #expect(dispatcher.unfinishedTaskCount == 0)
    try dispatcher.verifyIdle()
}

// MARK: Last request wins

@MainActor
final class ProfileModel {
    private(set) var name: String?
    private let dispatcher: any TaskDispatcher
    private var loading: Task<Void, any Error>?

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func load(userID: Int) {
        self.loading?.cancel()  // the older request loses
        self.loading = self.dispatcher.startTask(label: "load \(userID)") {
            let name = try await self.dispatcher.runInBackground(label: "fetch \(userID)") { "user \(userID)" }
            try Task.checkCancellation()
            self.name = name
        }
    }
}

@Test @MainActor func theLastRequestWins() async throws {
    let dispatcher = ManualDispatcher()
    let model = ProfileModel(dispatcher: dispatcher)

    model.load(userID: 1)
    try await dispatcher.runNextForeground()  // starts "load 1", and nothing else
    try await dispatcher.waitForPendingTasks(1, in: .background)  // "load 1" waits for "fetch 1"
    model.load(userID: 2)  // cancels "load 1" and its fetch
    try await dispatcher.runUntilIdle()
    #expect(model.name == "user 2")
    #expect(dispatcher.history.compactMap(\.task.label) == ["load 1", "load 2", "fetch 2"])  // "fetch 1" never ran
    try dispatcher.verifyIdle()
}

// MARK: A started task shared by its callers

enum AvatarError: Error {
    case offline
}

struct OfflineServer: AvatarServer {
    func avatar(for user: String) throws -> [UInt8] { throw AvatarError.offline }
}

@Test @MainActor func everyViewGetsTheErrorOfTheSharedDownload() async throws {
    let dispatcher = ManualDispatcher()
    let cache = AvatarCache(server: OfflineServer(), dispatcher: dispatcher)
    let header = AvatarModel(cache: cache, dispatcher: dispatcher)
    let row = AvatarModel(cache: cache, dispatcher: dispatcher)

    header.show("ada")
    row.show("ada")
    try await dispatcher.runUntilIdle()
    #expect(header.error is AvatarError && row.error is AvatarError)
    #expect(dispatcher.history.filter { $0.task.label == "fetch ada" }.count == 1)  // one download for both
    try dispatcher.verifyIdle()  // the views awaited the download's error: nothing to report
}
