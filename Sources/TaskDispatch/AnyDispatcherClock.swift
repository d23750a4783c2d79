/// A clock that forwards to any `Clock<Duration>`: what a dispatcher that wraps `any TaskDispatcher` gives as its
/// ``TaskDispatcher/clock``, so that a sleep through the wrapper still sleeps on the wrapped dispatcher's clock.
///
/// A decorator generic over the dispatcher it wraps forwards the clock as it is
/// (`var clock: Base.DispatcherClock { base.clock }`). A decorator that stores `any TaskDispatcher` cannot name that type,
/// so it erases it:
///
/// ```swift
/// struct LoggingDispatcher: TaskDispatcher {
///     let base: any TaskDispatcher
///     let clock: AnyDispatcherClock
///
///     init(base: any TaskDispatcher) {
///         self.base = base
///         self.clock = AnyDispatcherClock(base.clock)      // erased once: its instants share one origin
///     }
///
///     func startTask<Success: Sendable>(
///         label: String?,
///         callSite: CallSite,
///         @_inheritActorContext operation: @escaping @Sendable @isolated(any) () async throws -> Success
///     ) -> Task<Success, any Error> {
///         base.startTask(label: label, callSite: callSite, operation: operation)
///     }
///
///     func dispatch(_ task: DispatchedTask) -> TaskHandle {
///         print("dispatch", task.label ?? "(no label)")
///         return base.dispatch(task)
///     }
/// }
/// ```
///
/// With a `ManualDispatcher` underneath, a sleep through the wrapper is a timer on the virtual clock, woken by
/// `advance(by:)`; with a production dispatcher it is a real sleep.
///
/// Instants are measured from the moment the erased clock was created: ``Instant/offset`` is the time since
/// then on the wrapped clock. So erase the clock once and keep the value, as above: a computed
/// `var clock: AnyDispatcherClock { AnyDispatcherClock(base.clock) }` would start a new origin at every access,
/// and an instant read from one access would mean another time to the next. Instants of two different values
/// are not comparable.
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

        /// The instant `duration` later (earlier, if negative).
        ///
        /// It saturates at the largest and most negative `Duration` rather than trap.
        ///
        /// - Parameter duration: How far to move.
        /// - Returns: The moved instant.
        public func advanced(by duration: Duration) -> Instant {
            Instant(offset: self.offset.adding(saturating: duration))
        }

        /// The time from this instant to `other`, negative when `other` is earlier.
        ///
        /// It saturates at the largest and most negative `Duration` rather than trap.
        ///
        /// - Parameter other: The later instant.
        /// - Returns: `other` minus this instant.
        public func duration(to other: Instant) -> Duration {
            other.offset.subtracting(saturating: self.offset)
        }

        /// Whether `lhs` comes before `rhs`.
        ///
        /// - Parameters:
        ///   - lhs: An instant.
        ///   - rhs: Another instant.
        /// - Returns: `true` when `lhs` is earlier.
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

    /// Wraps `clock`, measuring instants from now.
    ///
    /// - Parameter clock: The clock to forward to; `someDispatcher.clock` through `any TaskDispatcher` is one.
    public init(_ clock: any Clock<Duration>) {
        self = Self.erasing(clock)
    }

    private init(
        readNow: @escaping @Sendable () -> Duration,
        sleepUntil: @escaping @Sendable (Duration, Duration?) async throws -> Void,
        resolution: Duration
    ) {
        self.readNow = readNow
        self.sleepUntil = sleepUntil
        self.resolution = resolution
    }

    /// The furthest offset handed to the wrapped clock, either way: 2^62 seconds, some 146 billion years. The
    /// same bound caps a sleep's tolerance.
    ///
    /// A sleep that long is forever on any clock, and the standard clocks trap past `Int64.max` seconds
    /// (`ContinuousClock.sleep(until:tolerance:)` reads its deadline's and its tolerance's `components`), so a
    /// deadline past it is moved to it, and a tolerance past it is cut to it (a negative one to zero).
    static let furthestOffset = Duration.seconds(Int64(1) << 62)

    /// Opens the wrapped clock's type, so that its instants can be kept and compared.
    private static func erasing<Wrapped: Clock<Duration>>(_ clock: Wrapped) -> AnyDispatcherClock {
        let start = clock.now
        return AnyDispatcherClock(
            readNow: { start.duration(to: clock.now) },
            sleepUntil: { offset, tolerance in
                let offset = Swift.min(Swift.max(offset, .zero - Self.furthestOffset), Self.furthestOffset)
                let tolerance = tolerance.map { Swift.min(Swift.max($0, .zero), Self.furthestOffset) }
                try await clock.sleep(until: start.advanced(by: offset), tolerance: tolerance)
            },
            resolution: clock.minimumResolution
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

    /// Sleeps on the wrapped clock until `deadline`.
    ///
    /// Any deadline is accepted: one further than 2^62 seconds (some 146 billion years) from the erased
    /// clock's creation is moved to that bound, which no clock reaches, so the standard clocks do not trap.
    ///
    /// - Parameters:
    ///   - deadline: The instant to wake at.
    ///   - tolerance: Passed to the wrapped clock.
    /// - Throws: What the wrapped clock's sleep throws: `CancellationError` when the task is cancelled.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        try await self.sleepUntil(deadline.offset, tolerance)
    }
}
