import ArgumentParser
import Foundation
import UnlockITCore
import UnlockITServer
import UnlockITStore

struct Bootstrap: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create a company and its first admin, and print the admin's one-time initial password.",
        discussion: "Run on the server host by an operator. There are no default accounts: this is how the first one is made.")

    @OptionGroup var settings: ConfigOptions

    @Option(help: "The company's name.")
    var company: String

    @Option(help: "The first admin's email address (their sign-in name).")
    var adminEmail: String

    @Option(help: "The first admin's display name.")
    var adminName: String = "Administrator"

    func run() async throws {
        let configuration = try settings.load()
        guard let companyName = Validation.name(company) else { throw ValidationError("The company name must be 1–100 characters.") }
        guard let email = Validation.email(adminEmail) else { throw ValidationError("\"\(adminEmail)\" is not an email address.") }
        guard let name = Validation.name(adminName) else { throw ValidationError("The admin name must be 1–100 characters.") }
        let store = try SQLiteStore(path: configuration.databasePath)
        let company: Company
        let password: String
        do {
            (company, password) = try await CompanyBootstrap(
                store: store, hasher: PasswordHasher(cost: configuration.bcryptCost, concurrency: 1)
            ).run(companyName: companyName, adminEmail: email, adminName: name)
        } catch StoreError.emailTaken {
            throw ValidationError("\(email) already has an account; choose another email for the first admin.")
        }
        print(
            """
            Created company "\(company.name)" (\(company.id)) and its admin \(email).
            Initial password (shown once; it must be changed at first sign-in): \(password)
            """)
    }
}
