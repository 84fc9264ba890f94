//! The host side of the WIT `log` interface: tracing, tagged with the plugin id, within the
//! plugin's [`LogGrant`](crate::plugins::capabilities::log::LogGrant).

use wasmtime::component::HasData;

use crate::plugins::bindings::imports::chatd::plugin::log;
use crate::plugins::capabilities::log::LogGrant;

/// What the `log` interface sees of one call's state: the plugin's id, its grant, and the lines
/// written so far.
pub struct LogView<'a> {
    pub plugin: &'a str,
    pub grant: LogGrant,
    pub lines: &'a mut usize,
}

/// Links the `log` interface through [`LogView`].
pub struct LogHost;

impl HasData for LogHost {
    type Data<'a> = LogView<'a>;
}

impl log::Host for LogView<'_> {
    async fn write(&mut self, level: log::Level, message: String) {
        *self.lines += 1;
        let plugin = self.plugin;
        let grant = self.grant;
        if *self.lines > grant.max_lines {
            if *self.lines == grant.max_lines + 1 {
                tracing::warn!(
                    plugin,
                    "more than {} log lines in one call; the rest are dropped",
                    grant.max_lines
                );
            }
            return;
        }
        let message = crate::plugins::capabilities::log::one_line(&message, grant.max_chars);
        match level {
            log::Level::Trace => tracing::trace!(plugin, "{message}"),
            log::Level::Debug => tracing::debug!(plugin, "{message}"),
            log::Level::Info => tracing::info!(plugin, "{message}"),
            log::Level::Warn => tracing::warn!(plugin, "{message}"),
            log::Level::Error => tracing::error!(plugin, "{message}"),
        }
    }
}
