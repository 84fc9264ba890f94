//! A loaded `search` component: the search-mode backend (search, answer). Each call gets a fresh
//! store and instance, the memory cap and the deadline.

use wasmtime::Engine;
use wasmtime::component::Component;

use super::bindings::search::SearchPre;
use super::grants::Capabilities;
use super::manifest::{Kind, Manifest};
use super::state::PluginState;
use super::{CallError, Core, LoadError, linker};

pub use super::bindings::imports::chatd::plugin::types::PluginError;
pub use super::bindings::search::chatd::plugin::search_types::{
    AnswerResponse, SearchRequest, SearchResponse,
};

/// A near-copy of `tool.rs`'s wrapper on purpose: each world has its own generated types, and
/// what they share (linking, the call with its limits) is `Core`'s already.
pub struct SearchPlugin {
    core: Core,
    pre: SearchPre<PluginState>,
}

impl SearchPlugin {
    /// Links a compiled component against the `search` world.
    pub fn new(
        engine: &Engine,
        manifest: Manifest,
        component: &Component,
        caps: Capabilities,
    ) -> Result<Self, LoadError> {
        let linker = linker::search(engine);
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
