//! The host's side of the plugin imports: `log`, `config`, `http` and `ssh`.
//!
//! `log` writes to tracing, tagged with the plugin id. `config` answers only the settings the
//! plugin was granted. `http` and `ssh` deny every request for now: grants, the allow-list,
//! private-network checks and credential injection are the next step of the plugin host, and
//! until they exist no plugin is granted anything. Deny by default is the safe starting point.

use wasmtime::component::Resource;

use super::bindings::tool::chatd::plugin::{config, http, log, ssh, tool_types, types};
use super::state::PluginState;

/// The host's state behind a `response` resource handle.
pub struct HostResponseState {
    status: u16,
    headers: Vec<(String, String)>,
    url: String,
    chunks: std::collections::VecDeque<Vec<u8>>,
}

impl types::Host for PluginState {}
impl tool_types::Host for PluginState {}

impl log::Host for PluginState {
    async fn write(&mut self, level: log::Level, message: String) {
        let plugin = &*self.id;
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
        self.config.get(&key).cloned()
    }

    async fn all(&mut self) -> Vec<(String, String)> {
        self.config
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

impl http::Host for PluginState {
    async fn send(
        &mut self,
        request: http::Request,
    ) -> Result<Resource<HostResponseState>, http::HttpError> {
        Err(http::HttpError::Denied(format!(
            "{} is not granted to plugin {}",
            request.url, self.id
        )))
    }
}

impl http::HostResponse for PluginState {
    async fn status(&mut self, this: Resource<HostResponseState>) -> u16 {
        self.table.get(&this).map(|r| r.status).unwrap_or(0)
    }

    async fn headers(&mut self, this: Resource<HostResponseState>) -> Vec<http::Header> {
        self.table
            .get(&this)
            .map(|r| {
                r.headers
                    .iter()
                    .map(|(name, value)| http::Header {
                        name: name.clone(),
                        value: value.clone(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    async fn url(&mut self, this: Resource<HostResponseState>) -> String {
        self.table
            .get(&this)
            .map(|r| r.url.clone())
            .unwrap_or_default()
    }

    async fn next_chunk(
        &mut self,
        this: Resource<HostResponseState>,
    ) -> Result<Option<Vec<u8>>, http::HttpError> {
        match self.table.get_mut(&this) {
            Ok(response) => Ok(response.chunks.pop_front()),
            Err(e) => Err(http::HttpError::InvalidRequest(format!(
                "unknown response handle: {e}"
            ))),
        }
    }

    async fn drop(&mut self, this: Resource<HostResponseState>) -> wasmtime::Result<()> {
        self.table.delete(this)?;
        Ok(())
    }
}

impl ssh::Host for PluginState {
    async fn exec(&mut self, _request: ssh::ExecRequest) -> Result<ssh::ExecOutput, ssh::SshError> {
        Err(ssh::SshError::Denied(format!(
            "SSH is not granted to plugin {}",
            self.id
        )))
    }
}
