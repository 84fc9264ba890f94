//! Where the upstream is: the operator's `PROVIDER_B_BASE_URL`, which the host hands over as the
//! setting `provider_b_base_url` (its key is added by the host to every request, never here).

use chatd_plugin_sdk::host::PluginError;

/// The setting holding the base URL, e.g. `https://api.anthropic.com/v1`.
const BASE_URL: &str = "provider_b_base_url";

/// The configured base URL, without a trailing `/`.
pub fn base_url() -> Result<String, PluginError> {
    chatd_plugin_sdk::provider::base_url(BASE_URL, "PROVIDER_B_BASE_URL")
}
