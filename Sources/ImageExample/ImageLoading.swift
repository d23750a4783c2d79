/// Loads images by identifier and calls back on the main actor: the API a view model depends on.
///
/// ``ImageLoader`` is the implementation. The protocol lets a test run the same checks against another
/// implementation, as the example's tests do with a deliberately buggy one.
///
/// ```swift
/// loader.loadImage(id: "123") { result in
///     // on the main actor: show the image or the error
/// }
/// ```
public protocol ImageLoading: Sendable {
    /// Fetches, decodes and caches the image with the given identifier, then calls `completion` on the main actor.
    ///
    /// - Parameters:
    ///   - id: The image's identifier.
    ///   - completion: Called once, on the main actor, with the image or the reason there is none.
    func loadImage(id: String, completion: @escaping @Sendable (Result<DecodedImage, ImageLoadingError>) -> Void)
}
