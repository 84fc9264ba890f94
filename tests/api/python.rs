//! The bundled `python` tool in the real server: a scripted model (provider_c's recorded
//! tool-call stream, varied) calls it, and the tests read what the model got back in its next
//! turn, the stored tool messages and the events. The interpreter is the real component
//! (`plugins/python`, CPython built by componentize-py), in its sessions, with its folder.

use chatd::plugins::testing::{Reply, ScriptedUpstream};
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::completions::{ROUTE, TEXT_STREAM, body, server_for};
use crate::python_call::{python_call, python_calls, tool_call_raw};
use crate::support::TestServer;

/// An upstream that calls `python` once per code, each in a round of its own, then answers.
pub(crate) async fn model_running(codes: &[&str]) -> ScriptedUpstream {
    let mut script: Vec<(&str, Reply)> = codes
        .iter()
        .map(|code| (ROUTE, Reply::sse(&python_call(code))))
        .collect();
    script.push((ROUTE, Reply::sse(TEXT_STREAM)));
    ScriptedUpstream::start(script).await
}

/// What each `python` call gave the model, in order: the tool messages of the completion
/// requests the upstream received (the last one of each request is that round's result).
pub(crate) fn results_seen(upstream: &ScriptedUpstream) -> Vec<String> {
    upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == "/chat/completions")
        .filter_map(|r| {
            let body = r.json();
            let last = body["messages"].as_array()?.last()?.clone();
            (last["role"] == "tool").then(|| last["content"].as_str().unwrap().to_string())
        })
        .collect()
}

/// The result's JSON object (a completed call).
fn object(result: &str) -> Value {
    serde_json::from_str(result).unwrap_or_else(|e| panic!("{e}: {result}"))
}

/// Streams one user message in `chat_id` and returns the events, `done` asserted.
async fn run_chat(
    server: &TestServer,
    chat_id: &str,
    content: Value,
) -> Vec<crate::support::Event> {
    let events = server
        .stream(body(
            Some(chat_id),
            json!([{"role": "user", "content": content}]),
        ))
        .await
        .rest()
        .await;
    assert_eq!(events.last().unwrap().name, "done", "{events:?}");
    events
}

#[tokio::test]
async fn a_computation_reaches_the_model_and_the_stored_tool_message() {
    let upstream =
        model_running(&["import math\nprint(6 * 7)\nx = math.factorial(20)\nx + 1"]).await;
    let server = server_for(&upstream, &[]).await;
    let (_, tools) = server.get("/v1/chat-tools").await;
    let python = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "python")
        .unwrap_or_else(|| panic!("python is offered by default: {tools}"))
        .clone();
    let description = python["description"].as_str().unwrap();
    for fact in [
        "no network",
        "sympy",
        "pygal",
        "30 s",
        "256 MiB",
        "20 idle minutes",
    ] {
        assert!(description.contains(fact), "{fact:?} in {description}");
    }
    let chat_id = server.new_chat(json!({})).await;
    let events = run_chat(&server, &chat_id, json!("Compute.")).await;
    let completed = events
        .iter()
        .find(|e| e.name == "tool_call" && e.data["status"] == "completed")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(completed.data["name"], "python");

    let seen = results_seen(&upstream);
    assert_eq!(seen.len(), 1, "{seen:?}");
    let result = object(&seen[0]);
    assert_eq!(result["stdout"], "42\n");
    assert_eq!(result["value"], "2432902008176640001");
    assert_eq!(result["files"], json!([]));
    assert!(result["durationMs"].as_u64().is_some(), "{result}");
    assert!(result["memoryPeakMib"].as_f64().unwrap() > 0.0, "{result}");

    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    let tool = chat["chat"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["name"], "python");
    assert_eq!(tool["metadata"]["status"], "completed");
    assert_eq!(
        object(tool["content"].as_str().unwrap())["value"],
        "2432902008176640001"
    );
}

/// An upstream replaying `turns` in order: `Some(code)` calls `python`, `None` answers text.
pub(crate) async fn model_script(turns: &[Option<&str>]) -> ScriptedUpstream {
    let script: Vec<(&str, Reply)> = turns
        .iter()
        .map(|turn| match turn {
            Some(code) => (ROUTE, Reply::sse(&python_call(code))),
            None => (ROUTE, Reply::sse(TEXT_STREAM)),
        })
        .collect();
    ScriptedUpstream::start(script).await
}

#[tokio::test]
async fn globals_persist_within_a_chat_and_never_reach_another() {
    let upstream = model_script(&[
        Some("import secrets, random\ntoken = secrets.token_hex(16)\n(token, random.random())"),
        Some("token"),
        None,
        Some("import secrets, random\n(secrets.token_hex(16), random.random())"),
        Some("token"),
        None,
    ])
    .await;
    let server = server_for(&upstream, &[]).await;
    let first = server.new_chat(json!({})).await;
    let other = server.new_chat(json!({})).await;
    run_chat(&server, &first, json!("Make a token.")).await;
    run_chat(&server, &other, json!("Make another.")).await;
    let seen = results_seen(&upstream);
    assert_eq!(seen.len(), 4, "{seen:?}");
    let made = object(&seen[0])["value"].as_str().unwrap().to_string();
    let again = object(&seen[1])["value"].as_str().unwrap().to_string();
    assert!(
        made.starts_with(&format!("({again}, ")),
        "call two reads call one's global: {made} / {again}"
    );
    let elsewhere = object(&seen[2])["value"].as_str().unwrap().to_string();
    assert_ne!(
        made, elsewhere,
        "two sessions never draw the same token or the same random numbers"
    );
    assert!(
        seen[3].contains("NameError: name 'token' is not defined"),
        "the other chat's session has no such global: {}",
        seen[3]
    );
}

/// Hostile code, each in a round of the same chat, with a 10 s limit: every one ends as that
/// call's failure (or a clean exception), and the session goes on (or is started again).
#[tokio::test]
async fn hostile_code_is_contained_call_by_call() {
    let cases: [(&str, &str); 12] = [
        ("x = bytearray(1 << 30)", "MemoryError"),
        ("def f():\n    return f()\nf()", "RecursionError"),
        ("s = 'x' * 10**7\nfor _ in range(10):\n    print(s)", ""),
        (
            "for i in range(1000):\n    open(f'f{i}.txt', 'w').write('x')",
            "OSError",
        ),
        ("open('/etc/passwd').read()", "Error"),
        ("open('../../../etc/passwd').read()", "Error"),
        ("import os\ndict(os.environ)", ""),
        (
            "import threading\nthreading.Thread(target=print).start()",
            "RuntimeError",
        ),
        (
            "import subprocess\nsubprocess.run(['ls'])",
            "wasi does not support processes",
        ),
        ("import ctypes", "ModuleNotFoundError"),
        (
            "import _socket\ns = _socket.socket()\ns.connect(('127.0.0.1', 9))",
            "Error",
        ),
        ("import os\nos.listdir('.')", ""),
    ];
    let mut turns: Vec<Option<String>> = cases
        .iter()
        .map(|(code, _)| Some(code.to_string()))
        .collect();
    turns.push(Some("1 + 1".into()));
    let mut script: Vec<(&str, Reply)> = turns
        .iter()
        .map(|code| (ROUTE, Reply::sse(&python_call(code.as_deref().unwrap()))))
        .collect();
    script.push((ROUTE, Reply::sse(&tool_call_raw(r#"{"code": 42}"#))));
    let long = "#".repeat(100_001);
    script.push((ROUTE, Reply::sse(&python_call(&long))));
    script.push((ROUTE, Reply::sse(TEXT_STREAM)));
    let upstream = ScriptedUpstream::start(script).await;
    let server = server_for(&upstream, &["--chat-python-timeout-ms", "10000"]).await;
    let chat_id = server.new_chat(json!({})).await;
    let events = run_chat(&server, &chat_id, json!("Try these.")).await;
    let ended: Vec<&crate::support::Event> = events
        .iter()
        .filter(|e| e.name == "tool_call" && e.data["status"] != "initiated")
        .collect();
    let seen = results_seen(&upstream);
    assert_eq!(seen.len(), cases.len() + 3, "{seen:?}");
    for (i, (code, expected)) in cases.iter().enumerate() {
        let failed = ended[i].data["status"] == "failed";
        assert_eq!(failed, !expected.is_empty(), "{code}: {}", seen[i]);
        assert!(seen[i].contains(expected), "{code}: {}", seen[i]);
    }
    // Printing 100 MB: the first characters kept, the rest counted (what it costs: `bench python`).
    let printed = object(&seen[2]);
    assert_eq!(printed["stdout"].as_str().unwrap().len(), 20_000);
    assert_eq!(printed["stdoutTruncated"], true);
    assert_eq!(printed["stdoutDroppedChars"], 100_000_010 - 20_000);
    // A thousand files: the first twenty, then the quota.
    assert!(seen[3].to_lowercase().contains("quota"), "{}", seen[3]);
    let written = seen[3].split("Files written: ").nth(1).unwrap_or_default();
    assert_eq!(written.split(", ").count(), 20, "{}", seen[3]);
    assert!(!written.contains("f20.txt"), "{}", seen[3]);
    assert!(!seen[4].contains("root:"), "{}", seen[4]);
    assert!(!seen[5].contains("root:"), "{}", seen[5]);
    assert_eq!(object(&seen[6])["value"], "{}", "no environment at all");
    // The folder holds what the session wrote, and nothing of the host's.
    let listing = object(&seen[11])["value"].as_str().unwrap().to_string();
    assert!(
        listing.contains("'f0.txt'") && !listing.contains("passwd"),
        "{listing}"
    );
    assert_eq!(
        object(&seen[12])["value"],
        "2",
        "the session still runs code"
    );
    assert!(
        seen[13].contains("invalid arguments: code: must be a string"),
        "{}",
        seen[13]
    );
    assert!(
        seen[14].contains("invalid arguments: code: at most 100000 characters"),
        "{}",
        seen[14]
    );
}

/// An endless loop ends at its limit (6 s here) plus at most half a second, while `/health`
/// answers and another chat streams its whole reply: the looping run is still active when that
/// reply ends (a text reply needs far less than the 6 s, even on a loaded machine; a 3 s limit
/// and a clock were too tight for CI). The chat's next call runs in a new session.
#[tokio::test]
async fn an_endless_loop_ends_at_its_limit_while_the_server_serves_others() {
    // The loop's call; the other chat's answer; the looping chat's answer after the loop; then
    // that chat's next call and answer.
    let upstream = model_script(&[
        Some("kept = 1\nwhile True:\n    pass"),
        None,
        None,
        Some("'kept' in globals()"),
        None,
    ])
    .await;
    let server = server_for(&upstream, &["--chat-python-timeout-ms", "6000"]).await;
    let looping = server.new_chat(json!({})).await;
    let other = server.new_chat(json!({})).await;
    let mut stream = server
        .stream(body(
            Some(&looping),
            json!([{"role": "user", "content": "Loop."}]),
        ))
        .await;
    loop {
        let event = stream.next().await.expect("the run goes on");
        if event.name == "tool_call" && event.data["status"] == "initiated" {
            break;
        }
    }
    // While the loop runs: the server answers, and another chat gets its whole reply.
    let (status, _) = server.get("/health").await;
    assert_eq!(status, StatusCode::OK);
    run_chat(&server, &other, json!("Hello.")).await;
    let (_, runs) = server.get("/v1/active-runs").await;
    assert_eq!(
        runs["chats"],
        json!([looping]),
        "the other chat was held up until the loop ended"
    );
    let rest = stream.rest().await;
    let failed = rest
        .iter()
        .find(|e| e.name == "tool_call" && e.data["status"] == "failed")
        .unwrap_or_else(|| panic!("{rest:?}"));
    let took = failed.data["durationMs"].as_u64().unwrap();
    assert!((6000..=6500).contains(&took), "ended after {took} ms");
    assert!(
        failed.data["error"]
            .as_str()
            .unwrap()
            .contains("did not finish within the 6 s limit"),
        "{failed:?}"
    );
    // The session was replaced: its globals are gone.
    run_chat(&server, &looping, json!("Again.")).await;
    let seen = results_seen(&upstream);
    assert_eq!(object(seen.last().unwrap())["value"], "False", "{seen:?}");
}

/// A text attachment is a file of the code's folder under its own name; an image is its bytes.
#[tokio::test]
async fn the_attachments_are_files_in_the_folder() {
    let upstream = model_running(&[
        "import csv, os\nrows = list(csv.DictReader(open('data.csv')))\n\
         (sum(int(r['b']) for r in rows), sorted(os.listdir('.')), open('image-1.png', 'rb').read(4))",
    ])
    .await;
    let server = server_for(&upstream, &[]).await;
    let chat_id = server.new_chat(json!({})).await;
    let png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    let message = json!([{
        "role": "user",
        "content": "Add up column b.",
        "attachments": [
            {"kind": "text", "filename": "data.csv", "mimeType": "text/csv",
             "text": "a,b\n1,2\n3,4\n", "truncated": false},
            {"kind": "image", "filename": "dot.png", "mimeType": "image/png", "sizeBytes": 70,
             "dataUrl": format!("data:image/png;base64,{png}")}
        ]
    }]);
    let events = server
        .stream(body(Some(&chat_id), message))
        .await
        .rest()
        .await;
    assert_eq!(events.last().unwrap().name, "done", "{events:?}");
    let seen = results_seen(&upstream);
    assert_eq!(
        object(&seen[0])["value"],
        r#"(6, ['data.csv', 'image-1.png'], b'\x89PNG')"#,
        "{seen:?}"
    );
}

/// A server on `upstream` (as provider_c) keeping its data in `dir`, with `args`.
async fn server_in(
    upstream: &ScriptedUpstream,
    dir: &std::sync::Arc<tempfile::TempDir>,
    args: &[&str],
) -> TestServer {
    let options = crate::support::Options {
        dir: Some(dir.clone()),
        args: args.iter().map(|a| a.to_string()).collect(),
        ..crate::support::Options::default()
    };
    crate::live_replies::server(crate::live_replies::C, upstream, options).await
}

/// Where a chat's next run lands after `first`'s: a second instance beside it on PostgreSQL
/// (`first` given back, to stay up while the second serves); on SQLite, the same data after a
/// restart.
async fn next_instance(
    first: TestServer,
    upstream: &ScriptedUpstream,
    dir: &std::sync::Arc<tempfile::TempDir>,
    args: &[&str],
) -> (TestServer, Option<TestServer>) {
    if crate::POSTGRES {
        (server_in(upstream, dir, args).await, Some(first))
    } else {
        first.stop().await;
        (server_in(upstream, dir, args).await, None)
    }
}

/// The code writes a chart (pygal, SVG) and a CSV: both are kept with the chat, listed in the
/// stored tool message's `metadata.files`, downloadable with their types (the SVG shown, never
/// run; the CSV downloaded), in the folder of the chat's next session wherever it starts (a
/// second instance on PostgreSQL, a restart on SQLite), and gone with the chat.
#[tokio::test]
async fn written_files_are_kept_listed_served_and_deleted_with_the_chat() {
    let write = "import csv, pygal\n\
        with open('data.csv', 'w', newline='') as f:\n    csv.writer(f).writerows([['x', 'y'], [1, 2], [2, 4]])\n\
        chart = pygal.Bar()\nchart.add('y', [2, 4])\nchart.render_to_file('chart.svg')";
    let upstream = model_script(&[
        Some(write),
        None,
        Some("open('data.csv').read().splitlines()"),
        None,
    ])
    .await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let first = server_in(&upstream, &dir, &[]).await;
    let chat_id = first.new_chat(json!({})).await;
    run_chat(&first, &chat_id, json!("Chart it.")).await;
    let seen = results_seen(&upstream);
    assert_eq!(
        object(&seen[0])["files"],
        json!([
            {"name": "chart.svg", "mimeType": "image/svg+xml", "sizeBytes": object(&seen[0])["files"][0]["sizeBytes"]},
            {"name": "data.csv", "mimeType": "text/csv", "sizeBytes": 15}
        ])
    );
    let (_, chat) = first.get(&format!("/v1/chats/{chat_id}")).await;
    let tool = chat["chat"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    let files = tool["metadata"]["files"]
        .as_array()
        .unwrap_or_else(|| panic!("{tool}"))
        .clone();
    assert_eq!(files.len(), 2, "{tool}");
    assert_eq!(files[0]["name"], "chart.svg");
    assert_eq!(files[1]["mimeType"], "text/csv");
    assert_eq!(files[1]["sizeBytes"], 15);

    let download = |server: &TestServer, id: &Value| {
        let url = format!(
            "{}/v1/chats/{chat_id}/files/{}",
            server.base,
            id.as_str().unwrap()
        );
        server.client.get(url).send()
    };
    let svg = download(&first, &files[0]["id"]).await.unwrap();
    assert_eq!(svg.status(), StatusCode::OK);
    let header = |r: &reqwest::Response, name: &str| {
        r.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    assert_eq!(header(&svg, "content-type"), "image/svg+xml");
    assert!(header(&svg, "content-disposition").starts_with("inline; filename=\"chart.svg\""));
    assert!(header(&svg, "content-security-policy").contains("sandbox"));
    assert!(header(&svg, "content-security-policy").contains("default-src 'none'"));
    assert_eq!(header(&svg, "x-content-type-options"), "nosniff");
    assert!(svg.text().await.unwrap().contains("<svg"));
    let csv = download(&first, &files[1]["id"]).await.unwrap();
    assert_eq!(header(&csv, "content-type"), "text/csv");
    assert!(header(&csv, "content-disposition").starts_with("attachment; filename=\"data.csv\""));
    assert_eq!(csv.text().await.unwrap(), "x,y\r\n1,2\r\n2,4\r\n");
    let (status, body) = first
        .get(&format!("/v1/chats/{chat_id}/files/no-such-file"))
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND, "{body}");

    // The chat's next run lands on another instance: a new session, with the chat's files.
    let (second, _first) = next_instance(first, &upstream, &dir, &[]).await;
    run_chat(&second, &chat_id, json!("Read it back.")).await;
    let seen = results_seen(&upstream);
    assert_eq!(
        object(seen.last().unwrap())["value"],
        "['x,y', '1,2', '2,4']",
        "{seen:?}"
    );

    // Deleting the chat deletes its files.
    let (status, _) = second.delete(&format!("/v1/chats/{chat_id}")).await;
    assert_eq!(status, StatusCode::OK);
    let gone = download(&second, &files[1]["id"]).await.unwrap();
    assert_eq!(gone.status(), StatusCode::NOT_FOUND);
}

/// Sessions count against the memory all plugin instances share: with room for about two, a
/// third chat's session ends the least recently used idle one instead of failing, and that
/// chat's next call finds a new session (its globals gone).
#[tokio::test]
async fn idle_sessions_make_way_when_the_total_plugin_memory_runs_short() {
    // What one session holds, measured on a server with room to spare.
    let probe = model_script(&[Some("kept = 'a'\nkept"), None]).await;
    let roomy = server_for(&probe, &[]).await;
    let chat = roomy.new_chat(json!({})).await;
    run_chat(&roomy, &chat, json!("Measure.")).await;
    let one = object(&results_seen(&probe)[0])["memoryPeakMib"]
        .as_f64()
        .unwrap();
    roomy.stop().await;
    // Room for two sessions and a half.
    let total = ((one * 2.5) as u64).max(64).to_string();
    let upstream = model_script(&[
        Some("kept = 'a'\nkept"),
        None,
        Some("kept = 'b'\nkept"),
        None,
        Some("kept = 'c'\nkept"),
        None,
        Some("'kept' in globals()"),
        None,
    ])
    .await;
    let server = server_for(&upstream, &["--chatd-plugin-memory-total-mib", &total]).await;
    let chats = [
        server.new_chat(json!({})).await,
        server.new_chat(json!({})).await,
        server.new_chat(json!({})).await,
    ];
    for chat in &chats {
        run_chat(&server, chat, json!("Keep it.")).await;
    }
    run_chat(&server, &chats[0], json!("Still there?")).await;
    let seen = results_seen(&upstream);
    assert_eq!(seen.len(), 4, "{seen:?}");
    for (i, value) in ["'a'", "'b'", "'c'"].iter().enumerate() {
        assert_eq!(object(&seen[i])["value"], *value, "{seen:?}");
    }
    assert_eq!(
        object(&seen[3])["value"],
        "False",
        "the first chat's idle session made way: {seen:?}"
    );
}

/// What code does with files works in the folder: folders made and removed (`shutil.rmtree`
/// goes through folders opened read-only), appends, copies, renames, seeks, temporary files;
/// the result lists what is there at the end that the call wrote.
#[tokio::test]
async fn ordinary_file_work_runs_in_the_folder() {
    let code = "import os, shutil, pathlib, tempfile\n\
        os.makedirs('out/deep', exist_ok=True)\n\
        pathlib.Path('out/deep/a.txt').write_text('hello')\n\
        with open('out/deep/a.txt', 'a') as f:\n    f.write(' world')\n\
        shutil.copy('out/deep/a.txt', 'b.txt')\n\
        os.rename('b.txt', 'c.txt')\n\
        with open('c.txt', 'r+') as f:\n    f.seek(6)\n    f.write('WORLD')\n\
        with tempfile.NamedTemporaryFile('w', delete=False, dir='.') as t:\n    t.write('tmp')\n\
        os.remove(t.name)\n\
        shutil.rmtree('out')\n\
        (open('c.txt').read(), sorted(os.listdir('.')), os.path.exists('out'), os.path.getsize('c.txt'))";
    let upstream = model_running(&[code]).await;
    let server = server_for(&upstream, &[]).await;
    let chat_id = server.new_chat(json!({})).await;
    run_chat(&server, &chat_id, json!("Shuffle files.")).await;
    let seen = results_seen(&upstream);
    let result = object(&seen[0]);
    assert_eq!(
        result["value"], "('hello WORLD', ['c.txt'], False, 11)",
        "{result}"
    );
    assert_eq!(
        result["files"],
        json!([{"name": "c.txt", "mimeType": "text/plain", "sizeBytes": 11}])
    );
}

/// What the code prints is held by the host to its cap, however the code writes it: a
/// `sys.stdout` whose attributes it changed, a stream it replaced, `os.write` on the
/// descriptors; the value and the traceback are cut by the host whatever the interpreter's own
/// limits say. Six such calls in one round store six bounded tool messages.
#[tokio::test]
async fn output_is_capped_by_the_host_whatever_the_code_does() {
    let codes = [
        "import sys\nsys.stdout.limit = 10**12\nsys.stdout.write('x' * 6_000_000)\nNone",
        "import os\ndata = memoryview(b'y' * 6_000_000)\nwhile data:\n    data = data[os.write(1, data):]",
        "import os\ndata = memoryview(b'z' * 6_000_000)\nwhile data:\n    data = data[os.write(2, data):]",
        "import io, sys\nsys.stdout = io.StringIO()\nprint('hidden')\nsys.__stdout__.write('w' * 30_000)\nNone",
        "import os\nos.write(2, b'x\\rINFO forged\\n')\nNone",
        "import sys\napp = sys.modules['app']\napp.VALUE_CHARS = 10**9\napp.cut = lambda text, limit: text\n'v' * 1_000_000",
    ];
    let upstream = ScriptedUpstream::start(vec![
        (ROUTE, Reply::sse(&python_calls(&codes))),
        (ROUTE, Reply::sse(TEXT_STREAM)),
    ])
    .await;
    let server = server_for(&upstream, &[]).await;
    let chat_id = server.new_chat(json!({})).await;
    run_chat(&server, &chat_id, json!("Print a lot.")).await;
    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    let tools: Vec<Value> = chat["chat"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .cloned()
        .collect();
    assert_eq!(tools.len(), codes.len(), "{chat}");
    let result = |code: &str| -> Value {
        let tool = tools
            .iter()
            .find(|t| t["metadata"]["args"]["code"] == code)
            .unwrap_or_else(|| panic!("{code} in {tools:?}"));
        assert_eq!(tool["metadata"]["status"], "completed", "{code}: {tool}");
        object(tool["content"].as_str().unwrap())
    };
    for (code, stream, letter) in [
        (codes[0], "stdout", "x"),
        (codes[1], "stdout", "y"),
        (codes[2], "stderr", "z"),
    ] {
        let result = result(code);
        assert_eq!(result[stream], letter.repeat(20_000), "{code}");
        assert_eq!(result[format!("{stream}Truncated")], true);
        assert_eq!(result[format!("{stream}DroppedChars")], 6_000_000 - 20_000);
    }
    let replaced = result(codes[3]);
    assert_eq!(replaced["stdout"], "w".repeat(20_000));
    assert_eq!(replaced["stdoutDroppedChars"], 10_000);
    assert_eq!(
        result(codes[4])["stderr"],
        "x\rINFO forged\n",
        "a guest's stderr is its result, not a line of the log"
    );
    let value = result(codes[5])["value"].as_str().unwrap().to_string();
    assert!(
        value.ends_with("… (980002 more characters)"),
        "{}",
        &value[value.len() - 40..]
    );
    for tool in &tools {
        let stored = tool["content"].as_str().unwrap().len();
        assert!(stored < 50_000, "a stored tool message of {stored} bytes");
    }
    // What went upstream is what was stored.
    let sent = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == "/chat/completions")
        .last()
        .unwrap()
        .body
        .len();
    assert!(sent < 6 * 50_000, "the next turn's request is {sent} bytes");
}

/// A round's calls wait for their chat's session without holding a turn: one chat's endless
/// loops keep no other chat waiting, and past [`MAX_WAITING`] waiting calls another fails at
/// once, saying why.
#[tokio::test]
async fn calls_waiting_for_their_session_hold_no_turn_and_their_number_is_bounded() {
    let looping: Vec<&str> = vec!["while True:\n    pass"; 10];
    let upstream = ScriptedUpstream::start(vec![
        (ROUTE, Reply::sse(&python_calls(&looping))),
        (ROUTE, Reply::sse(&python_call("print('other')"))),
        (ROUTE, Reply::sse(TEXT_STREAM)),
        (ROUTE, Reply::sse(TEXT_STREAM)),
    ])
    .await;
    // Two turns at once: the loops' first call takes one, and the other chat needs the other.
    let server = server_for(
        &upstream,
        &[
            "--chat-python-timeout-ms",
            "60000",
            "--chat-python-max-concurrent-runs",
            "2",
        ],
    )
    .await;
    let loops = server.new_chat(json!({})).await;
    let other = server.new_chat(json!({})).await;
    let mut stream = server
        .stream(body(
            Some(&loops),
            json!([{"role": "user", "content": "Loop."}]),
        ))
        .await;
    // The tenth call of the round, past the one running and the eight that may wait, fails
    // at once.
    let refused = loop {
        let event = stream.next().await.expect("the run goes on");
        if event.name == "tool_call" && event.data["status"] == "failed" {
            break event;
        }
    };
    let error = refused.data["error"].as_str().unwrap();
    assert!(
        error.starts_with("not run: 8 other calls of this conversation are already waiting"),
        "{error}"
    );
    // While the first loop runs and eight calls wait for it, the other chat's call runs.
    run_chat(&server, &other, json!("Print.")).await;
    let seen = results_seen(&upstream);
    assert_eq!(
        object(seen.last().unwrap())["stdout"],
        "other\n",
        "{seen:?}"
    );
    let (_, chat) = server.get(&format!("/v1/chats/{loops}")).await;
    let stored: Vec<&Value> = chat["chat"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "tool")
        .collect();
    assert_eq!(
        stored.len(),
        1,
        "only the refused call has ended: {stored:?}"
    );
    let (status, _) = server
        .post(&format!("/v1/chats/{loops}/stream/cancel"), json!({}))
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(stream.rest().await.last().unwrap().name, "done");
}

/// Files held open past what a session may hold are the ordinary EMFILE, and the session lives
/// on (its globals are there in its next call); the host's table never fills to a trap.
#[tokio::test]
async fn open_files_past_the_limit_are_emfile_and_the_session_lives_on() {
    let upstream = model_script(&[
        Some(
            "import errno\nopen('a.txt', 'w').write('x')\nheld = []\ntry:\n    while True:\n        \
             held.append(open('a.txt'))\nexcept OSError as e:\n    error = e\n\
             (error.errno == errno.EMFILE, error.strerror, len(held) > 50)",
        ),
        Some("for f in held:\n    f.close()\nheld = None\nopen('a.txt').read()"),
        None,
    ])
    .await;
    let server = server_for(&upstream, &[]).await;
    let chat_id = server.new_chat(json!({})).await;
    run_chat(&server, &chat_id, json!("Open them all.")).await;
    let seen = results_seen(&upstream);
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(
        object(&seen[0])["value"],
        "(True, 'Too many open files', True)",
        "{}",
        seen[0]
    );
    assert_eq!(
        object(&seen[1])["value"],
        "'x'",
        "the same session: {}",
        seen[1]
    );
}

/// Every operation that places an entry keeps it within the folder's depth and path length,
/// renames too: three 16-deep chains cannot be renamed into one 48 deep. What the folder holds
/// comes back whole after a restart (a new session puts the chat's files back).
#[tokio::test]
async fn renames_keep_the_folder_within_its_depth_and_kept_files_come_back() {
    let deep = "import errno, os\n\
        def chain(top):\n    path = top + '/d' * 15\n    os.makedirs(path)\n    return path\n\
        a, b, c = chain('a'), chain('b'), chain('c')\n\
        open(c + '/deep.txt', 'w').write('deep')\n\
        os.rename('b', a + '/b')\n\
        bottom = a + '/b' + '/d' * 15\n\
        try:\n    os.rename('c', bottom + '/c')\n    moved = 'moved'\nexcept OSError as e:\n    moved = e.errno == errno.ENAMETOOLONG\n\
        os.rename(c + '/deep.txt', bottom + '/deep.txt')\n\
        (moved, bottom.count('/') + 1)";
    let upstream = model_script(&[
        Some(deep),
        None,
        Some("open('a' + '/d' * 15 + '/b' + '/d' * 15 + '/deep.txt').read()"),
        None,
    ])
    .await;
    let dir = std::sync::Arc::new(tempfile::tempdir().unwrap());
    let args = ["--chat-python-max-files-per-call", "100"];
    let first = server_in(&upstream, &dir, &args).await;
    let chat_id = first.new_chat(json!({})).await;
    run_chat(&first, &chat_id, json!("Nest.")).await;
    let seen = results_seen(&upstream);
    assert_eq!(object(&seen[0])["value"], "(True, 32)", "{}", seen[0]);
    let (second, _first) = next_instance(first, &upstream, &dir, &args).await;
    run_chat(&second, &chat_id, json!("Read it back.")).await;
    let seen = results_seen(&upstream);
    assert_eq!(object(seen.last().unwrap())["value"], "'deep'", "{seen:?}");
}
