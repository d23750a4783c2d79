// The "before" of the migration guide from Point-Free's tools: the model written with `Task { }` and an injected
// `Clock`, and its test with `withMainSerialExecutor`, `TestClock`, `ImmediateClock`, `megaYield` and `clock.run()`.
// Compiled here so the guide's "before" column is real code; not run, because it is the code the guide replaces.
import Clocks
import ConcurrencyExtras
import Testing

@MainActor
final class NumberFactModel {
    private(set) var fact: String?
    private(set) var isLoading = false
    private let clock: any Clock<Duration>
    private let fetchFact: @Sendable (Int) async throws -> String

    init(clock: any Clock<Duration>, fetchFact: @escaping @Sendable (Int) async throws -> String) {
        self.clock = clock
        self.fetchFact = fetchFact
    }

    @discardableResult
    func getFactButtonTapped(_ count: Int) -> Task<Void, any Error> {
        self.isLoading = true
        return Task {
            defer { self.isLoading = false }
            try await self.clock.sleep(for: .seconds(1))
            self.fact = try await self.fetchFact(count)
        }
    }
}

@Suite(.disabled("the migration guide's 'before': compiled, not run")) struct PointFreeBeforeTests {
    @Test @MainActor func getFact() async throws {
        await withMainSerialExecutor {
            let clock = TestClock()
            let model = NumberFactModel(clock: clock) { "\($0) is a good number" }

            model.getFactButtonTapped(42)
            await Task.megaYield()
            #expect(model.isLoading)
            await clock.advance(by: .seconds(1))
            #expect(model.fact == "42 is a good number")
            #expect(!model.isLoading)
        }
    }

    @Test @MainActor func getFactEndState() async throws {
        let clock = TestClock()
        let model = NumberFactModel(clock: clock) { "\($0) is a good number" }

        model.getFactButtonTapped(42)
        await clock.run()
        #expect(model.fact == "42 is a good number")
    }

    @Test @MainActor func getFactWithAnImmediateClock() async throws {
        let model = NumberFactModel(clock: ImmediateClock()) { "\($0) is a good number" }
        try await model.getFactButtonTapped(42).value
        #expect(model.fact == "42 is a good number")
    }

    @Test @MainActor func aFetchThatNeverAnswers() async throws {
        let model = NumberFactModel(clock: ImmediateClock()) { _ in try await Task.never() }
        let task = model.getFactButtonTapped(42)
        await Task.megaYield()
        #expect(model.isLoading)
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
    }
}
