//! The server's signs of life, and the calls a server left open when it stopped without ending
//! them (kill -9, a crash, power loss). A graceful shutdown ends every call itself (README,
//! "Shutdown"); a call still open when a server starts was lost with the process before it.
//!
//! Each server process is a row of `instances` whose `alive_at` it moves every
//! [`HEARTBEAT`]. At start, before it serves, a server closes every open call with
//! [`LOST_REPLY`] and a latency up to the last sign of life before it: the latest `alive_at`,
//! or the call's own start when there is none later. One process per SQLite database, so every
//! call open at start is another process's.

use chrono::DateTime;
use sqlx::Row;

use super::{Result, Store};
use crate::model::{new_id, now};

/// How often a server records that it is alive: the error in a lost call's latency.
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(5);

/// The error a call left open by a stopped server is closed with.
pub const LOST_REPLY: &str = "the server stopped before the reply was finished";

impl Store {
    /// Closes the calls earlier processes left open (see the module doc); how many there were.
    pub async fn close_lost_calls(&self) -> Result<usize> {
        let alive: Option<String> = sqlx::query_scalar("SELECT MAX(alive_at) FROM instances")
            .fetch_one(&self.pool)
            .await?;
        let open = sqlx::query("SELECT id, created_at FROM llm_calls WHERE completed_at IS NULL")
            .fetch_all(&self.pool)
            .await?;
        let closed_at = now();
        for row in &open {
            let id: String = row.try_get("id")?;
            let created_at: String = row.try_get("created_at")?;
            let latency = alive
                .as_deref()
                .map_or(0, |alive| millis_between(&created_at, alive));
            sqlx::query(
                "UPDATE llm_calls SET completed_at = ?, error = ?, latency_ms = ? \
                 WHERE id = ? AND completed_at IS NULL",
            )
            .bind(&closed_at)
            .bind(LOST_REPLY)
            .bind(latency)
            .bind(&id)
            .execute(&self.pool)
            .await?;
        }
        Ok(open.len())
    }

    /// Registers this process (the rows of earlier ones are dropped: their last sign of life has
    /// served [`Store::close_lost_calls`]); its id, for [`Store::heartbeat`].
    pub async fn register_instance(&self) -> Result<String> {
        let id = new_id();
        let at = now();
        let mut tx = self.write_tx().await?;
        sqlx::query("DELETE FROM instances")
            .execute(&mut *tx)
            .await?;
        sqlx::query("INSERT INTO instances (id, started_at, alive_at) VALUES (?, ?, ?)")
            .bind(&id)
            .bind(&at)
            .bind(&at)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(id)
    }

    /// Records that instance `id` is alive now.
    pub async fn heartbeat(&self, id: &str) -> Result<()> {
        sqlx::query("UPDATE instances SET alive_at = ? WHERE id = ?")
            .bind(now())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

/// Milliseconds from `start` to `end` (stored timestamps); 0 when `end` is not later or either
/// does not parse.
fn millis_between(start: &str, end: &str) -> i64 {
    match (
        DateTime::parse_from_rfc3339(start),
        DateTime::parse_from_rfc3339(end),
    ) {
        (Ok(start), Ok(end)) => (end - start).num_milliseconds().max(0),
        _ => 0,
    }
}

/// Records this process's signs of life until the pool closes.
pub async fn beat(store: Store, id: String) {
    loop {
        tokio::time::sleep(HEARTBEAT).await;
        if store.pool.is_closed() {
            return;
        }
        if let Err(e) = store.heartbeat(&id).await {
            if store.pool.is_closed() {
                return;
            }
            tracing::warn!(error = %e, "could not record the server's heartbeat");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::millis_between;

    #[test]
    fn latency_is_the_time_between_two_stored_stamps_never_negative() {
        let start = "2026-11-24T10:00:00.250000Z";
        assert_eq!(millis_between(start, "2026-11-24T10:00:05.750000Z"), 5_500);
        assert_eq!(millis_between(start, "2026-11-24T09:00:00.000000Z"), 0);
        assert_eq!(millis_between(start, "not a time"), 0);
    }
}
