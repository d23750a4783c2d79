import TaskDispatch
import TaskDispatchTesting
import Testing

extension StressTests {
    /// Issue 33's dashboard, 1,000 times a shape: the children of a main-actor tracked task stop the advance with
    /// the error every time, from a test on the main actor or off it; the `@concurrent` task the error recommends
    /// wakes its children at their times every time.
    @Suite struct UncountedChildTasks {
        /// 1,000 runs at any scale, more when the scale asks for more.
        static let runs = Swift.max(1_000, StressScale.scaled(1_000))

        @MainActor final class Dashboard {
            enum Shape: CaseIterable, Sendable {
                case asyncLet, taskGroup, threeSleeps
            }

            let dispatcher: ManualDispatcher
            private(set) var shown: [String] = []

            init(dispatcher: ManualDispatcher) {
                self.dispatcher = dispatcher
            }

            func load(_ shape: Shape) -> Task<Void, any Error> {
                self.dispatcher.startTask(label: "dashboard") {
                    switch shape {
                    case .asyncLet:
                        async let news = self.fetch("news", after: .seconds(1))
                        async let weather = self.fetch("weather", after: .seconds(2))
                        self.shown = try await [news, weather]
                    case .taskGroup:
                        self.shown = try await withThrowingTaskGroup(of: String.self) { group in
                            group.addTask { try await self.fetch("news", after: .seconds(1)) }
                            group.addTask { try await self.fetch("weather", after: .seconds(2)) }
                            var shown: [String] = []
                            for try await name in group { shown.append(name) }
                            return shown
                        }
                    case .threeSleeps:
                        async let items = self.fetch("items", after: .milliseconds(100))
                        async let news = self.fetch("news", after: .seconds(1))
                        async let weather = self.fetch("weather", after: .seconds(2))
                        self.shown = try await [items, news, weather]
                    }
                }
            }

            func loadConcurrently() -> Task<Void, any Error> {
                self.dispatcher.startTask(label: "dashboard") { @concurrent in
                    async let news = self.fetch("news", after: .seconds(1))
                    async let weather = self.fetch("weather", after: .seconds(2))
                    let shown = try await [news, weather]
                    try await self.dispatcher.runOnMainActor { self.shown = shown }
                }
            }

            nonisolated func fetch(_ name: String, after delay: Duration) async throws -> String {
                try await self.dispatcher.clock.sleep(for: delay)
                return try await self.dispatcher.runInBackground(label: name) { name }
            }
        }

        /// What one run of `advance(by: 1 s)` over a main-actor dashboard did, as text; "stopped" is right.
        private static func advanceOnce(_ shape: Dashboard.Shape, model: Dashboard) async -> String {
            let dispatcher = model.dispatcher
            let task = await model.load(shape)
            var outcome: String
            do {
                try await dispatcher.advance(by: .seconds(1))
                outcome = "returned at \(dispatcher.now) after \(Self.steps(dispatcher))"
            } catch let error as ManualDispatcherError {
                let stopped =
                    error.kind == .unsettledTasks(after: .zero) && error.summary.contains("{ @concurrent in … }")
                    && dispatcher.now == .zero && Self.steps(dispatcher).isEmpty
                outcome = stopped ? "stopped" : "threw \(error.summary) at \(dispatcher.now)"
            } catch {
                outcome = "threw \(error)"
            }
            task.cancel()
            do {
                try await dispatcher.value(of: task)
                outcome += "; the cancelled task returned"
            } catch is CancellationError {
            } catch {
                outcome += "; the cancelled task threw \(error)"
            }
            do { try dispatcher.verifyIdle() } catch { outcome += "; \(error.summary)" }
            return outcome
        }

        private static func steps(_ dispatcher: ManualDispatcher) -> [String] {
            dispatcher.history.compactMap { run in
                guard let label = run.task.label, ["items", "news", "weather"].contains(label) else { return nil }
                return "\(label)@\(run.startTime)"
            }
        }

        @Test(.timeLimit(.minutes(5)), arguments: Dashboard.Shape.allCases) @MainActor
        func theAdvanceStopsEveryTimeOnTheMainActor(shape: Dashboard.Shape) async {
            var outcomes: [String: Int] = [:]
            for _ in 0..<Self.runs {
                let model = Dashboard(dispatcher: ManualDispatcher(waitLimit: .seconds(60)))
                outcomes[await Self.advanceOnce(shape, model: model), default: 0] += 1
            }
            #expect(outcomes == ["stopped": Self.runs], "\(outcomes)")
        }

        @Test(.timeLimit(.minutes(5)), arguments: Dashboard.Shape.allCases)
        func theAdvanceStopsEveryTimeOffTheMainActor(shape: Dashboard.Shape) async {
            var outcomes: [String: Int] = [:]
            for _ in 0..<Self.runs {
                let model = await Dashboard(dispatcher: ManualDispatcher(waitLimit: .seconds(60)))
                outcomes[await Self.advanceOnce(shape, model: model), default: 0] += 1
            }
            #expect(outcomes == ["stopped": Self.runs], "\(outcomes)")
        }

        @Test(.timeLimit(.minutes(5)), arguments: [true, false])
        func aConcurrentTasksChildrenWakeAtTheirTimesEveryTime(onTheMainActor: Bool) async throws {
            var outcomes: [String: Int] = [:]
            for _ in 0..<Self.runs {
                let dispatcher = ManualDispatcher(waitLimit: .seconds(60))
                let model = await Dashboard(dispatcher: dispatcher)
                let task = await model.loadConcurrently()
                let atOne: [String]
                if onTheMainActor {
                    atOne = try await Self.advanceOnTheMainActor(dispatcher)
                } else {
                    try await dispatcher.advance(by: .seconds(1))
                    atOne = Self.steps(dispatcher)
                }
                try await dispatcher.advance(by: .seconds(1))
                try await dispatcher.value(of: task)
                let outcome = "\(atOne), then \(Self.steps(dispatcher)), shown \(await model.shown)"
                outcomes[outcome, default: 0] += 1
                try dispatcher.verifyIdle()
            }
            let right =
                "[\"news@1.0 seconds\"], then [\"news@1.0 seconds\", \"weather@2.0 seconds\"], shown [\"news\", \"weather\"]"
            #expect(outcomes == [right: Self.runs], "\(outcomes)")
        }

        @MainActor private static func advanceOnTheMainActor(_ dispatcher: ManualDispatcher) async throws -> [String] {
            try await dispatcher.advance(by: .seconds(1))
            return Self.steps(dispatcher)
        }
    }
}
