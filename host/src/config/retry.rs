//! `[retry]` of the configuration file: how a provider turn the upstream refused before
//! answering is tried again, and which provider answers when it is exhausted.
//!
//! ```toml
//! [retry]                              # every provider (these are the defaults)
//! attempts = 3                         # tries of one turn, the first included (1: no retry)
//! max_wait_ms = 20000                  # the most one turn waits between its tries, in all
//!
//! [retry.providers.groq]               # one provider's own, over the defaults
//! attempts = 4
//! fallback = { provider = "openrouter", model = "meta-llama/llama-3.3-70b-instruct" }
//! ```
//!
//! The rule that decides what is retried, and when, is `chat::retry`'s; this file only reads
//! and checks the operator's numbers.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

/// Tries of one turn by default, the first included.
pub const DEFAULT_ATTEMPTS: u32 = 3;
/// The most attempts an operator may set.
pub const MAX_ATTEMPTS: u32 = 10;
/// How long one turn may wait between its tries, in all, by default.
pub const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(20);
/// The most an operator may set for it.
pub const MAX_MAX_WAIT: Duration = Duration::from_secs(300);

/// One provider's retry policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Tries of one turn, the first included (1: none again).
    pub attempts: u32,
    /// The most one turn waits between its tries, in all; a `Retry-After` past what is left
    /// is not waited for.
    pub max_wait: Duration,
    /// Who answers a first turn this provider could not: another provider and model.
    pub fallback: Option<Fallback>,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            attempts: DEFAULT_ATTEMPTS,
            max_wait: DEFAULT_MAX_WAIT,
            fallback: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fallback {
    pub provider: String,
    pub model: String,
}

/// `[retry]`: the defaults and each provider's own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RetrySettings {
    pub default: RetryPolicy,
    pub providers: BTreeMap<String, RetryPolicy>,
}

impl RetrySettings {
    /// The policy of provider `id`.
    pub fn policy(&self, id: &str) -> RetryPolicy {
        self.providers
            .get(id)
            .cloned()
            .unwrap_or_else(|| self.default.clone())
    }
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRetry {
    #[serde(default)]
    attempts: Option<i64>,
    #[serde(default)]
    max_wait_ms: Option<i64>,
    #[serde(default)]
    providers: BTreeMap<String, RawProviderRetry>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProviderRetry {
    #[serde(default)]
    attempts: Option<i64>,
    #[serde(default)]
    max_wait_ms: Option<i64>,
    #[serde(default)]
    fallback: Option<RawFallback>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFallback {
    provider: String,
    model: String,
}

impl RawRetry {
    /// Checked; the error names the key and the rule.
    pub(super) fn check(self) -> Result<RetrySettings, String> {
        let default = RetryPolicy {
            attempts: attempts("retry.attempts", self.attempts, DEFAULT_ATTEMPTS)?,
            max_wait: max_wait("retry.max_wait_ms", self.max_wait_ms, DEFAULT_MAX_WAIT)?,
            fallback: None,
        };
        let mut providers = BTreeMap::new();
        for (id, raw) in self.providers {
            let key = format!("retry.providers.{id}");
            super::names::check_id(&key, &id)?;
            let fallback = match raw.fallback {
                None => None,
                Some(f) => {
                    let provider = f.provider.trim().to_string();
                    let model = f.model.trim().to_string();
                    super::names::check_id(&format!("{key}.fallback.provider"), &provider)?;
                    if provider == id {
                        return Err(format!(
                            "{key}.fallback.provider: must be another provider than {id}"
                        ));
                    }
                    if model.is_empty() || model.chars().count() > 256 {
                        return Err(format!(
                            "{key}.fallback.model: must be a non-blank model id of at most 256 \
                             characters"
                        ));
                    }
                    Some(Fallback { provider, model })
                }
            };
            let policy = RetryPolicy {
                attempts: attempts(&format!("{key}.attempts"), raw.attempts, default.attempts)?,
                max_wait: max_wait(
                    &format!("{key}.max_wait_ms"),
                    raw.max_wait_ms,
                    default.max_wait,
                )?,
                fallback,
            };
            providers.insert(id, policy);
        }
        Ok(RetrySettings { default, providers })
    }
}

fn attempts(key: &str, value: Option<i64>, default: u32) -> Result<u32, String> {
    match value {
        None => Ok(default),
        Some(n) if (1..=i64::from(MAX_ATTEMPTS)).contains(&n) => Ok(n as u32),
        Some(_) => Err(format!(
            "{key}: must be an integer from 1 (no retry) to {MAX_ATTEMPTS}"
        )),
    }
}

fn max_wait(key: &str, value: Option<i64>, default: Duration) -> Result<Duration, String> {
    let most = MAX_MAX_WAIT.as_millis() as i64;
    match value {
        None => Ok(default),
        Some(n) if (0..=most).contains(&n) => Ok(Duration::from_millis(n as u64)),
        Some(_) => Err(format!("{key}: must be an integer from 0 to {most}")),
    }
}
