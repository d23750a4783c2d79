import ImageExample
import TaskDispatch

// snippet: buggy-loader
/// The planted bug: a loader that skips the hop to the main actor once the image is decoded.
///
/// It calls the completion from the background task, on whatever thread the dispatcher runs it, and so
/// writes the caller's state off the main actor. The completion's type is `@Sendable`, not `@MainActor`,
/// as in many callback APIs, so Swift 6 accepts it.
final class BuggyImageLoader: ImageLoading {
    let source: any ImageSource
    let dispatcher: any TaskDispatcher

    init(source: any ImageSource, dispatcher: any TaskDispatcher) {
        self.source = source
        self.dispatcher = dispatcher
    }

    func loadImage(
        id: String,
        completion: @escaping @Sendable (Result<DecodedImage, ImageLoadingError>) -> Void
    ) {
        self.dispatcher.background(label: "fetch") {
            do {
                let bytes = try self.source.imageData(for: id)
                completion(.success(try ImageDecoder.decode(bytes)))  // BUG: not on the main actor
            } catch {
                completion(.failure(.fetchFailed(attempts: 1, lastError: "\(error)")))
            }
        }
    }
}
// end-snippet
