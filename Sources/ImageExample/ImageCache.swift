import Foundation

/// The decoded images an ``ImageLoader`` has delivered, by identifier.
///
/// `@unchecked Sendable`: `images` is only read or written while `lock` is held. The loader writes it only on
/// the main actor, when it delivers; it reads it from whatever thread calls `loadImage(id:completion:)`.
final class ImageCache: @unchecked Sendable {
    private let lock = NSLock()
    private var images: [String: DecodedImage] = [:]

    /// The image stored for `id`, if any.
    func image(for id: String) -> DecodedImage? {
        self.lock.lock()
        defer { self.lock.unlock() }
        return self.images[id]
    }

    /// Stores `image` for `id`, replacing any earlier one.
    func store(_ image: DecodedImage, for id: String) {
        self.lock.lock()
        defer { self.lock.unlock() }
        self.images[id] = image
    }
}
