//! Component bytes for the tests that need a plugin no compile cache has seen, or a file that is
//! the same component with other bytes. Shared by `api` and `api_postgres`.

/// `wasm` with a custom section of `tag` appended: the same component, bytes no cache has seen.
pub fn unique(mut wasm: Vec<u8>, tag: &str) -> Vec<u8> {
    let name = b"chatd-test";
    let body_len = 1 + name.len() + tag.len();
    assert!(body_len < 128, "one-byte LEB128 sizes");
    wasm.extend([0u8, body_len as u8, name.len() as u8]);
    wasm.extend(name);
    wasm.extend(tag.as_bytes());
    wasm
}
