//! Liveness on PostgreSQL (the rule is `store/liveness.rs`): leases. Each instance's row holds
//! `lease_until`, on the database's clock, which it renews every [`RENEW_EVERY`]; an instance
//! that does not renew within [`LEASE`] (killed, frozen, cut off) is gone, and any instance
//! closes the calls it left open. One that comes back after its lease ran out finds its row gone
//! and its calls ended: it cannot end them again (`completed_at IS NULL` guards every write).

use std::time::Duration;

use sqlx::Row;

use super::PgStore;
use crate::store::backend::Liveness;
use crate::store::liveness::{LOST_REPLY, lost_call_end};
use crate::store::{Result, StoreError};
use crate::vocabulary::now;

/// How long an instance stays alive without renewing.
pub const LEASE: Duration = Duration::from_secs(10);

/// How often an instance renews its lease (and looks for instances whose lease ran out): a lease
/// survives a few missed renewals.
pub const RENEW_EVERY: Duration = Duration::from_secs(2);

impl Liveness for PgStore {
    /// Removes the instances whose lease ran out and closes the calls open under them (or under
    /// no instance still registered); how many calls.
    async fn close_lost_calls(&self) -> Result<usize> {
        let mut tx = self.tx().await?;
        let gone = sqlx::query(
            "DELETE FROM instances WHERE lease_until < clock_timestamp() RETURNING id, alive_at",
        )
        .fetch_all(&mut *tx)
        .await?;
        let open = sqlx::query(
            "SELECT c.id, c.created_at, c.instance_id FROM llm_calls c \
             WHERE c.completed_at IS NULL AND NOT EXISTS \
             (SELECT 1 FROM instances i WHERE i.id = c.instance_id) FOR UPDATE OF c",
        )
        .fetch_all(&mut *tx)
        .await?;
        // Each gone instance's last sign of life, by id.
        let alive: std::collections::HashMap<String, String> = gone
            .iter()
            .map(|g| Ok((g.try_get("id")?, g.try_get("alive_at")?)))
            .collect::<Result<_>>()?;
        for row in &open {
            let owner: Option<String> = row.try_get("instance_id")?;
            let created_at: String = row.try_get("created_at")?;
            let last = owner.and_then(|owner| alive.get(&owner));
            let (closed_at, latency) = lost_call_end(&created_at, last.map(String::as_str));
            sqlx::query(
                "UPDATE llm_calls SET completed_at = $1, error = $2, latency_ms = $3 \
                 WHERE id = $4 AND completed_at IS NULL",
            )
            .bind(&closed_at)
            .bind(LOST_REPLY)
            .bind(latency)
            .bind(row.try_get::<String, _>("id")?)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(open.len())
    }

    /// Registers this process with a fresh lease; its id. Again after its lease ran out: its
    /// old runs and calls stay ended (another instance ended them, or will: they are not taken
    /// back by a renewed row, see `end_lost_runs`), its new ones are owned under the new lease.
    async fn register_instance(&self) -> Result<String> {
        let at = now();
        sqlx::query(
            "INSERT INTO instances (id, started_at, alive_at, lease_until) \
             VALUES ($1, $2, $2, clock_timestamp() + make_interval(secs => $3)) \
             ON CONFLICT (id) DO UPDATE SET alive_at = EXCLUDED.alive_at, \
             lease_until = EXCLUDED.lease_until",
        )
        .bind(&*self.instance)
        .bind(&at)
        .bind(LEASE.as_secs_f64())
        .execute(&self.lease_pool)
        .await?;
        Ok(self.instance.to_string())
    }

    /// Renews the lease of instance `id`, while it still holds it; an error once it lost it.
    async fn heartbeat(&self, id: &str) -> Result<()> {
        let renewed = sqlx::query(
            "UPDATE instances SET alive_at = $1, \
             lease_until = clock_timestamp() + make_interval(secs => $2) \
             WHERE id = $3 AND lease_until >= clock_timestamp()",
        )
        .bind(now())
        .bind(LEASE.as_secs_f64())
        .bind(id)
        .execute(&self.lease_pool)
        .await?;
        if renewed.rows_affected() == 0 {
            return Err(StoreError::LeaseLost);
        }
        Ok(())
    }
}

impl PgStore {
    /// Deletes instance `id`'s row: it has stopped, leaving nothing open.
    pub async fn leave(&self, id: &str) -> Result<()> {
        sqlx::query("DELETE FROM instances WHERE id = $1")
            .bind(id)
            .execute(&self.lease_pool)
            .await?;
        Ok(())
    }
}
