// TaskDispatch's ManualDispatcher beside its peers, on the same work in one process:
// `swift run -c release --package-path Tests/PeerBenchmark PeerBenchmark [--quick | --full | --sleepers]`.
// Every row is a median of alternating runs; ratios compare rows of the same run. Timing never fails the process;
// a contender that runs the wrong number of closures, or a scenario whose checks fail, does.
import Dispatch
import Foundation

@main
enum PeerBenchmark {
    @MainActor
    static func main() async {
        var configuration = Configuration.quick
        let arguments = Array(CommandLine.arguments.dropFirst())
        switch arguments {
        case []: break
        case ["--quick"]: configuration = .quick
        case ["--full"]: configuration = .full
        case ["--sleepers"]: configuration = .sleepersOnly
        case ["--scenarios"]: configuration = .scenariosOnly
        case ["--profile-scenario", "pointfree"], ["--profile-scenario", "taskdispatch"]:
            // For `perf stat`: one way only, so that its context switches are counted alone.
            do {
                try await profileScenario(pointFree: arguments[1] == "pointfree", cases: 5_000)
            } catch {
                print("error: \(error)")
                exit(1)
            }
            exit(0)
        default:
            print(
                "usage: PeerBenchmark [--quick | --full | --sleepers | --scenarios"
                    + " | --profile-scenario pointfree|taskdispatch]")
            exit(2)
        }
        let seconds = configuration.name == "full" ? 1_800.0 : 300.0
        DispatchQueue.global().asyncAfter(deadline: .now() + seconds) {
            print("watchdog: the benchmark took over \(Int(seconds)) s; stopping")
            exit(1)
        }
        print("## ManualDispatcher and its peers (\(configuration.name) run)")
        do {
            if !configuration.sizes.isEmpty { try await perTaskTables(configuration) }
            try await sleeperTable(configuration)
            if configuration.cases > 0 { try await scenarioTable(configuration) }
        } catch {
            print("error: \(error)")
            exit(1)
        }
    }
}
