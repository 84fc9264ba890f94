//! The words for a plugin's failure, as a run, a tool call or a search shows it: a plugin's own
//! typed error, or a call that trapped or ran out of time.

use crate::plugins::runtime::CallError;
use crate::plugins::worlds::provider::PluginError;

/// The words the contract's error events and 502 bodies carry for a plugin's failure.
pub fn describe_plugin_error(error: &PluginError) -> String {
    match error {
        PluginError::Upstream(e) if e.status > 0 => {
            format!("upstream answered {}: {}", e.status, e.message)
        }
        PluginError::Upstream(e) => format!("upstream error: {}", e.message),
        PluginError::Transport(m) => format!("upstream connection failed: {m}"),
        PluginError::MalformedResponse(m) => format!("malformed upstream response: {m}"),
        PluginError::Denied(m) => format!("request denied by the host: {m}"),
        PluginError::InvalidInput(m) => format!("invalid request: {m}"),
        PluginError::Unsupported(m) => format!("not supported: {m}"),
        PluginError::Internal(m) => format!("plugin error: {m}"),
    }
}

/// The words for a plugin call that trapped or ran out of time.
pub fn describe_call_error(error: &CallError) -> String {
    match error {
        CallError::Trap { reason, .. } => format!("the plugin failed: {reason}"),
        CallError::Timeout { after, .. } => {
            format!("no answer within the plugin's {} s limit", after.as_secs())
        }
    }
}
