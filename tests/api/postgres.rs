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
    let Some(bin) = binaries() else {
        assert!(
            std::env::var_os("CHATD_REQUIRE_POSTGRES").is_none(),
            "CHATD_REQUIRE_POSTGRES is set but no /usr/lib/postgresql/*/bin/initdb: \
             apt-get install postgresql"
        );
        return None;
    };
    remove_stale_folders();
    let dir = std::env::temp_dir().join(format!("{PREFIX}{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("cluster folder");
    let owner = unprivileged_user();
    if let Some((uid, gid)) = owner {
        std::os::unix::fs::chown(&dir, Some(uid), Some(gid)).expect("chown the cluster folder");
    }
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700)).unwrap();
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
    let port = free_port();
    let mut postgres = Command::new(bin.join("postgres"));
    postgres
        .arg("-D")
        .arg(&data)
        .args(["-c", "listen_addresses=127.0.0.1", "-p", &port.to_string()])
        .arg("-k")
        .arg(&dir)
        .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
        .args(["-c", "full_page_writes=off", "-c", "max_connections=400"])
        .args(["-c", "shared_buffers=64MB", "-c", "log_min_messages=fatal"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(dir.join("postgres.log")).unwrap());
    as_user(&mut postgres, owner);
    // SAFETY: `prctl` is async-signal-safe, as a `pre_exec` closure must be.
    unsafe {
        postgres.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGQUIT) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
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
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        if !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}
