//! The host side of the WIT `ssh` interface: the grant's devbox, or denied.

use std::sync::Arc;

use wasmtime::component::HasData;

use crate::plugins::bindings::imports::chatd::plugin::ssh;
use crate::plugins::capabilities::ssh::SshGrant;

/// What the `ssh` interface sees of one call's state: the plugin's id and its grant, if any.
pub struct SshView<'a> {
    pub plugin: &'a str,
    pub grant: Option<&'a Arc<SshGrant>>,
}

/// Links the `ssh` interface through [`SshView`].
pub struct SshHost;

impl HasData for SshHost {
    type Data<'a> = SshView<'a>;
}

impl ssh::Host for SshView<'_> {
    async fn exec(&mut self, request: ssh::ExecRequest) -> Result<ssh::ExecOutput, ssh::SshError> {
        let Some(grant) = self.grant.cloned() else {
            return Err(ssh::SshError::Denied(format!(
                "SSH is not granted to plugin {}",
                self.plugin
            )));
        };
        grant.exec(&request.command, request.timeout_ms).await
    }
}
