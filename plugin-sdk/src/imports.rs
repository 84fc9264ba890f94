//! The host's imports, generated once from the WIT and shared by every world (`host.rs` wraps
//! them; the worlds' bindings reuse them through `with:`).

wit_bindgen::generate!({
    path: "wit",
    world: "chatd:plugin/host-imports@0.1.4",
    runtime_path: "chatd_plugin_sdk::__wit_bindgen::rt",
    type_section_suffix: "chatd-host-imports",
});
