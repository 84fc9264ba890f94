//! Where the upstream is: the operator's `PROVIDER_B_BASE_URL`, which the host hands over as the
//! setting `provider_b_base_url` (its key is added by the host to every request, never here).

use chatd_plugin_sdk::host::{PluginError, config};

/// The setting holding the base URL, e.g. `https://api.anthropic.com/v1`.
const BASE_URL: &str = "provider_b_base_url";

/// The configured base URL, without a trailing `/`.
pub fn base_url() -> Result<String, PluginError> {
    config::get(BASE_URL)
        .map(|url| trimmed(&url))
        .ok_or_else(|| {
            PluginError::InvalidInput(format!(
                "{BASE_URL} is not configured (PROVIDER_B_BASE_URL)"
            ))
        })
}

/// `url` without trailing slashes, so paths can be appended as `{base}/messages`.
pub fn trimmed(url: &str) -> String {
    url.trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailing_slashes_are_dropped() {
        assert_eq!(
            trimmed("https://api.anthropic.com/v1/"),
            "https://api.anthropic.com/v1"
        );
        assert_eq!(
            trimmed("https://api.anthropic.com/v1"),
            "https://api.anthropic.com/v1"
        );
        assert_eq!(trimmed("http://proxy:8080//"), "http://proxy:8080");
    }
}
