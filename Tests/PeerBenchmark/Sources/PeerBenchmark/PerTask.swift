import Foundation
import NIOCore
import NIOEmbedded
import TaskDispatchTesting

/// The honest floor: a lock, an array of closures and a head index, one task per lock turn, each closure released
/// as it runs, inside the timing. No handles, labels, order, clock or history.
final class LockedFIFO: @unchecked Sendable {
    // `tasks` and `head` are only touched while `lock` is held.
    private let lock = NSLock()
    private var tasks: [(@Sendable () -> Void)?] = []
    private var head = 0

    func dispatch(_ work: @escaping @Sendable () -> Void) {
        self.lock.lock()
        self.tasks.append(work)
        self.lock.unlock()
    }

    func runAll() {
        while true {
            self.lock.lock()
            guard self.head < self.tasks.count else {
                self.lock.unlock()
                return
            }
            let work = self.tasks[self.head]
            self.tasks[self.head] = nil
            self.head += 1
            self.lock.unlock()
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
            ratio(manual, floor), ratio(embedded, manual), ratio(asyncTesting, manual),
        ])
    }
    printTable(
        "Immediate dispatch + run, ns a task (median of \(configuration.repetitions))",
        [
            "tasks", "floor", "ManualDispatcher", "EmbeddedEventLoop", "NIOAsyncTestingEventLoop",
            "Manual / floor", "Embedded / Manual", "AsyncTesting / Manual",
        ], rows)

    rows = []
    for size in configuration.sizes {
        let delays = delays(size)
        let results = try await compare(
            [
                ("ManualDispatcher", { try delayedManual(delays) }),
                ("EmbeddedEventLoop", { try delayedEmbedded(delays) }),
            ], units: size, repetitions: configuration.repetitions)
        rows.append([
            "\(size)", format(results[0].nanoseconds), format(results[1].nanoseconds),
            ratio(results[1].nanoseconds, results[0].nanoseconds),
        ])
    }
    printTable(
        "Delayed dispatch + advance over 1 ms, ns a task (median of \(configuration.repetitions))",
        ["tasks", "ManualDispatcher", "EmbeddedEventLoop", "Embedded / Manual"], rows)
}
