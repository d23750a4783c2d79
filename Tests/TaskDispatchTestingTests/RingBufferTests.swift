import Testing

@testable import TaskDispatchTesting

/// The FIFO ring buffer under the due queues and the history, against an `Array` doing the same work.
@Suite struct RingBufferTests {
    /// An element that counts its deinitializations, so a test sees each released exactly once.
    private final class Tracked {
        let value: Int
        let released: Released

        init(_ value: Int, _ released: Released) {
            self.value = value
            self.released = released
        }

        deinit { self.released.count += 1 }
    }

    /// Single-threaded: each test appends, removes and releases on its own thread.
    private final class Released {
        var count = 0
    }

    /// Growth while the elements wrap around the end of the slots keeps them in order, and releases none of them.
    @Test(arguments: [0, 1, 7, 15]) func growingWhileWrappedKeepsTheOrder(removedFirst: Int) {
        let released = Released()
        do {
            var buffer = RingBuffer<Tracked>()
            var reference: [Int] = []
            for value in 0..<16 {
                buffer.append(Tracked(value, released))
                reference.append(value)
            }
            for _ in 0..<removedFirst {
                #expect(buffer.removeFirst().value == reference.removeFirst())
            }
            // Refill to full, so the next append grows with `head` at `removedFirst`.
            for value in 16..<(16 + removedFirst + 1) {
                buffer.append(Tracked(value, released))
                reference.append(value)
            }
            #expect(buffer.count == reference.count)
            #expect(buffer.map(\.value) == reference)
            #expect(released.count == removedFirst)
            while !buffer.isEmpty {
                #expect(buffer.removeFirst().value == reference.removeFirst())
            }
        }
        #expect(released.count == 16 + removedFirst + 1)
    }

    /// Random appends and removals from the front, checked after each against an array.
    @Test(arguments: [1, 2, 3] as [UInt64]) func randomOperationsMatchAnArray(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        let released = Released()
        var appended = 0
        do {
            var buffer = RingBuffer<Tracked>()
            var reference: [Int] = []
            for step in 0..<5_000 {
                if random.next(below: 5) < 3 || reference.isEmpty {
                    buffer.append(Tracked(step, released))
                    reference.append(step)
                    appended += 1
                } else {
                    #expect(buffer.removeFirst().value == reference.removeFirst())
                }
                #expect(buffer.count == reference.count)
                #expect(buffer.first?.value == reference.first)
                #expect(buffer.last?.value == reference.last)
                if step % 97 == 0 { #expect(buffer.map(\.value) == reference) }
            }
            #expect(buffer.map(\.value) == reference)
        }
        #expect(released.count == appended)
    }
}
