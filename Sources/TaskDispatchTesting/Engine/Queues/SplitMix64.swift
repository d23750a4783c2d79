/// SplitMix64: a small, fast generator whose whole state is its seed, so a seed replays an order (and the benchmark's
/// delays) exactly.
package struct SplitMix64: Sendable {
    private var state: UInt64

    package init(seed: UInt64) {
        self.state = seed
    }

    package mutating func next() -> UInt64 {
        self.state &+= 0x9E37_79B9_7F4A_7C15
        var z = self.state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform integer in `0..<upperBound`.
    mutating func next(below upperBound: Int) -> Int {
        precondition(upperBound > 0, "SplitMix64.next(below:) needs a positive bound, got \(upperBound)")
        return Int(self.next() % UInt64(upperBound))
    }
}
