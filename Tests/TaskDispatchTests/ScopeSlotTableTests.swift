import Testing

@testable import TaskDispatch

/// The slot table of a scope's registry: how much room it keeps once its work has ended.
@Suite struct ScopeSlotTableTests {
    /// Occupies `count` slots, then frees them in the order they were taken.
    private func burst(_ count: Int, in state: inout ScopeRegistry.State) {
        let slots = (0..<count).map { _ in
            state.occupySlot(with: ScopeRegistry.Slot(task: nil, countsAsBackground: false, retainsTask: false))
        }
        for slot in slots { state.freeSlot(slot) }
    }

    @Test func anEmptiedTableKeepsRoomForTheBurstThatEmptiedIt() {
        var state = ScopeRegistry.State()
        self.burst(1_000, in: &state)
        #expect(state.slots.isEmpty)
        let room = state.slots.capacity
        #expect(room >= 1_000, "a scope that dispatches bursts of 1,000 would allocate the table again for each")
        self.burst(1_000, in: &state)
        #expect(state.slots.capacity == room)
        #expect(state.occupiedSlots == 0)
    }

    @Test func aSmallerBurstLetsAnEarlierLargerBurstsRoomGo() {
        var state = ScopeRegistry.State()
        self.burst(100_000, in: &state)
        #expect(state.slots.capacity >= 100_000)
        self.burst(100, in: &state)
        #expect(state.slots.capacity < 1_000, "the table kept \(state.slots.capacity) slots for a burst of 100")
    }

    @Test func smallBurstsAfterALargeOneLetItsRoomGo() {
        var state = ScopeRegistry.State()
        self.burst(100_000, in: &state)
        for _ in 0..<10 { self.burst(64, in: &state) }
        #expect(state.slots.capacity <= 128, "the table kept \(state.slots.capacity) slots for bursts of 64")
        let room = state.slots.capacity
        for _ in 0..<10 { self.burst(3, in: &state) }
        #expect(state.slots.capacity == room, "a small table is kept between bursts, not allocated again")
    }

    @Test func aSlotFreedWhileOthersAreOccupiedIsTakenAgainFirst() {
        var state = ScopeRegistry.State()
        let slot = ScopeRegistry.Slot(task: nil, countsAsBackground: false, retainsTask: false)
        let first = state.occupySlot(with: slot)
        let second = state.occupySlot(with: slot)
        state.freeSlot(first)
        #expect(state.occupySlot(with: slot) == first)
        #expect(state.slots.count == 2 && second == 1)
    }
}
