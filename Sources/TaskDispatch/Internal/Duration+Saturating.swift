// The public API takes any `Duration`; the standard library traps on some (`components` past `Int64.max` seconds,
// `+`/`-` past 128 bits, `Int(_:)` past 2.1 s of nanoseconds on a 32-bit watch), so every conversion saturates here.

extension Duration {
    /// The largest duration the type can hold: about 1.7 × 10^20 seconds.
    package static let largest = Duration(_high: .max, low: .max)

    /// The most negative duration the type can hold.
    package static let smallest = Duration(_high: .min, low: 0)

    /// A real-time limit at or past this is forever: 10^9 seconds, some 31 years. It is longer than any device
    /// stays up, and its whole seconds fit in a 32-bit `Int`, which is what Dispatch counts in on a watch.
    package static let realTimeForever = Duration.seconds(1_000_000_000)

    /// The duration in whole nanoseconds, truncated toward zero and saturating at the bounds of `Integer`.
    ///
    /// - Parameter integer: The integer type to count in, at most 64 bits wide.
    /// - Returns: The nanoseconds; `Integer.max` or `Integer.min` when they do not fit.
    package func nanoseconds<Integer: FixedWidthInteger & SignedInteger>(saturatingAs integer: Integer.Type) -> Integer
    {
        if self >= .nanoseconds(Integer.max) { return .max }
        if self <= .nanoseconds(Integer.min) { return .min }
        // Within ±`Integer.max` nanoseconds, the seconds and their product fit in `Int64` and the sum in `Integer`.
        let (seconds, attoseconds) = self.components
        return Integer(truncatingIfNeeded: seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// The duration in whole nanoseconds, saturating at the bounds of `Int64`: the virtual clock's unit.
    package var nanosecondsSaturated: Int64 {
        // Within ±9.2 s (a test's usual delays) the attoseconds fit in 64 bits: one division, not `components`.
        if self._high == 0, self._low <= UInt64(Int64.max) { return Int64(self._low) / 1_000_000_000 }
        if self._high == -1, self._low > UInt64(Int64.max) { return Int64(bitPattern: self._low) / 1_000_000_000 }
        return self.nanoseconds(saturatingAs: Int64.self)
    }

    /// The duration in whole nanoseconds, rounded up (toward positive infinity) and saturating at the bounds of
    /// `Int64`: a delay or a deadline on the virtual clock, which a task must not run before.
    package var nanosecondsRoundedUp: Int64 {
        if self._high == 0, self._low <= UInt64(Int64.max) {
            let (whole, fraction) = self._low.quotientAndRemainder(dividingBy: 1_000_000_000)
            return Int64(whole) + (fraction == 0 ? 0 : 1)
        }
        let truncated = self.nanosecondsSaturated
        return truncated != .max && Duration.nanoseconds(truncated) < self ? truncated + 1 : truncated
    }

    /// The duration in whole nanoseconds, rounded down (toward negative infinity) and saturating at the bounds of
    /// `Int64`: for a move of the virtual clock, so that a negative duration of less than a nanosecond still moves
    /// it backwards (and is refused) instead of counting as zero.
    package var nanosecondsRoundedDown: Int64 {
        let truncated = self.nanosecondsSaturated
        return truncated != .min && Duration.nanoseconds(truncated) > self ? truncated - 1 : truncated
    }

    /// `self + other`, saturating at ``largest`` and ``smallest`` instead of trapping.
    ///
    /// - Parameter other: The duration to add.
    /// - Returns: The sum, or the bound it passed.
    package func adding(saturating other: Duration) -> Duration {
        if other > .zero, self > Duration.largest - other { return .largest }
        if other < .zero, self < Duration.smallest - other { return .smallest }
        return self + other
    }

    /// `self - other`, saturating at ``largest`` and ``smallest`` instead of trapping.
    ///
    /// - Parameter other: The duration to subtract.
    /// - Returns: The difference, or the bound it passed.
    package func subtracting(saturating other: Duration) -> Duration {
        if other < .zero, self > Duration.largest + other { return .largest }
        if other > .zero, self < Duration.smallest + other { return .smallest }
        return self - other
    }

    /// The duration as a real-time limit: clamped to `.zero ... realTimeForever`.
    package var realTimeLimit: Duration {
        Swift.min(Swift.max(self, .zero), .realTimeForever)
    }

    /// The duration as whole seconds and nanoseconds in `Integer`, for an API that counts time in `Int`.
    ///
    /// Generic so that a test can take it with `Int32` and check what a 32-bit watch gets.
    ///
    /// - Parameter integer: The integer type to count in; 32 bits or more.
    /// - Returns: `(0, 0)` for zero or a negative duration; `nil`, meaning forever, at or past
    ///   ``realTimeForever`` or when the seconds do not fit in `Integer`.
    package func realTimeComponents<Integer: FixedWidthInteger & SignedInteger>(
        as integer: Integer.Type
    ) -> (seconds: Integer, nanoseconds: Integer)? {
        guard self > .zero else { return (0, 0) }
        guard self < .realTimeForever else { return nil }
        let (seconds, attoseconds) = self.components
        guard let wholeSeconds = Integer(exactly: seconds) else { return nil }
        return (wholeSeconds, Integer(attoseconds / 1_000_000_000))
    }
}
