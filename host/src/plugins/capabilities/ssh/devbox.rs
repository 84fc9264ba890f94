//! The operator's devbox and one command on it: an SSH session through the system OpenSSH
//! client, key authentication only, the host key pinned on first contact, stdin closed, the
//! output capped, the devbox's own time limit with the host's deadline behind it (the module
//! docs of `ssh/` say why each).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use base64::Engine as _;
use openssh::{ControlPersist, KnownHosts, SessionBuilder, Stdio};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::remote;
use crate::config::Config;
use crate::plugins::bindings::imports::chatd::plugin::ssh::{ExecOutput, SshError};

/// The most of each of stdout and stderr kept per command.
pub const OUTPUT_CAP: usize = 1024 * 1024;
/// How long connecting may take.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(15);
/// Keep-alive probes, so a devbox that vanishes mid-command is noticed.
const ALIVE_INTERVAL: Duration = Duration::from_secs(15);
/// How long after the limit the host gives the devbox's own `timeout` (its TERM, then KILL
/// after 5 s) before it drops the session itself.
pub(super) const HOST_GRACE: Duration = Duration::from_secs(10);
/// How long an SSH master left behind (a cancelled call) lingers before it exits by itself.
const MASTER_IDLE: std::num::NonZeroUsize = std::num::NonZeroUsize::new(60).unwrap();
/// The SSH client's whole configuration: no agent or X11 forwarding, no port forwarding, no
/// local commands, whatever the operator's own files say.
const CLIENT_CONFIG: &str = "ForwardAgent no\nForwardX11 no\nClearAllForwardings yes\n\
                             PermitLocalCommand no\nRequestTTY no\n";

/// The operator's devbox and how to reach it.
#[derive(Debug)]
pub struct Devbox {
    /// `host` or `user@host`, as configured.
    destination: String,
    /// CHAT_CODING_REMOTE_USER, used only when the destination names no user (the contract:
    /// "omitted if the host already has a user"; ssh's `-l` would otherwise win over it).
    user: Option<String>,
    port: u16,
    workdir: Option<String>,
    /// The private key: the operator's file, or the B64 key's copy in `private`.
    key: Option<PathBuf>,
    known_hosts: PathBuf,
    /// [`CLIENT_CONFIG`], written into `private`.
    client_config: PathBuf,
    /// Holds the B64 key's copy, the client configuration and the control sockets; removed on
    /// drop.
    private: tempfile::TempDir,
}

impl Devbox {
    /// The devbox when a devbox tool is enabled (the configuration guarantees a host then).
    pub fn from_config(config: &Config) -> std::io::Result<Option<Self>> {
        let enabled = config.chat_coding_tool_enabled || config.chat_shell_tool_enabled;
        let Some(destination) = config.chat_coding_remote_host.clone().filter(|_| enabled) else {
            return Ok(None);
        };
        // 0700: the key's copy and the control sockets are the server user's alone.
        let private = tempfile::Builder::new()
            .prefix("chatd-devbox-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()?;
        let key = match (
            &config.chat_coding_ssh_key_path,
            &config.chat_coding_ssh_private_key_b64,
        ) {
            (Some(path), _) => Some(path.clone()),
            (None, Some(b64)) => Some(write_key(private.path(), b64.expose())?),
            (None, None) => None,
        };
        let client_config = private.path().join("ssh_config");
        std::fs::write(&client_config, CLIENT_CONFIG)?;
        let known_hosts = crate::store::data_dir(config)
            .map(|folder| folder.join("devbox_known_hosts"))
            .unwrap_or_else(|| private.path().join("known_hosts"));
        Ok(Some(Self {
            destination,
            user: config.chat_coding_remote_user.clone(),
            port: config.chat_coding_remote_port,
            workdir: config.chat_coding_remote_workdir.clone(),
            key,
            known_hosts,
            client_config,
            private,
        }))
    }

    /// Where it is, for operators: `user@host:port`.
    pub fn describe(&self) -> String {
        match (&self.user, self.destination.contains('@')) {
            (Some(user), false) => format!("{user}@{}:{}", self.destination, self.port),
            _ => format!("{}:{}", self.destination, self.port),
        }
    }

    /// Runs `command` in the working directory, stdin closed, for at most `limit`.
    pub async fn exec(&self, command: &str, limit: Duration) -> Result<ExecOutput, SshError> {
        let started = Instant::now();
        // A limit of 0 would turn the remote `timeout` off.
        let limit = limit.max(Duration::from_millis(1));
        let script = remote::script(command, self.workdir.as_deref(), limit);
        if script.len() > remote::MAX_SCRIPT_BYTES {
            return Err(SshError::Failed(format!(
                "the command line is too long for one SSH command: {} bytes after quoting, at \
                 most {}",
                script.len(),
                remote::MAX_SCRIPT_BYTES
            )));
        }
        let mut builder = SessionBuilder::default();
        builder
            .port(self.port)
            .known_hosts_check(KnownHosts::Add)
            .user_known_hosts_file(&self.known_hosts)
            .control_directory(self.private.path())
            .connect_timeout(CONNECT_TIMEOUT)
            .server_alive_interval(ALIVE_INTERVAL);
        if let Some(user) = self
            .user
            .as_ref()
            .filter(|_| !self.destination.contains('@'))
        {
            builder.user(user.clone());
        }
        if let Some(key) = &self.key {
            builder.keyfile(key);
        }
        // Only chatd's settings, not the operator's ~/.ssh/config (agent forwarding there would
        // hand the model's commands the operator's agent); a master left behind exits when idle.
        builder
            .config_file(&self.client_config)
            .control_persist(ControlPersist::IdleFor(MASTER_IDLE));
        let session = Open(Some(
            builder
                .connect(&self.destination)
                .await
                .map_err(connect_error)?,
        ));
        let outcome = run(session.get(), &script, limit).await;
        // Ended by a signal before its limit, or OpenSSH lost the connection: it cannot tell
        // which, the session can.
        let dropped = matches!(outcome, Ok((None, _, _, false)))
            && started.elapsed() < limit
            && session.get().check().await.is_err();
        let outcome = if dropped {
            Err(SshError::Failed(
                "the SSH connection to the devbox dropped during the command".into(),
            ))
        } else {
            outcome
        };
        session.close().await;
        let (status, stdout, stderr, host_deadline) = outcome?;
        // Status 124 or a kill is the remote `timeout`'s doing only once the limit has passed
        // (a command may exit 124 by itself, or be killed by someone else).
        let timed_out = host_deadline
            || (matches!(status, None | Some(remote::TIMED_OUT)) && started.elapsed() >= limit);
        Ok(ExecOutput {
            exit_status: if timed_out { None } else { status },
            stdout: stdout.bytes,
            stderr: stderr.bytes,
            stdout_truncated: stdout.truncated,
            stderr_truncated: stderr.truncated,
            timed_out,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        })
    }
}

/// A session closed on every path. Dropping an `openssh::Session` runs `ssh -O exit` and waits
/// for it, which must not happen on an executor thread; a call cancelled mid-command (its chat
/// run stopped) drops this instead, and the exit runs on the blocking pool. The remote command
/// itself then ends at its time limit, by the devbox's `timeout`.
struct Open(Option<openssh::Session>);

impl Open {
    fn get(&self) -> &openssh::Session {
        self.0.as_ref().expect("open until closed")
    }

    async fn close(mut self) {
        if let Some(session) = self.0.take() {
            let _ = session.close().await;
        }
    }
}

impl Drop for Open {
    fn drop(&mut self) {
        if let Some(session) = self.0.take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn_blocking(move || drop(session));
        }
    }
}

type Ran = (Option<i32>, Capture, Capture, bool);

/// Runs the script: its exit status (none when ended by a signal), its output, and whether the
/// host's deadline ended it.
async fn run(session: &openssh::Session, script: &str, limit: Duration) -> Result<Ran, SshError> {
    let mut child = session
        .raw_command(script)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .await
        .map_err(|e| SshError::Failed(format!("cannot start the command: {}", chain(&e))))?;
    let (stdout, stderr) = (child.stdout().take(), child.stderr().take());
    let (mut out, mut err) = (Capture::default(), Capture::default());
    let waited = tokio::time::timeout(limit + HOST_GRACE, async {
        tokio::join!(out.read(stdout), err.read(stderr));
        child.wait().await
    })
    .await;
    match waited {
        Ok(Ok(status)) => Ok((status.code(), out, err, false)),
        // Ended by a signal (or the connection dropped: the caller asks the session).
        Ok(Err(openssh::Error::RemoteProcessTerminated | openssh::Error::Disconnected)) => {
            Ok((None, out, err, false))
        }
        // openssh reads exit status 127 as "remote command not found"; it is the command's own
        // status (a missing program), with output worth showing.
        Ok(Err(openssh::Error::Remote(e))) if e.kind() == std::io::ErrorKind::NotFound => {
            Ok((Some(127), out, err, false))
        }
        Ok(Err(e)) => Err(SshError::Failed(chain(&e))),
        // The devbox did not end it in time: dropping the child closes the session.
        Err(_) => Ok((None, out, err, true)),
    }
}

/// Up to [`OUTPUT_CAP`] bytes of one stream; the rest is read and dropped, so a chatty command
/// never blocks on a full pipe.
#[derive(Default)]
struct Capture {
    bytes: Vec<u8>,
    truncated: bool,
}

impl Capture {
    async fn read(&mut self, stream: Option<impl AsyncRead + Unpin>) {
        let Some(mut stream) = stream else { return };
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    let room = OUTPUT_CAP - self.bytes.len();
                    if n > room {
                        self.truncated = true;
                    }
                    self.bytes.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
    }
}

/// What a failed connection means to the tool: the key refused, the host not reached, or else.
fn connect_error(error: openssh::Error) -> SshError {
    let text = chain(&error);
    if let openssh::Error::Connect(io) = &error
        && io.kind() == std::io::ErrorKind::NotFound
    {
        return SshError::Failed(format!(
            "{text} (is the ssh client, openssh-client, installed on the chatd host?)"
        ));
    }
    let lower = text.to_ascii_lowercase();
    if lower.contains("permission denied") || lower.contains("no more authentication methods") {
        SshError::Authentication(text)
    } else if lower.contains("host key verification failed")
        || lower.contains("remote host identification has changed")
    {
        SshError::Failed(format!(
            "{text} (the devbox's host key is not the one pinned in devbox_known_hosts)"
        ))
    } else if [
        "connection refused",
        "could not resolve",
        "timed out",
        "unreachable",
        "no route",
        "connection closed",
        "connection reset",
    ]
    .iter()
    .any(|sign| lower.contains(sign))
    {
        SshError::Unreachable(text)
    } else {
        SshError::Failed(text)
    }
}

/// An error with its causes, on one line (OpenSSH's own words are in the innermost).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let words = cause.to_string();
        if !words.trim().is_empty() {
            text.push_str(": ");
            text.push_str(words.trim());
        }
        source = cause.source();
    }
    text.replace('\n', " ")
}

/// Writes a base64 key, 0600, into `dir`.
fn write_key(dir: &Path, b64: &str) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::OpenOptionsExt;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64.trim())
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
    let path = dir.join("devbox_key");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&path)?;
    file.write_all(&bytes)?;
    // ssh refuses a key without its final newline in some formats.
    if !bytes.ends_with(b"\n") {
        file.write_all(b"\n")?;
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_private_folder_is_0700_and_holds_the_key_and_the_client_settings() {
        use std::os::unix::fs::PermissionsExt;
        let b64 = base64::engine::general_purpose::STANDARD.encode("KEY");
        let config = Config::from_args([
            "chatd",
            "--chat-shell-tool-enabled",
            "true",
            "--chat-coding-remote-host",
            "devbox.example",
            "--chat-coding-ssh-private-key-b64",
            &b64,
            "--database-url",
            "sqlite::memory:",
        ])
        .unwrap();
        let devbox = Devbox::from_config(&config).unwrap().unwrap();
        let folder = devbox.private.path().to_path_buf();
        let mode = std::fs::metadata(&folder).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert_eq!(
            devbox.key.as_deref(),
            Some(folder.join("devbox_key").as_path())
        );
        let settings = std::fs::read_to_string(&devbox.client_config).unwrap();
        assert!(settings.contains("ForwardAgent no"), "{settings}");
        assert_eq!(
            devbox.known_hosts,
            folder.join("known_hosts"),
            "in-memory database"
        );
        drop(devbox);
        assert!(!folder.exists(), "removed with the devbox");
    }

    #[test]
    fn a_b64_key_is_written_0600_and_removed_with_its_folder() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let b64 = base64::engine::general_purpose::STANDARD.encode("KEY MATERIAL");
        let path = write_key(dir.path(), &b64).unwrap();
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(std::fs::read(&path).unwrap(), b"KEY MATERIAL\n");
        drop(dir);
        assert!(!path.exists());
        assert!(write_key(tempfile::tempdir().unwrap().path(), "not base64!").is_err());
    }

    #[test]
    fn connection_failures_are_told_apart() {
        let connect = |text: &str| {
            connect_error(openssh::Error::Connect(std::io::Error::other(
                text.to_string(),
            )))
        };
        assert!(matches!(
            connect("root@127.0.0.1: Permission denied (publickey)."),
            SshError::Authentication(_)
        ));
        assert!(matches!(
            connect("connect to host 127.0.0.1 port 1: Connection refused"),
            SshError::Unreachable(_)
        ));
        assert!(matches!(
            connect("Could not resolve hostname nowhere.invalid: Name or service not known"),
            SshError::Unreachable(_)
        ));
        match connect("Host key verification failed.") {
            SshError::Failed(m) => assert!(m.contains("devbox_known_hosts"), "{m}"),
            other => panic!("{other:?}"),
        }
    }
}
