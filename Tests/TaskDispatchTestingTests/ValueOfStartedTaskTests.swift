import TaskDispatch
import TaskDispatchTesting
import Testing

private enum DownloadError: Error {
    case offline
}

/// One download a name, shared by every caller that asks while it runs: app code that imports only `TaskDispatch`
/// and awaits a started task through `TaskDispatcher.value(of:)`, or through `task.value` when `awaitsThroughTheDispatcher`
/// is off (the shape of issue 33, item 6).
private actor SharedDownloads {
    private let dispatcher: any TaskDispatcher
    private let fails: Bool
    private let awaitsThroughTheDispatcher: Bool
    private var downloads: [String: Task<[UInt8], any Error>] = [:]
    private(set) var started = 0

    init(dispatcher: any TaskDispatcher, fails: Bool, awaitsThroughTheDispatcher: Bool = true) {
        self.dispatcher = dispatcher
        self.fails = fails
        self.awaitsThroughTheDispatcher = awaitsThroughTheDispatcher
    }

    func image(_ name: String) async throws -> [UInt8] {
        let download = self.downloads[name] ?? self.startDownload(name)
        guard self.awaitsThroughTheDispatcher else { return try await download.value }
        return try await self.dispatcher.value(of: download)
    }

    private func startDownload(_ name: String) -> Task<[UInt8], any Error> {
        self.started += 1
        let (dispatcher, fails) = (self.dispatcher, self.fails)
        let download = dispatcher.startTask(label: "download \(name)") { () async throws -> [UInt8] in
            try await dispatcher.runInBackground(label: "fetch \(name)") { () throws -> [UInt8] in
                if fails { throw DownloadError.offline }
                return [1, 2, 3]
            }
        }
        self.downloads[name] = download
        return download
    }
}

/// A 1.0 decorator: it forwards `dispatch(_:)`, `startTask` and the clock, not `value(of:)`.
private struct OlderDecorator: TaskDispatcher {
    let base: ManualDispatcher
    var clock: ManualDispatcher.Clock { self.base.clock }

    func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        self.base.startTask(label: label, callSite: callSite, operation: operation)
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
    }
}

/// A decorator that forwards `value(of:)` too, as the protocol asks.
private struct ForwardingDecorator: TaskDispatcher {
    let base: OlderDecorator
    var clock: ManualDispatcher.Clock { self.base.clock }

    func startTask<Success: Sendable>(
        label: String?,
        callSite: CallSite,
        @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
    ) -> Task<Success, any Error> {
        self.base.startTask(label: label, callSite: callSite, operation: operation)
    }

    func value<Success: Sendable>(of task: Task<Success, any Error>) async throws -> Success {
        try await self.base.base.value(of: task)
    }

    func dispatch(_ task: DispatchedTask) -> TaskHandle {
        self.base.dispatch(task)
    }
}

/// Issue 33, item 6: `TaskDispatcher.value(of:)` awaits a started task from app code in a way the test dispatcher
/// sees: it claims the task's error, and a tracked caller awaiting it settles with it.
@Suite struct ValueOfStartedTaskTests {
    /// Two tracked callers share one failing download: each gets the error, the drain settles them on it, and
    /// nothing is reported as unobserved.
    @Test(arguments: [false, true])
    func trackedCallersSharingAFailedDownloadLeaveNothingToReport(throughAnOlderDecorator: Bool) async throws {
        let dispatcher = ManualDispatcher()
        let seen: any TaskDispatcher = throughAnOlderDecorator ? OlderDecorator(base: dispatcher) : dispatcher
        let downloads = SharedDownloads(dispatcher: seen, fails: true)
        let header = seen.startTask(label: "header") { try await downloads.image("cat") }
        let list = seen.startTask(label: "list") { try await downloads.image("cat") }
        try await dispatcher.runUntilIdle()
        await #expect(throws: DownloadError.offline) { try await dispatcher.value(of: header) }
        await #expect(throws: DownloadError.offline) { try await dispatcher.value(of: list) }
        #expect(await downloads.started == 1)
        try dispatcher.verifyIdle()
    }

    /// With `task.value`, the same shape reports the download's error as thrown by a tracked task nothing awaited:
    /// the report the issue calls false, which `value(of:)` removes.
    @Test func awaitingTaskValueLeavesTheDownloadsErrorUnclaimed() async throws {
        let dispatcher = ManualDispatcher()
        let downloads = SharedDownloads(dispatcher: dispatcher, fails: true, awaitsThroughTheDispatcher: false)
        let header = dispatcher.startTask(label: "header") { try await downloads.image("cat") }
        try await dispatcher.runUntilIdle()
        await #expect(throws: DownloadError.offline) { try await dispatcher.value(of: header) }
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error?.kind == .unobservedTaskError)
        #expect(error?.summary.contains("\"download cat\"") == true)
    }

    /// The test itself calls the app code, in auto-drain: the await inside is `ManualDispatcher.value(of:)`, which
    /// claims the download's error, also through a decorator that forwards it.
    @Test(arguments: [false, true])
    func theTestAwaitingAppCodeClaimsTheDownloadsError(throughADecorator: Bool) async throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let seen: any TaskDispatcher =
            throughADecorator ? ForwardingDecorator(base: OlderDecorator(base: dispatcher)) : dispatcher
        let downloads = SharedDownloads(dispatcher: seen, fails: true)
        await #expect(throws: DownloadError.offline) { try await downloads.image("cat") }
        try dispatcher.verifyIdle()
    }

    /// A decorator that does not forward `value(of:)` awaits `task.value` for a caller outside the tracked tasks:
    /// the test dispatcher cannot see that await, and reports the error, as the protocol's documentation says.
    @Test func anOlderDecoratorCannotClaimForACallerOutsideTheTrackedTasks() async throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let downloads = SharedDownloads(dispatcher: OlderDecorator(base: dispatcher), fails: true)
        await #expect(throws: DownloadError.offline) { try await downloads.image("cat") }
        let error = #expect(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error?.kind == .unobservedTaskError)
    }

    /// A successful shared download: one download, every caller gets its value.
    @Test func trackedCallersShareOneDownload() async throws {
        let dispatcher = ManualDispatcher()
        let downloads = SharedDownloads(dispatcher: dispatcher, fails: false)
        let callers = (0..<3).map { index in
            dispatcher.startTask(label: "caller \(index)") { try await downloads.image("cat") }
        }
        try await dispatcher.runUntilIdle()
        for caller in callers { #expect(try await dispatcher.value(of: caller) == [1, 2, 3]) }
        #expect(await downloads.started == 1)
        try dispatcher.verifyIdle()
    }

    /// Through `any TaskDispatcher` and a generic parameter, the call is `ManualDispatcher.value(of:)` (its bounded
    /// wait says so), not the default's `task.value`, which would wait for a start nobody runs.
    @Test func theRequirementDispatchesToManualDispatchersValueOf() async throws {
        let dispatcher = ManualDispatcher(waitLimit: .milliseconds(100))
        let task = dispatcher.startTask(label: "held") { () async throws -> Int in 1 }
        let existential: any TaskDispatcher = dispatcher
        let calls: [@Sendable () async throws -> Int] = [
            { try await existential.value(of: task) }, { try await Self.awaitGenerically(dispatcher, task) },
        ]
        for call in calls {
            let error = await #expect(throws: ManualDispatcherError.self) { _ = try await call() }
            #expect(error?.kind == .waitTimedOut(after: .milliseconds(100)))
        }
        try await dispatcher.runUntilIdle()
        #expect(try await existential.value(of: task) == 1)
        try dispatcher.verifyIdle()
    }

    private static func awaitGenerically(_ dispatcher: some TaskDispatcher, _ task: Task<Int, any Error>) async throws
        -> Int
    {
        try await dispatcher.value(of: task)
    }

    /// A production dispatcher's `value(of:)` is `task.value`.
    @Test func aProductionDispatcherAwaitsTheTasksValue() async throws {
        let dispatcher: any TaskDispatcher = QueueDispatcher()
        let succeeding = dispatcher.startTask(label: "ok") { () async throws -> Int in 7 }
        let failing = dispatcher.startTask(label: "fails") { () async throws -> Int in throw DownloadError.offline }
        #expect(try await dispatcher.value(of: succeeding) == 7)
        await #expect(throws: DownloadError.offline) { try await dispatcher.value(of: failing) }
    }
}
