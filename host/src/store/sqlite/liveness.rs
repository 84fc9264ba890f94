//! Liveness on SQLite (the rule is `store/liveness.rs`). One process per database file, so a
//! call still open when a server starts was lost with the process before it: at start, before
//! it serves, a server closes every open call as ended at the last sign of life before it (the
//! latest `alive_at`, or the call's own start when there is none later), its latency up to then.

use sqlx::Row;

use super::{Result, SqliteStore};
use crate::store::backend::Liveness;
use crate::store::liveness::{LOST_REPLY, lost_call_end};
use crate::vocabulary::{new_id, now};

impl Liveness for SqliteStore {
    /// Closes the calls earlier processes left open (see the module doc); how many there were.
    async fn close_lost_calls(&self) -> Result<usize> {
        let alive: Option<String> = sqlx::query_scalar("SELECT MAX(alive_at) FROM instances")
            .fetch_one(&self.pool)
            .await?;
        let open = sqlx::query("SELECT id, created_at FROM llm_calls WHERE completed_at IS NULL")
            .fetch_all(&self.pool)
            .await?;
        for row in &open {
            let id: String = row.try_get("id")?;
            let created_at: String = row.try_get("created_at")?;
            let (closed_at, latency) = lost_call_end(&created_at, alive.as_deref());
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
    /// served [`SqliteStore::close_lost_calls`]); its id, for [`SqliteStore::heartbeat`].
    async fn register_instance(&self) -> Result<String> {
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
    async fn heartbeat(&self, id: &str) -> Result<()> {
        sqlx::query("UPDATE instances SET alive_at = ? WHERE id = ?")
            .bind(now())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
