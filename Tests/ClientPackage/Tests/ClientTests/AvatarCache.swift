// The production code of the recipe "A started task shared by its callers": it imports only TaskDispatch, as app
// code does.
import TaskDispatch

/// Where avatars come from: the network in the app, a stub in tests.
protocol AvatarServer: Sendable {
    func avatar(for user: String) throws -> [UInt8]
}

/// Downloads each user's avatar once, however many views ask for it.
actor AvatarCache {
    private let server: any AvatarServer
    private let dispatcher: any TaskDispatcher
    private var downloads: [String: Task<[UInt8], any Error>] = [:]

    init(server: any AvatarServer, dispatcher: any TaskDispatcher) {
        self.server = server
        self.dispatcher = dispatcher
    }

    func avatar(for user: String) async throws -> [UInt8] {
        let download = self.downloads[user] ?? self.startDownload(for: user)
        return try await self.dispatcher.value(of: download)  // `download.value` in production
    }

    private func startDownload(for user: String) -> Task<[UInt8], any Error> {
        let (server, dispatcher) = (self.server, self.dispatcher)
        let download = dispatcher.startTask(label: "download \(user)") {
            try await dispatcher.runInBackground(label: "fetch \(user)") { try server.avatar(for: user) }
        }
        self.downloads[user] = download
        return download
    }
}

/// A view's model: one user's avatar, or the error that kept it away.
@MainActor
final class AvatarModel {
    private(set) var avatar: [UInt8]?
    private(set) var error: (any Error)?
    private let cache: AvatarCache
    private let dispatcher: any TaskDispatcher

    init(cache: AvatarCache, dispatcher: any TaskDispatcher) {
        self.cache = cache
        self.dispatcher = dispatcher
    }

    func show(_ user: String) {
        self.dispatcher.startTask(label: "show \(user)") {
            do {
                self.avatar = try await self.cache.avatar(for: user)
            } catch {
                self.error = error
            }
        }
    }
}
