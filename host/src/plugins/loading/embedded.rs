//! The plugins built with chatd (`/plugins`) and embedded in the binary by `build.rs`.

use crate::plugins::package::{Package, Source};

include!(concat!(env!("OUT_DIR"), "/bundled.rs"));

/// Every bundled plugin, in listing order.
pub fn packages() -> Vec<Package> {
    BUNDLED
        .iter()
        .map(|(manifest, wasm, sha256)| Package {
            manifest_json: manifest.to_string(),
            wasm: (*wasm).into(),
            source: Source::Bundled,
            manifest_beside: false,
            sha256: Some(*sha256),
        })
        .collect()
}
