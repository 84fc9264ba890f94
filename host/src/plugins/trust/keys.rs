//! The operator's signing keys (CHATD_PLUGIN_KEYS): minisign public keys, ed25519, verified
//! in-process by `minisign-verify`. A file of them is what `minisign -G` writes to `.pub` files,
//! one or more concatenated: comment lines, and one base64 key per line.

use std::path::Path;

use base64::Engine as _;
use minisign_verify::{PublicKey, Signature};

/// The keys plugins must be signed by.
pub struct Keys {
    keys: Vec<(String, PublicKey)>,
}

impl Keys {
    /// Reads the key file; an unreadable file, a line that is not a key, or no key at all is an
    /// error naming the file.
    pub fn read(path: &Path) -> Result<Self, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("CHATD_PLUGIN_KEYS: {}: {e}", path.display()))?;
        let mut keys = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with("untrusted comment:") || line.starts_with('#') {
                continue;
            }
            let key = PublicKey::from_base64(line).map_err(|e| {
                format!(
                    "CHATD_PLUGIN_KEYS: {}: {line:?} is not a minisign public key: {e}",
                    path.display()
                )
            })?;
            keys.push((key_id(line), key));
        }
        if keys.is_empty() {
            return Err(format!(
                "CHATD_PLUGIN_KEYS: {}: no minisign public key in it",
                path.display()
            ));
        }
        Ok(Self { keys })
    }

    /// The id (as minisign prints it) of the key that signed `bytes` with `signature` (the text
    /// of a `.minisig` file), or why none did. Only prehashed signatures (minisign's default
    /// since 0.8) are taken.
    pub fn verify(&self, bytes: &[u8], signature: &str) -> Result<String, String> {
        let signature = Signature::decode(signature)
            .map_err(|e| format!("its signature is unreadable: {e}"))?;
        for (id, key) in &self.keys {
            if key.verify(bytes, &signature, false).is_ok() {
                return Ok(id.clone());
            }
        }
        Err(
            "its signature is not by a key in CHATD_PLUGIN_KEYS, or the file was changed \
             after it was signed"
                .into(),
        )
    }
}

/// A key's id as minisign prints it: the key number, little-endian, in hex.
fn key_id(base64: &str) -> String {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(base64)
        .unwrap_or_default();
    let number = bytes
        .get(2..10)
        .and_then(|b| <[u8; 8]>::try_from(b).ok())
        .map_or(0, u64::from_le_bytes);
    format!("{number:016X}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_file_needs_keys_and_only_keys() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("keys.pub");
        std::fs::write(&file, "untrusted comment: nothing\n").unwrap();
        assert!(
            Keys::read(&file)
                .err()
                .unwrap()
                .contains("no minisign public key")
        );
        std::fs::write(&file, "not a key\n").unwrap();
        assert!(
            Keys::read(&file)
                .err()
                .unwrap()
                .contains("is not a minisign public key")
        );
        std::fs::write(
            &file,
            "untrusted comment: minisign public key E7620F1842B4E81F\n\
             RWQf6LRCGA9i59SLOFxz6NxvASXDJeRtuZykwQepbDEGt87ig1BNpWaE\n",
        )
        .unwrap();
        let keys = Keys::read(&file).unwrap();
        assert_eq!(keys.keys[0].0, "E7620F1842B4E81F");
        let why = keys.verify(b"x", "garbage").unwrap_err();
        assert!(why.contains("unreadable"), "{why}");
    }
}
