//! Logins sealed at rest: AES-256-GCM (ring) under a key derived from CHATD_SECRET_KEY, or, on
//! SQLite without it, a random key in the data folder's `mcp-logins.key` (made on first need,
//! readable by chatd's user only). The server's name is the additional data, so a row moved to
//! another server does not open. Every sealed value names its key by an id (a hash of the key,
//! never the key), so a changed key is told apart from damage: those logins are needed again.

use std::path::Path;

use hmac::{Hmac, Mac};
use ring::aead::{AES_256_GCM, Aad, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use sha2::{Digest, Sha256};

use crate::config::Secret;

/// The key file's name in the data folder.
pub const KEY_FILE: &str = "mcp-logins.key";

pub struct SealKey {
    key: LessSafeKey,
    /// Names the key in stored rows.
    pub id: String,
}

impl SealKey {
    /// The key derived from CHATD_SECRET_KEY.
    pub fn from_secret(secret: &Secret) -> Self {
        let mut mac = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes())
            .expect("HMAC takes a key of any length");
        mac.update(b"chatd mcp logins v1");
        Self::new(mac.finalize().into_bytes().into())
    }

    /// The key in `dir`'s key file, made when there is none.
    pub fn from_folder(dir: &Path) -> std::io::Result<Self> {
        let path = dir.join(KEY_FILE);
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => make_key_file(&path)?,
            Err(e) => return Err(e),
        };
        let key: [u8; 32] = bytes.try_into().map_err(|_| {
            std::io::Error::other(format!("{} is not a 32-byte key", path.display()))
        })?;
        Ok(Self::new(key))
    }

    fn new(bytes: [u8; 32]) -> Self {
        let digest = Sha256::digest([&b"chatd key id\0"[..], &bytes].concat());
        let id = digest[..8].iter().map(|b| format!("{b:02x}")).collect();
        let key = LessSafeKey::new(UnboundKey::new(&AES_256_GCM, &bytes).expect("a 32-byte key"));
        Self { key, id }
    }

    /// `plain` sealed for `server`: a random nonce, then the ciphertext and its tag.
    pub fn seal(&self, server: &str, plain: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).expect("the operating system gives random bytes");
        let mut sealed = plain.to_vec();
        self.key
            .seal_in_place_append_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(server.as_bytes()),
                &mut sealed,
            )
            .expect("sealing a login cannot fail");
        [&nonce[..], &sealed].concat()
    }

    /// What `sealed` holds, if this key sealed it for `server` and it is whole.
    pub fn open(&self, server: &str, sealed: &[u8]) -> Option<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return None;
        }
        let (nonce, body) = sealed.split_at(NONCE_LEN);
        let nonce = Nonce::try_assume_unique_for_key(nonce).ok()?;
        let mut body = body.to_vec();
        let plain = self
            .key
            .open_in_place(nonce, Aad::from(server.as_bytes()), &mut body)
            .ok()?;
        Some(plain.to_vec())
    }
}

/// A new random key written to `path`, readable by this user only, whole or not at all: it is
/// written beside, then linked into place, which fails if another process made one first (then
/// that one is read).
fn make_key_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Write as _;
    use std::os::unix::fs::PermissionsExt as _;
    let mut key = vec![0u8; 32];
    getrandom::fill(&mut key).map_err(|e| std::io::Error::other(e.to_string()))?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)?;
    file.as_file()
        .set_permissions(std::fs::Permissions::from_mode(0o600))?;
    file.write_all(&key)?;
    file.as_file().sync_all()?;
    match std::fs::hard_link(file.path(), path) {
        Ok(()) => Ok(key),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => std::fs::read(path),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_login_opens_for_its_server_under_its_key_only() {
        let key = SealKey::from_secret(&Secret::new("k".repeat(32)));
        let sealed = key.seal("tracker", b"tokens");
        assert!(!sealed.windows(6).any(|w| w == b"tokens"));
        assert_eq!(
            key.open("tracker", &sealed).as_deref(),
            Some(&b"tokens"[..])
        );
        assert_eq!(key.open("other", &sealed), None);
        let other = SealKey::from_secret(&Secret::new("j".repeat(32)));
        assert_ne!(other.id, key.id);
        assert_eq!(other.open("tracker", &sealed), None);
        let mut damaged = sealed.clone();
        *damaged.last_mut().unwrap() ^= 1;
        assert_eq!(key.open("tracker", &damaged), None);
        assert_ne!(key.seal("tracker", b"tokens"), sealed);
    }

    #[test]
    fn the_folders_key_is_made_once_and_kept_private() {
        use std::os::unix::fs::PermissionsExt as _;
        let dir = tempfile::tempdir().unwrap();
        let first = SealKey::from_folder(dir.path()).unwrap();
        let again = SealKey::from_folder(dir.path()).unwrap();
        assert_eq!(first.id, again.id);
        let mode = std::fs::metadata(dir.path().join(KEY_FILE))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        std::fs::write(dir.path().join(KEY_FILE), b"short").unwrap();
        assert!(SealKey::from_folder(dir.path()).is_err());
    }
}
