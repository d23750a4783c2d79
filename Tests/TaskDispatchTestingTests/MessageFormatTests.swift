import TaskDispatch
import Testing

@testable import TaskDispatchTesting

private enum LoadError: Error {
    case offline
    case status(Int)
}

private struct ParseError: Error {
    var line: Int
}

private enum Outage: Error, CustomStringConvertible {
    case down
    var description: String { "the service is down" }
}

private struct ServerError: Error, CustomStringConvertible {
    var description: String { "the server is offline" }
}

/// The one way messages and descriptions write time, and how they write a thrown error.
@Suite struct MessageFormatTests {
    @Test(
        arguments: [
            (0, "0 s"), (7_000_000_000, "7 s"), (1_500_000_000, "1.5 s"), (99_007_000_000_000, "99007 s"),
            (300_000_000, "300 ms"), (1_000_001, "1.000001 ms"), (1_234_567_891, "1.234567891 s"),
            (250_000, "250 µs"), (12, "12 ns"), (-1_500_000_000, "-1.5 s"), (Int64.min, "-9223372036.854775808 s"),
        ] as [(Int64, String)])
    func timeIsWrittenInTheLargestUnitItReachesWithAnExactFraction(nanoseconds: Int64, text: String) {
        #expect(formatNanoseconds(nanoseconds) == text)
    }

    @Test func aDueTimeBeyondTheClockIsNeverAndADurationBeyondItSaysSo() {
        #expect(formatTime(TaskKey.never) == "never")
        #expect(formatDuration(.seconds(5)) == "5 s")
        #expect(formatDuration(.nanoseconds(Int64.max)) == "292 years or more")
        #expect(formatDuration(.nanoseconds(Int64.min)) == "-292 years or less")
    }

    @Test func anInstantDescribesItselfAsMessagesWriteTime() throws {
        let dispatcher = ManualDispatcher()
        try dispatcher.advance(by: .milliseconds(1_500))
        #expect(dispatcher.clock.now.description == "1.5 s")
        try dispatcher.advance(by: .milliseconds(250))
        #expect("\(dispatcher.clock.now)" == "1.75 s")
    }

    /// Advice to paste writes an advance's duration as code, exactly, in the largest unit that keeps it whole.
    @Test(
        arguments: [
            ("advance(by: 7 s)", "advance(by: .seconds(7))"),
            ("advance(to: 1.5 s)", "advance(to: .milliseconds(1500))"),
            ("advance(by: 1.000000001 s)", "advance(by: .nanoseconds(1000000001))"),
            ("advance(by: 250 µs)", "advance(by: .microseconds(250))"),
            ("advance(by: 0.5 ms)", "advance(by: .microseconds(500))"),
            ("advance(by: -2 ns)", "advance(by: .nanoseconds(-2))"),
            ("advance(by: 0 s)", "advance(by: .seconds(0))"),
            ("advance(by: 292 years or more)", "advance(by: 292 years or more)"),
            ("runUntilIdle()", "runUntilIdle()"),
        ])
    func anAdvanceReadsAsCode(method: String, code: String) {
        #expect(asCode(method) == code)
    }

    @Test func advanceWritesItsDurationLikeEveryOtherTime() throws {
        let dispatcher = ManualDispatcher(runawayLimit: 2)
        @Sendable func tick() {
            dispatcher.background(after: .milliseconds(100), label: "tick") { tick() }
        }
        tick()
        let error = try #require(throws: ManualDispatcherError.self) {
            try dispatcher.advance(by: .milliseconds(1_500))
        }
        #expect(error.summary.hasPrefix("advance(by: 1.5 s) ran 3 tasks and tasks keep falling due;"))
        dispatcher.cancelAllPendingTasks()
    }

    @Test func theAsyncAdvanceWritesBothDurationsTheSameWay() async throws {
        let dispatcher = ManualDispatcher(runawayLimit: 2)
        @Sendable func tick() {
            dispatcher.background(after: .seconds(1), label: "tick") { tick() }
        }
        tick()
        let error = try await #require(throws: ManualDispatcherError.self) {
            try await dispatcher.advance(by: .seconds(5), waitingUpTo: .milliseconds(300))
        }
        #expect(error.summary.hasPrefix("advance(by: 5 s, waitingUpTo: 300 ms) ran 3 tasks"))
        dispatcher.cancelAllPendingTasks()
    }

    @Test func aContractMeasurementIsWrittenInTheSameFormatRoundedToATenthOfAMillisecond() {
        #expect(Duration.milliseconds(20).millisecondsText == "20 ms")
        #expect(Duration.microseconds(12_345).millisecondsText == "12.3 ms")
        #expect(Duration.seconds(30).millisecondsText == "30 s")
    }

    @Test func anErrorIsQualifiedByItsType() {
        #expect(TrackedTasks.describe(LoadError.offline) == "LoadError.offline")
        #expect(TrackedTasks.describe(LoadError.status(404)) == "LoadError.status(404)")
        #expect(TrackedTasks.describe(ParseError(line: 3)) == "ParseError(line: 3)")
        #expect(TrackedTasks.describe(ServerError()) == "the server is offline (ServerError)")
        #expect(TrackedTasks.describe(Outage.down) == "the service is down (Outage)")
    }

    @Test func theUnobservedErrorMessageNamesTheErrorWithItsType() async throws {
        let dispatcher = ManualDispatcher()
        let task = dispatcher.startTask(label: "refresh") { throw LoadError.offline }
        try await dispatcher.runNext()  // the start
        _ = await task.result  // waits for the end without claiming the error
        let error = try #require(throws: ManualDispatcherError.self) { try dispatcher.verifyIdle() }
        #expect(error.summary.contains("\"refresh\" started at TaskDispatchTestingTests/MessageFormatTests.swift:"))
        #expect(error.summary.contains(" threw LoadError.offline. In production such an error vanishes"))
    }
}
