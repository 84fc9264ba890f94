//! The plugins built with chatd (`/plugins`) and embedded in the binary: the crate
//! `chatd-bundled` (`bundled/`) holds them, and the binary hands them to `cli::main`, which
//! [`provide`]s them before anything starts. chatd's lib does not depend on that crate, so cargo compiles the
//! two beside each other (issue 59's first build); a build with `testing` (the tests, the
//! benchmarks) takes them from it directly.

use std::sync::OnceLock;

use crate::plugins::package::{Package, Source};

/// One bundled plugin: its manifest JSON, its component, and the component's SHA-256.
pub type Bundled = (&'static str, &'static [u8], [u8; 32]);

static PROVIDED: OnceLock<&'static [Bundled]> = OnceLock::new();

/// Sets the bundled plugins, once, before the server or a command loads any plugin; a second
/// call changes nothing.
pub fn provide(bundled: &'static [Bundled]) {
    let _ = PROVIDED.set(bundled);
}

/// The bundled plugins, in listing order: what [`provide`] set, else (in a build with
/// `testing`) the bundled crate's, else none.
pub fn bundled() -> &'static [Bundled] {
    if let Some(bundled) = PROVIDED.get() {
        return bundled;
    }
    #[cfg(feature = "testing")]
    return chatd_bundled::BUNDLED;
    #[cfg(not(feature = "testing"))]
    &[]
}

/// Every bundled plugin, in listing order.
pub fn packages() -> Vec<Package> {
    bundled()
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
