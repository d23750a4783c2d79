/// A clock that forwards to any `Clock<Duration>`: the ``TaskDispatcher/clock`` of a decorator that stores
/// `any TaskDispatcher`, so a sleep through it still sleeps on the wrapped dispatcher's clock.
///
/// Erase the clock once, in the initializer, and keep the value: ``Instant/offset`` is measured from the erased
/// clock's creation, so a computed `var clock` would start a new origin at every access.
///
/// ```swift
/// init(base: any TaskDispatcher) {
///     self.base = base
///     self.clock = AnyDispatcherClock(base.clock)
/// }
/// ```
public struct AnyDispatcherClock: Clock, Sendable {
    /// A point on a clock, as the time since the clock's origin: the erased clock's creation here, the
    /// dispatcher's creation for `ManualDispatcher.Clock`, which uses the same type.
    public struct Instant: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
        /// The time from the erased clock's creation to this instant, on the wrapped clock.
        public var offset: Duration

        /// Creates the instant `offset` after the erased clock's creation.
        ///
        /// - Parameter offset: The time since the erased clock was created.
        public init(offset: Duration) {
            self.offset = offset
        }

        /// The instant `duration` later (earlier, if negative), saturating rather than trapping.
        ///
        /// - Parameter duration: How far to move.
        /// - Returns: The moved instant.
        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: self.offset.adding(saturating: duration))
        }

        /// The time from this instant to `other`, negative when `other` is earlier, saturating rather than trapping.
        ///
        /// - Parameter other: The later instant.
        /// - Returns: `other` minus this instant.
        public func duration(to other: Instant) -> Duration {
            other.offset.subtracting(saturating: self.offset)
        }

        /// Whether `lhs` comes before `rhs`.
        public static func < (lhs: Instant, rhs: Instant) -> Bool {
            lhs.offset < rhs.offset
        }

        /// The time since the clock's origin, as messages show it: `0 s`, `1.5 s`, `250 ms`.
        public var description: String {
            formatNanoseconds(self.offset.nanosecondsSaturated)
        }
    }

    private let readNow: @Sendable () -> Duration
    private let sleepUntil: @Sendable (Duration, Duration?) async throws -> Void
    private let resolution: Duration
    /// ``now`` in nanoseconds, when the wrapped clock reads in them (``readsNanoseconds``; `ManualDispatcher`'s, or
    /// another such wrapper): what a repeating series reads at each tick, without the wrapped clock (which may hold
    /// its dispatcher). Not optional, so that a call goes through no reabstraction thunk.
    package let nanosecondReader: @Sendable () -> Int64
    /// Whether ``nanosecondReader`` reads the time.
    package let readsNanoseconds: Bool

    /// Wraps `clock`, measuring instants from now.
    ///
    /// - Parameter clock: The clock to forward to; `someDispatcher.clock` through `any TaskDispatcher` is one.
    public init(_ clock: any Clock<Duration>) {
        self = Self.erasing(clock, keepingOrigin: false)
    }

    /// Wraps `clock`; when its instants are of this type already (`ManualDispatcher`'s clock, an erased one), keeps
    /// their origin, so that an instant read through either means the same time (``DispatchScope/clock``).
    package init(keepingOriginOf clock: any Clock<Duration>) {
        self = Self.erasing(clock, keepingOrigin: true)
    }

    private init(
        readNow: @escaping @Sendable () -> Duration,
        sleepUntil: @escaping @Sendable (Duration, Duration?) async throws -> Void,
        resolution: Duration,
        nanosecondReader: @escaping @Sendable () -> Int64,
        readsNanoseconds: Bool
    ) {
        self.readNow = readNow
        self.sleepUntil = sleepUntil
        self.resolution = resolution
        self.nanosecondReader = nanosecondReader
        self.readsNanoseconds = readsNanoseconds
    }

    /// The furthest offset handed to the wrapped clock either way, and the cap on a sleep's tolerance: 2^62 seconds,
    /// forever on any clock; the standard clocks trap past `Int64.max` seconds.
    static let furthestOffset = Duration.seconds(Int64(1) << 62)

    /// Opens the wrapped clock's type, so that its instants can be kept and compared.
    private static func erasing<Wrapped: Clock<Duration>>(_ clock: Wrapped, keepingOrigin: Bool)
        -> AnyDispatcherClock
    {
        let (read, readable) = nanosecondReading(of: clock)
        let (start, before, reads): (Wrapped.Instant, Int64, Bool)
        if keepingOrigin, let origin = Instant(offset: .zero) as? Wrapped.Instant {
            (start, before, reads) = (origin, 0, readable)
        } else {
            before = read()
            start = clock.now
            // Read in nanoseconds only from a start both readings agree on (the clock did not move in between).
            reads = readable && read() == before
        }
        let nanoseconds: @Sendable () -> Int64
        if reads { nanoseconds = { read() &- before } } else { nanoseconds = { 0 } }
        return AnyDispatcherClock(
            readNow: { start.duration(to: clock.now) },
            sleepUntil: { offset, tolerance in
                let offset = Swift.min(Swift.max(offset, .zero - Self.furthestOffset), Self.furthestOffset)
                let tolerance = tolerance.map { Swift.min(Swift.max($0, .zero), Self.furthestOffset) }
                try await clock.sleep(until: start.advanced(by: offset), tolerance: tolerance)
            },
            resolution: clock.minimumResolution,
            nanosecondReader: nanoseconds,
            readsNanoseconds: reads
        )
    }

    /// The wrapped clock's current time, as the time since this clock was created.
    public var now: Instant {
        Instant(offset: self.readNow())
    }

    /// The wrapped clock's resolution.
    public var minimumResolution: Duration {
        self.resolution
    }

    /// Sleeps on the wrapped clock until `deadline`; a deadline past 2^62 seconds is moved to that bound, so the
    /// standard clocks do not trap.
    ///
    /// - Parameters:
    ///   - deadline: The instant to wake at.
    ///   - tolerance: Passed to the wrapped clock.
    /// - Throws: What the wrapped clock's sleep throws: `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await self.sleepUntil(deadline.offset, tolerance)
    }
}
