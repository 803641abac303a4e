//! The contract between domain errors and the HTTP layer.
//!
//! A domain error names its spec error code and its class; the API maps a class to a
//! status in exactly one place, so a domain module never mentions HTTP.

/// The kind of refusal, which the API layer turns into a status code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorClass {
    /// Request validation (422).
    Validation,
    /// A real permission refusal (403).
    Forbidden,
    /// Hidden or missing (404).
    NotFound,
    /// A state conflict (409).
    Conflict,
    /// Too many requests (429).
    RateLimited,
    /// A dependency or switch is unavailable (503).
    Unavailable,
}

/// A domain error that carries the spec's machine code.
pub trait SpecError: std::error::Error {
    /// The class the error belongs to.
    fn class(&self) -> ErrorClass;
    /// The spec's error code, for example `policy_version_conflict`.
    fn code(&self) -> &'static str;
    /// Field problems, for errors the spec answers with the validation array.
    fn violations(&self) -> Option<&crate::validation::Violations> {
        None
    }
}
