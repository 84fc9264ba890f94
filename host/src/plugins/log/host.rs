//! The host side of the WIT `log` interface: tracing, tagged with the plugin id, within the
//! plugin's [`LogGrant`](super::LogGrant).

use super::super::bindings::imports::chatd::plugin::log;
use super::super::state::PluginState;

impl log::Host for PluginState {
    async fn write(&mut self, level: log::Level, message: String) {
        self.log_lines += 1;
        let plugin = &*self.id;
        let grant = self.caps.log;
        if self.log_lines > grant.max_lines {
            if self.log_lines == grant.max_lines + 1 {
                tracing::warn!(
                    plugin,
                    "more than {} log lines in one call; the rest are dropped",
                    grant.max_lines
                );
            }
            return;
        }
        let message = super::one_line(&message, grant.max_chars);
        match level {
            log::Level::Trace => tracing::trace!(plugin, "{message}"),
            log::Level::Debug => tracing::debug!(plugin, "{message}"),
            log::Level::Info => tracing::info!(plugin, "{message}"),
            log::Level::Warn => tracing::warn!(plugin, "{message}"),
            log::Level::Error => tracing::error!(plugin, "{message}"),
        }
    }
}
