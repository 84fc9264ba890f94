//! A key's secret: `chatd_` and 43 characters of base64url over 32 random bytes (secret
//! scanners find leaked ones by the prefix). chatd keeps only its SHA-256 ([`digest`]) and finds a
//! key by that digest: the lookup's timing depends on a hash of the presented secret, which tells
//! an attacker nothing about any stored secret's bytes, and no secret is ever compared.

use base64::Engine as _;
use sha2::{Digest, Sha256};

/// What every key starts with.
pub const PREFIX: &str = "chatd_";

/// A new key: its secret (shown once) and the digest kept in its stead.
pub fn mint() -> (String, String) {
    mint_with(PREFIX)
}

/// A new secret of 32 random bytes after `prefix` (a key's, a login link's, a session's), and
/// its digest.
pub fn mint_with(prefix: &str) -> (String, String) {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the system's random source works");
    let secret = format!(
        "{prefix}{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    );
    let digest = digest(&secret);
    (secret, digest)
}

/// Whether a presented bearer is shaped like a key (it may still be unknown).
pub fn is_key(presented: &str) -> bool {
    presented.starts_with(PREFIX)
}

/// The SHA-256 of a key's secret, in hex: what the store keeps and looks up.
pub fn digest(secret: &str) -> String {
    Sha256::digest(secret.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_prefixed_random_and_kept_as_its_digest() {
        let (a, digest_a) = mint();
        let (b, _) = mint();
        assert!(is_key(&a) && a.len() == PREFIX.len() + 43, "{a}");
        assert_ne!(a, b);
        assert_eq!(digest_a, digest(&a));
        assert_eq!(digest_a.len(), 64);
        assert!(!digest_a.contains(&a[PREFIX.len()..]));
        // SHA-256("abc"), FIPS 180-2's example.
        assert_eq!(
            digest("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
