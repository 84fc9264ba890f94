//! Starting and stopping: open the store, build the state, listen, serve until told to stop,
//! then close the store. `main` and the tests both start the server through here, so tests run
//! the same wiring as production.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::net::TcpListener;

use crate::chat::ChatSettings;
use crate::chat::events::ChatEvent;
use crate::chat::models::Models;
use crate::config::Config;
use crate::http::{self, AppState, Handles, TokenDigest};
use crate::plugins::loading::plugin_host::PluginHost;
use crate::runs::ready::{self, Readiness};
use crate::runs::{ActiveRuns, ErrorEvents, beat};
use crate::search;
use crate::store::{Store, StoreError};
use crate::tools::Tools;

/// How long past the shutdown grace period connections may stay open: time for the runs
/// stopped at its end to send their last events. A connection open after that is a client that
/// stopped reading or sending, and is closed.
const CLOSE_AFTER_GRACE: std::time::Duration = std::time::Duration::from_millis(3_500);

/// How long past the grace period the whole shutdown may take (connections closed, the store
/// left and closed): with the runtime's own end (`cli/mod.rs`, half a second at most), the process
/// is gone within the grace period and 5 s, whatever clients or the database do.
pub const STOP_AFTER_GRACE: std::time::Duration = std::time::Duration::from_secs(4);

pub struct Server {
    listener: TcpListener,
    state: AppState,
    /// Loads the model lists now and refreshes them; stopped with the server.
    refresh: tokio::task::JoinHandle<()>,
    grace: std::time::Duration,
    /// This process's id among the database's servers.
    instance: String,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
}

/// Where MCP servers' logins get their sealing key: CHATD_SECRET_KEY, else on SQLite the data
/// folder's key file; on PostgreSQL the instances may not share a folder, so the key is needed.
pub fn login_key(config: &Config) -> crate::tools::mcp::KeySource {
    use crate::tools::mcp::KeySource;
    if let Some(secret) = &config.chatd_secret_key {
        return KeySource::Secret(secret.clone());
    }
    match (&config.database_url, crate::store::data_dir(config)) {
        (crate::config::DatabaseUrl::Postgres(_), _) => KeySource::Missing(
            "it needs a login, which chatd keeps sealed under CHATD_SECRET_KEY on PostgreSQL \
             (instances may not share a data folder): set CHATD_SECRET_KEY"
                .into(),
        ),
        (_, Some(dir)) => KeySource::Folder(dir),
        (_, None) => KeySource::Missing(
            "it needs a login, and an in-memory database has no data folder for the key that \
             seals it: set CHATD_SECRET_KEY or CHATD_DATA_DIR"
                .into(),
        ),
    }
}

impl Server {
    /// Opens the database (migrating it) and binds the listen address. `plugins` is usually
    /// [`PluginHost::start`]`(config)`; tests share one.
    pub async fn bind(config: &Config, plugins: Arc<PluginHost>) -> Result<Self, StartError> {
        let store = Store::open(
            &config.database_url,
            config.database_max_connections,
            std::time::Duration::from_secs(config.database_timeout_secs),
        )
        .await?;
        let addr = format!("{}:{}", config.host, config.port);
        let listener = TcpListener::bind(&addr)
            .await
            .map_err(|source| StartError::Bind {
                addr: addr.clone(),
                source,
            })?;
        // SQLite: this process holds the database's lock, so every call still open is another's,
        // lost. PostgreSQL: those of instances whose lease ran out, and their runs.
        let errors = ErrorEvents {
            chat: |message| ChatEvent::Error(message.into()).data(),
            search: search::events::error_data,
        };
        beat::end_lost(&store, &errors).await?;
        let registered_at = tokio::time::Instant::now();
        let instance = store.register_instance().await?;
        let runs = ActiveRuns::new(&store, errors);
        let ready = Arc::new(Readiness::default());
        tokio::spawn(ready::probe(store.clone(), ready.clone()));
        tokio::spawn(beat::beat(
            store.clone(),
            runs.clone(),
            ready.clone(),
            instance.clone(),
            registered_at,
        ));
        let models = Models::new(plugins.clone());
        let refresh =
            models.spawn_refresh(std::time::Duration::from_secs(config.models_refresh_secs));
        let logins = crate::tools::mcp::Logins::new(store.clone(), login_key(config));
        // Whether people use the deployment, known before the first request (`usage/`).
        let team = store.team_exists().await?;
        let library = crate::library::Library::start(
            store.clone(),
            plugins.clone(),
            instance.clone(),
            config.chatd_embedding_model.clone(),
        );
        let state = AppState::new(Handles {
            people: Arc::new(crate::people::Directory::new(store.clone(), team)),
            store,
            tools: Tools::start(plugins.clone(), Some(logins), Some(library.clone())),
            plugins,
            runs,
            ready,
            chat: Arc::new(ChatSettings {
                max_tool_rounds: config.chat_max_tool_rounds,
                title_model: config.title_model.clone(),
            }),
            models,
            token: config
                .admin_token
                .as_ref()
                .map(|t| TokenDigest::new(t.expose())),
            metrics: config.chatd_metrics,
            allowed_hosts: config.exposure.chatd_allowed_hosts.clone().into(),
            allowed_origins: config.exposure.chatd_allowed_origins.clone().into(),
            public_url: config.exposure.chatd_public_url.clone(),
            signin: Arc::new(crate::signin::SignIn::new(crate::egress::Clients::new())),
            library,
        });
        Ok(Self {
            listener,
            state,
            refresh,
            grace: std::time::Duration::from_secs(config.chatd_shutdown_grace_secs),
            instance,
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn state(&self) -> &AppState {
        &self.state
    }

    /// Serves until `shutdown` resolves; then stops accepting, lets runs and requests in flight
    /// finish (runs within the grace period, after which they are stopped with an error
    /// recorded), and closes the store. All of it ends within the grace period and
    /// [`STOP_AFTER_GRACE`] of the signal whatever the database does: what is left then (a
    /// write to a database that does not answer) is given up, and the calls it left open are
    /// closed as lost by the next start or another instance.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send + 'static) {
        let store = self.state.store.clone();
        let runs = self.state.runs.clone();
        let grace = self.grace;
        let close_after = grace.saturating_add(CLOSE_AFTER_GRACE);
        let signaled = Arc::new(std::sync::OnceLock::new());
        let (stopping_tx, stopping) = tokio::sync::oneshot::channel::<()>();
        // The grace clock starts with the signal, while the listener drains: streams in flight
        // keep their connections open until their runs end.
        let drain = {
            let runs = runs.clone();
            tokio::spawn(async move {
                if stopping.await.is_ok() {
                    runs.shut_down(grace).await;
                }
            })
        };
        let shutdown = {
            let signaled = signaled.clone();
            async move {
                shutdown.await;
                let _ = signaled.set(tokio::time::Instant::now());
                let _ = stopping_tx.send(());
            }
        };
        http::serve::serve(
            self.listener,
            http::router(self.state),
            shutdown,
            close_after,
        )
        .await;
        let now = tokio::time::Instant::now();
        let stop_after = grace.saturating_add(STOP_AFTER_GRACE);
        let deadline = signaled.get().map_or(now, |at| *at + stop_after);
        let rest = async {
            let _ = drain.await;
            runs.shut_down(grace).await;
            // Its runs have ended: the others need not wait for its lease to run out.
            if let Err(e) = store.leave(&self.instance).await {
                tracing::warn!(error = %e, "could not deregister from the database");
            }
            store.close().await;
        };
        self.refresh.abort();
        // A moment at least: a server whose grace ran out still closes a database that answers.
        let until = deadline.max(now + std::time::Duration::from_millis(300));
        if tokio::time::timeout_at(until, rest).await.is_err() {
            tracing::warn!(
                "shutdown: the database did not answer in time; stopping without closing it"
            );
        }
    }
}

/// Resolves on Ctrl-C or SIGTERM. The handlers are installed when this is called, not when the
/// future is first polled: a signal that arrives the moment the server says it is listening
/// must already stop it gracefully rather than kill it.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let terminate = signal(SignalKind::terminate()).ok();
        let interrupt = signal(SignalKind::interrupt()).ok();
        async move {
            let wait = |s: Option<tokio::signal::unix::Signal>| async move {
                match s {
                    Some(mut s) => {
                        s.recv().await;
                    }
                    None => std::future::pending::<()>().await,
                }
            };
            tokio::select! {
                _ = wait(terminate) => {}
                _ = wait(interrupt) => {}
            }
        }
    }
    #[cfg(not(unix))]
    async {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// Raises this process's soft limit on open files to its hard limit and returns the limit now.
/// A live stream holds two (its client's connection and its upstream's), so the soft limit
/// many systems start with (1,024) would refuse connections at about 500 streams. The hard
/// limit is the operator's to raise (systemd's `LimitNOFILE`, `ulimit -Hn`, a container's
/// `--ulimit nofile=`; `docs/deploying.md`). Linux only (elsewhere an `Unsupported` error):
/// there the hard limit is a number (at most `fs.nr_open`), never `RLIM_INFINITY`.
#[cfg(target_os = "linux")]
pub fn raise_open_files_limit() -> std::io::Result<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the one struct it is given.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if limit.rlim_cur < limit.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: limit.rlim_max,
            rlim_max: limit.rlim_max,
        };
        // SAFETY: setrlimit reads the one struct it is given.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            limit = raised;
        }
    }
    Ok(limit.rlim_cur)
}

/// [`raise_open_files_limit`] where it is not supported.
#[cfg(not(target_os = "linux"))]
pub fn raise_open_files_limit() -> std::io::Result<u64> {
    Err(std::io::ErrorKind::Unsupported.into())
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    fn open_files() -> libc::rlimit {
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes the one struct it is given.
        assert_eq!(
            unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) },
            0
        );
        limit
    }

    #[test]
    fn the_soft_open_files_limit_is_raised_to_the_hard_one() {
        let hard = open_files().rlim_max;
        // One below the hard limit (lowering needs no privilege, and leaves the other tests
        // room), then raised back.
        let lowered = libc::rlimit {
            rlim_cur: hard - 1,
            rlim_max: hard,
        };
        // SAFETY: setrlimit reads the one struct it is given.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lowered) }, 0);
        assert_eq!(raise_open_files_limit().unwrap(), hard);
        assert_eq!(open_files().rlim_cur, hard);
    }
}
