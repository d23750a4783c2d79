#if DEBUG
    @testable import TaskDispatchTesting
    import Testing

    /// How many times each verb takes the dispatcher's lock, counted by the debug-build hook on its monitor. The counts
    /// are the cost of the engine's shape: a change that adds a lock round trip to a hot path fails here.
    @Suite struct LockCountTests {
        /// The lock acquisitions `body` makes on `dispatcher`.
        private func acquisitions(on dispatcher: ManualDispatcher, _ body: () throws -> Void) rethrows -> Int {
            let before = dispatcher.lockAcquisitions
            try body()
            return dispatcher.lockAcquisitions - before
        }

        @Test func aDispatchTakesTheLockOnce() {
            let dispatcher = ManualDispatcher()
            #expect(acquisitions(on: dispatcher) { dispatcher.background {} } == 1)
            #expect(acquisitions(on: dispatcher) { dispatcher.foreground {} } == 1)
            #expect(acquisitions(on: dispatcher) { dispatcher.background(after: .seconds(1)) {} } == 1)
            _ = try? dispatcher.advance(by: .seconds(1))
        }

        @Test func aStepTakesTheLockTwice() throws {
            let dispatcher = ManualDispatcher()
            dispatcher.background {}
            #expect(try acquisitions(on: dispatcher) { try dispatcher.runNextBackground() } == 2)
        }

        @Test(arguments: [1, 10, 100])
        func aDrainTakesTheLockOncePerTaskAndOnceMore(tasks: Int) throws {
            let dispatcher = ManualDispatcher()
            for _ in 0..<tasks { dispatcher.background {} }
            #expect(try acquisitions(on: dispatcher) { try dispatcher.runUntilIdle() } == tasks + 1)
        }

        @Test func aTrackedTasksSleepAndAdvanceStaysWithinItsCount() async throws {
            let dispatcher = ManualDispatcher()
            let before = dispatcher.lockAcquisitions
            dispatcher.startTask(label: "sleeper") {
                try await dispatcher.clock.sleep(for: .seconds(1))
            }
            try await dispatcher.advance(by: .seconds(1))
            try dispatcher.verifyIdle()
            let count = dispatcher.lockAcquisitions - before
            print("LockCountTests: a tracked task's sleep and advance took the lock \(count) times")
            #expect(count <= 60)
        }
    }
#endif
