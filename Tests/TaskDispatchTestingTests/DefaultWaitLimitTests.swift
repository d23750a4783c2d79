import Foundation
import Testing

@testable import TaskDispatchTesting

/// `TASKDISPATCH_WAIT_LIMIT`: read once per process into `ManualDispatcher.defaultWaitLimit`, so the parsing is
/// checked here on strings, and the process's own value (set by the CI's sanitizer steps) on a dispatcher.
@Suite struct DefaultWaitLimitTests {
    @Test(arguments: [
        ("60", Duration.seconds(60)), (" 2.5\n", .milliseconds(2_500)), ("0.001", .milliseconds(1)),
        ("31536000", .seconds(31_536_000)), ("0.000000001", .nanoseconds(1)),
    ])
    func aNumberOfSecondsSetsTheDefault(value: String, limit: Duration) {
        let reports = Locked<[String]>([])
        #expect(
            ManualDispatcher.waitLimit(fromEnvironment: value) { text in reports.withLock { $0.append(text) } } == limit
        )
        #expect(reports.withLock { $0 }.isEmpty)
    }

    @Test func unsetLeavesTenSecondsQuietly() {
        let reports = Locked<[String]>([])
        #expect(
            ManualDispatcher.waitLimit(fromEnvironment: nil) { text in reports.withLock { $0.append(text) } }
                == .seconds(10))
        #expect(reports.withLock { $0 }.isEmpty)
    }

    @Test(arguments: ["", "sixty", "60s", "6 0", "0", "-5", "nan", "inf", "31536001", "1e300", "1e-12"])
    func anythingElseIsReportedAndLeavesTenSeconds(value: String) throws {
        let reports = Locked<[String]>([])
        #expect(
            ManualDispatcher.waitLimit(fromEnvironment: value) { text in reports.withLock { $0.append(text) } }
                == .seconds(10))
        let report = try #require(reports.withLock { $0 }.first)
        #expect(
            report
                == "TaskDispatch: TASKDISPATCH_WAIT_LIMIT is \"\(value)\", not a number of seconds from a nanosecond to a year (such as 60); ManualDispatcher's default wait limit stays 10 s\n"
        )
    }

    @Test func aDispatcherCreatedWithoutALimitTakesTheProcesssDefault() {
        let environment = ProcessInfo.processInfo.environment["TASKDISPATCH_WAIT_LIMIT"]
        let expected = ManualDispatcher.waitLimit(fromEnvironment: environment) { _ in }
        #expect(ManualDispatcher.defaultWaitLimit == expected)
        #expect(ManualDispatcher().waitLimit == expected)
        #expect(ManualDispatcher(waitLimit: .seconds(3)).waitLimit == .seconds(3))
    }
}
