// swift-tools-version:6.2
// UnlockIT: digital keys for a company's doors.
//
// Dependencies point one way:
//   UnlockITCore  ←  UnlockITStore, LockProtocol, MQTT  ←  UnlockITServer  ←  executables
//   Posix (nothing)  ←  MQTT, LockFirmware, UnlockITClient, SiteHarness
// The C libraries (libcrypto, libmosquitto) are reached only through the two tiny
// system-library shims, and only LockProtocol and MQTT import them. Posix reads the system's C
// structs (stat, sockaddr_in) where NIO's C module, which declares them too, is never loaded.

import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
    name: "UnlockIT",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "unlockit-server", targets: ["unlockit-server"]),
        .executable(name: "unlockit-lock", targets: ["unlockit-lock"]),
        .executable(name: "unlockit", targets: ["unlockit"]),
        .executable(name: "unlockit-bench", targets: ["unlockit-bench"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "4.5.2"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
    ],
    targets: [
        // MARK: C shims
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev", "libssl-dev"])]),

        // MARK: Libraries
        .target(name: "UnlockITCore", swiftSettings: strict),
        .target(name: "Posix", swiftSettings: strict),
        .target(name: "LockProtocol", dependencies: ["UnlockITCore", "CLibCrypto"], swiftSettings: strict),
        .target(
            name: "MQTT",
            dependencies: ["CMosquitto", "Posix", .product(name: "Logging", package: "swift-log")],
            swiftSettings: strict
        ),
        .target(
            name: "UnlockITStore",
            dependencies: [
                "UnlockITCore",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .target(
            name: "UnlockITServer",
            dependencies: [
                "UnlockITCore", "UnlockITStore", "LockProtocol", "MQTT",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            resources: [.copy("OpenAPI/openapi.json")],
            swiftSettings: strict
        ),
        .target(
            name: "LockFirmware",
            dependencies: ["UnlockITCore", "LockProtocol", "MQTT", "Posix", .product(name: "Logging", package: "swift-log")],
            path: "firmware-sim/Sources/LockFirmware",
            swiftSettings: strict
        ),
        .target(
            name: "UnlockITLocalization",
            path: "Localization",
            exclude: ["README.md"],
            resources: [.copy("Catalogs")],
            swiftSettings: strict
        ),
        .target(
            name: "UnlockITClient",
            dependencies: [
                "UnlockITCore", "UnlockITLocalization", "Posix",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict
        ),

        // MARK: Executables
        .executableTarget(
            name: "unlockit-server",
            dependencies: ["UnlockITServer", "MQTT", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "unlockit-lock",
            dependencies: [
                "LockFirmware",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            path: "firmware-sim/Sources/unlockit-lock",
            swiftSettings: strict
        ),
        .executableTarget(name: "unlockit", dependencies: ["UnlockITClient"], swiftSettings: strict),
        .executableTarget(
            name: "unlockit-bench",
            dependencies: [
                "UnlockITCore", "UnlockITStore", "LockProtocol", "MQTT", "SiteHarness",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),

        // MARK: Real processes, for the end-to-end tests and the benchmark
        .target(
            name: "SiteHarness",
            dependencies: [
                "Posix",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: strict
        ),

        // MARK: Tests
        .testTarget(name: "UnlockITCoreTests", dependencies: ["UnlockITCore"], swiftSettings: strict),
        .testTarget(
            name: "LockProtocolTests",
            dependencies: ["LockProtocol", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: strict
        ),
        .testTarget(name: "PosixTests", dependencies: ["Posix"], swiftSettings: strict),
        .testTarget(name: "MQTTTests", dependencies: ["MQTT", "Posix", "SiteHarness"], swiftSettings: strict),
        .testTarget(
            name: "UnlockITStoreTests",
            dependencies: ["UnlockITStore", "SiteHarness", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),
        .testTarget(
            name: "UnlockITServerTests",
            dependencies: [
                "UnlockITServer", "UnlockITStore", "SiteHarness",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: strict
        ),
        .testTarget(name: "LockFirmwareTests", dependencies: ["LockFirmware", "LockProtocol", "MQTT", "SiteHarness"], swiftSettings: strict),
        .testTarget(
            name: "UnlockITClientTests",
            dependencies: [
                "UnlockITClient", "UnlockITLocalization", "UnlockITCore", "SiteHarness",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: strict),
        .testTarget(
            name: "EndToEndTests",
            dependencies: ["SiteHarness", "LockProtocol", "MQTT", "Posix", "UnlockITCore", .product(name: "GRDB", package: "GRDB.swift")],
            swiftSettings: strict
        ),
    ]
)
