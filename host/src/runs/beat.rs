//! The instance's signs of life (`store/liveness.rs` has the rule), and on a shared database
//! what follows from them for runs: each beat renews this instance's lease and ends the calls and
//! runs of instances whose lease ran out (their attached clients get the `error` event); an
//! instance that finds its own lease gone stops its runs (others ended them, or will) and
//! registers again for new ones.

use std::sync::Arc;

use tokio::sync::watch;
use tokio::time::Instant;

use super::ready::Readiness;
use super::registry::{ActiveRuns, ErrorEvents, RunKind};
use crate::store::liveness::LOST_REPLY;
use crate::store::{LEASE, Store, StoreError};

/// The `error` event's data of a run ended because its instance is gone, by kind.
fn lost_run_data(errors: &ErrorEvents, kind: &str) -> String {
    match RunKind::from_stored(kind) {
        RunKind::Chat => errors.of(RunKind::Chat, LOST_REPLY),
        RunKind::Search => errors.of(RunKind::Search, LOST_SEARCH),
    }
}

/// What a search's client is told when the instance running it is gone.
const LOST_SEARCH: &str = "the server stopped before the search was finished";

/// Ends what instances gone before this one left open: their calls, then their runs (so a
/// client told of the end finds the call's error recorded). Shared only: on SQLite a process
/// closes its predecessors' calls at start, and runs were in their memory.
pub async fn end_lost(store: &Store, errors: &ErrorEvents) -> Result<(), StoreError> {
    let calls = store.close_lost_calls().await?;
    if calls > 0 {
        tracing::warn!(calls, "closed calls left open by a server that is gone");
    }
    if let Some(table) = store.runs_table() {
        let runs = table
            .end_lost(&|kind: &str| lost_run_data(errors, kind))
            .await?;
        if runs > 0 {
            tracing::warn!(runs, "ended runs of a server that is gone");
        }
    }
    Ok(())
}

/// Records this process's signs of life until the store closes (see the module doc). On a
/// shared database a watchdog beside it ends this instance's runs the moment its lease runs out
/// without a renewal, whether or not the database can be reached ([`watch_lease`]); the sweep
/// for other instances' lost work runs beside the renewals, never delaying one.
/// `registered_at`: when the registration that granted the first lease was sent.
pub async fn beat(
    store: Store,
    runs: Arc<ActiveRuns>,
    ready: Arc<Readiness>,
    id: String,
    registered_at: Instant,
) {
    let (lease, lease_until) = watch::channel(registered_at + LEASE);
    let sweeping = Arc::new(tokio::sync::Mutex::new(()));
    if store.is_shared() {
        tokio::spawn(watch_lease(lease_until, runs.clone(), ready.clone()));
    }
    loop {
        tokio::time::sleep(store.heartbeat_every()).await;
        if store.is_closed() {
            return;
        }
        // The database set the renewed lease from its clock after this moment.
        let sent = Instant::now();
        match store.heartbeat(&id).await {
            Ok(()) => {
                lease.send_replace(sent + LEASE);
                ready.set_lease(true);
                if store.is_shared() {
                    sweep(&store, &runs, &sweeping);
                }
            }
            Err(_) if store.is_closed() => return,
            Err(StoreError::LeaseLost) => {
                tracing::error!(
                    "this instance's lease on the database ran out (it was frozen or cut off): \
                     its runs stop, and it registers again"
                );
                ready.set_lease(false);
                runs.fence();
                let sent = Instant::now();
                match store.register_instance().await {
                    Ok(_) => {
                        lease.send_replace(sent + LEASE);
                        ready.set_lease(true);
                    }
                    Err(e) => tracing::warn!(error = %e, "could not register again; retrying"),
                }
            }
            Err(e) => tracing::warn!(error = %e, "could not record the server's heartbeat"),
        }
    }
}

/// Ends other instances' lost calls and runs in a task of its own, unless the last sweep is
/// still going (a slow database gets one at a time).
fn sweep(store: &Store, runs: &Arc<ActiveRuns>, sweeping: &Arc<tokio::sync::Mutex<()>>) {
    let Ok(guard) = sweeping.clone().try_lock_owned() else {
        return;
    };
    let (store, runs) = (store.clone(), runs.clone());
    tokio::spawn(async move {
        let _one_at_a_time = guard;
        if let Err(e) = end_lost(&store, &runs.errors).await
            && !store.is_closed()
        {
            tracing::warn!(error = %e, "could not end the work of instances that are gone");
        }
    });
}

/// Fences this instance's runs when its lease runs out before a renewal moves it: a partitioned
/// instance ends its own clients' runs (their `error` event) then, as the other instances end
/// them in the database, instead of when the database answers again. Ends with `beat`.
async fn watch_lease(
    mut until: watch::Receiver<Instant>,
    runs: Arc<ActiveRuns>,
    ready: Arc<Readiness>,
) {
    loop {
        let deadline = *until.borrow_and_update();
        tokio::select! {
            changed = until.changed() => if changed.is_err() { return },
            _ = tokio::time::sleep_until(deadline) => {
                // A renewal may have landed as the deadline passed.
                if *until.borrow() > Instant::now() {
                    continue;
                }
                if ready.lease_held() {
                    tracing::error!(
                        "this instance's lease on the database ran out without a renewal (the \
                         database is away or too slow): its runs stop"
                    );
                    ready.set_lease(false);
                    runs.fence();
                }
                if until.changed().await.is_err() {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lost_run_ends_with_its_kind_of_error_event() {
        let errors = ErrorEvents {
            chat: |message| serde_json::json!({ "kind": "chat", "message": message }).to_string(),
            search: |message| {
                serde_json::json!({ "kind": "search", "message": message }).to_string()
            },
        };
        let chat: serde_json::Value =
            serde_json::from_str(&lost_run_data(&errors, RunKind::Chat.as_str())).unwrap();
        assert_eq!(chat["kind"], "chat");
        assert_eq!(chat["message"], LOST_REPLY);
        let search: serde_json::Value =
            serde_json::from_str(&lost_run_data(&errors, RunKind::Search.as_str())).unwrap();
        assert_eq!(search["kind"], "search");
        assert_eq!(search["message"], LOST_SEARCH);
    }
}
