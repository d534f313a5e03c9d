//! The one error a dialect raises on bad input (contract rule 10).

use std::fmt;

/// A bad input item; the message is exactly what `CrumbError` carries in Python.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrumbError(pub String);

impl CrumbError {
    #[cold]
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }

    pub fn message(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for CrumbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CrumbError {}
