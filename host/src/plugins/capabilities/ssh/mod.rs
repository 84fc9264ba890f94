//! The `ssh` capability: commands on the operator's devbox, for the devbox tools only.
//!
//! The devbox is the operator's (CHAT_CODING_REMOTE_*): a plugin chooses the command line, never
//! the host, user, port or key. Each command is one SSH session through the system OpenSSH
//! client (the `openssh` crate): key authentication only (`BatchMode`), the devbox's host key
//! accepted on first contact and pinned in `devbox_known_hosts` in the data folder
//! (CHATD_DATA_DIR; OpenSSH's `accept-new`; the contract has no known_hosts setting, and a key
//! that changes later is refused, after a restart too), stdin closed, stdout and stderr capped, and a time limit the devbox enforces itself
//! ([`remote`]) with the host's own deadline behind it.
//!
//! A key given as CHAT_CODING_SSH_PRIVATE_KEY_B64 is written, mode 0600, into a private
//! temporary folder (0700) that also holds the SSH control sockets; the folder is removed when
//! the server stops.
//!
//! - here: [`DevboxAccess`] (which tools may use the devbox), [`grant`] (the one function that
//!   decides a plugin's `ssh`) and [`SshGrant`];
//! - [`devbox`]: the devbox itself and one command's SSH session;
//! - [`host`]: the WIT `ssh` interface;
//! - [`remote`]: the script the devbox runs.

pub mod devbox;
pub mod host;
pub mod remote;

use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::plugins::bindings::imports::chatd::plugin::ssh::{ExecOutput, SshError};
use crate::plugins::builtin::DEVBOX_TOOLS;
use devbox::{CONNECT_TIMEOUT, HOST_GRACE};
pub use devbox::{Devbox, OUTPUT_CAP};

/// The operator's devbox settings as grants need them: the devbox, when a devbox tool is
/// enabled, and per devbox tool whether it is enabled and its time limit.
#[derive(Clone, Debug, Default)]
pub struct DevboxAccess {
    devbox: Option<Arc<Devbox>>,
    tools: std::collections::BTreeMap<&'static str, (bool, Duration)>,
}

impl DevboxAccess {
    pub fn from_config(config: &Config) -> Self {
        let devbox = match Devbox::from_config(config) {
            Ok(devbox) => devbox.map(Arc::new),
            Err(e) => {
                // Only the B64 key's copy can fail here (the configuration checked the rest);
                // the tools then answer that SSH is not available, and the log says why.
                tracing::error!("the devbox key could not be prepared: {e}");
                None
            }
        };
        let tools = DEVBOX_TOOLS
            .iter()
            .map(|tool| (tool.id, ((tool.enabled)(config), (tool.limit)(config))))
            .collect();
        Self { devbox, tools }
    }

    /// Why the plugin (or tool) with this id may not serve, if it may not: a devbox tool
    /// serves only while it is enabled.
    pub fn refusal(&self, id: &str) -> Option<String> {
        match (
            self.tools.get(id),
            DEVBOX_TOOLS.iter().find(|tool| tool.id == id),
        ) {
            (Some((false, _)), Some(tool)) => Some(format!("{} is not true", tool.enable_var)),
            _ => None,
        }
    }
}

/// Decides a plugin's `ssh`: the devbox, for a devbox tool that asks for it while it is enabled;
/// refused (the plugin does not load) to any other plugin that asks.
pub fn grant(
    manifest: &crate::plugins::manifest::Manifest,
    access: &DevboxAccess,
) -> Result<Option<Arc<SshGrant>>, String> {
    if !manifest.grants.ssh {
        return Ok(None);
    }
    let tool = access.tools.get(manifest.id.as_str());
    if manifest.kind != crate::plugins::manifest::Kind::Tool || tool.is_none() {
        let names: Vec<&str> = DEVBOX_TOOLS.iter().map(|tool| tool.id).collect();
        return Err(format!(
            "grants.ssh: only the devbox tools {} may use SSH",
            names.join(" and ")
        ));
    }
    Ok(match (&access.devbox, tool) {
        (Some(devbox), Some((true, limit))) => Some(Arc::new(SshGrant {
            devbox: devbox.clone(),
            limit: *limit,
        })),
        _ => None,
    })
}

/// The `ssh` grant of one devbox tool: the devbox and the tool's time limit.
#[derive(Clone, Debug)]
pub struct SshGrant {
    pub devbox: Arc<Devbox>,
    pub limit: Duration,
}

impl SshGrant {
    /// Runs a plugin's request: its time limit is capped by the operator's.
    pub async fn exec(&self, command: &str, requested_ms: u32) -> Result<ExecOutput, SshError> {
        let limit = self
            .limit
            .min(Duration::from_millis(u64::from(requested_ms)));
        self.devbox.exec(command, limit).await
    }

    /// How long a call of the plugin may take: the command's limit and the host's grace, plus
    /// connecting.
    pub fn call_deadline(&self) -> Duration {
        self.limit + HOST_GRACE + CONNECT_TIMEOUT
    }
}
