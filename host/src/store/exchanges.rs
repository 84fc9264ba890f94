//! Exchanges kept for a client's next request (`kept_exchanges`, both backends): the server
//! tools' calls and results of an `/openai/v1` completion that ended with calls of the client's
//! own tools, stored under each of those calls' ids (`chat/kept.rs` says what an exchange
//! holds). On PostgreSQL every instance finds them. An exchange lives for its time to live
//! after it was kept or last found; an expired one is never found, and is deleted after a later
//! keep (a sweep whose failure fails nothing: the rows are only dead weight).
//!
//! Written once for both databases, as `files.rs` is.

use std::time::Duration;

use super::{Backend, Result, Store, measured};
use crate::vocabulary::now;

const EXPIRED: &str = "DELETE FROM kept_exchanges WHERE expires_at < $1";
const INSERT: &str = "INSERT INTO kept_exchanges (call_id, exchange, expires_at, owner_id) \
                      VALUES ($1, $2, $3, $4)";
/// Finds a live exchange of the owner's and extends its life.
const FIND: &str = "UPDATE kept_exchanges SET expires_at = $3 \
                    WHERE call_id = $1 AND expires_at > $2 AND owner_id = $4 RETURNING exchange";

/// A stored timestamp `after` from now.
fn from_now(after: Duration) -> String {
    let at = chrono::Utc::now() + chrono::TimeDelta::from_std(after).unwrap_or_default();
    crate::vocabulary::format_micros(at.timestamp_micros())
}

macro_rules! exchanges {
    ($db:ty) => {
        use super::*;

        pub async fn keep(
            tx: &mut sqlx::Transaction<'_, $db>,
            call_ids: &[String],
            owner: &str,
            exchange: &str,
            expires_at: &str,
        ) -> Result<()> {
            for id in call_ids {
                sqlx::query(INSERT)
                    .bind(id)
                    .bind(exchange)
                    .bind(expires_at)
                    .bind(owner)
                    .execute(&mut **tx)
                    .await?;
            }
            Ok(())
        }

        pub async fn sweep<'e>(ex: impl sqlx::Executor<'e, Database = $db>) -> Result<()> {
            sqlx::query(EXPIRED).bind(now()).execute(ex).await?;
            Ok(())
        }

        pub async fn find(
            tx: &mut sqlx::Transaction<'_, $db>,
            call_id: &str,
            owner: &str,
            expires_at: &str,
        ) -> Result<Option<String>> {
            let row: Option<(String,)> = sqlx::query_as(FIND)
                .bind(call_id)
                .bind(now())
                .bind(expires_at)
                .bind(owner)
                .fetch_optional(&mut **tx)
                .await?;
            Ok(row.map(|(exchange,)| exchange))
        }
    };
}

mod on_sqlite {
    exchanges!(sqlx::Sqlite);
}

mod on_postgres {
    exchanges!(sqlx::Postgres);
}

impl Store {
    /// Keeps `owner`'s `exchange` under each of `call_ids` (new, unguessable ids) for
    /// `kept_for`, then deletes expired ones.
    pub async fn keep_exchange(
        &self,
        call_ids: &[String],
        owner: &str,
        exchange: &str,
        kept_for: Duration,
    ) -> Result<()> {
        let expires_at = from_now(kept_for);
        measured(self.backend_name(), "keep_exchange", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    on_sqlite::keep(&mut tx, call_ids, owner, exchange, &expires_at).await?;
                    tx.commit().await?;
                }
                Backend::Postgres(db) => {
                    let mut tx = db.tx().await?;
                    on_postgres::keep(&mut tx, call_ids, owner, exchange, &expires_at).await?;
                    tx.commit().await?;
                }
            }
            Ok(())
        })
        .await?;
        let swept = measured(
            self.backend_name(),
            "sweep_exchanges",
            self.timeout,
            async {
                match &self.backend {
                    Backend::Sqlite(db) => {
                        let mut tx = db.write_tx().await?;
                        on_sqlite::sweep(&mut *tx).await?;
                        Ok(tx.commit().await?)
                    }
                    Backend::Postgres(db) => on_postgres::sweep(db.pool()).await,
                }
            },
        )
        .await;
        if let Err(e) = swept {
            tracing::warn!(error = %e, "expired kept exchanges were not deleted; a later keep will");
        }
        Ok(())
    }

    /// `owner`'s exchange kept under `call_id`, unless it expired; found, it lives `kept_for`
    /// more.
    pub async fn kept_exchange(
        &self,
        call_id: &str,
        owner: &str,
        kept_for: Duration,
    ) -> Result<Option<String>> {
        let expires_at = from_now(kept_for);
        measured(self.backend_name(), "kept_exchange", self.timeout, async {
            let found = match &self.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    let found = on_sqlite::find(&mut tx, call_id, owner, &expires_at).await?;
                    tx.commit().await?;
                    found
                }
                Backend::Postgres(db) => {
                    let mut tx = db.tx().await?;
                    let found = on_postgres::find(&mut tx, call_id, owner, &expires_at).await?;
                    tx.commit().await?;
                    found
                }
            };
            Ok(found)
        })
        .await
    }
}
