import ImageExample
import TaskDispatchTesting
import Testing

// The same load tested three ways. The article "Testing the image loader three ways" shows these tests side by side,
// with the usual way in XCTest (ImageLoaderXCTests.swift); this is its Swift Testing form.

// snippet: continuation-test
/// The usual way in Swift Testing: a real dispatcher, and a wait for the callback bounded by a time limit.
@Test(.timeLimit(.minutes(1))) func loadsAnImageWithARealDispatcher() async {
    let loader = ImageLoader(source: TableImageSource(), dispatcher: QueueDispatcher())
    let result = await loadThroughTheCallback(loader, id: "cat")
    #expect(result == .success(cat))
    #expect(loader.cachedImage(for: "cat") == cat)
}

/// Waits for the one call of the completion handler, from whatever thread makes it.
func loadThroughTheCallback(
    _ loader: some ImageLoading,
    id: String
) async -> Result<DecodedImage, ImageLoadingError> {
    await withCheckedContinuation { continuation in
        loader.loadImage(id: id) { result in continuation.resume(returning: result) }
    }
}
// end-snippet

// snippet: stepped-test
/// Stepped: a `ManualDispatcher` runs the fetch, then the delivery, and the test looks in between.
@Test @MainActor func loadsAnImageStepByStep() throws {
    let dispatcher = ManualDispatcher()
    let loader = ImageLoader(source: TableImageSource(), dispatcher: dispatcher)
    try stepThroughALoad(loader, on: dispatcher)
    #expect(loader.cachedImage(for: "cat") == cat)
}

/// Loads "cat" one step at a time and checks what each step did.
@MainActor func stepThroughALoad(_ loader: some ImageLoading, on dispatcher: ManualDispatcher) throws {
    let deliveries = Deliveries()
    loader.loadImage(id: "cat") { result in deliveries.record(result) }
    #expect(deliveries.results.isEmpty)  // nothing runs until the test says so

    try dispatcher.runNextBackground()  // "fetch": fetched and decoded, off the main actor
    #expect(deliveries.results.isEmpty)  // decoded, not delivered yet

    try dispatcher.runNextForeground()  // "deliver": on the main actor
    #expect(deliveries.results == [.success(cat)])
    try dispatcher.verifyIdle()
}
// end-snippet

// snippet: auto-advance-test
/// Auto-advance: every task runs as it is dispatched and the clock jumps over the retry delays.
@Test @MainActor func retriesUntilTheImageArrives() throws {
    let dispatcher = ManualDispatcher(mode: .autoAdvance)
    let source = TableImageSource(failures: 2)
    let loader = ImageLoader(source: source, dispatcher: dispatcher)
    let deliveries = Deliveries()

    loader.loadImage(id: "cat") { result in deliveries.record(result) }

    #expect(deliveries.results == [.success(cat)])
    #expect(source.fetchCount == 3)
    #expect(dispatcher.now == .seconds(2))  // two retries, 1 s apart, in no real time
    try dispatcher.verifyIdle()
}
// end-snippet
