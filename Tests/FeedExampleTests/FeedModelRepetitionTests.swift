import Testing

/// The refresh scenarios 200 times each, in parallel: Swift Testing runs the cases concurrently, with each other
/// and with the other suites. Each case must give the same result every time.
@Suite(.timeLimit(.minutes(2))) struct FeedModelRepetitionTests {
    /// A refresh stepped through its start, "parse" and "deliver", then awaited to completion.
    @Test(arguments: 0..<200) @MainActor func stepThroughARefresh(round: Int) async throws {
        try await FeedModelAsyncTests.stepThroughARefresh()
    }

    /// A refresh whose every fetch fails, backing off 1 s, 2 s and 4 s on the virtual clock, then giving up.
    @Test(arguments: 0..<200) @MainActor func backOffUntilTheModelGivesUp(round: Int) async throws {
        try await FeedModelBackOffTests.backOffUntilTheModelGivesUp()
    }
}
