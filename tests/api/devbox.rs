//! The devbox tools against a real OpenSSH server: Debian's `sshd`, started per test on a
//! loopback port with generated host and client keys, and a fake `codex` on the remote PATH that
//! records its arguments. The tools run as the bundled components in the real host (grants,
//! the `ssh` capability), and once through a whole chat.
//!
//! Without `/usr/sbin/sshd` these tests say so and pass, unless `CHATD_REQUIRE_SSHD` is set
//! (`.ci/run` sets it and installs `openssh-server`), so they can never be skipped in CI.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use chatd::plugins::loading::load::Plugin;
use chatd::plugins::testing::{Reply, ScriptedUpstream, TestHost};
use chatd::plugins::worlds::tool::{PluginError, ToolOutput};
use serde_json::{Value, json};

use crate::bundled_tools::call;
use crate::completions::{ROUTE, TEXT_STREAM, body, server_for};
use crate::support::plugin_cache_dir;

const SSHD: &str = "/usr/sbin/sshd";

/// What the remote PATH holds.
#[derive(Clone, Copy, PartialEq)]
enum RemotePath {
    /// The system's. The fake `codex` is on the login PATH only: the user's `~/.profile` puts
    /// `~/bin`, where it is, on PATH, as npm-global, nvm and pipx installs do.
    Full,
    /// `sh` and a few tools, no `bash`.
    NoBash,
    /// `bash`, `sh` and a few tools, no `timeout`.
    NoTimeout,
}

/// A throwaway OpenSSH server for the current user.
struct Sshd {
    dir: tempfile::TempDir,
    port: u16,
    user: String,
    child: Child,
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `ssh-keygen` a passphrase-less ed25519 key at `path`.
fn keygen(path: &Path) {
    let status = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", "chatd-test", "-f"])
        .arg(path)
        .status()
        .expect("run ssh-keygen");
    assert!(status.success(), "ssh-keygen failed");
}

fn write_executable(path: &Path, text: &str) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(path, text).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// sshd with the configuration in `d`, once it accepts connections on `port`.
fn spawn_sshd(d: &Path, port: u16) -> Child {
    // As root, sshd wants its privilege-separation folder.
    let _ = std::fs::create_dir_all("/run/sshd");
    let log = std::fs::File::create(d.join("sshd.log")).unwrap();
    let mut child = Command::new(SSHD)
        .arg("-D")
        .arg("-e")
        .arg("-f")
        .arg(d.join("sshd_config"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start sshd");
    for _ in 0..500 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return child;
        }
        if let Some(status) = child.try_wait().unwrap() {
            panic!(
                "sshd exited ({status}): {}",
                std::fs::read_to_string(d.join("sshd.log")).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("sshd did not listen on port {port}");
}

impl Sshd {
    /// Starts one; `None` (after saying why) when this machine has no sshd and CI does not
    /// require it.
    fn start(remote_path: RemotePath) -> Option<Self> {
        if !Path::new(SSHD).exists() {
            assert!(
                std::env::var_os("CHATD_REQUIRE_SSHD").is_none(),
                "CHATD_REQUIRE_SSHD is set but {SSHD} is missing: apt-get install openssh-server"
            );
            eprintln!("skipped: {SSHD} is not installed (apt-get install openssh-server)");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        keygen(&d.join("host_key"));
        keygen(&d.join("client_key"));
        keygen(&d.join("wrong_key"));
        std::fs::copy(d.join("client_key.pub"), d.join("authorized_keys")).unwrap();
        // The remote PATH: a fake codex that records what it got, where, and whether stdin
        // was closed.
        let bin = d.join("bin");
        std::fs::create_dir(&bin).unwrap();
        write_executable(
            &bin.join("codex"),
            &format!(
                "#!/bin/sh\nprintf '%s\\0' \"$@\" > {argv}\npwd > {cwd}\n\
                 if read -r line; then echo \"stdin had: $line\"; else echo 'stdin closed'; fi\n\
                 echo 'codex did the task'\n",
                argv = d.join("codex-argv").display(),
                cwd = d.join("codex-cwd").display(),
            ),
        );
        // The user's home, a folder of the test's: its `.profile` puts `~/bin` on PATH.
        let home = d.join("home");
        std::fs::create_dir(&home).unwrap();
        std::os::unix::fs::symlink(&bin, home.join("bin")).unwrap();
        std::fs::write(home.join(".profile"), "PATH=\"$HOME/bin:$PATH\"\n").unwrap();
        let path = if remote_path != RemotePath::Full {
            // What the wrapper and `sh -lc` need, less bash or timeout.
            let nobash = d.join("limited");
            std::fs::create_dir(&nobash).unwrap();
            let tools: &[&str] = match remote_path {
                RemotePath::NoBash => &["sh", "mkdir", "timeout", "sleep", "cat"],
                _ => &["sh", "bash", "mkdir", "sleep", "cat"],
            };
            for tool in tools {
                let target = ["/usr/bin", "/bin"]
                    .iter()
                    .map(|dir| Path::new(dir).join(tool))
                    .find(|p| p.exists())
                    .unwrap_or_else(|| panic!("{tool} is installed"));
                std::os::unix::fs::symlink(target, nobash.join(tool)).unwrap();
            }
            nobash.display().to_string()
        } else {
            "/usr/local/bin:/usr/bin:/bin".to_string()
        };
        let port = {
            let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let user = String::from_utf8(Command::new("id").arg("-un").output().unwrap().stdout)
            .unwrap()
            .trim()
            .to_string();
        let config = d.join("sshd_config");
        std::fs::write(
            &config,
            format!(
                "Port {port}\nListenAddress 127.0.0.1\nHostKey {host_key}\n\
                 AuthorizedKeysFile {keys}\nPubkeyAuthentication yes\nPasswordAuthentication no\n\
                 KbdInteractiveAuthentication no\nUsePAM no\nStrictModes no\nPermitRootLogin yes\n\
                 PidFile {pid}\nSetEnv PATH={path} HOME={home}\nLogLevel ERROR\n",
                host_key = d.join("host_key").display(),
                keys = d.join("authorized_keys").display(),
                pid = d.join("sshd.pid").display(),
                home = home.display(),
            ),
        )
        .unwrap();
        let child = spawn_sshd(d, port);
        Some(Self {
            dir,
            port,
            user,
            child,
        })
    }

    /// Stops the server and starts it again on the same port with a new host key: a devbox
    /// rebuilt, or another machine answering in its place.
    fn restart_with_a_new_host_key(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let d = self.dir.path();
        std::fs::remove_file(d.join("host_key")).unwrap();
        std::fs::remove_file(d.join("host_key.pub")).unwrap();
        keygen(&d.join("host_key"));
        self.child = spawn_sshd(d, self.port);
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// chatd's flags for this devbox (both tools enabled, the client key, a working directory
    /// that does not exist yet), then `extra`.
    fn args(&self, extra: &[&str]) -> Vec<String> {
        let mut args: Vec<String> = vec![
            "--chat-shell-tool-enabled".into(),
            "true".into(),
            "--chat-coding-tool-enabled".into(),
            "true".into(),
            "--chat-coding-remote-host".into(),
            "127.0.0.1".into(),
            "--chat-coding-remote-user".into(),
            self.user.clone(),
            "--chat-coding-remote-port".into(),
            self.port.to_string(),
            "--chat-coding-remote-workdir".into(),
            self.workdir().display().to_string(),
            // The pinned host key goes beside this database.
            "--database-url".into(),
            format!("sqlite://{}", self.path("chatd.db").display()),
        ];
        if !extra.contains(&"--chat-coding-ssh-private-key-b64") {
            args.push("--chat-coding-ssh-key-path".into());
            args.push(self.path("client_key").display().to_string());
        }
        args.extend(extra.iter().map(|s| s.to_string()));
        args
    }

    fn workdir(&self) -> PathBuf {
        self.path("work/nested dir")
    }

    /// [`Self::args`] with some flags' values replaced.
    fn args_with(&self, replaced: &[(&str, &str)]) -> Vec<String> {
        let mut args = self.args(&[]);
        for (flag, value) in replaced {
            let at = args
                .iter()
                .position(|a| a == flag)
                .expect("a flag of args()");
            args[at + 1] = value.to_string();
        }
        args
    }

    async fn tool(&self, id: &str, extra: &[&str]) -> Plugin {
        self.tool_from(id, self.args(extra)).await
    }

    async fn tool_from(&self, id: &str, args: Vec<String>) -> Plugin {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        TestHost::new(&args)
            .with_cache(plugin_cache_dir())
            .load_bundled(id)
            .await
            .unwrap_or_else(|e| panic!("{id} loads: {e}"))
    }
}

/// A devbox with the full PATH and its `shell_exec` tool with `extra` flags; `None` as
/// [`Sshd::start`].
async fn shell_tool(extra: &[&str]) -> Option<(Sshd, Plugin)> {
    let sshd = Sshd::start(RemotePath::Full)?;
    let tool = sshd.tool("shell_exec", extra).await;
    Some((sshd, tool))
}

fn shell(command: &str) -> Value {
    json!({ "command": command })
}

/// The message of a failed call.
fn failure(result: Result<ToolOutput, PluginError>) -> String {
    match result {
        Ok(out) => panic!("expected a failure, got {}", out.content),
        Err(PluginError::Upstream(e)) => e.message,
        Err(PluginError::Transport(m) | PluginError::Denied(m) | PluginError::Internal(m)) => m,
        Err(other) => format!("{other:?}"),
    }
}

#[tokio::test]
async fn shell_exec_runs_with_bash_in_the_created_workdir() {
    let Some(sshd) = Sshd::start(RemotePath::Full) else {
        return;
    };
    assert!(!sshd.workdir().exists());
    let tool = sshd.tool("shell_exec", &[]).await;
    let out = call(
        &tool,
        shell("pwd; echo \"shell=$0\"; echo 'it'\\''s quoted'"),
    )
    .await
    .unwrap();
    assert!(
        out.content.starts_with("exit status: 0\n"),
        "{}",
        out.content
    );
    assert!(
        out.content.contains(&format!(
            "{}\nshell=bash\nit's quoted\n",
            sshd.workdir().display()
        )),
        "{}",
        out.content
    );
    assert!(sshd.workdir().is_dir(), "the workdir was created");
    assert!(out.summary.unwrap().contains("exited 0"));
    // The devbox's host key is pinned beside the database.
    let pinned = std::fs::read_to_string(sshd.path("devbox_known_hosts")).unwrap();
    assert!(pinned.contains("ssh-ed25519"), "{pinned}");
}

#[tokio::test]
async fn shell_exec_falls_back_to_sh_without_bash() {
    let Some(sshd) = Sshd::start(RemotePath::NoBash) else {
        return;
    };
    let tool = sshd.tool("shell_exec", &[]).await;
    let out = call(&tool, shell("echo \"shell=$0\"")).await.unwrap();
    assert!(out.content.contains("shell=sh\n"), "{}", out.content);
}

#[tokio::test]
async fn stdin_is_closed_so_a_command_reading_it_ends_at_once() {
    let Some(sshd) = Sshd::start(RemotePath::Full) else {
        return;
    };
    // A limit long enough that a command waiting on stdin would visibly time out instead.
    let tool = sshd
        .tool("shell_exec", &["--chat-shell-exec-timeout-ms", "20000"])
        .await;
    let out = call(&tool, shell("cat; read -r line || echo stdin-is-closed"))
        .await
        .unwrap();
    assert!(out.content.contains("stdin-is-closed"), "{}", out.content);
}

#[tokio::test]
async fn a_non_zero_exit_is_a_failed_call_with_its_output() {
    let Some((_sshd, tool)) = shell_tool(&[]).await else {
        return;
    };
    let message = failure(call(&tool, shell("echo out; echo err >&2; exit 3")).await);
    assert!(message.starts_with("exit status 3 after"), "{message}");
    assert!(message.contains("stdout:\nout\n"), "{message}");
    assert!(message.contains("stderr:\nerr"), "{message}");
}

#[tokio::test]
async fn output_is_capped_and_marked() {
    let Some((_sshd, tool)) = shell_tool(&[]).await else {
        return;
    };
    // 2 MiB on stdout: past the host's 1 MiB cap and the model's 16 KiB.
    let out = call(
        &tool,
        shell("head -c 2097152 /dev/zero | tr '\\0' a; echo done >&2"),
    )
    .await
    .unwrap();
    assert!(out.content.len() < 64 * 1024, "{}", out.content.len());
    assert!(
        out.content
            .contains("[stdout cut: the command printed more]"),
        "{}",
        &out.content[out.content.len() - 200..]
    );
    assert!(
        out.content.contains("stderr:\ndone"),
        "the rest still arrives"
    );
}

#[tokio::test]
async fn a_missing_program_is_exit_127_with_its_message() {
    let Some((_sshd, tool)) = shell_tool(&[]).await else {
        return;
    };
    let message = failure(call(&tool, shell("no-such-program-4711")).await);
    assert!(message.starts_with("exit status 127 after"), "{message}");
    assert!(message.contains("no-such-program-4711"), "{message}");
    assert!(message.contains("not found"), "{message}");
}

#[tokio::test]
async fn a_user_in_the_host_wins_over_the_user_setting() {
    let Some(sshd) = Sshd::start(RemotePath::Full) else {
        return;
    };
    let host = format!("{}@127.0.0.1", sshd.user);
    let args = sshd.args_with(&[
        ("--chat-coding-remote-host", &host),
        ("--chat-coding-remote-user", "nobody-such-user"),
    ]);
    let tool = sshd.tool_from("shell_exec", args).await;
    let out = call(&tool, shell("id -un")).await.unwrap();
    assert!(
        out.content.contains(&format!("\n{}", sshd.user)),
        "{}",
        out.content
    );
}

#[tokio::test]
async fn a_command_ignoring_term_is_killed_and_reported_as_timed_out() {
    let Some((_sshd, tool)) = shell_tool(&["--chat-shell-exec-timeout-ms", "1000"]).await else {
        return;
    };
    let message = failure(call(&tool, shell("trap '' TERM; sleep 30.5813")).await);
    assert!(message.starts_with("timed out after"), "{message}");
    assert!(!running("sleep 30.5813"), "killed after TERM was ignored");
}

#[tokio::test]
async fn a_devbox_without_timeout_refuses_to_run_commands() {
    let Some(sshd) = Sshd::start(RemotePath::NoTimeout) else {
        return;
    };
    let tool = sshd.tool("shell_exec", &[]).await;
    let message = failure(call(&tool, shell("echo should-not-run")).await);
    assert!(message.starts_with("exit status 126"), "{message}");
    assert!(message.contains("no `timeout` command"), "{message}");
    assert!(!message.contains("should-not-run\n"), "{message}");
}

#[tokio::test]
async fn a_command_line_too_long_for_ssh_is_refused_with_the_reason() {
    let Some(sshd) = Sshd::start(RemotePath::Full) else {
        return;
    };
    let tool = sshd.tool("coding_exec", &[]).await;
    // Quotes grow fourfold at each of the two quoting layers: 20,000 of them pass the tool's
    // own limit and still make a command line no Linux shell would accept as one argument.
    let message = failure(call(&tool, json!({ "prompt": "'".repeat(20_000) })).await);
    assert!(
        message.contains("too long for one SSH command"),
        "{message}"
    );
    assert!(!sshd.path("codex-argv").exists(), "nothing ran");
}

/// Whether a process whose command line holds `needle` runs on this machine (the devbox).
fn running(needle: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|entry| {
        std::fs::read(entry.path().join("cmdline"))
            .map(|cmd| {
                String::from_utf8_lossy(&cmd)
                    .replace('\0', " ")
                    .contains(needle)
            })
            .unwrap_or(false)
    })
}

#[tokio::test]
async fn the_timeout_fails_the_call_and_ends_the_remote_process() {
    let Some((_sshd, tool)) = shell_tool(&["--chat-shell-exec-timeout-ms", "1500"]).await else {
        return;
    };
    let started = std::time::Instant::now();
    let message = failure(call(&tool, shell("echo started; sleep 30.4317; echo never")).await);
    assert!(message.starts_with("timed out after"), "{message}");
    assert!(
        message.contains("started") && !message.contains("never"),
        "{message}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(15),
        "{:?}",
        started.elapsed()
    );
    assert!(!running("sleep 30.4317"), "the remote command was ended");
}

#[tokio::test]
async fn an_unreachable_devbox_and_a_wrong_key_are_failed_calls() {
    let Some(sshd) = Sshd::start(RemotePath::Full) else {
        return;
    };
    let closed_port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        probe.local_addr().unwrap().port().to_string()
    };
    let args = sshd.args_with(&[("--chat-coding-remote-port", &closed_port)]);
    let tool = sshd.tool_from("shell_exec", args).await;
    let message = failure(call(&tool, shell("true")).await);
    assert!(message.contains("could not be reached"), "{message}");

    let wrong = sshd.path("wrong_key").display().to_string();
    let args = sshd.args_with(&[("--chat-coding-ssh-key-path", &wrong)]);
    let tool = sshd.tool_from("shell_exec", args).await;
    let message = failure(call(&tool, shell("true")).await);
    assert!(message.contains("refused the SSH key"), "{message}");
}

/// On PostgreSQL nothing is beside a database file: the key is pinned in CHATD_DATA_DIR, and a
/// server started again still refuses a devbox whose host key changed.
#[tokio::test]
async fn on_postgresql_the_pinned_host_key_outlives_a_restart() {
    let Some(mut sshd) = Sshd::start(RemotePath::Full) else {
        return;
    };
    let data = tempfile::tempdir().unwrap();
    let mut args = sshd.args_with(&[("--database-url", "postgres://chatd@127.0.0.1:1/not_opened")]);
    args.extend(["--chatd-data-dir".into(), data.path().display().to_string()]);
    let first = sshd.tool_from("shell_exec", args.clone()).await;
    let out = call(&first, shell("echo first")).await.unwrap();
    assert!(out.content.contains("first"), "{}", out.content);
    let pinned = std::fs::read_to_string(data.path().join("devbox_known_hosts")).unwrap();
    assert!(pinned.contains("ssh-ed25519"), "{pinned}");
    drop(first);

    sshd.restart_with_a_new_host_key();
    let restarted = sshd.tool_from("shell_exec", args).await;
    let message = failure(call(&restarted, shell("echo second")).await);
    assert!(message.contains("not the one pinned"), "{message}");
    assert_eq!(
        std::fs::read_to_string(data.path().join("devbox_known_hosts")).unwrap(),
        pinned,
        "the pin is kept, not replaced"
    );
}

#[tokio::test]
async fn a_base64_key_works_like_a_key_file() {
    let Some(sshd) = Sshd::start(RemotePath::Full) else {
        return;
    };
    let key = std::fs::read(sshd.path("client_key")).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD.encode(key);
    let tool = sshd
        .tool("shell_exec", &["--chat-coding-ssh-private-key-b64", &b64])
        .await;
    let out = call(&tool, shell("echo via-b64")).await.unwrap();
    assert!(out.content.contains("via-b64"), "{}", out.content);
}

#[tokio::test]
async fn coding_exec_runs_codex_non_interactively_in_the_workdir() {
    let Some(sshd) = Sshd::start(RemotePath::Full) else {
        return;
    };
    let tool = sshd.tool("coding_exec", &[]).await;
    let prompt = "Add a README that says 'hello'.";
    let out = call(&tool, json!({ "prompt": prompt })).await.unwrap();
    assert!(out.content.contains("stdin closed"), "{}", out.content);
    assert!(
        out.content.contains("codex did the task"),
        "{}",
        out.content
    );

    let argv = std::fs::read(sshd.path("codex-argv")).unwrap();
    let argv: Vec<String> = argv
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8(a.to_vec()).unwrap())
        .collect();
    assert_eq!(
        argv[..4],
        [
            "exec",
            "--dangerously-bypass-approvals-and-sandbox",
            "--skip-git-repo-check",
            "--"
        ]
    );
    assert_eq!(argv.len(), 5, "{argv:?}");
    assert!(
        argv[4].ends_with(&format!("Task:\n{prompt}")),
        "{}",
        argv[4]
    );
    assert!(argv[4].contains("non-interactive"), "{}", argv[4]);
    let cwd = std::fs::read_to_string(sshd.path("codex-cwd")).unwrap();
    assert_eq!(cwd.trim_end(), sshd.workdir().display().to_string());
}

#[tokio::test]
async fn coding_exec_finds_codex_on_the_login_path() {
    let Some(sshd) = Sshd::start(RemotePath::Full) else {
        return;
    };
    // Not on the SSH session's PATH, on the login shell's.
    let shell = sshd.tool("shell_exec", &[]).await;
    let out = call(&shell, json!({ "command": "command -v codex" }))
        .await
        .unwrap();
    assert!(out.content.contains("home/bin/codex"), "{}", out.content);
    let tool = sshd.tool("coding_exec", &[]).await;
    let out = call(&tool, json!({ "prompt": "Say hi." })).await.unwrap();
    assert!(
        out.content.contains("codex did the task"),
        "{}",
        out.content
    );
    let argv = std::fs::read(sshd.path("codex-argv")).unwrap();
    assert!(
        String::from_utf8_lossy(&argv).ends_with("Task:\nSay hi.\0"),
        "{argv:?}"
    );
}

#[tokio::test]
async fn a_chat_turn_runs_shell_exec_over_ssh_and_the_model_sees_the_output() {
    let Some(sshd) = Sshd::start(RemotePath::Full) else {
        return;
    };
    let shell_call = include_str!(
        "../fixtures/upstream/openai_chat/01_stream_tool_call_include_usage.response.sse"
    )
    .replace("get_capital", "shell_exec")
    .replace(r#""arguments":"country""#, r#""arguments":"command""#)
    .replace(
        r#""arguments":"UK""#,
        r#""arguments":"echo hello-$((6*7))""#,
    );
    let upstream = ScriptedUpstream::start([
        (ROUTE, Reply::sse(&shell_call)),
        (ROUTE, Reply::sse(TEXT_STREAM)),
    ])
    .await;
    // The server's own database folder holds the pinned key; drop the test's database flag.
    let args = sshd.args(&[]);
    let at = args.iter().position(|a| a == "--database-url").unwrap();
    let args: Vec<&str> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != at && *i != at + 1)
        .map(|(_, a)| a.as_str())
        .collect();
    let server = server_for(&upstream, &args).await;
    let (_, tools) = server.get("/v1/chat-tools").await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(
        names.contains(&"shell_exec") && names.contains(&"coding_exec"),
        "{names:?}"
    );

    let chat_id = server
        .new_chat(json!({"enabledTools": ["shell_exec"]}))
        .await;
    let events = server
        .stream(body(
            Some(&chat_id),
            json!([{"role": "user", "content": "Run it."}]),
        ))
        .await
        .rest()
        .await;
    let done = events.last().unwrap();
    assert_eq!(done.name, "done", "{events:?}");
    let completed = events
        .iter()
        .find(|e| e.name == "tool_call" && e.data["status"] == "completed")
        .unwrap_or_else(|| panic!("{events:?}"));
    assert_eq!(completed.data["name"], "shell_exec");

    // The model saw the command's output in round two.
    let requests: Vec<_> = upstream
        .requests()
        .into_iter()
        .filter(|r| r.path == "/chat/completions")
        .collect();
    assert_eq!(requests.len(), 2);
    let second = requests[1].json();
    let sent = second["messages"].as_array().unwrap();
    let result = sent.last().unwrap();
    assert_eq!(result["role"], "tool");
    assert!(
        result["content"].as_str().unwrap().contains("hello-42"),
        "{result}"
    );
    // And the call is stored as a tool message.
    let (_, chat) = server.get(&format!("/v1/chats/{chat_id}")).await;
    let tool = chat["chat"]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap()
        .clone();
    assert_eq!(tool["name"], "shell_exec");
    assert_eq!(tool["metadata"]["status"], "completed");
    assert!(tool["content"].as_str().unwrap().contains("hello-42"));
}

#[tokio::test]
async fn a_devbox_tool_is_listed_only_while_enabled() {
    let Some(sshd) = Sshd::start(RemotePath::Full) else {
        return;
    };
    let upstream = ScriptedUpstream::start(Vec::<(&str, Reply)>::new()).await;
    let args = sshd.args(&[]);
    let mut args: Vec<&str> = args.iter().map(String::as_str).collect();
    let at = args
        .iter()
        .position(|a| *a == "--chat-coding-tool-enabled")
        .unwrap();
    args[at + 1] = "false";
    let at = args.iter().position(|a| *a == "--database-url").unwrap();
    args.drain(at..at + 2);
    let server = server_for(&upstream, &args).await;
    let (_, tools) = server.get("/v1/chat-tools").await;
    let names: Vec<&str> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"shell_exec"), "{names:?}");
    assert!(!names.contains(&"coding_exec"), "{names:?}");
}
