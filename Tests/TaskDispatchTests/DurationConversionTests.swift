import Dispatch
import TaskDispatch
import Testing

/// The package's one set of `Duration` conversions (`Duration+Saturating.swift`), taken with `Int32` as well as
/// `Int64`/`Int`: on a 32-bit watch `Int` is `Int32`, and this 64-bit machine would otherwise never see what
/// a 32-bit `Int` does to them (issue 21, item 3).
@Suite struct DurationConversionTests {
    @Test func nanosecondsSaturateAtTheBoundsOfTheIntegerType() {
        #expect(Duration.seconds(3).nanoseconds(saturatingAs: Int32.self) == .max)
        #expect(Duration.seconds(-3).nanoseconds(saturatingAs: Int32.self) == .min)
        #expect(Duration.milliseconds(1_500).nanoseconds(saturatingAs: Int32.self) == 1_500_000_000)
        #expect(Duration.nanoseconds(Int32.max).nanoseconds(saturatingAs: Int32.self) == .max)
        #expect(Duration.nanoseconds(Int32.min).nanoseconds(saturatingAs: Int32.self) == .min)
        #expect(Duration.seconds(2).nanoseconds(saturatingAs: Int64.self) == 2_000_000_000)
        #expect(Duration.seconds(Int64.max).nanosecondsSaturated == .max)
        #expect((Duration.seconds(Int64.max) + .seconds(1)).nanosecondsSaturated == .max)
        #expect(Duration.largest.nanosecondsSaturated == .max)
        #expect(Duration.smallest.nanosecondsSaturated == .min)
        #expect(Duration.nanoseconds(Int64.max - 1).nanosecondsSaturated == Int64.max - 1)
        #expect(Duration.nanoseconds(Int64.min + 1).nanosecondsSaturated == Int64.min + 1)
        // Truncated toward zero, as `Int(_:)` of a floating-point value would be.
        #expect((Duration.nanoseconds(-3) / 2).nanosecondsSaturated == -1)
    }

    /// `nanosecondsSaturated` divides the attoseconds directly while they fit in 64 bits: it must agree with the
    /// general conversion on each side of that range's edges, rounding toward zero below zero too.
    @Test func theShortDurationsQuickPathAgreesWithTheGeneralConversion() {
        let half = UInt64(Int64.max)
        var durations: [Duration] = [.zero, .nanoseconds(1), .nanoseconds(-1), .seconds(9), .seconds(-9), .seconds(19)]
        // Attoseconds as (high, low): the last ones in the quick range, the first ones past it, on both sides.
        for (high, low): (Int64, UInt64) in [
            (0, half - 1), (0, half), (0, half + 1), (0, .max), (0, 999_999_999), (0, 1_000_000_001),
            (-1, .max), (-1, .max - 999_999_999), (-1, half + 1), (-1, half), (-1, half - 1), (-1, 0),
        ] {
            durations.append(Duration(_high: high, low: low))
        }
        for duration in durations {
            #expect(duration.nanosecondsSaturated == duration.nanoseconds(saturatingAs: Int64.self), "\(duration)")
        }
        #expect(Duration(_high: -1, low: .max).nanosecondsSaturated == 0)  // -1 attosecond
        #expect(Duration(_high: 0, low: 2_500_000_000).nanosecondsSaturated == 2)
    }

    /// Rounded up on both paths: the quick one under 9.2 s and the general one past it.
    @Test func nanosecondsRoundUpToTheNextWholeOne() {
        #expect((Duration.nanoseconds(1) / 2).nanosecondsRoundedUp == 1)
        #expect(Duration.nanoseconds(2).nanosecondsRoundedUp == 2)
        #expect((Duration.seconds(20) + .nanoseconds(1) / 2).nanosecondsRoundedUp == 20_000_000_001)
        #expect(Duration.seconds(20).nanosecondsRoundedUp == 20_000_000_000)
        #expect((Duration.nanoseconds(-3) / 2).nanosecondsRoundedUp == -1)
        #expect(Duration.largest.nanosecondsRoundedUp == .max)
        #expect(Duration.smallest.nanosecondsRoundedUp == .min)
    }

    @Test func realTimeComponentsFitA32BitInt() throws {
        // The bug this catches: `Int64(Int.max / 1_000_000_000) - 1` is 1 with a 32-bit `Int`, so every delay
        // of a second or more became "never"; and `Int(nanoseconds)` trapped past 2.1 s.
        let two = try #require(Duration.seconds(2).realTimeComponents(as: Int32.self))
        #expect(two == (2, 0))
        let thirty = try #require(Duration.seconds(30).realTimeComponents(as: Int32.self))
        #expect(thirty == (30, 0))
        let odd = try #require(Duration.milliseconds(2_500).realTimeComponents(as: Int32.self))
        #expect(odd == (2, 500_000_000))
        let almostForever = try #require(
            (Duration.realTimeForever - .nanoseconds(1)).realTimeComponents(as: Int32.self))
        #expect(almostForever == (999_999_999, 999_999_999))
        let day = try #require(Duration.seconds(86_400).realTimeComponents(as: Int.self))
        #expect(day == (86_400, 0))
    }

    @Test func realTimeComponentsAreNowForZeroOrLessAndNilFromForeverOn() {
        Self.expectNowAndForever(Int32.self)
        Self.expectNowAndForever(Int64.self)
    }

    @Test func aDispatchDeadlineCountsWholeSecondsAndNanoseconds() {
        let before = DispatchTime.now().uptimeNanoseconds
        let deadline = Duration.milliseconds(2_500).dispatchDeadline.uptimeNanoseconds
        let after = DispatchTime.now().uptimeNanoseconds
        #expect(deadline >= before + 2_500_000_000)
        #expect(deadline <= after + 2_500_000_000)
        #expect(Duration.realTimeForever.dispatchDeadline == .distantFuture)
        #expect(Duration.largest.dispatchDeadline == .distantFuture)
        #expect(Duration.smallest.dispatchDeadline <= .now())
        #expect(Duration.zero.dispatchDeadline <= .now())
    }

    @Test func saturatingSumsStopAtTheBounds() {
        #expect(Duration.largest.adding(saturating: .nanoseconds(1)) == .largest)
        #expect(Duration.smallest.adding(saturating: .nanoseconds(-1)) == .smallest)
        #expect(Duration.largest.adding(saturating: .smallest) == Duration(_high: -1, low: .max))  // -1 attosecond
        #expect(Duration.smallest.subtracting(saturating: .largest) == .smallest)
        #expect(Duration.largest.subtracting(saturating: .smallest) == .largest)
        #expect(Duration.seconds(3).subtracting(saturating: .seconds(5)) == .seconds(-2))
        #expect(Duration.seconds(3).adding(saturating: .seconds(5)) == .seconds(8))
    }

    @Test func aRealTimeLimitIsClampedToZeroThroughForever() {
        #expect(Duration.largest.realTimeLimit == .realTimeForever)
        #expect(Duration.smallest.realTimeLimit == .zero)
        #expect(Duration.seconds(30).realTimeLimit == .seconds(30))
    }

    private static func expectNowAndForever<Integer: FixedWidthInteger & SignedInteger>(_: Integer.Type) {
        for now in [Duration.zero, .nanoseconds(-1), .smallest] {
            let components = now.realTimeComponents(as: Integer.self)
            #expect(components.map { $0 == (0, 0) } == true, "\(now) as \(Integer.self)")
        }
        for forever in [Duration.realTimeForever, .seconds(Int64.max), .seconds(Int64.max) + .seconds(1), .largest] {
            #expect(forever.realTimeComponents(as: Integer.self) == nil, "\(forever) as \(Integer.self)")
        }
    }
}
