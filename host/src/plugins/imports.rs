//! The host's side of the plugin imports `log`, `config`, `ssh` and `turn-events` (`http` is
//! [`super::http::host`]).
//!
//! `log` writes to tracing, tagged with the plugin id, one line per message, capped in length
//! and in count per call. `config` answers only the settings the plugin was granted. `ssh` runs
//! the command on the operator's devbox for a plugin granted it (its `SshGrant`, decided in
//! `grants.rs`) and is denied to every other.

use super::bindings::imports::chatd::plugin::{config, log, ssh, types};
use super::bindings::provider::chatd::plugin::{provider_types, turn_events};
use super::bindings::search::chatd::plugin::search_types;
use super::bindings::tool::chatd::plugin::tool_types;
use super::state::PluginState;

impl types::Host for PluginState {}
impl tool_types::Host for PluginState {}
impl provider_types::Host for PluginState {}
impl search_types::Host for PluginState {}

impl turn_events::Host for PluginState {
    /// Waits while the run is behind (the channel is bounded: backpressure reaches the guest),
    /// and answers `false` once the run has stopped listening, so the plugin stops too.
    async fn emit(&mut self, event: provider_types::TurnEvent) -> bool {
        match &self.events {
            Some(events) => events.send(event).await.is_ok(),
            None => false,
        }
    }
}

/// The longest log message kept, in characters.
const MAX_LOG_CHARS: usize = 2_000;
/// Log lines one call may write; the rest are dropped (one line says so).
const MAX_LOG_LINES: usize = 1_000;

impl log::Host for PluginState {
    async fn write(&mut self, level: log::Level, message: String) {
        self.log_lines += 1;
        let plugin = &*self.id;
        if self.log_lines > MAX_LOG_LINES {
            if self.log_lines == MAX_LOG_LINES + 1 {
                tracing::warn!(
                    plugin,
                    "more than {MAX_LOG_LINES} log lines in one call; the rest are dropped"
                );
            }
            return;
        }
        // One message, one line: a plugin cannot forge lines of the host's log.
        let cut = message.chars().count() > MAX_LOG_CHARS;
        let mut message: String = message.chars().take(MAX_LOG_CHARS).collect();
        message = message.replace('\n', "\\n").replace('\r', "\\r");
        if cut {
            message.push('…');
        }
        match level {
            log::Level::Trace => tracing::trace!(plugin, "{message}"),
            log::Level::Debug => tracing::debug!(plugin, "{message}"),
            log::Level::Info => tracing::info!(plugin, "{message}"),
            log::Level::Warn => tracing::warn!(plugin, "{message}"),
            log::Level::Error => tracing::error!(plugin, "{message}"),
        }
    }
}

impl config::Host for PluginState {
    async fn get(&mut self, key: String) -> Option<String> {
        self.caps.config.get(&key).cloned()
    }

    async fn all(&mut self) -> Vec<(String, String)> {
        self.caps
            .config
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

impl ssh::Host for PluginState {
    async fn exec(&mut self, request: ssh::ExecRequest) -> Result<ssh::ExecOutput, ssh::SshError> {
        let Some(grant) = self.caps.ssh.clone() else {
            return Err(ssh::SshError::Denied(format!(
                "SSH is not granted to plugin {}",
                self.id
            )));
        };
        grant.exec(&request.command, request.timeout_ms).await
    }
}
