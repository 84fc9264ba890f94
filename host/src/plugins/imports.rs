//! The host's side of the plugin imports: `log`, `config`, `http` and `ssh`.
//!
//! `log` writes to tracing, tagged with the plugin id. `config` answers only the settings the
//! plugin was granted. `http` goes through [`super::http`]: the grant is checked on every
//! request and hop, credentials are added by the host. `ssh` is denied to every plugin until the
//! devbox capability lands.

use wasmtime::component::Resource;

use std::time::Duration;

use super::bindings::imports::chatd::plugin::{config, http, log, ssh, types};
use super::bindings::provider::chatd::plugin::{provider_types, turn_events};
use super::bindings::search::chatd::plugin::search_types;
use super::bindings::tool::chatd::plugin::tool_types;
use super::http::{Incoming, Outgoing, Refusal};
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

impl http::Host for PluginState {
    async fn send(
        &mut self,
        request: http::Request,
    ) -> Result<Resource<Incoming>, http::HttpError> {
        let outgoing = Outgoing {
            method: match request.method {
                http::Method::Get => reqwest::Method::GET,
                http::Method::Post => reqwest::Method::POST,
                http::Method::Put => reqwest::Method::PUT,
                http::Method::Patch => reqwest::Method::PATCH,
                http::Method::Delete => reqwest::Method::DELETE,
                http::Method::Head => reqwest::Method::HEAD,
            },
            url: request.url,
            headers: request
                .headers
                .into_iter()
                .map(|h| (h.name, h.value))
                .collect(),
            body: request.body,
            timeout: request
                .timeout_ms
                .map(|ms| Duration::from_millis(ms.into())),
            follow_redirects: request.follow_redirects.unwrap_or(true),
        };
        let incoming = super::http::send(&self.caps.client, &self.caps.http, outgoing)
            .await
            .map_err(wit_error)?;
        self.table
            .push(incoming)
            .map_err(|e| http::HttpError::Connection(format!("too many open responses: {e}")))
    }
}

impl http::HostResponse for PluginState {
    async fn status(&mut self, this: Resource<Incoming>) -> u16 {
        self.table.get(&this).map(|r| r.status).unwrap_or(0)
    }

    async fn headers(&mut self, this: Resource<Incoming>) -> Vec<http::Header> {
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

    async fn url(&mut self, this: Resource<Incoming>) -> String {
        self.table
            .get(&this)
            .map(|r| r.url.clone())
            .unwrap_or_default()
    }

    async fn next_chunk(
        &mut self,
        this: Resource<Incoming>,
    ) -> Result<Option<Vec<u8>>, http::HttpError> {
        match self.table.get_mut(&this) {
            Ok(response) => response.next_chunk().await.map_err(wit_error),
            Err(e) => Err(http::HttpError::InvalidRequest(format!(
                "unknown response handle: {e}"
            ))),
        }
    }

    async fn drop(&mut self, this: Resource<Incoming>) -> wasmtime::Result<()> {
        self.table.delete(this)?;
        Ok(())
    }
}

fn wit_error(refusal: Refusal) -> http::HttpError {
    match refusal {
        Refusal::Denied(why) => http::HttpError::Denied(why),
        Refusal::Invalid(why) => http::HttpError::InvalidRequest(why),
        Refusal::Timeout => http::HttpError::Timeout,
        Refusal::Connection(why) => http::HttpError::Connection(why),
        Refusal::TooLarge(cap) => http::HttpError::TooLarge(cap),
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
