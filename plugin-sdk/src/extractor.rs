//! The `extractor` world (WIT 0.1.3): [`Extractor`] and
//! [`export_extractor!`](crate::export_extractor). An extractor turns a document's bytes into
//! its text for chatd's library; its world imports only `log`.

// A near-copy of the other worlds' `generate!` blocks on purpose: one world each, each
// naming the shared host bindings it reuses through `with`. Keep them alike.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)] // generated lifting code
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "chatd:plugin/extractor@0.1.4",
        runtime_path: "chatd_plugin_sdk::__wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_extractor_world",
        default_bindings_module: "chatd_plugin_sdk::extractor::bindings",
        with: {
            "chatd:plugin/types@0.1.4": crate::host::bindings::chatd::plugin::types,
            "chatd:plugin/log@0.1.4": crate::host::bindings::chatd::plugin::log,
        },
    });
}

pub use bindings::chatd::plugin::extractor_types::PageText;

use crate::host::PluginError;

/// Documents to text.
pub trait Extractor {
    /// The media types it reads (`application/pdf`), lowercase.
    fn formats() -> Vec<String>;

    /// The text of `content`, a document of `media_type`, page by page where the format has
    /// pages. A document it cannot read is [`PluginError::InvalidInput`] saying why.
    fn extract(media_type: String, content: Vec<u8>) -> Result<Vec<PageText>, PluginError>;
}

/// Exports an [`Extractor`] implementation as the component's `extractor` world.
#[macro_export]
macro_rules! export_extractor {
    ($ty:ty) => {
        #[doc(hidden)]
        pub struct __ChatdExtractorExport;

        impl $crate::extractor::bindings::Guest for __ChatdExtractorExport {
            fn formats() -> ::std::vec::Vec<::std::string::String> {
                <$ty as $crate::extractor::Extractor>::formats()
            }
            fn extract(
                media_type: ::std::string::String,
                content: ::std::vec::Vec<u8>,
            ) -> ::std::result::Result<
                ::std::vec::Vec<$crate::extractor::PageText>,
                $crate::host::PluginError,
            > {
                <$ty as $crate::extractor::Extractor>::extract(media_type, content)
            }
        }

        $crate::extractor::bindings::__export_extractor_world!(
            __ChatdExtractorExport with_types_in $crate::extractor::bindings
        );
    };
}
