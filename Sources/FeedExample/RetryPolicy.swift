/// How often and how patiently ``FeedModel`` retries a fetch that failed: exponential back-off.
///
/// After failed attempt *n* (counting from 1) the next attempt waits `baseDelay × 2ⁿ⁻¹`: with the
/// ``standard`` policy 1 s, 2 s, then 4 s, and the fourth failure ends the load. Only fetch errors are
/// retried; a document that does not parse fails at once, since fetching it again would not help.
///
/// ```swift
/// let quick = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100))   // waits 0.1 s, then 0.2 s
/// quick.delay(afterAttempt: 2)                                            // .milliseconds(200)
/// ```
public struct RetryPolicy: Sendable, Hashable {
    /// The most fetches one load makes, the first included; at least 1.
    public var maxAttempts: Int
    /// The wait before the second attempt; each later wait doubles.
    public var baseDelay: Duration

    /// Four attempts, waiting 1 s, 2 s and 4 s between them.
    public static let standard = RetryPolicy(maxAttempts: 4, baseDelay: .seconds(1))

    /// One attempt: a failed fetch fails the load at once.
    public static let never = RetryPolicy(maxAttempts: 1, baseDelay: .zero)

    /// Creates a policy.
    ///
    /// - Parameters:
    ///   - maxAttempts: The most fetches one load makes, the first included. Must be at least 1.
    ///   - baseDelay: The wait before the second attempt; each later wait doubles. Must not be negative.
    public init(maxAttempts: Int, baseDelay: Duration) {
        precondition(maxAttempts >= 1, "RetryPolicy needs maxAttempts >= 1 (got \(maxAttempts)); use 1 for no retry")
        precondition(baseDelay >= .zero, "RetryPolicy needs a baseDelay of zero or more (got \(baseDelay))")
        self.maxAttempts = maxAttempts
        self.baseDelay = baseDelay
    }

    /// The wait before the attempt that follows failed attempt `attempt`, or `nil` when none follows.
    ///
    /// ```swift
    /// RetryPolicy.standard.delay(afterAttempt: 1)   // .seconds(1)
    /// RetryPolicy.standard.delay(afterAttempt: 3)   // .seconds(4)
    /// RetryPolicy.standard.delay(afterAttempt: 4)   // nil: give up
    /// ```
    ///
    /// - Parameter attempt: The number of the attempt that failed, from 1.
    /// - Returns: `baseDelay × 2^(attempt − 1)` (the exponent capped at 30), or `nil` when `attempt` has
    ///   reached ``maxAttempts``.
    public func delay(afterAttempt attempt: Int) -> Duration? {
        guard attempt < self.maxAttempts else { return nil }
        let doublings = Swift.min(Swift.max(attempt - 1, 0), 30)
        return self.baseDelay * (1 << doublings)
    }
}
