// feed-demo: loads the feeds shipped in this target's resource bundle with a production dispatcher.
//
// Each FeedModel refreshes in a task it starts through the dispatcher (a plain Task, in production): it fetches
// and parses its feed in the background ("parse") and delivers the items on the main actor ("deliver"). One feed
// fails its first fetch and is retried after a back-off sleep on the dispatcher's clock (the real clock, in
// production); one feed does not exist and fails after every attempt. The back-off base is 100 ms, so the whole
// run takes well under a second.
//
// Top-level code runs on the main actor, and `await` here keeps the main queue (where deliveries run) turning.

import FeedExample
import Foundation
import TaskDispatch

guard let folder = Bundle.module.url(forResource: "feeds", withExtension: nil) else {
    FileHandle.standardError.write(Data("feed-demo: the feeds folder is missing from the resource bundle\n".utf8))
    exit(1)
}

let dispatcher = QueueDispatcher()
let source = FlakyFeedSource(wrapping: DirectoryFeedSource(directory: folder), failingFirstFetchOf: ["testing-async"])
let retryPolicy = RetryPolicy(maxAttempts: 3, baseDelay: .milliseconds(100))
let feedNames = ["swift-notes", "testing-async", "release-notes", "missing-feed"]

let clock = ContinuousClock()
let start = clock.now
print(
    "Loading \(feedNames.count) feeds from \(folder.lastPathComponent)/ (retry: \(retryPolicy.maxAttempts) attempts, "
        + "back-off from \(retryPolicy.baseDelay))")

let models = feedNames.map {
    FeedModel(feedName: $0, source: source, dispatcher: dispatcher, retryPolicy: retryPolicy)
}
let refreshes = models.map { $0.refresh() }

var failures = 0
for (model, refreshing) in zip(models, refreshes) {
    let state = try await refreshing.value  // throws only if the task was cancelled before it began
    print("")
    switch state {
    case .loaded:
        let retried = model.attempts > 1 ? ", after \(model.attempts) attempts" : ""
        print("\(model.feedName): \(model.title ?? "untitled") (\(count(model.items.count, "item"))\(retried))")
        for item in model.items {
            let date = item.published.map { $0.formatted(.iso8601.year().month().day()) } ?? "undated"
            print("  \(date)  \(item.title)")
            if let url = item.url { print("              \(url.absoluteString)") }
        }
    case .failed(let error):
        failures += 1
        print("\(model.feedName): failed: \(error)")
    case .idle, .loading:
        print("\(model.feedName): unexpected state \(state)")
    }
}

let elapsed = start.duration(to: clock.now)
print("")
print(
    "Done in \(elapsed.formatted(.units(allowed: [.milliseconds], width: .abbreviated))): "
        + "\(models.count - failures) loaded, \(failures) failed (as expected: missing-feed does not exist).")

func count(_ number: Int, _ noun: String) -> String {
    "\(number) \(noun)\(number == 1 ? "" : "s")"
}
