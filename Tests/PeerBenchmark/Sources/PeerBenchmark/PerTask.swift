import Foundation
import NIOCore
import NIOEmbedded
import TaskDispatchTesting

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A value behind a pointer and a pthread mutex, for the floors: `state` is touched only between `lock()` and
/// `unlock()`, and, behind a pointer, pays no dynamic exclusivity checks.
final class FloorLock<State>: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    let state = UnsafeMutablePointer<State>.allocate(capacity: 1)

    init(_ state: State) {
        self.mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(self.mutex, nil)
        self.state.initialize(to: state)
    }

    deinit {
        pthread_mutex_destroy(self.mutex)
        self.mutex.deallocate()
        self.state.deinitialize(count: 1)
        self.state.deallocate()
    }

    @inline(__always) func lock() { pthread_mutex_lock(self.mutex) }
    @inline(__always) func unlock() { pthread_mutex_unlock(self.mutex) }
}

/// The honest floor: a lock, an array of closures and a head index, one task per lock turn, each closure released
/// as it runs, inside the timing. No handles, labels, order, clock or history. The state sits behind a pointer, so
/// neither side pays for dynamic exclusivity checks.
final class LockedFIFO: @unchecked Sendable {
    private struct State {
        var tasks: [(@Sendable () -> Void)?] = []
        var head = 0
    }

    private let locked = FloorLock(State())

    func dispatch(_ work: @escaping @Sendable () -> Void) {
        self.locked.lock()
        self.locked.state.pointee.tasks.append(work)
        self.locked.unlock()
    }

    func runAll() {
        while true {
            self.locked.lock()
            let state = self.locked.state
            guard state.pointee.head < state.pointee.tasks.count else {
                self.locked.unlock()
                return
            }
            let work = state.pointee.tasks[state.pointee.head]
            state.pointee.tasks[state.pointee.head] = nil
            state.pointee.head += 1
            self.locked.unlock()
            work?()
        }
    }
}

func immediateFloor(_ size: Int) throws -> Double {
    let fifo = LockedFIFO()
    let counter = Counter()
    let elapsed = time {
        for _ in 0..<size { fifo.dispatch { counter.value &+= 1 } }
        fifo.runAll()
    }
    try check(counter, size, "the FIFO")
    return elapsed
}

/// The delayed floor: the same lock around a binary min-heap of (due time, sequence, closure), one task per lock
/// turn, no handles, labels, clock object or history. What any in-process virtual-time scheduler pays at least.
final class LockedDelayHeap: @unchecked Sendable {
    private struct Entry {
        let due: Int64
        let sequence: Int
        let work: @Sendable () -> Void

        func precedes(_ other: Entry) -> Bool {
            self.due < other.due || (self.due == other.due && self.sequence < other.sequence)
        }
    }

    private struct State {
        var heap: [Entry] = []
        var sequence = 0
        var now: Int64 = 0

        mutating func push(_ entry: Entry) {
            self.heap.append(entry)
            var child = self.heap.count - 1
            while child > 0 {
                let parent = (child - 1) / 2
                guard self.heap[child].precedes(self.heap[parent]) else { return }
                self.heap.swapAt(child, parent)
                child = parent
            }
        }

        mutating func pop() -> Entry {
            let count = self.heap.count
            self.heap.swapAt(0, count - 1)
            let top = self.heap.removeLast()
            var parent = 0
            while true {
                let left = 2 * parent + 1
                guard left < count - 1 else { break }
                let right = left + 1
                let child = right < count - 1 && self.heap[right].precedes(self.heap[left]) ? right : left
                guard self.heap[child].precedes(self.heap[parent]) else { break }
                self.heap.swapAt(child, parent)
                parent = child
            }
            return top
        }
    }

    private let locked = FloorLock(State())

    func dispatch(after nanoseconds: Int64, _ work: @escaping @Sendable () -> Void) {
        self.locked.lock()
        let state = self.locked.state
        let sequence = state.pointee.sequence
        state.pointee.sequence += 1
        state.pointee.push(Entry(due: state.pointee.now + nanoseconds, sequence: sequence, work: work))
        self.locked.unlock()
    }

    /// Runs every closure due within `nanoseconds`, in due order, each at its due time.
    func advance(by nanoseconds: Int64) {
        self.locked.lock()
        let state = self.locked.state
        let target = state.pointee.now + nanoseconds
        self.locked.unlock()
        while true {
            self.locked.lock()
            guard let first = state.pointee.heap.first, first.due <= target else {
                state.pointee.now = target
                self.locked.unlock()
                return
            }
            let entry = state.pointee.pop()
            state.pointee.now = entry.due
            self.locked.unlock()
            entry.work()
        }
    }
}

func delayedFloor(_ delays: [Int64]) throws -> Double {
    let heap = LockedDelayHeap()
    let counter = Counter()
    let elapsed = time {
        for delay in delays { heap.dispatch(after: delay) { counter.value &+= 1 } }
        heap.advance(by: 1_000_000)
    }
    try check(counter, delays.count, "the delay heap")
    return elapsed
}

func immediateManual(_ size: Int) throws -> Double {
    let dispatcher = ManualDispatcher()
    let counter = Counter()
    let elapsed = try time {
        for _ in 0..<size { dispatcher.background { counter.value &+= 1 } }
        try dispatcher.runUntilIdle()
    }
    try check(counter, size, "ManualDispatcher")
    return elapsed
}

func immediateEmbedded(_ size: Int) throws -> Double {
    let loop = EmbeddedEventLoop()
    let counter = Counter()
    let elapsed = time {
        for _ in 0..<size { loop.execute { counter.value &+= 1 } }
        loop.run()
    }
    try check(counter, size, "EmbeddedEventLoop")
    try loop.syncShutdownGracefully()
    return elapsed
}

func immediateAsyncTesting(_ size: Int) async throws -> Double {
    let loop = NIOAsyncTestingEventLoop()
    let counter = Counter()
    let elapsed = await timeAsync {
        for _ in 0..<size { loop.execute { counter.value &+= 1 } }
        await loop.run()
    }
    // The loop runs its closures on its own thread; `run()` returns once they have run.
    try check(counter, size, "NIOAsyncTestingEventLoop")
    await loop.shutdownGracefully()
    return elapsed
}

/// Delays spread over the first millisecond, the same for every contender.
func delays(_ size: Int) -> [Int64] {
    var generator = SplitMix(seed: 42)
    return (0..<size).map { _ in Int64(generator.next() % 1_000_000) }
}

func delayedManual(_ delays: [Int64]) throws -> Double {
    let dispatcher = ManualDispatcher()
    let counter = Counter()
    let elapsed = try time {
        for delay in delays { dispatcher.background(after: .nanoseconds(delay)) { counter.value &+= 1 } }
        try dispatcher.advance(by: .milliseconds(1))
    }
    try check(counter, delays.count, "ManualDispatcher")
    return elapsed
}

func delayedEmbedded(_ delays: [Int64]) throws -> Double {
    let loop = EmbeddedEventLoop()
    let counter = Counter()
    let elapsed = time {
        for delay in delays { loop.scheduleTask(in: .nanoseconds(delay)) { counter.value &+= 1 } }
        loop.advanceTime(by: .milliseconds(1))
    }
    try check(counter, delays.count, "EmbeddedEventLoop")
    try loop.syncShutdownGracefully()
    return elapsed
}

/// A small, seedable generator, so every run draws the same delays.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { self.state = seed }

    mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func perTaskTables(_ configuration: Configuration) async throws {
    var rows: [[String]] = []
    for size in configuration.sizes {
        let results = try await compare(
            [
                ("floor", { try immediateFloor(size) }),
                ("ManualDispatcher", { try immediateManual(size) }),
                ("EmbeddedEventLoop", { try immediateEmbedded(size) }),
                ("NIOAsyncTestingEventLoop", { try await immediateAsyncTesting(size) }),
            ], units: size, repetitions: configuration.repetitions)
        let (floor, manual, embedded, asyncTesting) =
            (results[0].nanoseconds, results[1].nanoseconds, results[2].nanoseconds, results[3].nanoseconds)
        rows.append([
            "\(size)", format(floor), format(manual), format(embedded), format(asyncTesting),
            ratio(manual, floor), ratio(embedded, manual), ratio(asyncTesting, manual), ratio(embedded, floor),
        ])
    }
    printTable(
        "Immediate dispatch + run, ns a task (median of \(configuration.repetitions))",
        [
            "tasks", "floor", "ManualDispatcher", "EmbeddedEventLoop", "NIOAsyncTestingEventLoop",
            "Manual / floor", "Embedded / Manual", "AsyncTesting / Manual", "Embedded / floor",
        ], rows)
    print(
        "\n\"Embedded / floor\" bounds \"Embedded / Manual\": no scheduler that runs these closures in order can be"
            + " faster than the floor.")

    rows = []
    for size in configuration.sizes {
        let delays = delays(size)
        let results = try await compare(
            [
                ("floor", { try delayedFloor(delays) }),
                ("ManualDispatcher", { try delayedManual(delays) }),
                ("EmbeddedEventLoop", { try delayedEmbedded(delays) }),
            ], units: size, repetitions: configuration.repetitions)
        let (floor, manual, embedded) = (results[0].nanoseconds, results[1].nanoseconds, results[2].nanoseconds)
        rows.append([
            "\(size)", format(floor), format(manual), format(embedded), ratio(manual, floor), ratio(embedded, manual),
            ratio(embedded, floor),
        ])
    }
    printTable(
        "Delayed dispatch + advance over 1 ms, ns a task (median of \(configuration.repetitions))",
        [
            "tasks", "floor", "ManualDispatcher", "EmbeddedEventLoop", "Manual / floor", "Embedded / Manual",
            "Embedded / floor",
        ], rows)
}
