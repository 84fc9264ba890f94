//! A loaded `extractor` component (WIT 0.1.3): a document's bytes to its text, page by page.
//! Each call gets a fresh store and instance, the memory cap and the deadline, like every
//! plugin call; the formats it reads are asked once, at load. Its world imports only `log`, so
//! it is linked with nothing else: a hostile document can reach no host function but the log.

use wasmtime::Engine;
use wasmtime::component::Component;

use crate::plugins::LoadError;
use crate::plugins::bindings::extractor::ExtractorPre;
use crate::plugins::capabilities::Capabilities;
use crate::plugins::manifest::{Kind, Manifest};
use crate::plugins::runtime::CallError;
use crate::plugins::runtime::Core;
use crate::plugins::runtime::linker;
use crate::plugins::runtime::records::Records;
use crate::plugins::runtime::state::PluginState;
use wasmtime::component::Linker;

pub use crate::plugins::bindings::extractor::chatd::plugin::extractor_types::PageText;
pub use crate::plugins::bindings::imports::chatd::plugin::types::PluginError;

/// A near-copy of `search.rs`'s wrapper on purpose: each world has its own generated types, and
/// what they share (linking, the call with its limits) is `Core`'s already.
pub struct ExtractorPlugin {
    core: Core,
    pre: ExtractorPre<PluginState>,
    /// The media types it reads, as it said at load.
    formats: Vec<String>,
}

/// The `extractor` world's linker: `log` and the records, nothing that reaches out
/// ([`linker::log_only`]), and its record types.
fn link(engine: &Engine) -> wasmtime::Result<Linker<PluginState>> {
    use crate::plugins::bindings::extractor::chatd::plugin::extractor_types;
    let mut linker = linker::log_only(engine)?;
    extractor_types::add_to_linker::<PluginState, Records>(&mut linker, |_| Records)?;
    Ok(linker)
}

impl ExtractorPlugin {
    /// Links a compiled component against the `extractor` world; [`Self::ask_formats`] then
    /// asks what it reads.
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
            Kind::Extractor,
            linker,
            component,
            caps,
            ExtractorPre::new,
        )?;
        Ok(Self {
            core,
            pre,
            formats: Vec::new(),
        })
    }

    pub fn manifest(&self) -> &Manifest {
        self.core.manifest()
    }

    /// The media types it reads (lowercase), as it said at load.
    pub fn formats(&self) -> &[String] {
        &self.formats
    }

    /// Asks the component which media types it reads, and keeps the answer (lowercased, without
    /// parameters, each once).
    pub async fn ask_formats(&mut self) -> Result<(), CallError> {
        let pre = self.pre.clone();
        let listed = self
            .core
            .call("formats", None, move |store| {
                Box::pin(async move {
                    let extractor = pre.instantiate_async(&mut *store).await?;
                    extractor.call_formats(&mut *store).await
                })
            })
            .await?;
        let mut formats: Vec<String> = Vec::new();
        for format in listed {
            let format = format
                .split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase();
            if !format.is_empty() && !formats.contains(&format) {
                formats.push(format);
            }
        }
        self.formats = formats;
        Ok(())
    }

    /// The text of `content`, a document of `media_type`. A plugin's own error is `Ok(Err(…))`;
    /// a trap, a timeout or an exhausted limit is `Err(…)`.
    pub async fn extract(
        &self,
        media_type: &str,
        content: Vec<u8>,
    ) -> Result<Result<Vec<PageText>, PluginError>, CallError> {
        let (pre, media_type) = (self.pre.clone(), media_type.to_string());
        self.core
            .call("extract", None, move |store| {
                Box::pin(async move {
                    let extractor = pre.instantiate_async(&mut *store).await?;
                    extractor
                        .call_extract(&mut *store, &media_type, &content)
                        .await
                })
            })
            .await
    }
}
