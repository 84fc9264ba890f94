//! Searches and search stars, on PostgreSQL.

use sqlx::postgres::PgRow;
use sqlx::{Postgres, Row, Transaction};

use super::{Member, PgStore, next_updated_at, put, put_opt, set_membership, text};
use crate::store::{
    NewSearch, Result, SearchDetailRecord, SearchRecord, SearchRunOutcome, json, normalize_query,
};
use crate::vocabulary::{new_id, now};

const SELECT_SEARCH: &str = "SELECT s.id, s.title, s.query, s.created_at, s.updated_at, \
     p.created_at AS starred_at, \
     (s.results <> '[]' OR COALESCE(s.answer_text, '') <> '') AS has_output \
     FROM searches s LEFT JOIN project_searches p ON p.search_id = s.id AND p.project_id = 'starred'";

const SELECT_SEARCH_DETAIL: &str = "SELECT s.id, s.title, s.query, s.created_at, s.updated_at, \
     p.created_at AS starred_at, \
     (s.results <> '[]' OR COALESCE(s.answer_text, '') <> '') AS has_output, \
     s.request_id, s.latency_ms, s.error, s.results, s.answer_text, s.answer_request_id, \
     s.answer_citations, s.answer_error \
     FROM searches s LEFT JOIN project_searches p ON p.search_id = s.id AND p.project_id = 'starred'";

pub(super) fn search_from_row(row: &PgRow) -> Result<SearchRecord> {
    Ok(SearchRecord {
        id: row.try_get("id")?,
        title: text(row, "title")?,
        query: text(row, "query")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        starred_at: row.try_get("starred_at")?,
        has_output: row.try_get("has_output")?,
    })
}

fn detail_from_row(row: &PgRow) -> Result<SearchDetailRecord> {
    Ok(SearchDetailRecord {
        search: search_from_row(row)?,
        request_id: text(row, "request_id")?,
        latency_ms: row.try_get("latency_ms")?,
        error: text(row, "error")?,
        results: json(row.try_get::<&str, _>("results")?)?,
        answer_text: text(row, "answer_text")?,
        answer_request_id: text(row, "answer_request_id")?,
        answer_citations: json(row.try_get::<&str, _>("answer_citations")?)?,
        answer_error: text(row, "answer_error")?,
    })
}

impl PgStore {
    /// With `reuse_by_query`, lookup and insert hold a transaction-scoped advisory lock on the
    /// normalized query: concurrent callers with a new query (on any instance) end up with one
    /// search.
    pub async fn create_search(
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
            let row = sqlx::query(&format!(
                "{SELECT_SEARCH} WHERE s.normalized_query = $1 \
                 ORDER BY s.updated_at DESC, s.id DESC LIMIT 1"
            ))
            .bind(normalized)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = row {
                let existing = search_from_row(&row)?;
                tx.commit().await?;
                return Ok((existing, true));
            }
        }
        let id = new_id();
        sqlx::query(
            "INSERT INTO searches (id, title, query, normalized_query, created_at, updated_at, \
             results, answer_citations) VALUES ($1, $2, $3, $4, $5, $5, '[]', '[]')",
        )
        .bind(&id)
        .bind(put_opt(search.title.as_deref()))
        .bind(put_opt(search.query.as_deref()))
        .bind(&normalized)
        .bind(now())
        .execute(&mut *tx)
        .await?;
        let record = fetch_search(&mut tx, &id)
            .await?
            .expect("inserted in this transaction");
        tx.commit().await?;
        Ok((record, false))
    }

    pub async fn list_searches(&self) -> Result<Vec<SearchRecord>> {
        let rows = sqlx::query(&format!(
            "{SELECT_SEARCH} ORDER BY s.updated_at DESC, s.id DESC"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(search_from_row).collect()
    }

    pub async fn get_search(&self, id: &str) -> Result<Option<SearchDetailRecord>> {
        let row = sqlx::query(&format!("{SELECT_SEARCH_DETAIL} WHERE s.id = $1"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(detail_from_row).transpose()
    }

    pub async fn record_search_run(
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
        let row = sqlx::query(&format!("{SELECT_SEARCH_DETAIL} WHERE s.id = $1"))
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        tx.commit().await?;
        row.as_ref().map(detail_from_row).transpose()
    }

    pub async fn set_search_starred(
        &self,
        id: &str,
        starred: bool,
    ) -> Result<Option<SearchRecord>> {
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

    pub async fn delete_search(&self, id: &str) -> Result<bool> {
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
    let row = sqlx::query(&format!("{SELECT_SEARCH} WHERE s.id = $1"))
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
    row.as_ref().map(search_from_row).transpose()
}
