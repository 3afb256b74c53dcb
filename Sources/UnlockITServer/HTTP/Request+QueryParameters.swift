import Hummingbird

extension Request {
    /// The query's parameters by name, refusing any name not in `known` (400 `unknown_field`) and any
    /// given twice (400 `invalid_field`): a misspelt `dryRun` would otherwise import for real, and a
    /// misspelt filter answer with the whole list as if it had been applied.
    func queryParameters(known: Set<String>) throws -> [String: String] {
        var parameters: [String: String] = [:]
        for (name, value) in uri.queryParameters {
            let name = String(name)
            guard known.contains(name) else { throw APIError.unknownParameter(String(name.prefix(64))) }
            guard parameters.updateValue(String(value), forKey: name) == nil else { throw APIError.invalidField(name, "given more than once") }
        }
        return parameters
    }
}
