//! The black-box harness: a real chatd server (the same `Server` the binary runs) on
//! 127.0.0.1:0 with a database of its own (a temporary SQLite file, or in the PostgreSQL suite
//! a fresh database in the throwaway cluster of `postgres.rs`), and a small JSON client.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use chatd::config::{Config, DatabaseUrl, Secret};
use chatd::plugins::loading::plugin_host::PluginHost;
use chatd::server::Server;
use chatd::store::Store;
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// Builds the test plugins once per test process (cargo serialises concurrent builds on its
/// target-dir lock) and returns the component's bytes.
pub fn test_component(crate_name: &str) -> Vec<u8> {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        // The folder and profile settings of the bundled plugins' build (bundled/build.rs), so
        // the two builds share their compiled dependencies.
        let target = root.join("target").join("wasm-plugins");
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = std::process::Command::new(cargo)
            .current_dir(&root)
            .args([
                "build",
                "--release",
                "--target",
                "wasm32-wasip2",
                "-p",
                "test-plugin-hostile",
                "-p",
                "test-plugin-hostile-provider",
                "-p",
                "test-plugin-reads-files",
                "-p",
                "test-plugin-since-v0-1-0",
                "-p",
                "example-ollama",
                "--target-dir",
            ])
            .arg(&target)
            .env("CARGO_PROFILE_RELEASE_DEBUG", "false")
            .env("CARGO_PROFILE_RELEASE_STRIP", "debuginfo")
            .status()
            .expect("run cargo to build the test plugins");
        assert!(status.success(), "building the test plugins failed; if the target is missing, run `rustup target add wasm32-wasip2`");
        target.join("wasm32-wasip2").join("release")
    });
    std::fs::read(dir.join(format!("{}.wasm", crate_name.replace('-', "_"))))
        .expect("test plugin built")
}

/// Compiled plugin code shared by every test process: compiling is slow in a debug build, and
/// the cache is keyed by the component's hash, so sharing it is safe.
pub fn plugin_cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/test-plugin-cache")
}

/// A configuration for tests: loopback, a free port, the shared compile cache (as the data
/// folder's and the machine's), and `args`.
pub fn test_config(args: &[&str]) -> Config {
    let mut config = Config::from_args(
        ["chatd", "--host", "127.0.0.1", "--port", "0"]
            .iter()
            .chain(args.iter())
            .copied(),
    )
    .expect("config");
    config.plugin_cache_dir = Some(plugin_cache_dir());
    // The machine's cache too, so no test writes into the home folder.
    config.chatd_cache_dir = Some(plugin_cache_dir());
    config
}

pub struct TestServer {
    pub base: String,
    pub client: reqwest::Client,
    /// The server's store, for seeding what no endpoint of this build can write yet.
    pub store: Store,
    pub state: chatd::http::AppState,
    pub dir: Arc<tempfile::TempDir>,
    pub database_url: DatabaseUrl,
    token: Option<String>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

#[derive(Default)]
pub struct Options {
    pub token: Option<String>,
    pub dir: Option<Arc<tempfile::TempDir>>,
    pub plugins_dir: Option<PathBuf>,
    /// CHATD_ALLOW_PRIVATE_NETWORKS (plugins calling scripted upstreams on loopback need it).
    pub allow_private_networks: bool,
    /// More of chatd's flags (`--provider-c-base-url`, …).
    pub args: Vec<String>,
    /// The configuration file (`--config`).
    pub config: Option<PathBuf>,
}

impl TestServer {
    pub async fn start() -> Self {
        Self::start_with(Options::default()).await
    }

    pub async fn start_with(options: Options) -> Self {
        let dir = options
            .dir
            .unwrap_or_else(|| Arc::new(tempfile::tempdir().expect("temp dir")));
        let args: Vec<&str> = options.args.iter().map(String::as_str).collect();
        let mut config = test_config(&args);
        config.database_url = test_database(&dir).await;
        config.admin_token = options.token.clone().map(Secret::new);
        config.plugins_dir = options.plugins_dir.clone();
        config.chatd_allow_private_networks = options.allow_private_networks;
        config.config = options.config.clone();
        let plugins = PluginHost::start(&config).await.expect("plugins load");
        let server = Server::bind(&config, plugins).await.expect("server starts");
        let base = format!("http://{}", server.local_addr().unwrap());
        let state = server.state().clone();
        let (tx, rx) = oneshot::channel::<()>();
        let task = tokio::spawn(server.run(async {
            let _ = rx.await;
        }));
        TestServer {
            base,
            client: reqwest::Client::new(),
            store: state.store.clone(),
            state,
            dir,
            database_url: config.database_url.clone(),
            token: options.token,
            shutdown: Some(tx),
            task: Some(task),
        }
    }

    /// Stops the server gracefully and waits until it has closed the database.
    pub async fn stop(mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(task) = self.task.take() {
            task.await.expect("server task");
        }
    }

    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self.client.request(method, format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let res = req.send().await.expect("request sent");
        let status = res.status();
        let text = res.text().await.expect("body read");
        let json = serde_json::from_str(&text)
            .unwrap_or_else(|_| panic!("{status} body is not JSON: {text}"));
        (status, json)
    }

    pub async fn get(&self, path: &str) -> (StatusCode, Value) {
        self.request(Method::GET, path, None).await
    }
    pub async fn post(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.request(Method::POST, path, Some(body)).await
    }
    pub async fn patch(&self, path: &str, body: Value) -> (StatusCode, Value) {
        self.request(Method::PATCH, path, Some(body)).await
    }
    pub async fn delete(&self, path: &str) -> (StatusCode, Value) {
        self.request(Method::DELETE, path, None).await
    }

    /// POSTs a raw body (not necessarily JSON), declared as JSON.
    pub async fn post_raw(
        &self,
        path: &str,
        body: impl Into<reqwest::Body>,
    ) -> (StatusCode, Value) {
        let mut req = self
            .client
            .post(format!("{}{path}", self.base))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body);
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        let res = req.send().await.expect("request sent");
        let status = res.status();
        (status, res.json().await.expect("JSON body"))
    }

    /// POSTs and returns the response unread (a stream).
    pub async fn open(
        &self,
        path: &str,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> reqwest::Response {
        let mut req = self.client.post(format!("{}{path}", self.base));
        if let Some(token) = &self.token {
            req = req.bearer_auth(token);
        }
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        req.send().await.expect("request sent")
    }

    /// Opens a chat stream; panics unless it answers 200 with an event stream.
    pub async fn stream(&self, body: Value) -> Events {
        let res = self
            .open("/v1/chat-completions/stream", Some(body), &[])
            .await;
        Events::of(res).await
    }

    /// Creates a chat and returns its id.
    pub async fn new_chat(&self, body: Value) -> String {
        let (status, json) = self.post("/v1/chats", body).await;
        assert_eq!(status, StatusCode::OK, "{json}");
        json["chat"]["id"].as_str().unwrap().to_string()
    }

    /// Creates a search and returns its id.
    pub async fn new_search(&self, body: Value) -> String {
        let (status, json) = self.post("/v1/searches", body).await;
        assert_eq!(status, StatusCode::OK, "{json}");
        json["search"]["id"].as_str().unwrap().to_string()
    }

    /// Number of rows in every table, to prove a rejected request wrote nothing.
    pub async fn row_counts(&self) -> Vec<(String, i64)> {
        let mut db = self.raw_db().await;
        let mut counts = Vec::new();
        for table in [
            "chats",
            "messages",
            "searches",
            "project_chats",
            "project_searches",
            "llm_calls",
            "library_files",
        ] {
            let (n,): (i64,) = db.rows(&format!("SELECT COUNT(*) FROM {table}"), &[]).await[0];
            counts.push((table.to_string(), n));
        }
        counts
    }

    /// Moves a search's `updatedAt` `hours` into the past (the cache window is 24 hours).
    pub async fn age_search(&self, id: &str, hours: i64) {
        let aged = (chrono::Utc::now() - chrono::TimeDelta::hours(hours))
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string();
        let mut db = self.raw_db().await;
        db.execute(
            "UPDATE searches SET updated_at = ? WHERE id = ?",
            &[&aged, id],
        )
        .await;
    }

    /// A separate connection to the server's database, for what only time can do (aging a row)
    /// and for reading what no endpoint shows.
    pub async fn raw_db(&self) -> RawDb {
        RawDb::connect(&self.database_url).await
    }
}

/// Whether this test process is the PostgreSQL suite (`tests/api_postgres`).
pub fn on_postgres() -> bool {
    crate::POSTGRES
}

/// The database of a server whose files go in `dir`: a SQLite file there, or in the PostgreSQL
/// suite a fresh database whose URL is kept there, so that a server started again on the same
/// folder finds its data, as with SQLite.
pub async fn test_database(dir: &tempfile::TempDir) -> DatabaseUrl {
    if !on_postgres() {
        return DatabaseUrl::Sqlite(format!("sqlite://{}", db_path(dir).display()));
    }
    let Some(cluster) = crate::postgres::cluster() else {
        crate::postgres::skip_all("Debian's PostgreSQL server");
    };
    let kept = dir.path().join("postgres-url");
    if let Ok(url) = std::fs::read_to_string(&kept) {
        return DatabaseUrl::Postgres(url);
    }
    let url = crate::postgres::new_database(cluster).await;
    std::fs::write(&kept, &url).expect("keep the database's URL");
    DatabaseUrl::Postgres(url)
}

/// A connection to a test server's database, whichever it is.
pub enum RawDb {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl RawDb {
    pub async fn connect(url: &DatabaseUrl) -> Self {
        use sqlx::Connection;
        match url {
            DatabaseUrl::Sqlite(url) => {
                RawDb::Sqlite(sqlx::SqliteConnection::connect(url).await.expect("open db"))
            }
            DatabaseUrl::Postgres(url) => {
                RawDb::Postgres(sqlx::PgConnection::connect(url).await.expect("open db"))
            }
        }
    }

    /// The rows of `sql`, whose `?` placeholders take `binds` in order.
    pub async fn rows<T>(&mut self, sql: &str, binds: &[&str]) -> Vec<T>
    where
        T: Send + Unpin,
        T: for<'r> sqlx::FromRow<'r, sqlx::sqlite::SqliteRow>,
        T: for<'r> sqlx::FromRow<'r, sqlx::postgres::PgRow>,
    {
        match self {
            RawDb::Sqlite(conn) => {
                let mut query = sqlx::query_as(sql);
                for b in binds {
                    query = query.bind(*b);
                }
                query.fetch_all(conn).await.expect("query")
            }
            RawDb::Postgres(conn) => {
                let sql = numbered(sql);
                let mut query = sqlx::query_as(&sql);
                for b in binds {
                    query = query.bind(*b);
                }
                query.fetch_all(conn).await.expect("query")
            }
        }
    }

    /// Runs `sql`, whose `?` placeholders take `binds` in order.
    pub async fn execute(&mut self, sql: &str, binds: &[&str]) {
        match self {
            RawDb::Sqlite(conn) => {
                let mut query = sqlx::query(sql);
                for b in binds {
                    query = query.bind(*b);
                }
                query.execute(conn).await.expect("statement");
            }
            RawDb::Postgres(conn) => {
                let sql = numbered(sql);
                let mut query = sqlx::query(&sql);
                for b in binds {
                    query = query.bind(*b);
                }
                query.execute(conn).await.expect("statement");
            }
        }
    }
}

/// `?` placeholders as PostgreSQL's `$1`, `$2`, … (the tests' SQL has no `?` in literals).
fn numbered(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 8);
    let mut n = 0;
    for c in sql.chars() {
        if c == '?' {
            n += 1;
            out.push_str(&format!("${n}"));
        } else {
            out.push(c);
        }
    }
    out
}

fn db_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("data").join("chatd.db")
}

/// A minimal valid PNG header followed by padding up to `len` bytes.
pub fn png_bytes(len: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    bytes.resize(len.max(bytes.len()), 0);
    bytes
}

pub fn jpeg_bytes(len: usize) -> Vec<u8> {
    let mut bytes = b"\xff\xd8\xff\xe0\0\x10JFIF\0".to_vec();
    bytes.resize(len.max(bytes.len()), 0);
    bytes
}

pub fn data_url(mime: &str, bytes: &[u8]) -> String {
    use base64::Engine as _;
    format!(
        "data:{mime};base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}

/// One SSE event as a client parses it.
#[derive(Clone, Debug)]
pub struct Event {
    pub id: String,
    pub name: String,
    pub data: Value,
}

impl Event {
    /// The two parts of the event's id, `<run>-<position>`: its run's tag and its position.
    pub fn run_and_position(&self) -> (&str, usize) {
        let (run, position) = self.id.split_once('-').expect("an id is <run>-<position>");
        (run, position.parse().expect("a position"))
    }
}

/// A chat or search event stream, read event by event.
pub struct Events {
    inner: std::pin::Pin<Box<dyn futures::Stream<Item = Event> + Send>>,
}

impl Events {
    pub async fn of(res: reqwest::Response) -> Self {
        use eventsource_stream::Eventsource;
        use futures::StreamExt;
        let status = res.status();
        if status != StatusCode::OK {
            let text = res.text().await.unwrap_or_default();
            panic!("stream answered {status}: {text}");
        }
        let content_type = res.headers()["content-type"].to_str().unwrap().to_string();
        assert_eq!(content_type, "text/event-stream; charset=utf-8");
        let inner = res.bytes_stream().eventsource().map(|event| {
            let event = event.expect("a well-formed event stream");
            Event {
                id: event.id,
                name: event.event,
                data: serde_json::from_str(&event.data).expect("event data is JSON"),
            }
        });
        Self {
            inner: Box::pin(inner),
        }
    }

    /// The next event; `None` when the stream ended.
    pub async fn next(&mut self) -> Option<Event> {
        use futures::StreamExt;
        self.inner.next().await
    }

    /// The next event, which must exist.
    pub async fn expect(&mut self, name: &str) -> Event {
        let event = self
            .next()
            .await
            .unwrap_or_else(|| panic!("stream ended before {name}"));
        assert_eq!(event.name, name, "{event:?}");
        event
    }

    /// Every remaining event, through the end of the stream.
    pub async fn rest(mut self) -> Vec<Event> {
        let mut all = Vec::new();
        while let Some(event) = self.next().await {
            all.push(event);
        }
        all
    }
}

// ---- the plugin folder and the configuration file, changed while the server runs ----

/// Writes the manifest, then the component through a rename (how an operator should deploy:
/// the folder never holds half a component under its final name).
pub fn deploy(dir: &Path, stem: &str, wasm: &[u8], manifest: &str) {
    std::fs::write(dir.join(format!("{stem}.json")), manifest).unwrap();
    let staging = dir.join(format!(".{stem}.tmp"));
    std::fs::write(&staging, wasm).unwrap();
    std::fs::rename(&staging, dir.join(format!("{stem}.wasm"))).unwrap();
}

/// Waits (up to 60 s, scan by scan) until `check` holds for the registry.
pub async fn until(plugins: &PluginHost, what: &str, check: impl Fn(&PluginHost) -> bool) {
    let mut scans = plugins.scans();
    let waited = tokio::time::timeout(std::time::Duration::from_secs(60), async {
        while !check(plugins) {
            scans.changed().await.expect("the registry is alive");
        }
    })
    .await;
    assert!(waited.is_ok(), "timed out waiting until {what}");
}

/// Writes `text` as the configuration file in `dir`.
pub fn write_config(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("chatd.toml");
    // Written beside and renamed into place, as editors and deploy tools do: the server never
    // reads half a file.
    let partial = dir.join(".chatd.toml.partial");
    std::fs::write(&partial, text).unwrap();
    std::fs::rename(&partial, &path).unwrap();
    path
}

/// The model lists once the providers' lists have loaded with `id` among them (`present`) or
/// without it.
pub async fn models_with(server: &TestServer, id: &str, present: bool) -> Value {
    let mut updates = server.state.models.updates();
    loop {
        let (status, models) = server.get("/v1/models").await;
        assert_eq!(status, StatusCode::OK);
        if models["providers"].get(id).is_some() == present {
            return models;
        }
        // A folder plugin compiles first (slow in a debug build).
        tokio::time::timeout(std::time::Duration::from_secs(60), updates.changed())
            .await
            .unwrap_or_else(|_| panic!("{id} never became present = {present}: {models}"))
            .unwrap();
    }
}
