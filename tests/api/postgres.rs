//! A throwaway PostgreSQL for the black-box suite, as the devbox tests start their own sshd:
//! Debian's `postgresql` package, `initdb` into a temporary folder (as an unprivileged user when
//! the tests run as root), a free port on 127.0.0.1, `fsync=off`. One cluster per test process,
//! one fresh database per server.
//!
//! Without the package the PostgreSQL tests say so and pass, unless `CHATD_REQUIRE_POSTGRES` is
//! set (`.ci/run` sets it and installs `postgresql`), so they can never be skipped in CI.
//!
//! The server is started by a thread that lives as long as the test process and asks the kernel
//! to send it SIGQUIT (PostgreSQL's immediate shutdown) when that thread dies: no cluster outlives
//! its tests, however they end. Folders left by earlier processes are removed at start.

use std::io::Write as _;
use std::net::TcpListener;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use sqlx::Connection as _;

pub struct Cluster {
    pub port: u16,
}

/// The folder names of clusters: the owning test process's id follows.
const PREFIX: &str = "chatd-test-pg-";

/// The cluster of this test process, started on first use. `None` when this machine has no
/// PostgreSQL and CI did not ask for one: the caller says the tests skipped.
pub fn cluster() -> Option<&'static Cluster> {
    static CLUSTER: OnceLock<Option<Cluster>> = OnceLock::new();
    CLUSTER.get_or_init(start).as_ref()
}

/// A new empty database in the cluster; its URL.
pub async fn new_database(cluster: &Cluster) -> String {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let name = format!(
        "t{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    let admin = format!("postgres://chatd@127.0.0.1:{}/postgres", cluster.port);
    let mut conn = connect_when_ready(&admin).await;
    sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .expect("create a test database");
    format!("postgres://chatd@127.0.0.1:{}/{name}", cluster.port)
}

/// Ends the test process with success after saying why, when PostgreSQL is missing: every test
/// of the PostgreSQL suite would need it.
pub fn skip_all(why: &str) -> ! {
    // Past libtest's output capture: the reason must be seen.
    let _ = writeln!(
        std::io::stderr(),
        "skipped: the PostgreSQL suite needs {why} (apt-get install postgresql)"
    );
    std::process::exit(0);
}

fn start() -> Option<Cluster> {
    let bin = binaries_or_skip()?;
    remove_stale_folders();
    let dir = std::env::temp_dir().join(format!("{PREFIX}{}", std::process::id()));
    let data = init_cluster(&bin, &dir);
    let port = free_port();
    let mut postgres = postgres_command(&bin, &data, &dir, port, &[]);
    let (started, spawned) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let child = postgres.spawn();
        let ok = child.is_ok();
        let _ = started.send(child.map(|_| ()));
        // The cluster's parent-death signal is tied to this thread: it stays until the process
        // ends.
        if ok {
            loop {
                std::thread::park();
            }
        }
    });
    spawned
        .recv()
        .expect("the starter thread answers")
        .expect("start postgres");
    Some(Cluster { port })
}

/// The PostgreSQL binaries, or `None` (the tests skip) when this machine has none and CI did not
/// ask for them.
fn binaries_or_skip() -> Option<PathBuf> {
    let bin = binaries();
    assert!(
        bin.is_some() || std::env::var_os("CHATD_REQUIRE_POSTGRES").is_none(),
        "CHATD_REQUIRE_POSTGRES is set but no /usr/lib/postgresql/*/bin/initdb: \
         apt-get install postgresql"
    );
    bin
}

/// A new cluster's data folder inside `dir` (created, 0700, owned by the server's user).
fn init_cluster(bin: &Path, dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).expect("cluster folder");
    let owner = unprivileged_user();
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(dir, Some(uid), Some(gid)).expect("chown the cluster folder");
    }
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    let data = dir.join("data");
    let mut initdb = Command::new(bin.join("initdb"));
    initdb
        .args(["--auth=trust", "--username=chatd", "--encoding=UTF8"])
        .args(["--locale=C.UTF-8", "--no-sync", "-D"])
        .arg(&data)
        .stdout(Stdio::null());
    as_user(&mut initdb, owner);
    let out = initdb.output().expect("run initdb");
    assert!(
        out.status.success(),
        "initdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    data
}

/// The server of the cluster in `data` on 127.0.0.1:`port`, with `settings` (`name=value`)
/// after the suite's own; it gets SIGQUIT when the thread that spawns it ends.
fn postgres_command(
    bin: &Path,
    data: &Path,
    dir: &Path,
    port: u16,
    settings: &[String],
) -> Command {
    let mut postgres = Command::new(bin.join("postgres"));
    postgres
        .arg("-D")
        .arg(data)
        .args(["-c", "listen_addresses=127.0.0.1", "-p", &port.to_string()])
        .arg("-k")
        .arg(dir)
        .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
        .args(["-c", "full_page_writes=off", "-c", "max_connections=400"])
        .args(["-c", "shared_buffers=64MB", "-c", "log_min_messages=fatal"])
        .stdout(Stdio::null())
        .stderr(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(dir.join("postgres.log"))
                .unwrap(),
        );
    for setting in settings {
        postgres.args(["-c", setting]);
    }
    as_user(&mut postgres, unprivileged_user());
    // SAFETY: `prctl` is async-signal-safe, as a `pre_exec` closure must be.
    unsafe {
        postgres.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    postgres
}

/// A cluster of one test's own, which the test can stop and start again (a database going away
/// and coming back) and set up with TLS. Stopped when dropped.
#[allow(dead_code)] // the deployment tests of the PostgreSQL suite use it
pub struct OwnedCluster {
    pub port: u16,
    /// Its folder (the server's files, and whatever the test puts beside them).
    pub dir: PathBuf,
    control: std::sync::mpsc::Sender<Control>,
}

enum Control {
    Start(std::sync::mpsc::Sender<std::io::Result<()>>),
    Stop(std::sync::mpsc::Sender<()>),
}

#[allow(dead_code)]
impl OwnedCluster {
    /// A new cluster, not started; `None` when the machine has no PostgreSQL (see [`cluster`]).
    /// `configure` may write files into the folder (certificates) and returns the server's extra
    /// settings.
    pub fn new(name: &str, configure: impl FnOnce(&Path) -> Vec<String>) -> Option<Self> {
        let bin = binaries_or_skip()?;
        remove_stale_folders();
        let dir = std::env::temp_dir().join(format!("{PREFIX}{}-{name}", std::process::id()));
        let data = init_cluster(&bin, &dir);
        let settings = configure(&dir);
        if let Some((uid, gid)) = unprivileged_user() {
            for entry in std::fs::read_dir(&dir).unwrap().flatten() {
                std::os::unix::fs::chown(entry.path(), Some(uid), Some(gid)).unwrap();
            }
        }
        let port = free_port();
        let (control, commands) = std::sync::mpsc::channel();
        let (folder, data_folder) = (dir.clone(), data.clone());
        // One thread forks and keeps the server: its parent-death signal is tied to it.
        std::thread::spawn(move || {
            let mut child: Option<std::process::Child> = None;
            let stop = |child: &mut Option<std::process::Child>| {
                if let Some(mut c) = child.take() {
                    // SAFETY: a plain signal to our own child; SIGINT is a fast shutdown.
                    unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
                    let _ = c.wait();
                }
            };
            while let Ok(command) = commands.recv() {
                match command {
                    Control::Start(reply) => {
                        let spawned =
                            postgres_command(&bin, &data_folder, &folder, port, &settings)
                                .spawn()
                                .map(|c| child = Some(c));
                        let _ = reply.send(spawned);
                    }
                    Control::Stop(reply) => {
                        stop(&mut child);
                        let _ = reply.send(());
                    }
                }
            }
            stop(&mut child);
        });
        Some(Self { port, dir, control })
    }

    /// Starts the server (again), and returns once it can be connected to at `admin` (a URL of
    /// its `postgres` database, with whatever TLS settings the cluster needs).
    pub async fn start(&self, admin: &str) {
        let (reply, answer) = std::sync::mpsc::channel();
        self.control.send(Control::Start(reply)).unwrap();
        answer.recv().unwrap().expect("start postgres");
        connect_when_ready(admin).await;
    }

    /// Stops the server (a fast shutdown: clients are disconnected) and waits until it exited.
    pub fn stop(&self) {
        let (reply, answer) = std::sync::mpsc::channel();
        self.control.send(Control::Stop(reply)).unwrap();
        answer.recv().unwrap();
    }

    /// A new empty database through `admin`; its name.
    pub async fn create_database(&self, admin: &str, name: &str) {
        let mut conn = connect_when_ready(admin).await;
        sqlx::raw_sql(&format!("CREATE DATABASE {name}"))
            .execute(&mut conn)
            .await
            .expect("create a test database");
    }
}

impl Drop for OwnedCluster {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waits for the cluster to take connections (it starts in the background).
async fn connect_when_ready(url: &str) -> sqlx::PgConnection {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match sqlx::PgConnection::connect(url).await {
            Ok(conn) => return conn,
            Err(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("PostgreSQL did not take connections within 60 s: {e}"),
        }
    }
}

/// The newest `/usr/lib/postgresql/<version>/bin` with `initdb` (Debian keeps it off PATH).
fn binaries() -> Option<PathBuf> {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| {
            let e = e.ok()?;
            let version = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").is_file().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().map(|(_, bin)| bin)
}

/// As root, PostgreSQL refuses to run: the package's `postgres` user, else `nobody`.
fn unprivileged_user() -> Option<(u32, u32)> {
    // SAFETY: `geteuid` has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return None;
    }
    let passwd = std::fs::read_to_string("/etc/passwd").unwrap_or_default();
    let entry = |name: &str| {
        passwd.lines().find_map(|line| {
            let fields: Vec<&str> = line.split(':').collect();
            (fields.first() == Some(&name) && fields.len() > 3)
                .then(|| Some((fields[2].parse().ok()?, fields[3].parse().ok()?)))?
        })
    };
    Some(
        entry("postgres")
            .or_else(|| entry("nobody"))
            .expect("a postgres or nobody user"),
    )
}

fn as_user(command: &mut Command, owner: Option<(u32, u32)>) {
    if let Some((uid, gid)) = owner {
        command.uid(uid).gid(gid);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// Removes the cluster folders of test processes that are gone.
fn remove_stale_folders() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|p| p.split('-').next()?.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
