// swift-tools-version:6.2
// The swift-dependencies injection recipe, compiled and tested outside TaskDispatch: the main package keeps no
// dependencies, so the recipe that needs one lives in this nested package. `.ci/run` tests it.
import PackageDescription

let package = Package(
    name: "DependenciesRecipe",
    platforms: [.macOS(.v13), .iOS(.v16), .tvOS(.v16), .watchOS(.v9), .visionOS(.v1)],
    dependencies: [
        .package(name: "TaskDispatch", path: "../.."),
        .package(url: "https://github.com/pointfreeco/swift-dependencies", from: "1.17.1"),
        // Already in the graph through swift-dependencies; named here for the migration guide's "before" code.
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.0.0"),
        .package(url: "https://github.com/pointfreeco/swift-concurrency-extras", from: "1.0.0"),
    ],
    targets: [
        .target(
            name: "DependenciesRecipe",
            dependencies: [
                .product(name: "TaskDispatch", package: "TaskDispatch"),
                .product(name: "Dependencies", package: "swift-dependencies"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
                .enableUpcomingFeature("InternalImportsByDefault"),
            ]
        ),
        .testTarget(
            name: "DependenciesRecipeTests",
            dependencies: [
                "DependenciesRecipe",
                .product(name: "TaskDispatchTesting", package: "TaskDispatch"),
                .product(name: "Dependencies", package: "swift-dependencies"),
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "ConcurrencyExtras", package: "swift-concurrency-extras"),
            ],
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
                .enableUpcomingFeature("InternalImportsByDefault"),
            ]
        ),
    ]
)
