//! Searches and search stars, on PostgreSQL.

use sqlx::{Postgres, Transaction};

use super::{Member, PgStore, next_updated_at, put, put_opt, set_membership};
use crate::store::backend::Searches;
use crate::store::read;
use crate::store::{
    NewSearch, Result, SearchDetailRecord, SearchRecord, SearchRunOutcome, normalize_query,
};
use crate::vocabulary::{new_id, now};

impl Searches for PgStore {
    /// With `reuse_by_query`, lookup and insert hold a transaction-scoped advisory lock on the
    /// normalized query: concurrent callers with a new query (on any instance) end up with one
    /// search.
    async fn create_search(
        &self,
        search: NewSearch,
        reuse_by_query: bool,
    ) -> Result<(SearchRecord, bool)> {
        let normalized = search
            .query
            .as_deref()
            .map(|q| put(&normalize_query(q)).into_owned());
        let mut tx = self.tx().await?;
        if reuse_by_query && let Some(normalized) = &normalized {
            sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))")
                .bind(normalized)
                .execute(&mut *tx)
                .await?;
            let found =
                read::postgres::search_by_query(&mut *tx, normalized, &search.owner_id).await?;
            if let Some(existing) = found {
                tx.commit().await?;
                return Ok((existing, true));
            }
        }
        let id = new_id();
        sqlx::query(
            "INSERT INTO searches (id, title, query, normalized_query, created_at, updated_at, \
             results, answer_citations, owner_id) \
             VALUES ($1, $2, $3, $4, $5, $5, '[]', '[]', $6)",
        )
        .bind(&id)
        .bind(put_opt(search.title.as_deref()))
        .bind(put_opt(search.query.as_deref()))
        .bind(&normalized)
        .bind(now())
        .bind(&search.owner_id)
        .execute(&mut *tx)
        .await?;
        let record = fetch_search(&mut tx, &id)
            .await?
            .expect("inserted in this transaction");
        tx.commit().await?;
        Ok((record, false))
    }

    async fn record_search_run(
        &self,
        id: &str,
        outcome: SearchRunOutcome,
    ) -> Result<Option<SearchDetailRecord>> {
        let mut tx = self.tx().await?;
        sqlx::query(concat!(
            "UPDATE searches SET updated_at = ",
            next_updated_at!(1),
            ", title = COALESCE($2, title), query = COALESCE($3, query), \
             normalized_query = COALESCE($4, normalized_query), request_id = $5, \
             latency_ms = $6, error = $7, results = $8, answer_text = $9, \
             answer_request_id = $10, answer_citations = $11, answer_error = $12 WHERE id = $13"
        ))
        .bind(now())
        .bind(put_opt(outcome.title.as_deref()))
        .bind(put_opt(outcome.query.as_deref()))
        .bind(
            outcome
                .query
                .as_deref()
                .map(|q| put(&normalize_query(q)).into_owned()),
        )
        .bind(put_opt(outcome.request_id.as_deref()))
        .bind(outcome.latency_ms)
        .bind(put_opt(outcome.error.as_deref()))
        .bind(serde_json::to_string(&outcome.results)?)
        .bind(put_opt(outcome.answer_text.as_deref()))
        .bind(put_opt(outcome.answer_request_id.as_deref()))
        .bind(serde_json::to_string(&outcome.answer_citations)?)
        .bind(put_opt(outcome.answer_error.as_deref()))
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let detail = read::postgres::search_detail(&mut *tx, id).await?;
        tx.commit().await?;
        Ok(detail)
    }

    async fn set_search_starred(&self, id: &str, starred: bool) -> Result<Option<SearchRecord>> {
        let mut tx = self.tx().await?;
        let exists = sqlx::query("SELECT 1 FROM searches WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Ok(None);
        }
        set_membership(&mut tx, Member::Search, id, starred).await?;
        let record = fetch_search(&mut tx, id).await?;
        tx.commit().await?;
        Ok(record)
    }

    async fn delete_search(&self, id: &str) -> Result<bool> {
        let deleted = sqlx::query("DELETE FROM searches WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(deleted.rows_affected() > 0)
    }
}

async fn fetch_search(
    tx: &mut Transaction<'_, Postgres>,
    id: &str,
) -> Result<Option<SearchRecord>> {
    read::postgres::search(&mut **tx, id).await
}
