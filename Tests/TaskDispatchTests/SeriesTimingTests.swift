import TaskDispatchTesting
import Testing

@testable import TaskDispatch

/// A clock read in nanoseconds whose time the test sets.
private final class SetClock: Clock, NanosecondReadingClock, @unchecked Sendable {
    struct Instant: InstantProtocol {
        var nanoseconds: Int64
        func advanced(by duration: Duration) -> Instant {
            Instant(nanoseconds: self.nanoseconds &+ duration.nanosecondsSaturated)
        }
        func duration(to other: Instant) -> Duration {
            .nanoseconds(other.nanoseconds) - .nanoseconds(self.nanoseconds)
        }
        static func < (lhs: Instant, rhs: Instant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
    }

    let time = LockedValue<Int64>(0)
    var now: Instant { Instant(nanoseconds: self.time.withLock { $0 }) }
    var minimumResolution: Duration { .nanoseconds(1) }
    func sleep(until deadline: Instant, tolerance: Duration?) async throws {}
    var nanosecondReader: @Sendable () -> Int64 { { [time] in time.withLock { $0 } } }
}

/// `SeriesTiming.nextDue(after:nowNanoseconds:)`, which `ManualDispatcher` calls with its clock read in the critical
/// section that takes a tick in, against `next(after:)`, which reads the clock itself.
@Suite struct SeriesTimingTests {
    @Test(arguments: [
        Duration.nanoseconds(1), .nanoseconds(7), .milliseconds(250), .seconds(1), .seconds(3_600),
        .nanoseconds(1) / 3, .milliseconds(1) / 7, .seconds(1 << 62),
    ])
    func aTickDueAtTheClocksNowIsTheTickAfterItsDelay(interval: Duration) {
        var generator = SplitMix64(seed: 7)
        var checked = 0
        let step = Swift.min(Swift.max(1, interval.nanosecondsSaturated / 2), 1 << 40)
        for delay in [nil, Duration.zero, .nanoseconds(5), .seconds(-3), .seconds(2)] {
            let clock = SetClock()
            let start = Int64(generator.next() % 1_000_000_000)
            clock.time.withLock { $0 = start }
            let timing = SeriesTiming(clock: clock, interval: interval, firstAfter: delay)
            // A series calls nextDue only on a timing that reads the clock in nanoseconds: not one whose origin falls
            // between two nanoseconds (a first delay, zero included, off an interval's grid of whole nanoseconds).
            guard timing.readsNanoseconds else {
                #expect(delay != nil, "a series with no first delay starts on the interval's grid")
                continue
            }
            checked += 1
            for _ in 0..<200 {
                // Ticks the clock can reach: its range (2^63 ns) holds few ticks of a long interval.
                let tick = Int64(
                    generator.next()
                        % UInt64(Swift.min(50, Int64.max / Swift.max(1, timing.interval.nanosecondsSaturated))))
                // From before the tick's grid point to far past it: the usual case, a missed tick, a first tick late.
                let now = start + Int64(generator.next() % 60) * step
                clock.time.withLock { $0 = now }
                let expected = timing.next(after: tick)
                let (sum, overflow) = now.addingReportingOverflow(expected.delay.nanosecondsRoundedUp)
                let got = timing.nextDue(after: tick, nowNanoseconds: now)
                #expect(got.tick == expected.tick, "interval \(interval), delay \(String(describing: delay))")
                #expect(got.due == (overflow ? .max : sum), "interval \(interval), tick \(tick), now \(now)")
                #expect(got.due >= now)
            }
        }
        #expect(checked >= 1)
    }
}
