// swift-tools-version:6.0
// A user's package, outside TaskDispatch: it sees only the public API, with the imports the README shows and the
// upcoming features a careful user turns on. `.ci/run` builds and tests it.
import PackageDescription

let package = Package(
    name: "Client",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    dependencies: [.package(name: "TaskDispatch", path: "../..")],
    targets: [
        .testTarget(
            name: "ClientTests",
            dependencies: [
                .product(name: "TaskDispatchTesting", package: "TaskDispatch"),
                .product(name: "TaskDispatchTestingTraits", package: "TaskDispatch"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
                .enableUpcomingFeature("InternalImportsByDefault"),
            ]
        )
    ]
)
