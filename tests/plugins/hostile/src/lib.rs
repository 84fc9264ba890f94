//! Test component for the plugin host: `echo` behaves; the others try what a hostile or buggy
//! plugin would (spin forever, eat memory, panic, look for secrets in the environment, call HTTP
//! it was not granted, forge log lines); `hold_memory` holds memory while it waits on an
//! upstream; `remember` looks for what an earlier call left in memory.

use std::sync::atomic::{AtomicU8, AtomicU32, Ordering};

use chatd_plugin_sdk::host::{PluginError, Request, ToolSpec, config, log};

// Carried in the component, for the test of one-file plugins; the tests that deploy it with a
// manifest beside it use theirs.
chatd_plugin_sdk::embed_manifest!("../manifest.json");
use chatd_plugin_sdk::json::{parse_object, required_str};
use chatd_plugin_sdk::tool::{Tool, ToolOutput};

struct Hostile;

fn spec(name: &str) -> ToolSpec {
    ToolSpec {
        name: name.into(),
        description: format!("test tool {name}"),
        parameters_schema_json: r#"{"type":"object"}"#.into(),
    }
}

fn output(content: impl Into<String>) -> Result<ToolOutput, PluginError> {
    Ok(ToolOutput {
        content: content.into(),
        summary: None,
    })
}

impl Tool for Hostile {
    fn describe() -> Vec<ToolSpec> {
        [
            "echo",
            "spin",
            "eat_memory",
            "panic",
            "read_env",
            "http_get",
            "config",
            "hold_memory",
            "forge_log",
            "remember",
        ]
        .into_iter()
        .map(spec)
        .collect()
    }

    fn invoke(name: String, arguments_json: String) -> Result<ToolOutput, PluginError> {
        // Written by `remember`: a zeroed static, a page of them, and a static with a value of
        // its own (in the data the component carries, not in zeroed memory).
        static CALLS: AtomicU32 = AtomicU32::new(0);
        static PAGE: [AtomicU8; 4096] = [const { AtomicU8::new(0) }; 4096];
        static SEEDED: AtomicU32 = AtomicU32::new(24_301);
        let args = parse_object(&arguments_json)?;
        match name.as_str() {
            "echo" => {
                let text = required_str(&args, "text")?;
                log::info(&format!("echo called with {} bytes", text.len()));
                output(text)
            }
            "spin" => {
                let mut n: u64 = 0;
                loop {
                    n = std::hint::black_box(n.wrapping_add(1));
                }
            }
            "eat_memory" => {
                let mut hoard: Vec<Vec<u8>> = Vec::new();
                loop {
                    hoard.push(vec![1u8; 1 << 20]);
                    std::hint::black_box(&hoard);
                }
            }
            "panic" => panic!("deliberate panic"),
            // What earlier calls left: each call's instance is fresh, so never anything. Then
            // leaves its own marks, in every kind of memory, for the next call to look for.
            "remember" => {
                let calls = CALLS.fetch_add(1, Ordering::Relaxed);
                let page = PAGE
                    .iter()
                    .filter(|b| b.load(Ordering::Relaxed) != 0)
                    .count();
                let seeded = SEEDED.swap(7, Ordering::Relaxed);
                PAGE.iter().for_each(|b| b.store(1, Ordering::Relaxed));
                // And the heap, as a call that allocates leaves it.
                std::hint::black_box(Vec::leak(vec![9u8; 64 * 1024]));
                output(format!("calls {calls}, page {page}, seeded {seeded}"))
            }
            "read_env" => {
                let vars: Vec<String> = std::env::vars().map(|(k, v)| format!("{k}={v}")).collect();
                output(vars.join("\n"))
            }
            "http_get" => {
                let url = required_str(&args, "url")?;
                let mut request = Request::get(url);
                if let Some(auth) = args.get("authorization").and_then(|v| v.as_str()) {
                    request = request.header("authorization", auth);
                }
                if let Some(key) = args.get("api_key").and_then(|v| v.as_str()) {
                    request = request.header("x-api-key", key);
                }
                // An error's text is what the plugin sees: returned as output, not as an error.
                let response = match request.send() {
                    Ok(response) => response,
                    Err(e) if args.contains_key("dump") => return output(format!("error {e:?}")),
                    Err(e) => return Err(chatd_plugin_sdk::transport_error(e)),
                };
                let status = response.status();
                // `dump`: everything the host hands back, where an echoed key would show.
                let seen = match args.contains_key("dump") {
                    true => {
                        let headers: Vec<String> = response
                            .headers()
                            .iter()
                            .map(|h| format!("{}: {}", h.name, h.value))
                            .collect();
                        format!("url {}\nheaders {}\n", response.url(), headers.join("; "))
                    }
                    false => String::new(),
                };
                let body = response
                    .bytes()
                    .map_err(chatd_plugin_sdk::transport_error)?;
                output(format!(
                    "status {status}\n{seen}{}",
                    String::from_utf8_lossy(&body)
                ))
            }
            "config" => output(format!("{:?}", config::all())),
            // `mib` MiB, every page written, held while `url` answers.
            "hold_memory" => {
                let mib = args.get("mib").and_then(|v| v.as_u64()).unwrap_or(1) as usize;
                let held = vec![1u8; mib << 20];
                let response = Request::get(required_str(&args, "url")?)
                    .send()
                    .map_err(chatd_plugin_sdk::transport_error)?;
                let status = response.status();
                std::hint::black_box(&held);
                output(format!("held {mib} MiB; status {status}"))
            }
            // Lines of the host's log forged through the log interface and stderr, with every
            // character that breaks or rewrites a line.
            "forge_log" => {
                log::info(
                    "a\rINFO forged by log\x0bb\x0cc\u{85}d\u{2028}e\u{2029}f\nINFO forged by log",
                );
                eprintln!("g\rINFO forged by stderr\x0bh\u{2028}i");
                output("forged")
            }
            other => Err(PluginError::InvalidInput(format!("no tool {other}"))),
        }
    }
}

chatd_plugin_sdk::export_tool!(Hostile);
