//! A third-party tool plugin from PLUGINS_DIR with its own secret and settings from the
//! configuration file (`[services.NAME]`, `[plugins.ID.settings]`), against a scripted upstream:
//! the key reaches the service's origin only, the plugin reads its declared settings and nothing
//! else, and no route inside the sandbox shows it the key. The plugin is `tests/plugins/hostile`,
//! which tries every route.

use std::path::Path;
use std::sync::Arc;

use chatd::plugins::loading::load::Plugin;
use chatd::plugins::loading::plugin_host::PluginHost;
use chatd::plugins::testing::{Reply, ScriptedUpstream};
use serde_json::{Value, json};

use crate::support::{Options, TestServer, deploy, test_component, until, write_config};

const KEY: &str = "wx-4c1f9e-operator-secret";

/// The weather plugin's manifest: the service by name, three declared settings.
fn manifest(id: &str) -> String {
    json!({
        "id": id, "kind": "tool", "wit": "chatd:plugin@0.1.0", "version": "1",
        "grants": {"services": ["weather"], "http": [OTHER_ORIGIN_PLACEHOLDER]},
        "settings": [
            {"name": "units", "type": "string", "description": "metric or imperial"},
            {"name": "retries", "type": "integer", "description": "tries per call", "default": 1},
            {"name": "verbose", "type": "boolean", "description": "longer answers", "default": false}
        ]
    })
    .to_string()
}

const OTHER_ORIGIN_PLACEHOLDER: &str = "http://other.invalid";

fn file_text(service: &str, retries: &str) -> String {
    format!(
        r#"
[services.weather]
base_url = "{service}"
api_key = "{KEY}"
auth = "header:x-api-key"
plugins = ["weather"]

[plugins.weather.settings]
units = "metric"
retries = {retries}
forecast_key = "not declared, not readable"
"#
    )
}

/// The hostile component as plugin `id`.
fn deploy_hostile(dir: &Path, id: &str, manifest: &str) {
    deploy(dir, id, &test_component("test-plugin-hostile"), manifest);
}

/// A server on `plugins_dir` and the configuration file `text`, once `weather` has loaded.
async fn start(
    plugins_dir: &Path,
    files: &Path,
    text: &str,
    private: bool,
) -> (TestServer, Arc<Plugin>) {
    let server = TestServer::start_with(Options {
        plugins_dir: Some(plugins_dir.to_path_buf()),
        // The other origin is a loopback upstream: manifest origins reach private addresses
        // only when the operator allows it.
        allow_private_networks: private,
        config: Some(write_config(files, text)),
        ..Options::default()
    })
    .await;
    let plugins = server.state.plugins.clone();
    until(&plugins, "weather loads", |p| {
        p.snapshot().plugin("weather").is_some()
    })
    .await;
    let plugin = plugins.snapshot().plugin("weather").unwrap().clone();
    (server, plugin)
}

async fn invoke(plugin: &Arc<Plugin>, tool: &str, args: Value) -> String {
    let tool_plugin = plugin.as_tool().expect("a tool plugin");
    match tool_plugin.invoke(tool, &args.to_string()).await.unwrap() {
        Ok(out) => out.content,
        Err(e) => format!("tool error {e:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plugin_gets_its_service_key_on_the_wire_and_never_in_the_sandbox() {
    let other =
        ScriptedUpstream::start([("GET /landing", Reply::text(200, "text/plain", "ok"))]).await;
    let weather = ScriptedUpstream::start([
        ("GET /forecast", Reply::text(200, "text/plain", "sunny")),
        // An upstream that quotes the request back: in its body, in a header, in a redirect.
        (
            "GET /echo",
            Reply::text(200, "text/plain", &format!("you sent x-api-key: {KEY}"))
                .header("x-echo", KEY),
        ),
        (
            "GET /bounce",
            Reply::redirect(302, &format!("/forecast?seen={KEY}")),
        ),
        (
            "GET /bad-location",
            Reply::redirect(302, &format!("http://[{KEY}/")),
        ),
        (
            "GET /away",
            Reply::redirect(302, &format!("{}/landing", other.url())),
        ),
    ])
    .await;
    let plugins_dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let manifest = |id: &str| manifest(id).replace(OTHER_ORIGIN_PLACEHOLDER, &other.url());
    deploy_hostile(plugins_dir.path(), "weather", &manifest("weather"));
    // Same service, an id the operator did not list.
    deploy_hostile(plugins_dir.path(), "intruder", &manifest("intruder"));
    let text = file_text(&weather.url(), "3");
    let (server, plugin) = start(plugins_dir.path(), files.path(), &text, true).await;
    let plugins = server.state.plugins.clone();

    // The unlisted plugin does not load, and the operator is told why.
    assert!(plugins.snapshot().plugin("intruder").is_none());
    let refused = plugins.refused();
    let why = refused
        .iter()
        .find(|r| r.path.ends_with("intruder.wasm"))
        .map(|r| r.reason.clone())
        .unwrap_or_else(|| panic!("intruder refused: {refused:?}"));
    assert!(
        why.contains("plugin intruder") && why.contains("weather"),
        "{why}"
    );
    let base = weather.url();

    // The upstream gets the key, in the header the operator chose.
    let out = invoke(
        &plugin,
        "http_get",
        json!({"url": format!("{base}/forecast")}),
    )
    .await;
    assert_eq!(out, "status 200\nsunny");
    assert_eq!(weather.requests()[0].header("x-api-key"), Some(KEY));
    // The plugin's own guess at the header is replaced by the host's.
    invoke(
        &plugin,
        "http_get",
        json!({"url": format!("{base}/forecast"), "api_key": "guess"}),
    )
    .await;
    assert_eq!(weather.requests()[1].header("x-api-key"), Some(KEY));

    // A redirect to another origin does not carry it.
    let out = invoke(&plugin, "http_get", json!({"url": format!("{base}/away")})).await;
    assert_eq!(out, "status 200\nok");
    let landed = other.requests();
    assert_eq!(landed.len(), 1);
    assert_eq!(
        landed[0].header("x-api-key"),
        None,
        "{:?}",
        landed[0].headers
    );

    // The sandbox: settings, environment, echoed body and headers, final URL, error text.
    let mut seen = Vec::new();
    let settings = invoke(&plugin, "config", json!({})).await;
    assert_eq!(
        settings,
        format!(
            r#"[("retries", "3"), ("units", "metric"), ("verbose", "false"), ("weather_base_url", "{base}")]"#
        ),
        "declared settings with the operator's values or their defaults, the service's base URL; \
         the undeclared forecast_key is not readable"
    );
    seen.push(settings);
    seen.push(invoke(&plugin, "read_env", json!({})).await);
    for path in ["/echo", "/bounce", "/bad-location"] {
        seen.push(
            invoke(
                &plugin,
                "http_get",
                json!({"url": format!("{base}{path}"), "dump": true}),
            )
            .await,
        );
    }
    assert!(
        seen[2].contains("you sent x-api-key: [redacted]"),
        "{}",
        seen[2]
    );
    assert!(seen[2].contains("x-echo: [redacted]"), "{}", seen[2]);
    assert!(seen[3].contains("forecast?seen=[redacted]"), "{}", seen[3]);
    assert!(seen[4].starts_with("error "), "{}", seen[4]);
    for text in &seen {
        assert!(!text.contains(KEY), "the key reached the sandbox: {text}");
    }
    assert!(
        weather
            .requests()
            .iter()
            .all(|r| r.header("x-api-key") == Some(KEY)),
        "every request to the service carried the key"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_setting_of_the_wrong_type_is_refused_naming_both() {
    let weather = ScriptedUpstream::start([]).await;
    let plugins_dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let manifest =
        manifest("weather").replace(&format!(r#","http":["{OTHER_ORIGIN_PLACEHOLDER}"]"#), "");
    deploy_hostile(plugins_dir.path(), "weather", &manifest);
    let text = file_text(&weather.url(), "3");
    let (server, _) = start(plugins_dir.path(), files.path(), &text, false).await;
    let plugins = server.state.plugins.clone();

    // A file that gives `retries` a string is refused whole, with the rule the log states; the
    // last good configuration keeps serving. (Applied directly: the watcher's path to the same
    // function is the declared-provider tests'.)
    let parse = |text: &str| chatd::config::file::FileConfig::parse(text, &|_| None).unwrap();
    let wrong = file_text(&weather.url(), "\"three\"").replace("metric", "imperial");
    let why = plugins.reconfigure(&parse(&wrong)).await.unwrap_err();
    assert_eq!(
        why,
        "plugins.weather.settings.retries: weather declares it an integer; the file gives a string"
    );
    let plugin = plugins.snapshot().plugin("weather").unwrap().clone();
    let settings = invoke(&plugin, "config", json!({})).await;
    assert!(
        settings.contains(r#"("retries", "3")"#) && settings.contains(r#"("units", "metric")"#),
        "{settings}"
    );

    // A plugin that arrives under a file giving it the wrong type does not load, naming both.
    let for_late = format!(
        "{}\n[plugins.weather2.settings]\nverbose = \"yes\"\n",
        file_text(&weather.url(), "3")
    );
    plugins.reconfigure(&parse(&for_late)).await.unwrap();
    let late = json!({
        "id": "weather2", "kind": "tool", "wit": "chatd:plugin@0.1.0",
        "settings": [{"name": "verbose", "type": "boolean", "description": "longer answers"}]
    });
    deploy_hostile(plugins_dir.path(), "weather2", &late.to_string());
    let refused = |p: &PluginHost| {
        p.refused()
            .into_iter()
            .find(|r| r.path.ends_with("weather2.wasm"))
            .map(|r| r.reason)
    };
    until(&plugins, "weather2 is refused", |p| refused(p).is_some()).await;
    let why = refused(&plugins).unwrap();
    assert!(
        why.contains(
            "plugins.weather2.settings.verbose: weather2 declares it a boolean; the file gives a string"
        ),
        "{why}"
    );
    assert!(plugins.snapshot().plugin("weather2").is_none());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_can_go_as_a_query_parameter_and_still_never_reaches_the_sandbox() {
    // A key with characters a URL escapes: an error or an echo shows it escaped.
    const QUERY_KEY: &str = "wx+key/with=chars-7";
    const ESCAPED: &str = "wx%2Bkey%2Fwith%3Dchars-7";
    let other =
        ScriptedUpstream::start([("GET /landing", Reply::text(200, "text/plain", "ok"))]).await;
    let weather = ScriptedUpstream::start([
        ("GET /forecast", Reply::text(200, "text/plain", "sunny")),
        (
            "GET /echo",
            Reply::text(200, "text/plain", &format!("GET /echo?key={ESCAPED}")),
        ),
        // A redirect that keeps the query, as host-canonicalising redirects do.
        (
            "GET /moved",
            Reply::redirect(
                302,
                &format!("{}/landing?units=metric&key={ESCAPED}", other.url()),
            ),
        ),
    ])
    .await;
    // Nothing listens here: the connection error quotes the URL, key and all.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let down = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let plugins_dir = tempfile::tempdir().unwrap();
    let files = tempfile::tempdir().unwrap();
    let manifest = manifest("weather")
        .replace(OTHER_ORIGIN_PLACEHOLDER, &other.url())
        .replace(
            r#""services":["weather"]"#,
            r#""services":["weather","down"]"#,
        );
    deploy_hostile(plugins_dir.path(), "weather", &manifest);
    let text = file_text(&weather.url(), "3")
        .replace("header:x-api-key", "query:key")
        .replace(KEY, QUERY_KEY)
        + &format!(
            "\n[services.down]\nbase_url = \"{down}\"\napi_key = \"{QUERY_KEY}\"\nauth = \"query:key\"\nplugins = [\"weather\"]\n"
        );
    let (server, plugin) = start(plugins_dir.path(), files.path(), &text, true).await;
    let base = weather.url();
    let get = |url: String| {
        let plugin = plugin.clone();
        async move { invoke(&plugin, "http_get", json!({"url": url, "dump": true})).await }
    };

    // The plugin's own `key` is replaced, its other parameters kept as written.
    let out = get(format!("{base}/forecast?key=guess&units=metric&q=a%20b")).await;
    assert!(out.starts_with("status 200\n"), "{out}");
    let sent = &weather.requests()[0];
    assert_eq!(
        sent.query.as_deref(),
        Some(format!("units=metric&q=a%20b&key={ESCAPED}").as_str())
    );
    assert_eq!(sent.query_pairs()["key"], QUERY_KEY);
    assert_eq!(sent.header("x-api-key"), None);

    // What comes back: an echo, a redirect to another origin, a connection error.
    let echoed = get(format!("{base}/echo")).await;
    assert!(echoed.ends_with("GET /echo?key=[redacted]"), "{echoed}");
    let moved = get(format!("{base}/moved")).await;
    assert!(moved.starts_with("status 200\n"), "{moved}");
    let landed = &other.requests()[0];
    assert_eq!(
        landed.query.as_deref(),
        Some("units=metric"),
        "the key stayed home"
    );
    let failed = get(format!("{down}/anything")).await;
    assert!(failed.starts_with("error "), "{failed}");
    for text in [&out, &echoed, &moved, &failed] {
        assert!(
            !text.contains(QUERY_KEY) && !text.contains(ESCAPED),
            "{text}"
        );
    }
    server.stop().await;
}
