//! A loaded `search` component: the search-mode backend (search, answer). Each call gets a fresh
//! store and instance, the memory cap and the deadline.

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::plugins::LoadError;
use crate::plugins::bindings::search::SearchPre;
use crate::plugins::capabilities::Capabilities;
use crate::plugins::manifest::{Kind, Manifest};
use crate::plugins::runtime::CallError;
use crate::plugins::runtime::Core;
use crate::plugins::runtime::linker;
use crate::plugins::runtime::records::Records;
use crate::plugins::runtime::state::PluginState;
use wasmtime::component::Linker;

pub use crate::plugins::bindings::imports::chatd::plugin::types::PluginError;
pub use crate::plugins::bindings::search::chatd::plugin::search_types::{
    AnswerResponse, SearchRequest, SearchResponse,
};

/// A near-copy of `tool.rs`'s wrapper on purpose: each world has its own generated types, and
/// what they share (linking, the call with its limits) is `Core`'s already.
pub struct SearchPlugin {
    core: Core,
    pre: SearchPre<PluginState>,
}

/// The `search` world's linker: the shared imports and its record types.
fn link(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    use crate::plugins::bindings::search::chatd::plugin::search_types;
    let mut linker = linker::shared(engine)?;
    search_types::add_to_linker::<PluginState, Records>(&mut linker, |_| Records)?;
    Ok(linker)
}

impl SearchPlugin {
    /// Links a compiled component against the `search` world.
    pub fn new(
        engine: &Engine,
        manifest: Manifest,
        component: &Component,
        caps: Capabilities,
    ) -> Result<Self, LoadError> {
        let linker = link(engine);
        let (core, pre) = Core::link(
            engine,
            manifest,
            Kind::Search,
            linker,
            component,
            caps,
            SearchPre::new,
        )?;
        Ok(Self { core, pre })
    }

    pub fn manifest(&self) -> &Manifest {
        self.core.manifest()
    }

    /// Runs a search.
    pub async fn search(
        &self,
        request: SearchRequest,
    ) -> Result<Result<SearchResponse, PluginError>, CallError> {
        let pre = self.pre.clone();
        self.core
            .call("search", None, move |store| {
                Box::pin(async move {
                    let search = pre.instantiate_async(&mut *store).await?;
                    search.call_search(&mut *store, &request).await
                })
            })
            .await
    }

    /// Answers `query` with citations.
    pub async fn answer(
        &self,
        query: &str,
    ) -> Result<Result<AnswerResponse, PluginError>, CallError> {
        let (pre, query) = (self.pre.clone(), query.to_string());
        self.core
            .call("answer", None, move |store| {
                Box::pin(async move {
                    let search = pre.instantiate_async(&mut *store).await?;
                    search.call_answer(&mut *store, &query).await
                })
            })
            .await
    }
}
