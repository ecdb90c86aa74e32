//! Where the gateway reads its environment variables: secrets named by
//! the settings (`auth.api_keys[].key_env`, `auth.jwt.hs256_secret_env`,
//! `backend.auth.client_secret_env`) and `${VARIABLE}`s in backend URLs and
//! headers.
//!
//! A served gateway reads the process environment. Anything that starts
//! gateways in a process with other threads (the integration tests, a
//! program embedding the gateway) gives each its own variables instead
//! ([`Environment::fixed`]): changing the process environment while other
//! threads read it is undefined behaviour, and would let one gateway see
//! another's secrets.

use std::collections::HashMap;
use std::sync::Arc;

/// The variables a gateway sees.
#[derive(Clone, Default)]
pub struct Environment {
    /// `None`: the process environment.
    fixed: Option<Arc<HashMap<String, String>>>,
}

impl Environment {
    /// The process environment, read when a variable is asked for.
    pub fn process() -> Environment {
        Environment::default()
    }

    /// Exactly `variables`, whatever the process environment holds.
    pub fn fixed<K: Into<String>, V: Into<String>>(
        variables: impl IntoIterator<Item = (K, V)>,
    ) -> Environment {
        Environment {
            fixed: Some(Arc::new(
                variables
                    .into_iter()
                    .map(|(k, v)| (k.into(), v.into()))
                    .collect(),
            )),
        }
    }

    /// `name`'s value, when it is set and is Unicode.
    pub fn var(&self, name: &str) -> Option<String> {
        match &self.fixed {
            Some(variables) => variables.get(name).cloned(),
            None => std::env::var(name).ok(),
        }
    }
}

impl std::fmt::Debug for Environment {
    /// Names only: values are secrets.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.fixed {
            None => f.write_str("Environment::Process"),
            Some(variables) => {
                let mut names: Vec<&String> = variables.keys().collect();
                names.sort();
                f.debug_tuple("Environment::Fixed").field(&names).finish()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fixed_environment_holds_its_variables_only_and_never_shows_values() {
        let environment = Environment::fixed([("SEZZLEE_TEST_KEY", "s3cret")]);
        assert_eq!(
            environment.var("SEZZLEE_TEST_KEY").as_deref(),
            Some("s3cret")
        );
        assert_eq!(environment.var("PATH"), None);
        let shown = format!("{environment:?}");
        assert!(shown.contains("SEZZLEE_TEST_KEY") && !shown.contains("s3cret"));
        assert!(Environment::process().var("PATH").is_some());
    }
}
