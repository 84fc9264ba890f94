//! The `search` world: [`Search`] and [`export_search!`](crate::export_search).

// A near-copy of the other worlds' `generate!` blocks on purpose: one world each, each
// naming the shared host bindings it reuses through `with`. Keep them alike.
#[doc(hidden)]
#[allow(clippy::too_many_arguments)] // generated lifting code
pub mod bindings {
    wit_bindgen::generate!({
        path: "wit",
        world: "chatd:plugin/search@0.1.4",
        runtime_path: "chatd_plugin_sdk::__wit_bindgen::rt",
        pub_export_macro: true,
        export_macro_name: "__export_search_world",
        default_bindings_module: "chatd_plugin_sdk::search::bindings",
        with: {
            "chatd:plugin/types@0.1.4": crate::host::bindings::chatd::plugin::types,
            "chatd:plugin/http@0.1.4": crate::host::bindings::chatd::plugin::http,
            "chatd:plugin/log@0.1.4": crate::host::bindings::chatd::plugin::log,
            "chatd:plugin/config@0.1.4": crate::host::bindings::chatd::plugin::config,
        },
    });
}

pub use bindings::chatd::plugin::search_types::{AnswerResponse, SearchRequest, SearchResponse};

use crate::host::PluginError;

/// A search-mode backend. Both methods have defaults, so a plugin implements what it has.
pub trait Search {
    /// Runs a search.
    fn search(request: SearchRequest) -> Result<SearchResponse, PluginError> {
        let _ = request;
        Err(crate::unsupported("search"))
    }

    /// Answers the query with citations.
    fn answer(query: String) -> Result<AnswerResponse, PluginError> {
        let _ = query;
        Err(crate::unsupported("answers"))
    }
}

/// Exports a [`Search`] implementation as the component's `search` world.
#[macro_export]
macro_rules! export_search {
    ($ty:ty) => {
        #[doc(hidden)]
        pub struct __ChatdSearchExport;

        impl $crate::search::bindings::Guest for __ChatdSearchExport {
            fn search(
                request: $crate::search::SearchRequest,
            ) -> ::std::result::Result<$crate::search::SearchResponse, $crate::host::PluginError> {
                <$ty as $crate::search::Search>::search(request)
            }
            fn answer(
                query: ::std::string::String,
            ) -> ::std::result::Result<$crate::search::AnswerResponse, $crate::host::PluginError> {
                <$ty as $crate::search::Search>::answer(query)
            }
        }

        $crate::search::bindings::__export_search_world!(
            __ChatdSearchExport with_types_in $crate::search::bindings
        );
    };
}
