import TaskDispatch
import TaskDispatchTesting
import Testing

@Suite struct ManualDispatcherOrderTests {
    @Test func priorityIsRecordedButDispatchOrderIsTheDefault() throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background(priority: .background, label: "low") {}
        dispatcher.background(priority: .userInteractive, label: "high") {}
        #expect(dispatcher.pendingTasks.map(\.priority) == [.background, .userInteractive])
        #expect(try dispatcher.runNextBackground().task.label == "low")
    }

    @Test func priorityOrderRunsUrgentBackgroundTasksFirst() throws {
        let dispatcher = ManualDispatcher(order: .priority)
        let log = EventLog()
        dispatcher.background(priority: .utility, label: "u1") { log.record("u1") }
        dispatcher.background(priority: .userInitiated, label: "i1") { log.record("i1") }
        dispatcher.background(priority: .background, label: "b1") { log.record("b1") }
        dispatcher.background(priority: .userInitiated, label: "i2") { log.record("i2") }
        dispatcher.background(label: "m1") { log.record("m1") }
        while dispatcher.pendingTaskCount > 0 { try dispatcher.runNextBackground() }
        #expect(log.events == ["i1", "i2", "m1", "u1", "b1"])
    }

    @Test func priorityOrderAppliesOnlyToDueTasks() throws {
        let dispatcher = ManualDispatcher(order: .priority)
        let log = EventLog()
        dispatcher.background(priority: .userInteractive, after: .seconds(1), label: "urgent later") {
            log.record("urgent later")
        }
        dispatcher.background(priority: .background, label: "lazy now") { log.record("lazy now") }
        try dispatcher.runUntilIdle()
        #expect(log.events == ["lazy now", "urgent later"])
    }

    @Test func theOrderCanChangeBetweenSteps() throws {
        let dispatcher = ManualDispatcher()
        dispatcher.background(priority: .background, label: "low") {}
        dispatcher.background(priority: .userInteractive, label: "high") {}
        dispatcher.order = .priority
        #expect(dispatcher.order == .priority)
        #expect(try dispatcher.runNextBackground().task.label == "high")
        dispatcher.order = .dispatch
        #expect(try dispatcher.runNextBackground().task.label == "low")
    }

    /// Eight background tasks and three foreground tasks, all due at once.
    private func randomScenario(seed: UInt64) throws -> [String] {
        let dispatcher = ManualDispatcher(order: .random(seed: seed))
        let log = EventLog()
        for index in 0..<8 { dispatcher.background(label: "b\(index)") { log.record("b\(index)") } }
        for index in 0..<3 { dispatcher.foreground(label: "f\(index)") { log.record("f\(index)") } }
        try dispatcher.runUntilIdle()
        return log.events
    }

    @Test func theSameSeedReplaysTheSameOrder() throws {
        for seed: UInt64 in [0, 1, 42, 0xDEAD_BEEF] {
            #expect(try self.randomScenario(seed: seed) == self.randomScenario(seed: seed))
        }
    }

    @Test func differentSeedsExploreDifferentOrders() throws {
        let orders = try Set((0..<20 as Range<UInt64>).map { try self.randomScenario(seed: $0) })
        #expect(orders.count > 10)
        // The default order is among the ones random order can produce, but it is not the only one.
        #expect(try self.randomScenario(seed: 1) != self.randomScenario(seed: 2))
    }

    @Test func randomOrderKeepsForegroundTasksInOrderAndRunsEveryTaskOnce() throws {
        for seed: UInt64 in 0..<50 {
            let events = try self.randomScenario(seed: seed)
            #expect(events.filter { $0.hasPrefix("f") } == ["f0", "f1", "f2"])
            #expect(events.sorted() == ["b0", "b1", "b2", "b3", "b4", "b5", "b6", "b7", "f0", "f1", "f2"])
        }
    }

    @Test func randomOrderLetsBackgroundTasksOvertakeEachOther() throws {
        let firsts = try Set((0..<30 as Range<UInt64>).map { try self.randomScenario(seed: $0).first ?? "" })
        #expect(firsts.count > 3)
    }

    @Test func randomOrderNeverRunsADelayedTaskEarly() throws {
        for seed: UInt64 in 0..<20 {
            let dispatcher = ManualDispatcher(order: .random(seed: seed))
            let log = EventLog()
            dispatcher.background(after: .seconds(1), label: "late") { log.record("late") }
            for index in 0..<4 { dispatcher.background { log.record("now\(index)") } }
            try dispatcher.advance(by: .milliseconds(999))
            #expect(log.events.count == 4)
            try dispatcher.advance(by: .milliseconds(1))
            #expect(log.events.last == "late")
        }
    }

    @Test func errorsPrintTheSeedToReplay() throws {
        let dispatcher = ManualDispatcher(order: .random(seed: 1234))
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.runNext() }
        #expect(error.seed == 1234)
        #expect(
            error.description.contains(
                "Random order seed: 1234 (replay with ManualDispatcher(order: .random(seed: 1234)))"
            )
        )
    }

    @Test func settingARandomOrderRestartsItsGenerator() throws {
        func firstLabels(_ dispatcher: ManualDispatcher) throws -> [String] {
            for index in 0..<6 { dispatcher.background(label: "b\(index)") {} }
            var labels: [String] = []
            for _ in 0..<6 { labels.append(try dispatcher.runNextBackground().task.label ?? "") }
            return labels
        }
        let dispatcher = ManualDispatcher(order: .random(seed: 7))
        let first = try firstLabels(dispatcher)
        dispatcher.order = .random(seed: 7)
        // Sequence numbers differ, labels repeat: the same choices are made.
        #expect(try firstLabels(dispatcher) == first)
    }
}
