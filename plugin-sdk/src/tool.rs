//! The `tool` world: [`Tool`] and [`export_tool!`](crate::export_tool).

// A near-copy of the other worlds' `generate!` blocks on purpose: one world each, each
// naming the shared host bindings it reuses through `with`. Keep them alike.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)] // generated lifting code
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "chatd:plugin/tool@0.1.4",
        runtime_path: "chatd_plugin_sdk::__wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_tool_world",
        default_bindings_module: "chatd_plugin_sdk::tool::bindings",
        with: {
            "chatd:plugin/types@0.1.4": crate::host::bindings::chatd::plugin::types,
            "chatd:plugin/http@0.1.4": crate::host::bindings::chatd::plugin::http,
            "chatd:plugin/ssh@0.1.4": crate::host::bindings::chatd::plugin::ssh,
            "chatd:plugin/log@0.1.4": crate::host::bindings::chatd::plugin::log,
            "chatd:plugin/config@0.1.4": crate::host::bindings::chatd::plugin::config,
        },
    });
}

pub use bindings::chatd::plugin::tool_types::ToolOutput;

use crate::host::{PluginError, ToolSpec};

/// A plugin that provides tools. Both methods have defaults, so a plugin implements what it has.
pub trait Tool {
    /// The tools this plugin provides.
    fn describe() -> Vec<ToolSpec> {
        Vec::new()
    }

    /// Runs tool `name` with its JSON arguments.
    fn invoke(name: String, arguments_json: String) -> Result<ToolOutput, PluginError> {
        let _ = arguments_json;
        Err(crate::unsupported(&format!("the tool {name:?}")))
    }
}

/// Exports a [`Tool`] implementation as the component's `tool` world.
#[macro_export]
macro_rules! export_tool {
    ($ty:ty) => {
        #[doc(hidden)]
        pub struct __ChatdToolExport;

        impl $crate::tool::bindings::Guest for __ChatdToolExport {
            fn describe() -> ::std::vec::Vec<$crate::host::ToolSpec> {
                <$ty as $crate::tool::Tool>::describe()
            }
            fn invoke(
                name: ::std::string::String,
                arguments_json: ::std::string::String,
            ) -> ::std::result::Result<$crate::tool::ToolOutput, $crate::host::PluginError> {
                <$ty as $crate::tool::Tool>::invoke(name, arguments_json)
            }
        }

        $crate::tool::bindings::__export_tool_world!(__ChatdToolExport with_types_in $crate::tool::bindings);
    };
}
