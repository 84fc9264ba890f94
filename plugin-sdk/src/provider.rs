//! The `provider` world: [`Provider`], [`emit`] and [`export_provider!`](crate::export_provider).

#[doc(hidden)]
#[allow(clippy::too_many_arguments)] // generated lifting code
pub mod bindings {
    wit_bindgen::generate!({
        path: "../wit",
        world: "chatd:plugin/provider@0.1.0",
        runtime_path: "chatd_plugin_sdk::__wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_provider_world",
        default_bindings_module: "chatd_plugin_sdk::provider::bindings",
        with: {
            "chatd:plugin/types@0.1.0": crate::host::bindings::chatd::plugin::types,
            "chatd:plugin/http@0.1.0": crate::host::bindings::chatd::plugin::http,
            "chatd:plugin/log@0.1.0": crate::host::bindings::chatd::plugin::log,
            "chatd:plugin/config@0.1.0": crate::host::bindings::chatd::plugin::config,
        },
    });
}

pub use bindings::chatd::plugin::provider_types::{
    FinishReason, TurnEvent, TurnOutcome, TurnRequest,
};

use crate::host::PluginError;

/// Hands one event of the running turn to the host. `false` means the run was cancelled: stop
/// reading the upstream and return.
pub fn emit(event: &TurnEvent) -> bool {
    bindings::chatd::plugin::turn_events::emit(event)
}

/// A model provider adapter. Both methods have defaults, so a plugin implements what it has.
pub trait Provider {
    /// The upstream's model ids.
    fn list_models() -> Result<Vec<String>, PluginError> {
        Err(crate::unsupported("listing models"))
    }

    /// Runs one model turn, calling [`emit`] for each event as it arrives.
    fn turn(request: TurnRequest) -> Result<TurnOutcome, PluginError> {
        let _ = request;
        Err(crate::unsupported("model turns"))
    }
}

/// Exports a [`Provider`] implementation as the component's `provider` world.
#[macro_export]
macro_rules! export_provider {
    ($ty:ty) => {
        #[doc(hidden)]
        pub struct __ChatdProviderExport;

        impl $crate::provider::bindings::Guest for __ChatdProviderExport {
            fn list_models()
            -> ::std::result::Result<::std::vec::Vec<::std::string::String>, $crate::host::PluginError>
            {
                <$ty as $crate::provider::Provider>::list_models()
            }
            fn turn(
                request: $crate::provider::TurnRequest,
            ) -> ::std::result::Result<$crate::provider::TurnOutcome, $crate::host::PluginError> {
                <$ty as $crate::provider::Provider>::turn(request)
            }
        }

        $crate::provider::bindings::__export_provider_world!(
            __ChatdProviderExport with_types_in $crate::provider::bindings
        );
    };
}

/// How every bundled provider renders a text attachment for the model: a header naming the file
/// (and saying when the client cut it), then its text. One wording, so a chat reads the same
/// whichever provider serves it.
pub fn text_file_prompt(file: &crate::host::TextFile) -> String {
    let cut = if file.truncated { ", truncated" } else { "" };
    format!(
        "Attached file: {} ({}{cut})\n\n{}",
        file.filename, file.mime_type, file.text
    )
}

/// An image attachment as a `data:` URL (`data:image/png;base64,…`).
pub fn image_data_url(image: &crate::host::Image) -> String {
    format!("data:{};base64,{}", image.mime_type, image.data_base64)
}
