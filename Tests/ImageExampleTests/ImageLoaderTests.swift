import ImageExample
import TaskDispatchTesting
import Testing

@Suite struct ImageLoaderTests {
    @Test @MainActor func deliversACachedImageInItsOwnForegroundStep() throws {
        let dispatcher = ManualDispatcher()
        let source = TableImageSource()
        let loader = ImageLoader(source: source, dispatcher: dispatcher)
        let deliveries = Deliveries()
        loader.loadImage(id: "cat") { deliveries.record($0) }
        try dispatcher.runUntilIdle()

        loader.loadImage(id: "cat") { deliveries.record($0) }
        #expect(dispatcher.pendingTasks.map(\.label) == ["deliver cached"])
        #expect(deliveries.results.count == 1)  // never before loadImage returns
        try dispatcher.runNextForeground()
        #expect(deliveries.results == [.success(cat), .success(cat)])
        #expect(source.fetchCount == 1)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func retriesAfterTheDelayOnTheDispatchersClock() throws {
        let dispatcher = ManualDispatcher()
        let loader = ImageLoader(source: TableImageSource(failures: 1), dispatcher: dispatcher)
        let deliveries = Deliveries()
        loader.loadImage(id: "cat") { deliveries.record($0) }

        try dispatcher.runNextBackground()  // the first fetch fails
        #expect(dispatcher.pendingTaskCount == 1)
        try dispatcher.advance(by: .milliseconds(999))
        #expect(deliveries.results.isEmpty)  // still waiting to retry
        try dispatcher.advance(by: .milliseconds(1))  // the retry, then the delivery
        #expect(deliveries.results == [.success(cat)])
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func cancelAllLoadsStopsAPendingRetryAndItsCompletion() throws {
        let dispatcher = ManualDispatcher()
        let loader = ImageLoader(source: TableImageSource(failures: 1), dispatcher: dispatcher)
        let deliveries = Deliveries()
        loader.loadImage(id: "cat") { deliveries.record($0) }
        loader.loadImage(id: "dog") { deliveries.record($0) }
        try dispatcher.runNextBackground()  // the first fetch fails: a retry waits 1 s
        #expect(dispatcher.pendingTaskCount == 2)  // the retry, and the second load's fetch

        loader.cancelAllLoads()
        #expect(dispatcher.pendingTaskCount == 0)
        try dispatcher.advance(by: .seconds(5))
        #expect(deliveries.results.isEmpty)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func givesUpAfterTheLastAttempt() throws {
        let dispatcher = ManualDispatcher(mode: .autoAdvance)
        let loader = ImageLoader(source: TableImageSource(failures: 5), dispatcher: dispatcher, maxAttempts: 3)
        let deliveries = Deliveries()
        loader.loadImage(id: "cat") { deliveries.record($0) }
        #expect(deliveries.results == [.failure(.fetchFailed(attempts: 3, lastError: "the server is unreachable"))])
        #expect(loader.cachedImage(for: "cat") == nil)
        try dispatcher.verifyIdle()
    }

    @Test @MainActor func deliversADecodingFailure() throws {
        let dispatcher = ManualDispatcher(mode: .autoDrain)
        let loader = ImageLoader(source: TableImageSource(["junk": [1, 2, 3]]), dispatcher: dispatcher)
        let deliveries = Deliveries()
        loader.loadImage(id: "junk") { deliveries.record($0) }
        #expect(deliveries.results == [.failure(.undecodable(.unknownFormat(byteCount: 3)))])
        try dispatcher.verifyIdle()
    }
}

@Suite struct ImageDecoderTests {
    @Test func decodesAPNGHeader() throws {
        #expect(try ImageDecoder.decode(pngBytes(width: 640, height: 480)) == cat)
    }

    @Test func decodesAGIFHeader() throws {
        let bytes = Array("GIF89a".utf8) + [0x40, 0x01, 0xF0, 0x00]
        #expect(try ImageDecoder.decode(bytes) == DecodedImage(format: .gif, width: 320, height: 240))
    }

    @Test func rejectsWhatIsNotAnImage() {
        #expect(throws: ImageDecodingError.unknownFormat(byteCount: 3)) { try ImageDecoder.decode([1, 2, 3]) }
        #expect(throws: ImageDecodingError.truncated(format: .png, byteCount: 10)) {
            try ImageDecoder.decode(Array(pngBytes(width: 1, height: 1).prefix(10)))
        }
        #expect(throws: ImageDecodingError.emptyImage(format: .png)) {
            try ImageDecoder.decode(pngBytes(width: 0, height: 4))
        }
    }
}
