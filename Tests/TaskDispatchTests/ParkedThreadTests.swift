import Testing

/// The suites whose tests park a thread of a production dispatcher (a background task that waits on a gate the
/// test opens later), run one test at a time.
///
/// On Linux, Dispatch's global queues and Swift concurrency's cooperative pool draw on one pool of worker threads,
/// as wide as the machine has cores, which grows only about once a second when all of them are blocked. Several
/// such tests at once leave no thread to resume the tests themselves, and every test in the process stalls for
/// seconds: long enough for a real-time limit elsewhere to expire. One at a time, they park at most two threads.
@Suite(.serialized) enum ParkedThreadTests {}
