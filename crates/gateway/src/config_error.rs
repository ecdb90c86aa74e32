//! Why a configuration cannot be used, as a type: settings and auth say
//! which setting failed and on what (a value, a file, an environment
//! variable), so callers can tell them apart; the message is the one a
//! person reads at start-up.

use std::path::PathBuf;

/// A configuration that cannot be used. Start-up refuses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// A setting's value is not acceptable.
    Value {
        setting: &'static str,
        message: String,
    },
    /// A file the configuration names cannot be read or is not what it
    /// must be (TOML, PEM key, JWKS).
    File {
        setting: &'static str,
        path: PathBuf,
        message: String,
    },
    /// An environment variable the configuration names is unset or empty.
    Variable {
        setting: &'static str,
        variable: String,
        message: String,
    },
}

impl ConfigError {
    /// The setting (or section) at fault, as written in `sezzlee.toml`.
    pub fn setting(&self) -> &'static str {
        match self {
            ConfigError::Value { setting, .. }
            | ConfigError::File { setting, .. }
            | ConfigError::Variable { setting, .. } => setting,
        }
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Value { message, .. }
            | ConfigError::File { message, .. }
            | ConfigError::Variable { message, .. } => f.write_str(message),
        }
    }
}

impl std::error::Error for ConfigError {}
