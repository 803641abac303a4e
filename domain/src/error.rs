//! The contract between domain errors and the HTTP layer.
//!
//! A domain error names its [`Code`]; the code carries its class, and the API maps a
//! class to a status in exactly one place, so a domain module never mentions HTTP.

pub use crate::codes::Code;

/// The kind of refusal, which the API layer turns into a status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// A malformed request or an invalid custom-table configuration (400).
    BadRequest,
    /// Request validation (422).
    Validation,
    /// A real permission refusal (403).
    Forbidden,
    /// Hidden or missing (404).
    NotFound,
    /// A state conflict (409).
    Conflict,
    /// A body over its limit (413).
    TooLarge,
    /// A migration holds the resource (423).
    Locked,
    /// Too many requests (429).
    RateLimited,
    /// A bug (500).
    Internal,
    /// A dependency or switch is unavailable (503).
    Unavailable,
}

/// A domain error that carries the spec's machine code.
pub trait SpecError: std::error::Error {
    /// The error's code, for example [`Code::PolicyVersionConflict`].
    fn code(&self) -> Code;
    /// The class the error belongs to (the code's, unless the error says otherwise).
    fn class(&self) -> ErrorClass {
        self.code().class()
    }
    /// Field problems, for errors the spec answers with the validation array.
    fn violations(&self) -> Option<&crate::validation::Violations> {
        None
    }
    /// Facts the answer carries beside the code and message (for example how many
    /// records still use an option), as extra fields of the error body.
    fn details(&self) -> Vec<(&'static str, serde_json::Value)> {
        Vec::new()
    }
}
