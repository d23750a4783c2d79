// The "after" code of the migration guides, with only the imports a user's test target needs.
import Dispatch
import Foundation
import TaskDispatchTesting
import Testing

// MARK: From Point-Free's withMainSerialExecutor, TestClock and ImmediateClock

@MainActor
final class NumberFactModel {
    private(set) var fact: String?
    private(set) var isLoading = false
    private let dispatcher: any TaskDispatcher
    private let fetchFact: @Sendable (Int) async throws -> String

    init(dispatcher: any TaskDispatcher, fetchFact: @escaping @Sendable (Int) async throws -> String) {
        self.dispatcher = dispatcher
        self.fetchFact = fetchFact
    }

    @discardableResult
    func getFactButtonTapped(_ count: Int) -> Task<Void, any Error> {
        self.isLoading = true
        return self.dispatcher.startTask(label: "get fact") {  // was: Task {
            defer { self.isLoading = false }
            try await self.dispatcher.clock.sleep(for: .seconds(1))  // was: try await self.clock.sleep(for:)
            self.fact = try await self.fetchFact(count)
        }
    }
}

@Suite struct MigrationFromPointFreeTests {
    @Test @MainActor func getFact() async throws {
        let dispatcher = ManualDispatcher()  // was: withMainSerialExecutor { let clock = TestClock()
        let model = NumberFactModel(dispatcher: dispatcher) { "\($0) is a good number" }

        model.getFactButtonTapped(42)
        try await dispatcher.settle()  // was: await megaYield()
        #expect(model.isLoading)
        try await dispatcher.advance(by: .milliseconds(999))  // was: await clock.advance(by: .seconds(1)), in two steps
        #expect(model.fact == nil)  // a millisecond before the sleep ends
        try await dispatcher.advance(by: .milliseconds(1))
        #expect(model.fact == "42 is a good number")
        #expect(!model.isLoading)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func getFactEndState() async throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)  // was: ImmediateClock()
        let model = NumberFactModel(dispatcher: dispatcher) { "\($0) is a good number" }

        try await dispatcher.value(of: model.getFactButtonTapped(42))  // was: await clock.run()
        #expect(model.fact == "42 is a good number")
        #expect(dispatcher.now == .seconds(1))
    }

    @Test @MainActor func aFetchThatHasNotAnswered() async throws {
        let dispatcher = ManualDispatcher()
        let model = NumberFactModel(dispatcher: dispatcher) { count in
            // was: try await Task.never(). This fetch answers only when the test moves the clock 60 s.
            try await dispatcher.runInBackground(after: .seconds(60), label: "fetch") { "\(count) is a good number" }
        }

        let task = model.getFactButtonTapped(42)
        try await dispatcher.advance(by: .seconds(1))  // the fetch is dispatched, and waits for the clock
        #expect(dispatcher.unfinishedTaskCount == 1)  // "get fact": a plain Task would not count
        #expect(dispatcher.pendingTasks.map(\.label) == ["fetch"])
        #expect(model.isLoading)
        task.cancel()  // the pending fetch is cancelled with it
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: task) }
        #expect(!model.isLoading)
        try dispatcher.verifyIdle()
    }

    /// The guide's last test over its model with `Task {` left in fails at its first two checks, and at no other: the
    /// plain task needs the main actor, which the test holds, and `advance(by:)` waits only for the tasks the
    /// dispatcher started, so when the checks run the task has not started, and neither its sleep nor the fetch is
    /// pending. (The guide said the second check would pass; issue 33.)
    @Test @MainActor func withTaskLeftInNeitherTheTaskNorTheFetchIsSeen() async throws {
        let dispatcher = ManualDispatcher()
        let model = NumberFactModelWithPlainTask(dispatcher: dispatcher) { count in
            try await dispatcher.runInBackground(after: .seconds(60), label: "fetch") { "\(count) is a good number" }
        }

        let task = model.getFactButtonTapped(42)
        try await dispatcher.advance(by: .seconds(1))
        #expect(dispatcher.unfinishedTaskCount == 0)  // the guide's first check fails
        #expect(dispatcher.pendingTasks.isEmpty)  // so does its second: no fetch, not even the sleep
        #expect(dispatcher.history.isEmpty)  // nothing ran: the task has not started
        #expect(model.isLoading)
        task.cancel()  // a plain task cancelled before its sleep throws there, and dispatches nothing
        await #expect(throws: CancellationError.self) { try await dispatcher.value(of: task) }
        #expect(!model.isLoading)
        try dispatcher.verifyIdle()
    }
}

/// `NumberFactModel` as it was before the migration's first line changed: `Task {` left in.
@MainActor
final class NumberFactModelWithPlainTask {
    private(set) var fact: String?
    private(set) var isLoading = false
    private let dispatcher: any TaskDispatcher
    private let fetchFact: @Sendable (Int) async throws -> String

    init(dispatcher: any TaskDispatcher, fetchFact: @escaping @Sendable (Int) async throws -> String) {
        self.dispatcher = dispatcher
        self.fetchFact = fetchFact
    }

    @discardableResult
    func getFactButtonTapped(_ count: Int) -> Task<Void, any Error> {
        self.isLoading = true
        return Task {
            defer { self.isLoading = false }
            try await self.dispatcher.clock.sleep(for: .seconds(1))
            self.fact = try await self.fetchFact(count)
        }
    }
}

// MARK: From DispatchQueue and OperationQueue called directly

/// Before: the service calls Dispatch itself, so a test can only wait.
final class LegacyThumbnailService: Sendable {
    func makeThumbnail(of bytes: [UInt8], completion: @escaping @MainActor @Sendable (Int) -> Void) {
        DispatchQueue.global(qos: .userInitiated).async {
            let size = bytes.count / 4
            DispatchQueue.main.async { completion(size) }
        }
    }
}

/// After: the same service with an injected dispatcher.
final class ThumbnailService: Sendable {
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher = QueueDispatcher()) {
        self.dispatcher = dispatcher
    }

    func makeThumbnail(of bytes: [UInt8], completion: @escaping @MainActor @Sendable (Int) -> Void) {
        let dispatcher = self.dispatcher
        dispatcher.background(priority: .userInitiated, label: "scale") {  // was: DispatchQueue.global(qos:).async
            let size = bytes.count / 4
            dispatcher.foreground(label: "deliver") { completion(size) }  // was: DispatchQueue.main.async
        }
    }
}

/// Before: an OperationQueue that runs at most three uploads at once.
final class LegacyUploader: @unchecked Sendable {  // the queue is thread-safe
    private let queue = OperationQueue()

    init() {
        self.queue.maxConcurrentOperationCount = 3
    }

    func upload(_ name: String, completion: @escaping @MainActor @Sendable (String) -> Void) {
        self.queue.addOperation {
            let receipt = "uploaded \(name)"
            OperationQueue.main.addOperation { MainActor.assumeIsolated { completion(receipt) } }
        }
    }
}

/// After: the bound moves into the production dispatcher; the service sees only `any TaskDispatcher`.
final class Uploader: Sendable {
    private let dispatcher: any TaskDispatcher

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func upload(_ name: String, completion: @escaping @MainActor @Sendable (String) -> Void) {
        let dispatcher = self.dispatcher
        dispatcher.background(label: "upload") {  // was: queue.addOperation
            let receipt = "uploaded \(name)"
            dispatcher.foreground(label: "deliver") { completion(receipt) }  // was: OperationQueue.main.addOperation
        }
    }
}

@Suite struct MigrationFromQueuesTests {
    @Test @MainActor func theThumbnailIsMadeInTheBackgroundAndDeliveredOnTheMainActor() throws {
        let dispatcher = ManualDispatcher()
        let service = ThumbnailService(dispatcher: dispatcher)
        var size: Int?
        service.makeThumbnail(of: Array(repeating: 0, count: 64)) { size = $0 }

        try dispatcher.runNextBackground()  // "scale"
        #expect(size == nil)
        try dispatcher.runNextForeground()  // "deliver"
        #expect(size == 16)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func theUploaderRunsOnABoundedOperationQueueInProduction() async throws {
        // was: queue.maxConcurrentOperationCount = 3
        let dispatcher = try OperationQueueDispatcher(maxConcurrentBackgroundTasks: 3)
        let uploader = Uploader(dispatcher: dispatcher)
        let receipt = await withCheckedContinuation { continuation in
            uploader.upload("cat.png") { continuation.resume(returning: $0) }
        }
        #expect(receipt == "uploaded cat.png")
    }

    @Test @MainActor func theLegacyServicesStillWork() async {
        let size = await withCheckedContinuation { continuation in
            LegacyThumbnailService().makeThumbnail(of: [1, 2, 3, 4]) { continuation.resume(returning: $0) }
        }
        let receipt = await withCheckedContinuation { continuation in
            LegacyUploader().upload("cat.png") { continuation.resume(returning: $0) }
        }
        #expect(size == 1)
        #expect(receipt == "uploaded cat.png")
    }
}

// MARK: From the Objective-C DWTaskDispatcher pattern

/// The service of the DWTaskDispatcher article, in Swift: it used `[DWTaskDispatcher sharedInstance]`.
@MainActor
final class ReportModel {
    private(set) var status = "idle"
    private let dispatcher: any TaskDispatcher  // was: the singleton, swapped by the test helper

    init(dispatcher: any TaskDispatcher) {
        self.dispatcher = dispatcher
    }

    func generate() {
        self.status = "generating"
        let dispatcher = self.dispatcher
        dispatcher.background(label: "render") {  // was: executeTaskInBackground:
            let pages = 3
            dispatcher.foreground(label: "show") { [weak self] in  // was: executeTaskInForeground:
                self?.status = "\(pages) pages"
            }
        }
    }
}

@Suite struct MigrationFromDWTaskDispatcherTests {
    @Test @MainActor func generatesAReport() throws {
        let dispatcher = ManualDispatcher()  // was: executeWithFakeSingleton:
        let model = ReportModel(dispatcher: dispatcher)

        model.generate()
        #expect(model.status == "generating")
        try dispatcher.runNextBackground()  // was: performNextBackgroundTask
        try dispatcher.runNextForeground()  // was: performNextForegroundTask
        #expect(model.status == "3 pages")
        try dispatcher.verifyIdle()  // new: nothing was left behind
    }

    @Test @MainActor func aMissingStepNamesThePendingTask() throws {
        let dispatcher = ManualDispatcher()
        ReportModel(dispatcher: dispatcher).generate()
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runNextForeground() }
        #expect(error.description.contains("\"render\""))  // the label and the line that dispatched it
    }
}
