//! What runs a run's work: a backend-owned task ([`ActiveRuns::spawn`]) that goes on when its
//! client leaves, stops on shutdown's end, a lost lease or a panic, and is counted while it lives
//! (shutdown waits for it); the same run driven by its one reader instead of a task of its own,
//! ending with it ([`ActiveRuns::driven`]); and the short step that leads to a run
//! ([`ActiveRuns::spawn_step`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tracing::Instrument as _;

use super::registry::{ActiveRuns, RunKind, Stopped};
use crate::telemetry::{metrics, trace};

impl ActiveRuns {
    /// Runs `work` as a backend-owned task: it goes on when the client leaves, and shutdown
    /// waits for it. If the shutdown grace period ends first, or `work` panics, `work` is dropped
    /// (cancelling its upstream call) and `stopped` runs instead, to record the failure and end
    /// the run's stream: no reader is left waiting for a terminal event that never comes. The
    /// task runs in a span of the run's `kind`, a child of the request's (the same trace).
    pub fn spawn<W, S, F>(
        self: &Arc<Self>,
        kind: RunKind,
        work: W,
        stopped: S,
    ) -> tokio::task::JoinHandle<()>
    where
        W: Future<Output = ()> + Send + 'static,
        S: FnOnce(Stopped) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        tokio::spawn(self.driven(kind, work, stopped))
    }

    /// What [`spawn`](Self::spawn) runs, for a caller that drives it itself: counted, stopped
    /// and recorded as a spawned run is, but it makes progress only while it is polled, and
    /// dropping it ends it. A `persist: false` stream's response polls its run (`http::sse`):
    /// there is nothing to keep once its client is gone, and each event then reaches the
    /// response without waking another task. So a client that stops reading holds its run back
    /// (hyper reads the body only while it can write), its upstream read with it, instead of
    /// the run's events piling up in its log; at shutdown such a run sees the stop only if its
    /// client reads again, else it ends when the server closes the connection (`http/serve.rs`).
    pub fn driven<W, S, F>(self: &Arc<Self>, kind: RunKind, work: W, stopped: S) -> DrivenRun
    where
        W: Future<Output = ()> + Send + 'static,
        S: FnOnce(Stopped) -> F + Send + 'static,
        F: Future<Output = ()> + Send + 'static,
    {
        use futures::FutureExt;
        let live = LiveTask::new(self.clone());
        let mut stop = self.stop.subscribe();
        let mut fence = self.fence.subscribe();
        let epoch = *fence.borrow_and_update();
        // Unwind safety: on a panic `work`'s state is dropped, never used again.
        // Boxed here, outside the task's block: a block that moves a captured future into a
        // future of its own (the `select!`) keeps room for both, and `work` is the run's whole
        // state machine. Measured on a persisted chat run: the task's future was 9.9 KiB, and
        // 0.8 KiB with the work boxed.
        let mut work = Box::pin(std::panic::AssertUnwindSafe(work).catch_unwind());
        let span = trace::run(kind.as_str());
        let task = async move {
            let _live = live;
            let why = tokio::select! {
                done = &mut work => match done {
                    Ok(()) => None,
                    Err(_) => {
                        tracing::error!("a run panicked; its failure is recorded");
                        Some(Stopped::Panicked)
                    }
                },
                seen = stop.wait_for(|stop| *stop) => seen.is_ok().then_some(Stopped::Shutdown),
                seen = fence.wait_for(|e| *e != epoch) => seen.is_ok().then_some(Stopped::LeaseLost),
            };
            // Before `stopped`: the select only borrowed it, and a stopped run's upstream call
            // must be cancelled now, not after its failure is recorded.
            drop(work);
            if let Some(why) = why {
                metrics::run_stopped(why.label());
                trace::failed(&tracing::Span::current(), Some(why.label()));
                // Boxed: a run's task lives as long as the run, and inline this rare path's
                // state would be part of every run's memory.
                Box::pin(stopped(why)).await;
            }
        };
        Box::pin(task.instrument(span))
    }

    /// Runs `step`, the short work that leads to a run (a new chat's write, then [`spawn`]), in a
    /// task of its own that shutdown counts as a run: a client gone in the middle of it does not
    /// stop it half-way, and neither does a shutdown, which waits for it as for a run (the run it
    /// spawns is counted before the step ends). It is not told to stop: it is one write long.
    ///
    /// [`spawn`]: ActiveRuns::spawn
    pub fn spawn_step<T, W>(self: &Arc<Self>, step: W) -> tokio::task::JoinHandle<T>
    where
        T: Send + 'static,
        W: Future<Output = T> + Send + 'static,
    {
        let live = LiveTask::new(self.clone());
        // In the request's span: the step, and the run it starts, are part of its trace.
        let step = async move {
            let _live = live;
            step.await
        };
        tokio::spawn(step.instrument(tracing::Span::current()))
    }

    /// Waits until no run task is alive (tests and tools await it instead of polling).
    pub async fn settled(&self) {
        let _ = self.live.subscribe().wait_for(|n| *n == 0).await;
    }

    /// Shutdown, after the listener closed: waits up to `grace` for runs to finish, then tells
    /// the rest to stop and waits for them to record their error.
    pub async fn shut_down(&self, grace: Duration) {
        if tokio::time::timeout(grace, self.settled()).await.is_err() {
            let left = *self.live.borrow();
            tracing::warn!(
                runs = left,
                "grace period over: stopping the runs still going"
            );
            self.stop.send_replace(true);
            self.settled().await;
        }
    }

    /// Whether the grace period is over (runs started now stop at once).
    pub fn stopping(&self) -> bool {
        *self.stop.borrow()
    }
}

/// A run's whole work, to be spawned or driven by its reader ([`ActiveRuns::driven`]).
pub type DrivenRun = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// Counts a run task as live while it exists.
struct LiveTask(Arc<ActiveRuns>);

impl LiveTask {
    fn new(runs: Arc<ActiveRuns>) -> Self {
        runs.live.send_modify(|n| *n += 1);
        Self(runs)
    }
}

impl Drop for LiveTask {
    fn drop(&mut self) {
        self.0.live.send_modify(|n| *n -= 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn shutdown_waits_for_a_step_as_for_a_run() {
        use futures::FutureExt;
        let runs = Arc::new(ActiveRuns::default());
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let step = runs.spawn_step(async move {
            rx.await.unwrap();
            7
        });
        assert!(
            runs.shut_down(Duration::from_secs(30))
                .now_or_never()
                .is_none(),
            "shutdown waits while the step runs"
        );
        tx.send(()).unwrap();
        assert_eq!(step.await.unwrap(), 7);
        runs.shut_down(Duration::from_secs(30)).await;
        assert_eq!(*runs.live.borrow(), 0);
    }

    #[tokio::test]
    async fn a_driven_run_is_counted_until_it_ends_or_is_dropped_and_stops_at_shutdown() {
        let runs = Arc::new(ActiveRuns::default());
        let (held, dropped) = tokio::sync::oneshot::channel::<()>();
        let run = runs.driven(
            RunKind::Chat,
            async move {
                let _held = held;
                std::future::pending::<()>().await
            },
            |_| async {},
        );
        assert_eq!(*runs.live.borrow(), 1, "counted before it is first polled");
        drop(run);
        assert!(dropped.await.is_err(), "dropped, its work is dropped");
        assert_eq!(*runs.live.borrow(), 0);

        let (tx, rx) = tokio::sync::oneshot::channel();
        let run = runs.driven(
            RunKind::Chat,
            std::future::pending(),
            move |why| async move {
                let _ = tx.send(why);
            },
        );
        // Shutdown waits for it while its reader drives it, then stops it.
        tokio::join!(runs.shut_down(Duration::from_millis(20)), run);
        assert_eq!(rx.await.unwrap(), Stopped::Shutdown);
        assert_eq!(*runs.live.borrow(), 0);
    }

    #[tokio::test]
    async fn shutdown_waits_for_runs_then_stops_the_rest() {
        let runs = Arc::new(ActiveRuns::default());
        let (tx, rx) = tokio::sync::oneshot::channel();
        runs.spawn(
            RunKind::Chat,
            std::future::pending(),
            move |why| async move {
                let _ = tx.send(why);
            },
        );
        let (tx2, rx2) = tokio::sync::oneshot::channel();
        runs.spawn(
            RunKind::Chat,
            async { panic!("a bug") },
            move |why| async move {
                let _ = tx2.send(why);
            },
        );
        assert_eq!(rx2.await.unwrap(), Stopped::Panicked);
        runs.shut_down(Duration::from_millis(20)).await;
        assert_eq!(rx.await.unwrap(), Stopped::Shutdown);
        assert_eq!(*runs.live.borrow(), 0);
    }
}
