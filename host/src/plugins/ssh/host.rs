//! The host side of the WIT `ssh` interface: the grant's devbox, or denied.

use super::super::bindings::imports::chatd::plugin::ssh;
use super::super::state::PluginState;

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
