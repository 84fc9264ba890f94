//! `chatd plugins pack COMPONENT --manifest FILE --out OUT`: a plugin as one file. The manifest
//! is checked as a load checks it and appended to the component as its `chatd-manifest` custom
//! section ([`crate::plugins::package::MANIFEST_SECTION`]), which is what Rust plugins get from the SDK's
//! `embed_manifest!`. Toolchains that cannot add a section (componentize-py, componentize-js)
//! pack their output with this.

use std::path::Path;
use std::process::ExitCode;

use wasm_encoder::{ComponentSection, CustomSection};

use crate::plugins::manifest::Manifest;
use crate::plugins::package::{MANIFEST_SECTION, embedded_manifest};

/// Runs the command: exit 0 with one line saying what was written, 2 when an input is unusable,
/// 1 when the output cannot be written.
pub fn run(component: &Path, manifest: &Path, out: &Path) -> ExitCode {
    let packed = match packed(component, manifest) {
        Ok(packed) => packed,
        Err(why) => {
            eprintln!("chatd: plugin pack: {why}");
            return ExitCode::from(2);
        }
    };
    if let Err(e) = crate::plugins::trust::lock::write_whole(out, &packed.bytes) {
        eprintln!("chatd: plugin pack: cannot write {}: {e}", out.display());
        return ExitCode::FAILURE;
    }
    println!(
        "packed {} (version {}) into {}: {} bytes",
        packed.id,
        packed.version,
        out.display(),
        packed.bytes.len()
    );
    ExitCode::SUCCESS
}

struct Packed {
    id: String,
    version: String,
    bytes: Vec<u8>,
}

fn packed(component: &Path, manifest: &Path) -> Result<Packed, String> {
    let read = |p: &Path| std::fs::read(p).map_err(|e| format!("{}: {e}", p.display()));
    let mut wasm = read(component)?;
    let json = String::from_utf8(read(manifest)?)
        .map_err(|_| format!("{}: the manifest is not UTF-8", manifest.display()))?;
    let parsed = Manifest::parse(&json).map_err(|e| format!("{}: {e}", manifest.display()))?;
    if !wasmparser::Parser::is_component(&wasm) {
        return Err(format!(
            "{}: not a WebAssembly component (a core module must be made a component first)",
            component.display()
        ));
    }
    // A second section would be ignored (the first one wins): refuse rather than mislead.
    if embedded_manifest(&wasm)
        .map_err(|e| format!("{}: {e}", component.display()))?
        .is_some()
    {
        return Err(format!(
            "{}: already carries a manifest (a `{MANIFEST_SECTION}` section); pack the \
             component as its toolchain built it",
            component.display()
        ));
    }
    let section = CustomSection {
        name: MANIFEST_SECTION.into(),
        data: json.as_bytes().into(),
    };
    section.append_to_component(&mut wasm);
    Ok(Packed {
        id: parsed.id.to_string(),
        version: parsed.version.unwrap_or_else(|| "-".into()),
        bytes: wasm,
    })
}
