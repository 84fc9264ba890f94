//! Runs shared by the instances of a deployment, on PostgreSQL (the rules are
//! `host/src/runs/shared.rs`'s): who owns each live run, its events with their sequence, and the
//! notifications that wake the instances following a run.
//!
//! Ownership is checked where it is written: an owner's events are stored only while its run's
//! row says it owns the run and the run is live, under a shared lock on that row, so a run ended
//! by another instance (its owner's lease ran out) takes no event after its terminal one.

use std::collections::HashSet;

use sqlx::Row;
use sqlx::postgres::PgListener;

use super::PgStore;
use crate::store::{Result, RunEvent, RunStart, StoreError};

/// The channel the instances' listeners hear new events on; a notification's payload is the
/// ids of runs with new events, separated by commas. An id after [`STOP_MARK`] is a run a client
/// asked to stop, for its owner.
const CHANNEL: &str = "chatd_runs";

/// Marks a run id in a notification as a stop request rather than new events.
const STOP_MARK: char = '!';

/// A notification's payload is at most 8,000 bytes; ids are sent in pieces of at most this many.
const MAX_PAYLOAD: usize = 7_000;

/// How long an ended run's events stay for the instances still catching up with it.
const KEEP_ENDED_SECS: f64 = 60.0;

impl PgStore {
    /// Registers a live run owned by this instance, unless `target` of `kind` already has one or
    /// this instance's lease ran out.
    pub async fn start_run(
        &self,
        id: &str,
        kind: &str,
        target: &str,
        tag: u32,
    ) -> Result<RunStart> {
        let inserted = sqlx::query(
            "INSERT INTO runs (id, kind, target_id, tag, instance_id) \
             SELECT $1, $2, $3, $4, $5 WHERE EXISTS \
             (SELECT 1 FROM instances WHERE id = $5 AND lease_until >= clock_timestamp()) \
             ON CONFLICT (kind, target_id) WHERE ended_at IS NULL DO NOTHING",
        )
        .bind(id)
        .bind(kind)
        .bind(target)
        .bind(i64::from(tag))
        .bind(&*self.instance)
        .execute(&self.pool)
        .await?;
        if inserted.rows_affected() == 1 {
            return Ok(RunStart::Started);
        }
        let alive: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM instances WHERE id = $1 AND lease_until >= clock_timestamp())",
        )
        .bind(&*self.instance)
        .fetch_one(&self.pool)
        .await?;
        if alive {
            Ok(RunStart::Running)
        } else {
            Err(StoreError::LeaseLost)
        }
    }

    /// The live run of `target`, if any: its id and tag.
    pub async fn live_run(&self, kind: &str, target: &str) -> Result<Option<(String, u32)>> {
        let row = sqlx::query(
            "SELECT id, tag FROM runs WHERE kind = $1 AND target_id = $2 AND ended_at IS NULL",
        )
        .bind(kind)
        .bind(target)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| Ok((row.try_get("id")?, tag(&row)?)))
            .transpose()
    }

    /// The targets of the live runs of instances whose lease holds, as `(kind, target)`, sorted.
    pub async fn live_runs(&self) -> Result<Vec<(String, String)>> {
        let rows = sqlx::query(
            "SELECT r.kind, r.target_id FROM runs r JOIN instances i ON i.id = r.instance_id \
             AND i.lease_until >= clock_timestamp() WHERE r.ended_at IS NULL \
             ORDER BY r.kind, r.target_id",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| Ok((row.try_get("kind")?, row.try_get("target_id")?)))
            .collect()
    }

    /// Stores events of runs this instance owns, ending each run whose terminal event is among
    /// them, and wakes the followers; one transaction. The ids of the runs whose events were
    /// refused (this instance does not own them, or they ended).
    pub async fn write_run_events(&self, events: &[RunEvent]) -> Result<HashSet<String>> {
        let mut ids: Vec<&str> = events.iter().map(|e| &*e.run_id).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut tx = self.tx().await?;
        let owned: HashSet<String> = sqlx::query_scalar(
            "SELECT id FROM runs WHERE id = ANY($1) AND instance_id = $2 AND ended_at IS NULL \
             FOR SHARE",
        )
        .bind(&ids)
        .bind(&*self.instance)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .collect();
        let kept: Vec<&RunEvent> = events
            .iter()
            .filter(|e| owned.contains(&*e.run_id))
            .collect();
        let column = |f: fn(&RunEvent) -> &str| kept.iter().map(|e| f(e)).collect::<Vec<_>>();
        // A batch retried after a commit whose answer was lost is stored once.
        sqlx::query(
            "INSERT INTO run_events (run_id, seq, name, data, terminal) \
             SELECT * FROM unnest($1::text[], $2::int4[], $3::text[], $4::text[], $5::bool[]) \
             ON CONFLICT (run_id, seq) DO NOTHING",
        )
        .bind(column(|e| &e.run_id))
        .bind(kept.iter().map(|e| e.seq as i32).collect::<Vec<_>>())
        .bind(column(|e| &e.name))
        .bind(column(|e| &e.data))
        .bind(kept.iter().map(|e| e.terminal).collect::<Vec<_>>())
        .execute(&mut *tx)
        .await?;
        let ended: Vec<&str> = kept
            .iter()
            .filter(|e| e.terminal)
            .map(|e| &*e.run_id)
            .collect();
        if !ended.is_empty() {
            sqlx::query("UPDATE runs SET ended_at = clock_timestamp() WHERE id = ANY($1)")
                .bind(&ended)
                .execute(&mut *tx)
                .await?;
        }
        let mut woken: Vec<&str> = owned.iter().map(String::as_str).collect();
        woken.sort_unstable();
        notify(&mut tx, &woken).await?;
        tx.commit().await?;
        Ok(ids
            .into_iter()
            .filter(|id| !owned.contains(*id))
            .map(str::to_string)
            .collect())
    }

    /// The stored events of each run after its cursor `(run id, last seq seen)`, in order.
    pub async fn run_events_after(&self, cursors: &[(&str, u32)]) -> Result<Vec<RunEvent>> {
        let rows = sqlx::query(
            "SELECT e.run_id, e.seq, e.name, e.data, e.terminal FROM run_events e \
             JOIN unnest($1::text[], $2::int4[]) AS c(run_id, after) \
             ON e.run_id = c.run_id AND e.seq > c.after ORDER BY e.run_id, e.seq",
        )
        .bind(cursors.iter().map(|c| c.0).collect::<Vec<_>>())
        .bind(cursors.iter().map(|c| c.1 as i32).collect::<Vec<_>>())
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(RunEvent {
                    run_id: row.try_get::<String, _>("run_id")?.into(),
                    seq: row.try_get::<i32, _>("seq")? as u32,
                    name: row.try_get("name")?,
                    data: row.try_get("data")?,
                    terminal: row.try_get("terminal")?,
                })
            })
            .collect()
    }

    /// Ends the live runs of instances whose lease ran out, each with a terminal `error` event
    /// whose data `error_data` gives for the run's kind, and deletes runs ended a while ago;
    /// how many runs were ended.
    pub async fn end_lost_runs(
        &self,
        error_data: &(dyn Fn(&str) -> String + Sync),
    ) -> Result<usize> {
        let mut tx = self.tx().await?;
        let lost = sqlx::query(
            "UPDATE runs SET ended_at = clock_timestamp() WHERE ended_at IS NULL AND NOT EXISTS \
             (SELECT 1 FROM instances i WHERE i.id = runs.instance_id \
             AND i.lease_until >= clock_timestamp()) RETURNING id, kind",
        )
        .fetch_all(&mut *tx)
        .await?;
        if !lost.is_empty() {
            let ids = lost
                .iter()
                .map(|row| row.try_get::<String, _>("id"))
                .collect::<std::result::Result<Vec<_>, _>>()?;
            let data = lost
                .iter()
                .map(|row| Ok(error_data(row.try_get("kind")?)))
                .collect::<Result<Vec<_>>>()?;
            // After the UPDATE, which waited for any owner's write in progress: MAX(seq) is the
            // owner's last stored event, and no event of its can come after this one.
            sqlx::query(
                "INSERT INTO run_events (run_id, seq, name, data, terminal) \
                 SELECT r.id, COALESCE((SELECT MAX(seq) FROM run_events e WHERE e.run_id = r.id), 0) + 1, \
                 'error', r.data, TRUE FROM unnest($1::text[], $2::text[]) AS r(id, data)",
            )
            .bind(&ids)
            .bind(&data)
            .execute(&mut *tx)
            .await?;
            let woken: Vec<&str> = ids.iter().map(String::as_str).collect();
            notify(&mut tx, &woken).await?;
        }
        sqlx::query(
            "DELETE FROM runs WHERE ended_at < clock_timestamp() - make_interval(secs => $1)",
        )
        .bind(KEEP_ENDED_SECS)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(lost.len())
    }

    /// Asks the owner of `target`'s live run to stop it: the run is marked (for an owner whose
    /// listener was away) and its owner notified. The run's id and tag; `None` when none is live.
    pub async fn request_run_stop(
        &self,
        kind: &str,
        target: &str,
    ) -> Result<Option<(String, u32)>> {
        let mut tx = self.tx().await?;
        let row = sqlx::query(
            "UPDATE runs SET stop_requested = TRUE \
             WHERE kind = $1 AND target_id = $2 AND ended_at IS NULL RETURNING id, tag",
        )
        .bind(kind)
        .bind(target)
        .fetch_optional(&mut *tx)
        .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let id: String = row.try_get("id")?;
        notify(&mut tx, &[&format!("{STOP_MARK}{id}")]).await?;
        tx.commit().await?;
        Ok(Some((id, tag(&row)?)))
    }

    /// The ids of this instance's live runs a client asked to stop.
    pub async fn run_stop_requests(&self) -> Result<Vec<String>> {
        Ok(sqlx::query_scalar(
            "SELECT id FROM runs WHERE instance_id = $1 AND ended_at IS NULL AND stop_requested",
        )
        .bind(&*self.instance)
        .fetch_all(&self.pool)
        .await?)
    }

    /// The connection listening for new events: one of its own, not one of the pool's.
    pub async fn listen_runs(&self) -> Result<RunListener> {
        let mut listener = PgListener::connect_with(&self.listen_pool).await?;
        listener.listen(CHANNEL).await?;
        Ok(RunListener(listener))
    }
}

/// Hears which runs have new events, and which a client asked to stop.
pub struct RunListener(PgListener);

/// What one notification said.
#[derive(Debug, Default)]
pub struct Heard {
    /// Runs with new events.
    pub runs: Vec<String>,
    /// Runs a client asked to stop.
    pub stops: Vec<String>,
}

impl RunListener {
    /// What the next notification says; `None` when the connection was lost, and notifications
    /// with it (it is opened again on the next call, listening again).
    pub async fn next(&mut self) -> Result<Option<Heard>> {
        Ok(self.0.try_recv().await?.map(|n| {
            let mut heard = Heard::default();
            for id in n.payload().split(',').filter(|id| !id.is_empty()) {
                match id.strip_prefix(STOP_MARK) {
                    Some(run) => heard.stops.push(run.to_string()),
                    None => heard.runs.push(id.to_string()),
                }
            }
            heard
        }))
    }
}

/// Wakes the instances following `ids` when the transaction commits.
async fn notify(tx: &mut sqlx::Transaction<'_, sqlx::Postgres>, ids: &[&str]) -> Result<()> {
    let mut payload = String::new();
    for (i, id) in ids.iter().enumerate() {
        if !payload.is_empty() {
            payload.push(',');
        }
        payload.push_str(id);
        if payload.len() > MAX_PAYLOAD || i + 1 == ids.len() {
            sqlx::query("SELECT pg_notify($1, $2)")
                .bind(CHANNEL)
                .bind(std::mem::take(&mut payload))
                .execute(&mut **tx)
                .await?;
        }
    }
    Ok(())
}

fn tag(row: &sqlx::postgres::PgRow) -> Result<u32> {
    // Written from a u32.
    Ok(row.try_get::<i64, _>("tag")? as u32)
}
