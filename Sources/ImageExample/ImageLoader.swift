public import TaskDispatch

/// The image-loading service of the classic objc.io testing article, written against an injected dispatcher.
///
/// ``loadImage(id:completion:)`` answers from the cache when it can. Otherwise it fetches the bytes from its
/// ``ImageSource`` and decodes them in one background task labeled `"fetch"`, retries a failed fetch after
/// ``retryDelay`` (up to ``maxAttempts`` fetches in all), and delivers in a foreground task labeled `"deliver"`,
/// which stores the image in the cache and calls the completion on the main actor. A cached image is delivered
/// by a foreground task labeled `"deliver cached"`, so the completion never runs before `loadImage` returns.
///
/// Production code passes `QueueDispatcher()`; tests pass a `ManualDispatcher` and step the load:
///
/// ```swift
/// let dispatcher = ManualDispatcher()
/// let loader = ImageLoader(source: source, dispatcher: dispatcher)
/// loader.loadImage(id: "cat") { result in delivered = result }
/// try dispatcher.runNextBackground()      // "fetch": fetched and decoded, off the main actor
/// try dispatcher.runNextForeground()      // "deliver": cached, and the completion called on the main actor
/// ```
///
/// Every task goes through a ``DispatchScope`` the loader owns, so ``cancelAllLoads()`` (a screen that goes away)
/// stops the fetches and retries still to come, and no completion is called for them.
public final class ImageLoader: ImageLoading {
    /// The most fetches one load makes before it delivers ``ImageLoadingError/fetchFailed(attempts:lastError:)``.
    public let maxAttempts: Int
    /// How long the loader waits, on the dispatcher's clock, before it fetches again after a failure.
    public let retryDelay: Duration

    private let source: any ImageSource
    private let dispatcher: DispatchScope
    private let cache = ImageCache()

    /// Creates a loader.
    ///
    /// - Parameters:
    ///   - source: Where the image bytes come from; called on a background thread.
    ///   - dispatcher: Runs the fetch in the background and the delivery on the main actor.
    ///   - maxAttempts: The most fetches one load makes; values below 1 count as 1.
    ///   - retryDelay: The wait before each fetch after a failed one.
    public init(
        source: any ImageSource,
        dispatcher: any TaskDispatcher,
        maxAttempts: Int = 3,
        retryDelay: Duration = .seconds(1)
    ) {
        self.source = source
        self.dispatcher = DispatchScope(dispatcher)
        self.maxAttempts = max(1, maxAttempts)
        self.retryDelay = retryDelay
    }

    /// Cancels every load in progress: fetches and retries that have not started never run, and their completions
    /// are never called. The loader loads nothing after it: call it when the screen it serves goes away.
    public func cancelAllLoads() {
        self.dispatcher.cancelAll()
    }

    /// The image delivered earlier for `id`, if the cache holds one.
    ///
    /// - Parameter id: The image's identifier.
    /// - Returns: The cached image, or `nil` when no load of `id` has delivered an image yet.
    public func cachedImage(for id: String) -> DecodedImage? {
        self.cache.image(for: id)
    }

    /// Delivers the image with the given identifier on the main actor, from the cache or from the source.
    ///
    /// See ``ImageLoader`` for the tasks a load dispatches and their labels.
    ///
    /// - Parameters:
    ///   - id: The image's identifier.
    ///   - completion: Called once, on the main actor, with the image or the reason there is none.
    public func loadImage(
        id: String,
        completion: @escaping @Sendable (Result<DecodedImage, ImageLoadingError>) -> Void
    ) {
        if let image = self.cache.image(for: id) {
            self.dispatcher.foreground(label: "deliver cached") { completion(.success(image)) }
            return
        }
        self.fetch(id: id, attempt: 1, after: .zero, completion: completion)
    }

    private func fetch(
        id: String,
        attempt: Int,
        after delay: Duration,
        completion: @escaping @Sendable (Result<DecodedImage, ImageLoadingError>) -> Void
    ) {
        self.dispatcher.background(after: delay, label: "fetch") {
            let bytes: [UInt8]
            do {
                bytes = try self.source.imageData(for: id)
            } catch {
                guard attempt < self.maxAttempts else {
                    let failure = ImageLoadingError.fetchFailed(attempts: attempt, lastError: "\(error)")
                    self.deliver(.failure(failure), for: id, completion: completion)
                    return
                }
                self.fetch(id: id, attempt: attempt + 1, after: self.retryDelay, completion: completion)
                return
            }
            do throws(ImageDecodingError) {
                self.deliver(.success(try ImageDecoder.decode(bytes)), for: id, completion: completion)
            } catch {
                self.deliver(.failure(.undecodable(error)), for: id, completion: completion)
            }
        }
    }

    private func deliver(
        _ result: Result<DecodedImage, ImageLoadingError>,
        for id: String,
        completion: @escaping @Sendable (Result<DecodedImage, ImageLoadingError>) -> Void
    ) {
        self.dispatcher.foreground(label: "deliver") {
            if case .success(let image) = result {
                self.cache.store(image, for: id)
            }
            completion(result)
        }
    }
}
