//! The usage ledger and the holds of requests running now (`usage_ledger`, `usage_holds`; both
//! backends). What is recorded, and which budgets are checked, is `usage/`'s; here are the
//! writes and the one transaction that admits a request: the spent amounts read and the hold
//! made together, under a lock on the person's row (PostgreSQL; SQLite's writer is one), so
//! two instances admitting at once cannot both take the last of a budget.
//!
//! Written once for both databases, as `people.rs` is.

use super::{Backend, Result, Store, measured};
use crate::vocabulary::{new_id, now};

/// One model call, as the ledger keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LedgerEntry {
    pub user_id: String,
    pub key_id: Option<String>,
    /// The route kind that made it: `chat`, `openai`, `title`, `search`.
    pub source: &'static str,
    pub provider: String,
    pub model: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Nano-USD; `None` when the model has no price.
    pub cost_nanos: Option<i64>,
}

/// What a budget counts, in the ledger's columns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Counted {
    Tokens,
    Nanos,
}

/// Whose spending a check sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Whose {
    User,
    Key,
}

/// One budget to check before a request is admitted.
#[derive(Clone, Debug)]
pub struct SpendCheck {
    pub whose: Whose,
    /// The person's or key's id.
    pub id: String,
    pub counted: Counted,
    /// The period's start (stored form): calls from then on count.
    pub since: String,
    pub limit: i64,
}

/// A request's hold: what it may spend before it ends, counted until then (or `expires_at`).
#[derive(Clone, Debug)]
pub struct NewHold {
    pub user_id: String,
    pub key_id: Option<String>,
    pub tokens: i64,
    pub cost_nanos: i64,
    pub expires_at: String,
}

/// What admitting a request gave.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Admission {
    /// Admitted: the hold's id.
    Held(String),
    /// Refused: the check (its index) whose budget is spent, and what is spent of it (the
    /// ledger's calls and the holds of requests running).
    Over { check: usize, spent: i64 },
}

/// How usage rows are grouped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    Day,
    Model,
    Key,
    User,
}

/// One group's sums.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UsageRow {
    /// The day (`YYYY-MM-DD`), `PROVIDER/MODEL`, key id or person id; `None` for calls made
    /// without a key (ADMIN_TOKEN), grouped by key.
    pub group: Option<String>,
    pub calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost_nanos: i64,
    /// Calls without a price (counted at 0 USD).
    pub unpriced: i64,
}

const INSERT: &str = "INSERT INTO usage_ledger (id, user_id, key_id, source, provider, model, \
                      input_tokens, output_tokens, cost_nanos, created_at) \
                      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
const DRAW: &str = "UPDATE usage_holds SET tokens = CASE WHEN tokens > $2 THEN tokens - $2 ELSE 0 END, \
                    cost_nanos = CASE WHEN cost_nanos > $3 THEN cost_nanos - $3 ELSE 0 END \
                    WHERE id = $1";
const HOLD: &str = "INSERT INTO usage_holds (id, user_id, key_id, tokens, cost_nanos, expires_at) \
                    VALUES ($1, $2, $3, $4, $5, $6)";
const RELEASE: &str = "DELETE FROM usage_holds WHERE id = $1";
const EXPIRED: &str = "DELETE FROM usage_holds WHERE user_id = $1 AND expires_at <= $2";

/// The SQL summing one check's spending: the ledger's calls since the period began (`$2`) and
/// the holds live at `$3`, in one statement. PostgreSQL's READ COMMITTED gives each statement
/// its own snapshot, and recording a call (a ledger row in, its hold drawn down) does not wait
/// for the person's lock: read in two statements, a call recorded between them was in neither
/// sum, and one more request got in (`tests/api/usage.rs`'s concurrent test saw it in CI).
fn spent_sql(check: &SpendCheck) -> String {
    let column = match check.whose {
        Whose::User => "user_id",
        Whose::Key => "key_id",
    };
    let (ledger, held) = match check.counted {
        Counted::Tokens => ("input_tokens + output_tokens", "tokens"),
        Counted::Nanos => ("COALESCE(cost_nanos, 0)", "cost_nanos"),
    };
    format!(
        "SELECT CAST(\
           COALESCE((SELECT SUM({ledger}) FROM usage_ledger \
                     WHERE {column} = $1 AND created_at >= $2), 0) + \
           COALESCE((SELECT SUM({held}) FROM usage_holds \
                     WHERE {column} = $1 AND expires_at > $3), 0) AS BIGINT)"
    )
}

fn report_sql(group: Group, one_person: bool) -> String {
    let by = match group {
        Group::Day => "substr(created_at, 1, 10)",
        Group::Model => "provider || '/' || model",
        Group::Key => "key_id",
        Group::User => "user_id",
    };
    let person = if one_person { " AND user_id = $3" } else { "" };
    format!(
        "SELECT {by} AS g, COUNT(*), CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT), \
         CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT), \
         CAST(COALESCE(SUM(cost_nanos), 0) AS BIGINT), COUNT(*) - COUNT(cost_nanos) \
         FROM usage_ledger WHERE created_at >= $1 AND created_at < $2{person} \
         GROUP BY g ORDER BY g"
    )
}

type ReportRow = (Option<String>, i64, i64, i64, i64, i64);

macro_rules! usage {
    ($db:ty, $lock:expr) => {
        use super::*;

        pub async fn record(
            tx: &mut sqlx::Transaction<'_, $db>,
            entry: &LedgerEntry,
            hold: Option<&str>,
        ) -> Result<()> {
            let (input, output) = (clamp(entry.input_tokens), clamp(entry.output_tokens));
            sqlx::query(INSERT)
                .bind(new_id())
                .bind(&entry.user_id)
                .bind(&entry.key_id)
                .bind(entry.source)
                .bind(&entry.provider)
                .bind(&entry.model)
                .bind(input)
                .bind(output)
                .bind(entry.cost_nanos)
                .bind(now())
                .execute(&mut **tx)
                .await?;
            if let Some(hold) = hold {
                sqlx::query(DRAW)
                    .bind(hold)
                    .bind(input.saturating_add(output))
                    .bind(entry.cost_nanos.unwrap_or(0))
                    .execute(&mut **tx)
                    .await?;
            }
            Ok(())
        }

        pub async fn admit(
            tx: &mut sqlx::Transaction<'_, $db>,
            checks: &[SpendCheck],
            hold: &NewHold,
        ) -> Result<Admission> {
            let at = now();
            // The person's row first, then the key's: one order, so no two admissions wait on
            // each other in a cycle.
            let lock: Option<(&str, &str)> = $lock;
            if let Some((person, key)) = lock {
                sqlx::query(person)
                    .bind(&hold.user_id)
                    .execute(&mut **tx)
                    .await?;
                if let Some(id) = &hold.key_id {
                    sqlx::query(key).bind(id).execute(&mut **tx).await?;
                }
            }
            sqlx::query(EXPIRED)
                .bind(&hold.user_id)
                .bind(&at)
                .execute(&mut **tx)
                .await?;
            for (index, check) in checks.iter().enumerate() {
                let (spent,): (i64,) = sqlx::query_as(&spent_sql(check))
                    .bind(&check.id)
                    .bind(&check.since)
                    .bind(&at)
                    .fetch_one(&mut **tx)
                    .await?;
                if spent >= check.limit {
                    return Ok(Admission::Over {
                        check: index,
                        spent,
                    });
                }
            }
            let id = new_id();
            sqlx::query(HOLD)
                .bind(&id)
                .bind(&hold.user_id)
                .bind(&hold.key_id)
                .bind(hold.tokens)
                .bind(hold.cost_nanos)
                .bind(&hold.expires_at)
                .execute(&mut **tx)
                .await?;
            Ok(Admission::Held(id))
        }

        pub async fn release<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            hold: &str,
        ) -> Result<()> {
            sqlx::query(RELEASE).bind(hold).execute(ex).await?;
            Ok(())
        }

        pub async fn report<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            group: Group,
            from: &str,
            to: &str,
            person: Option<&str>,
        ) -> Result<Vec<ReportRow>> {
            let sql = report_sql(group, person.is_some());
            let mut query = sqlx::query_as(&sql).bind(from).bind(to);
            if let Some(person) = person {
                query = query.bind(person);
            }
            Ok(query.fetch_all(ex).await?)
        }

        pub async fn team_exists<'e>(
            ex: impl sqlx::Executor<'e, Database = $db> + Copy,
        ) -> Result<bool> {
            let person: Option<(i32,)> =
                sqlx::query_as("SELECT 1 FROM users WHERE id <> 'admin' LIMIT 1")
                    .fetch_optional(ex)
                    .await?;
            if person.is_some() {
                return Ok(true);
            }
            let key: Option<(i32,)> = sqlx::query_as("SELECT 1 FROM api_keys LIMIT 1")
                .fetch_optional(ex)
                .await?;
            Ok(key.is_some())
        }
    };
}

/// The most tokens one call is recorded with: an upstream's count past it is nonsense, and
/// kept whole it would overflow the sums of every later check and report.
const MAX_CALL_TOKENS: u64 = 1_000_000_000_000;

/// A call's token count as stored.
fn clamp(tokens: u64) -> i64 {
    tokens.min(MAX_CALL_TOKENS) as i64
}

mod on_sqlite {
    usage!(sqlx::Sqlite, None);
}

mod on_postgres {
    usage!(
        sqlx::Postgres,
        Some((
            "SELECT id FROM users WHERE id = $1 FOR UPDATE",
            "SELECT id FROM api_keys WHERE id = $1 FOR UPDATE",
        ))
    );
}

impl Store {
    /// Records a model call; draws it from `hold` (its request's), when there is one.
    pub async fn record_usage(&self, entry: &LedgerEntry, hold: Option<&str>) -> Result<()> {
        measured(self.backend_name(), "record_usage", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    on_sqlite::record(&mut tx, entry, hold).await?;
                    Ok(tx.commit().await?)
                }
                Backend::Postgres(db) => {
                    let mut tx = db.tx().await?;
                    on_postgres::record(&mut tx, entry, hold).await?;
                    Ok(tx.commit().await?)
                }
            }
        })
        .await
    }

    /// Admits a request when none of `checks` is spent, holding `hold` for it.
    pub async fn admit(&self, checks: &[SpendCheck], hold: &NewHold) -> Result<Admission> {
        measured(self.backend_name(), "admit", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    let admission = on_sqlite::admit(&mut tx, checks, hold).await?;
                    tx.commit().await?;
                    Ok(admission)
                }
                Backend::Postgres(db) => {
                    let mut tx = db.tx().await?;
                    let admission = on_postgres::admit(&mut tx, checks, hold).await?;
                    tx.commit().await?;
                    Ok(admission)
                }
            }
        })
        .await
    }

    /// Ends a request's hold.
    pub async fn release_hold(&self, hold: &str) -> Result<()> {
        measured(self.backend_name(), "release_hold", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    on_sqlite::release(&mut *tx, hold).await?;
                    Ok(tx.commit().await?)
                }
                Backend::Postgres(db) => on_postgres::release(db.pool(), hold).await,
            }
        })
        .await
    }

    /// The ledger's sums from `from` to `to` (stored forms, `to` excluded), by `group`; only
    /// `person`'s calls when given.
    pub async fn usage_report(
        &self,
        group: Group,
        from: &str,
        to: &str,
        person: Option<&str>,
    ) -> Result<Vec<UsageRow>> {
        let rows = measured(self.backend_name(), "usage_report", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => on_sqlite::report(db.pool(), group, from, to, person).await,
                Backend::Postgres(db) => {
                    on_postgres::report(db.pool(), group, from, to, person).await
                }
            }
        })
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(group, calls, input_tokens, output_tokens, cost_nanos, unpriced)| UsageRow {
                    group,
                    calls,
                    input_tokens,
                    output_tokens,
                    cost_nanos,
                    unpriced,
                },
            )
            .collect())
    }

    /// Whether anyone but the built-in admin exists, or any key: until then the ledger records
    /// nothing.
    pub async fn team_exists(&self) -> Result<bool> {
        measured(self.backend_name(), "team_exists", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => on_sqlite::team_exists(db.pool()).await,
                Backend::Postgres(db) => on_postgres::team_exists(db.pool()).await,
            }
        })
        .await
    }
}
