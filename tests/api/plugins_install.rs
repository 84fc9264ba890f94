//! `chatd plugins install` and `accept`, black-box on the binary: a one-file plugin installed by
//! path and by URL (a loopback server), pinned by its SHA-256 in the lock file so changed bytes
//! are refused; signatures required by the operator's keys (signed as the minisign CLI signs),
//! refused when missing or wrong; an update asking for a new grant or higher limits held until
//! accepted; a lost lock file refusing the installed plugins; compile-cache entries
//! authenticated under CHATD_SECRET_KEY, and signed plugins never read from an unkeyed cache.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use serde_json::{Value, json};

use crate::support::{plugin_cache_dir, test_component};
use crate::wasm::unique;

const BIN: &str = env!("CARGO_BIN_EXE_chatd");
const ID: &str = "since_v0_1_0";

/// A deployment's folders: PLUGINS_DIR, the data folder, and where plugins are published.
struct Site {
    dir: tempfile::TempDir,
    keys: Option<PathBuf>,
    /// CHATD_SECRET_KEY.
    secret: Option<String>,
    /// A compile cache of its own (`cache/`) rather than the tests' shared one.
    own_cache: bool,
}

impl Site {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for folder in ["plugins", "data", "dist"] {
            std::fs::create_dir(dir.path().join(folder)).unwrap();
        }
        Self {
            dir,
            keys: None,
            secret: None,
            own_cache: false,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn chatd(&self, args: &[&str]) -> Output {
        let mut command = Command::new(BIN);
        command
            .args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PLUGINS_DIR", self.path("plugins"))
            .env("CHATD_DATA_DIR", self.path("data"))
            .env(
                "PLUGIN_CACHE_DIR",
                match self.own_cache {
                    true => self.path("cache"),
                    false => plugin_cache_dir(),
                },
            );
        if let Some(keys) = &self.keys {
            command.env("CHATD_PLUGIN_KEYS", keys);
        }
        if let Some(secret) = &self.secret {
            command.env("CHATD_SECRET_KEY", secret);
        }
        command.output().unwrap()
    }

    /// The compile cache's entries (own cache only).
    fn entries(&self) -> std::collections::BTreeSet<PathBuf> {
        std::fs::read_dir(self.path("cache"))
            .map(|d| d.map(|e| e.unwrap().path()).collect())
            .unwrap_or_default()
    }

    /// `plugins list`'s stdout and its log (stderr).
    fn list_and_log(&self) -> (String, String) {
        let out = self.chatd(&["plugins", "list"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        (text(&out.stdout), text(&out.stderr))
    }

    fn install(&self, source: &str) -> (Option<i32>, String) {
        let out = self.chatd(&["plugins", "install", source]);
        let said = format!("{}{}", text(&out.stdout), text(&out.stderr));
        (out.status.code(), said)
    }

    fn list(&self) -> String {
        let out = self.chatd(&["plugins", "list"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    }

    fn lock(&self) -> Value {
        serde_json::from_slice(&std::fs::read(self.path("data/plugins.lock")).unwrap()).unwrap()
    }

    fn installed(&self) -> Vec<u8> {
        std::fs::read(self.path(&format!("plugins/{ID}.wasm"))).unwrap()
    }

    /// The test component packed with a manifest of `version` asking for `grants`, published as
    /// `dist/NAME`; its bytes.
    fn publish(&self, name: &str, version: &str, grants: Value) -> Vec<u8> {
        self.publish_with(name, version, grants, json!({}))
    }

    /// [`Site::publish`] with the manifest's `limits`.
    fn publish_with(&self, name: &str, version: &str, grants: Value, limits: Value) -> Vec<u8> {
        self.publish_as(ID, name, version, grants, limits)
    }

    /// [`Site::publish_with`] under the id `id`.
    fn publish_as(
        &self,
        id: &str,
        name: &str,
        version: &str,
        grants: Value,
        limits: Value,
    ) -> Vec<u8> {
        let bare = self.path("dist/bare.wasm");
        std::fs::write(&bare, test_component("test-plugin-since-v0-1-0")).unwrap();
        let manifest = self.path("dist/manifest.json");
        let body = json!({"id": id, "kind": "tool", "wit": "chatd:plugin@0.1.0",
                          "version": version, "grants": grants, "limits": limits});
        std::fs::write(&manifest, body.to_string()).unwrap();
        let out = self.path(&format!("dist/{name}"));
        let packed = Command::new(BIN)
            .args(["plugins", "pack"])
            .arg(&bare)
            .arg("--manifest")
            .arg(&manifest)
            .arg("--out")
            .arg(&out)
            .output()
            .unwrap();
        assert!(packed.status.success(), "{}", text(&packed.stderr));
        std::fs::read(out).unwrap()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn title_model() -> Value {
    json!({"config": ["title_model"]})
}

fn sha256(bytes: &[u8]) -> String {
    use sha2::Digest;
    sha2::Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn install_by_path_and_url_pins_the_bytes() {
    let site = Site::new();
    let v1 = site.publish("since.wasm", "1.0.0", title_model());
    let (code, said) = site.install(site.path("dist/since.wasm").to_str().unwrap());
    assert_eq!(code, Some(0), "{said}");
    assert!(
        said.starts_with(&format!("installed {ID} 1.0.0 from ")),
        "{said}"
    );
    assert_eq!(site.installed(), v1);
    let lock = site.lock();
    assert_eq!(lock["plugins"][ID]["sha256"], sha256(&v1));
    assert_eq!(
        lock["plugins"][ID]["grants"],
        json!([
            "config:title_model",
            "kind:tool",
            "limit:memoryMib=64",
            "limit:timeoutMs=30000"
        ])
    );
    let list = site.list();
    assert!(
        list.contains(&format!("{ID} (tool, version 1.0.0")),
        "{list}"
    );
    assert!(list.contains(&format!("  {ID} 1.0.0 from ")), "{list}");

    // Its id is pinned, not only its file: a manifest beside it, and its id in another file
    // (here with other bytes), are refused.
    let beside = site.path(&format!("plugins/{ID}.json"));
    std::fs::write(
        &beside,
        json!({"id": ID, "kind": "tool", "wit": "chatd:plugin@0.1.0",
               "grants": {"publicWeb": true}})
        .to_string(),
    )
    .unwrap();
    let list = site.list();
    assert!(list.contains("would replace its manifest"), "{list}");
    assert!(!list.contains(&format!("{ID} (tool")), "{list}");
    std::fs::remove_file(&beside).unwrap();
    std::fs::write(
        site.path("plugins/other.wasm"),
        unique(v1.clone(), "tampered"),
    )
    .unwrap();
    let list = site.list();
    assert!(list.contains("another file may not take it"), "{list}");
    assert!(
        list.contains(&format!("{ID} (tool, version 1.0.0")),
        "{list}"
    );
    std::fs::remove_file(site.path("plugins/other.wasm")).unwrap();

    // Other bytes under the installed name are refused, and the operator is told why.
    std::fs::write(
        site.path(&format!("plugins/{ID}.wasm")),
        unique(v1.clone(), "tampered"),
    )
    .unwrap();
    let list = site.list();
    assert!(
        list.contains("refused") && list.contains("its bytes changed since it was installed"),
        "{list}"
    );
    assert!(!list.contains(&format!("{ID} (tool")), "{list}");

    // From a URL (a loopback server): the same bytes installed again, serving again.
    let server = ScriptedUpstream::start([
        (
            "GET /plugins/since.wasm",
            Reply::bytes(200, "application/wasm", v1.clone()),
        ),
        (
            "GET /moved.wasm",
            Reply::redirect(302, "http://plugins.example/since.wasm"),
        ),
    ])
    .await;
    // Its query (a token, perhaps) is not recorded.
    let url = format!("{}/plugins/since.wasm", server.url());
    let (code, said) = site.install(&format!("{url}?token=s3cr3t"));
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains(&format!("from {url}")), "{said}");
    assert_eq!(site.installed(), v1);
    assert!(site.list().contains(&format!("{ID} (tool, version 1.0.0")));
    let lock_text = std::fs::read_to_string(site.path("data/plugins.lock")).unwrap();
    assert!(!lock_text.contains("s3cr3t"), "{lock_text}");
    let asked: Vec<String> = server.requests().iter().map(|r| r.path.clone()).collect();
    assert_eq!(
        asked,
        ["/plugins/since.wasm", "/plugins/since.wasm.minisig"]
    );
    // A redirect off https:// (and off loopback) is not followed.
    let (code, said) = site.install(&format!("{}/moved.wasm", server.url()));
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("a redirect to a URL that is not https://"),
        "{said}"
    );

    // Plain HTTP only on loopback; not a one-file plugin, not installed.
    let (code, said) = site.install("http://plugins.example/since.wasm");
    assert_eq!(code, Some(2));
    assert!(said.contains("an install URL is https://"), "{said}");
    let bare = site.path("dist/bare.wasm");
    let (code, said) = site.install(bare.to_str().unwrap());
    assert_eq!(code, Some(1));
    assert!(said.contains("not a one-file plugin"), "{said}");
}

/// A minisign key pair: the public key's file, and a signer.
fn keys(dir: &Path, name: &str) -> (PathBuf, minisign::SecretKey) {
    let pair = minisign::KeyPair::generate_unencrypted_keypair().unwrap();
    let path = dir.join(format!("{name}.pub"));
    std::fs::write(&path, pair.pk.to_box().unwrap().into_string()).unwrap();
    (path, pair.sk)
}

/// Signs `file` as `minisign -S -m FILE` does: `FILE.minisig` beside it.
fn sign(file: &Path, key: &minisign::SecretKey) {
    let bytes = std::fs::read(file).unwrap();
    let signature = minisign::sign(
        None,
        key,
        std::io::Cursor::new(bytes),
        Some("chatd test"),
        None,
    )
    .unwrap();
    let mut name = file.as_os_str().to_owned();
    name.push(".minisig");
    std::fs::write(PathBuf::from(name), signature.into_string()).unwrap();
}

#[test]
fn with_keys_an_unsigned_or_wrongly_signed_plugin_is_refused() {
    let mut site = Site::new();
    let (ours, our_key) = keys(site.dir.path(), "ours");
    let (_, their_key) = keys(site.dir.path(), "theirs");
    site.keys = Some(ours);
    let v1 = site.publish("since.wasm", "1.0.0", title_model());
    let published = site.path("dist/since.wasm");
    let source = published.to_str().unwrap();

    let (code, said) = site.install(source);
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("refused: it is not signed"), "{said}");
    sign(&published, &their_key);
    let (code, said) = site.install(source);
    assert_eq!(code, Some(1), "{said}");
    assert!(
        said.contains("its signature is not by a key in CHATD_PLUGIN_KEYS"),
        "{said}"
    );
    assert!(!site.path(&format!("plugins/{ID}.wasm")).exists());

    sign(&published, &our_key);
    let (code, said) = site.install(source);
    assert_eq!(code, Some(0), "{said}");
    assert!(said.contains(", signed by "), "{said}");
    let list = site.list();
    assert!(
        list.contains(&format!("{ID} (tool, version 1.0.0")),
        "{list}"
    );
    assert!(list.contains(", signed by "), "{list}");

    // At load, too: a signed file changed afterwards, and a file dropped in unsigned.
    std::fs::write(
        site.path(&format!("plugins/{ID}.wasm")),
        unique(v1.clone(), "tampered"),
    )
    .unwrap();
    std::fs::write(
        site.path("plugins/dropped.wasm"),
        test_component("test-plugin-hostile"),
    )
    .unwrap();
    let list = site.list();
    assert!(!list.contains(&format!("{ID} (tool")), "{list}");
    assert!(list.contains("its signature is not by a key"), "{list}");
    assert!(list.contains("dropped.wasm: it is not signed"), "{list}");
    // Without keys the signature is not asked for; the lock still pins the bytes.
    site.keys = None;
    let list = site.list();
    assert!(list.contains("hostile (tool"), "{list}");
    assert!(
        list.contains("its bytes changed since it was installed"),
        "{list}"
    );
}

#[test]
fn an_update_asking_for_a_new_grant_is_held_until_accepted() {
    let site = Site::new();
    let v1 = site.publish("v1.wasm", "1.0.0", title_model());
    let (code, said) = site.install(site.path("dist/v1.wasm").to_str().unwrap());
    assert_eq!(code, Some(0), "{said}");

    // 1.1.0 also wants an origin on the network.
    let wider = json!({"config": ["title_model"], "http": ["https://api.example.com"]});
    let v2 = site.publish("v2.wasm", "1.1.0", wider.clone());
    let (code, said) = site.install(site.path("dist/v2.wasm").to_str().unwrap());
    assert_eq!(code, Some(3), "held: {said}");
    assert!(
        said.starts_with(&format!(
            "held: {ID} 1.1.0 asks for grants 1.0.0 did not have: http:https://api.example.com"
        )),
        "{said}"
    );
    assert_eq!(site.installed(), v1, "1.0.0 keeps serving");
    let list = site.list();
    assert!(
        list.contains(&format!("{ID} (tool, version 1.0.0")),
        "{list}"
    );
    assert!(
        list.contains(&format!("  {ID} 1.1.0 from "))
            && list.contains("asks for: http:https://api.example.com"),
        "{list}"
    );

    let out = site.chatd(&["plugins", "accept", ID]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).starts_with(&format!("installed {ID} 1.1.0")));
    assert_eq!(site.installed(), v2);
    let list = site.list();
    assert!(
        list.contains(&format!("{ID} (tool, version 1.1.0")),
        "{list}"
    );
    assert!(!list.contains("held updates"), "{list}");
    assert_eq!(site.lock()["held"], json!({}));
    let again = site.chatd(&["plugins", "accept", ID]);
    assert_eq!(again.status.code(), Some(2));

    // An update that asks for nothing new goes in at once.
    let v3 = site.publish("v3.wasm", "1.2.0", wider);
    let (code, said) = site.install(site.path("dist/v3.wasm").to_str().unwrap());
    assert_eq!(code, Some(0), "{said}");
    assert!(said.starts_with(&format!("installed {ID} 1.2.0")), "{said}");
    assert_eq!(site.installed(), v3);
}

#[test]
fn an_update_raising_its_limits_is_held_and_lowering_them_is_not() {
    let site = Site::new();
    let limits = |memory: u32, timeout: u64| json!({"memoryMib": memory, "timeoutMs": timeout});
    let v1 = site.publish_with("v1.wasm", "1.0.0", title_model(), limits(64, 30_000));
    let (code, said) = site.install(site.path("dist/v1.wasm").to_str().unwrap());
    assert_eq!(code, Some(0), "{said}");
    // The same grants, but four times the memory and ten times the time.
    site.publish_with("v2.wasm", "1.1.0", title_model(), limits(256, 300_000));
    let (code, said) = site.install(site.path("dist/v2.wasm").to_str().unwrap());
    assert_eq!(code, Some(3), "held: {said}");
    assert!(
        said.contains(
            "asks for grants 1.0.0 did not have: limit:memoryMib=256, limit:timeoutMs=300000"
        ),
        "{said}"
    );
    assert_eq!(site.installed(), v1, "1.0.0 keeps serving");
    assert!(site.list().contains("asks for: limit:memoryMib=256"));
    // Less of both is no new power: installed at once.
    let v3 = site.publish_with("v3.wasm", "1.2.0", title_model(), limits(32, 1_000));
    let (code, said) = site.install(site.path("dist/v3.wasm").to_str().unwrap());
    assert_eq!(code, Some(0), "{said}");
    assert_eq!(site.installed(), v3);

    // A lock written before limits were asked for: the installed file's own limits stand.
    site.publish_with("v4.wasm", "1.3.0", title_model(), limits(512, 1_000));
    let (code, said) = site.install(site.path("dist/v4.wasm").to_str().unwrap());
    assert_eq!(code, Some(3), "{said}");
    let out = site.chatd(&["plugins", "accept", ID]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let mut lock = site.lock();
    let grants = lock["plugins"][ID]["grants"].as_array_mut().unwrap();
    grants.retain(|g| !g.as_str().unwrap().starts_with("limit:"));
    std::fs::write(site.path("data/plugins.lock"), lock.to_string()).unwrap();
    let v5 = site.publish_with("v5.wasm", "1.4.0", title_model(), limits(512, 1_000));
    let (code, said) = site.install(site.path("dist/v5.wasm").to_str().unwrap());
    assert_eq!(
        code,
        Some(0),
        "the same limits as installed are not new: {said}"
    );
    assert_eq!(site.installed(), v5);
}

#[test]
fn a_lost_lock_file_refuses_the_installed_plugins_instead_of_unpinning_them() {
    let site = Site::new();
    let v1 = site.publish("since.wasm", "1.0.0", title_model());
    let (code, said) = site.install(site.path("dist/since.wasm").to_str().unwrap());
    assert_eq!(code, Some(0), "{said}");
    // A plugin dropped into the folder by hand is not installed: it loads as before.
    std::fs::write(
        site.path("plugins/dropped.wasm"),
        test_component("test-plugin-hostile"),
    )
    .unwrap();
    std::fs::remove_file(site.path("data/plugins.lock")).unwrap();
    // Other bytes in its place, which the lock would have caught.
    std::fs::write(
        site.path(&format!("plugins/{ID}.wasm")),
        unique(v1.clone(), "swapped"),
    )
    .unwrap();
    let list = site.list();
    assert!(!list.contains(&format!("{ID} (tool")), "{list}");
    let refusal = list
        .lines()
        .find(|l| l.starts_with("refused ") && l.contains(ID))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(
        refusal.contains(&format!(
            "{ID} was installed with chatd plugins install (.chatd-installed), but the lock file"
        )) && refusal.contains("is missing: restore the lock file from a backup, or install"),
        "{refusal}"
    );
    assert!(list.contains("hostile (tool"), "{list}");
    // A lock file that no longer records it is the same.
    std::fs::write(
        site.path("data/plugins.lock"),
        r#"{"format":1,"plugins":{}}"#,
    )
    .unwrap();
    assert!(site.list().contains("does not record it"));
    // Installing it again pins it again.
    let (code, said) = site.install(site.path("dist/since.wasm").to_str().unwrap());
    assert_eq!(code, Some(0), "{said}");
    assert!(site.list().contains(&format!("{ID} (tool, version 1.0.0")));
    // Installs from before the record existed are named at the next install of any plugin.
    std::fs::remove_file(site.path("plugins/.chatd-installed")).unwrap();
    site.publish_as("other", "other.wasm", "1.0.0", title_model(), json!({}));
    let (code, said) = site.install(site.path("dist/other.wasm").to_str().unwrap());
    assert_eq!(code, Some(0), "{said}");
    let record = std::fs::read_to_string(site.path("plugins/.chatd-installed")).unwrap();
    assert!(
        record.lines().any(|l| l == ID) && record.lines().any(|l| l == "other"),
        "{record}"
    );
}

#[test]
fn with_a_secret_key_a_cache_entry_loads_only_for_the_source_it_was_compiled_from() {
    let mut site = Site::new();
    site.own_cache = true;
    site.secret = Some("a-secret-key-of-at-least-32-characters".into());
    site.publish("since.wasm", "1.0.0", title_model());
    let bundled = site.list_and_log();
    let before = site.entries();
    assert!(
        before
            .iter()
            .all(|p| p.to_string_lossy().ends_with(".mac.cwasm")),
        "{before:?}"
    );
    assert!(bundled.0.contains("providers"));
    // One folder plugin, then another: each one's entry is the one that appears.
    std::fs::copy(
        site.path("dist/since.wasm"),
        site.path("plugins/since.wasm"),
    )
    .unwrap();
    site.list_and_log();
    let with_since = site.entries();
    let since = with_since.difference(&before).next().unwrap().clone();
    std::fs::write(
        site.path("plugins/dropped.wasm"),
        test_component("test-plugin-hostile"),
    )
    .unwrap();
    let (list, _) = site.list_and_log();
    assert!(list.contains("tools:  echo, spin"), "{list}");
    let hostile = site
        .entries()
        .difference(&with_since)
        .next()
        .unwrap()
        .clone();

    // The first plugin's code under the second's name: it does not authenticate, so it is
    // compiled again and the second plugin serves its own tools.
    std::fs::copy(&since, &hostile).unwrap();
    let (list, log) = site.list_and_log();
    assert!(
        log.contains("does not authenticate under CHATD_SECRET_KEY")
            && log.contains("compiling again"),
        "{log}"
    );
    assert!(list.contains("tools:  echo, spin"), "{list}");
    // Then read from the cache again, quietly.
    let (_, log) = site.list_and_log();
    assert!(!log.contains("does not authenticate"), "{log}");

    // Another key reads none of it: it compiles under names of its own (its key's id) and
    // leaves the first key's entries as they were.
    let first: std::collections::BTreeMap<PathBuf, Vec<u8>> = site
        .entries()
        .into_iter()
        .map(|p| (p.clone(), std::fs::read(p).unwrap()))
        .collect();
    site.secret = Some("another-secret-key-of-32-characters-or-more".into());
    let (list, _) = site.list_and_log();
    assert!(list.contains("tools:  echo, spin"), "{list}");
    let now = site.entries();
    assert_eq!(now.len(), 2 * first.len(), "{now:?}");
    for (path, bytes) in &first {
        assert_eq!(&std::fs::read(path).unwrap(), bytes, "{}", path.display());
    }
}

#[test]
fn without_a_secret_key_a_signed_plugin_is_compiled_and_never_cached() {
    let mut site = Site::new();
    site.own_cache = true;
    let (ours, our_key) = keys(site.dir.path(), "ours");
    site.keys = Some(ours);
    site.publish("since.wasm", "1.0.0", title_model());
    let published = site.path("dist/since.wasm");
    sign(&published, &our_key);
    site.list_and_log();
    let bundled = site.entries();
    let (code, said) = site.install(published.to_str().unwrap());
    assert_eq!(code, Some(0), "{said}");
    for _ in 0..2 {
        let list = site.list();
        assert!(
            list.contains(&format!("{ID} (tool, version 1.0.0")),
            "{list}"
        );
        assert_eq!(
            site.entries(),
            bundled,
            "nothing of the signed plugin is kept"
        );
    }
    // With the key its entry is kept, authenticated, beside the bundled plugins' own.
    site.secret = Some("a-secret-key-of-at-least-32-characters".into());
    site.list();
    let authenticated = site
        .entries()
        .into_iter()
        .filter(|p| p.to_string_lossy().ends_with(".mac.cwasm"))
        .count();
    assert_eq!(authenticated, bundled.len() + 1);
}
