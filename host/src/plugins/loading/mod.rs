//! From bytes to a serving plugin: the [`manifest`], a component loaded and granted
//! ([`load`]), the bundled components embedded in the binary ([`embedded`]), PLUGINS_DIR
//! ([`folder`], [`watcher`]), what serves ([`snapshot`]), and the [`plugin_host::PluginHost`]
//! that assembles and swaps it.

pub mod embedded;
pub mod folder;
pub mod load;
pub mod plugin_host;
pub mod snapshot;
pub mod watcher;
