//! Searches: the query, the last run's results, answer and errors, and search stars.
//!
//! Results and citations are JSON arrays kept as the search plugin returned them: the contract
//! leaves their fields open, so the store does not pick them apart.

use sqlx::sqlite::SqliteRow;
use sqlx::{Row, Sqlite, Transaction};

use super::batch::Batch;
use super::{Member, Result, SqliteStore, json, set_membership};
use crate::store::{
    NewSearch, SearchDetailRecord, SearchRecord, SearchRunOutcome, normalize_query,
};
use crate::vocabulary::{new_id, now};

pub(super) const SELECT_SEARCH: &str = "SELECT s.id, s.title, s.query, s.created_at, s.updated_at, \
     p.created_at AS starred_at, \
     (s.results <> '[]' OR COALESCE(s.answer_text, '') <> '') AS has_output \
     FROM searches s LEFT JOIN project_searches p ON p.search_id = s.id AND p.project_id = 'starred'";

const SELECT_SEARCH_DETAIL: &str = "SELECT s.id, s.title, s.query, s.created_at, s.updated_at, \
     p.created_at AS starred_at, \
     (s.results <> '[]' OR COALESCE(s.answer_text, '') <> '') AS has_output, \
     s.request_id, s.latency_ms, s.error, s.results, s.answer_text, s.answer_request_id, \
     s.answer_citations, s.answer_error \
     FROM searches s LEFT JOIN project_searches p ON p.search_id = s.id AND p.project_id = 'starred'";

pub(super) fn search_from_row(row: &SqliteRow) -> Result<SearchRecord> {
    Ok(SearchRecord {
        id: row.try_get("id")?,
        title: row.try_get("title")?,
        query: row.try_get("query")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        starred_at: row.try_get("starred_at")?,
        has_output: row.try_get("has_output")?,
    })
}

fn detail_from_row(row: &SqliteRow) -> Result<SearchDetailRecord> {
    Ok(SearchDetailRecord {
        search: search_from_row(row)?,
        request_id: row.try_get("request_id")?,
        latency_ms: row.try_get("latency_ms")?,
        error: row.try_get("error")?,
        results: json(row.try_get::<&str, _>("results")?)?,
        answer_text: row.try_get("answer_text")?,
        answer_request_id: row.try_get("answer_request_id")?,
        answer_citations: json(row.try_get::<&str, _>("answer_citations")?)?,
        answer_error: row.try_get("answer_error")?,
    })
}

impl SqliteStore {
    /// Creates a search; with `reuse_by_query`, first looks for the most recently updated search
    /// with the same normalized query and returns that instead (`true` = reused). Lookup and
    /// insert share one write transaction, so concurrent callers with a new query end up with one
    /// search, not one each.
    pub async fn create_search(
        &self,
        search: NewSearch,
        reuse_by_query: bool,
    ) -> Result<(SearchRecord, bool)> {
        let mut tx = self.write_tx().await?;
        if reuse_by_query && let Some(query) = &search.query {
            let row = sqlx::query(&format!(
                "{SELECT_SEARCH} WHERE s.normalized_query = ? ORDER BY s.updated_at DESC, s.id DESC LIMIT 1"
            ))
            .bind(normalize_query(query))
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(row) = row {
                let existing = search_from_row(&row)?;
                tx.commit().await?;
                return Ok((existing, true));
            }
        }
        let id = new_id();
        let at = now();
        sqlx::query(
            "INSERT INTO searches (id, title, query, normalized_query, created_at, updated_at, results, answer_citations) \
             VALUES (?, ?, ?, ?, ?, ?, '[]', '[]')",
        )
        .bind(&id)
        .bind(&search.title)
        .bind(&search.query)
        .bind(search.query.as_deref().map(normalize_query))
        .bind(&at)
        .bind(&at)
        .execute(&mut *tx)
        .await?;
        let record = fetch_search(&mut tx, &id)
            .await?
            .expect("inserted in this transaction");
        tx.commit().await?;
        Ok((record, false))
    }

    /// All searches, most recently updated first.
    pub async fn list_searches(&self) -> Result<Vec<SearchRecord>> {
        let rows = sqlx::query(&format!(
            "{SELECT_SEARCH} ORDER BY s.updated_at DESC, s.id DESC"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(search_from_row).collect()
    }

    pub async fn get_search(&self, id: &str) -> Result<Option<SearchDetailRecord>> {
        let row = sqlx::query(&format!("{SELECT_SEARCH_DETAIL} WHERE s.id = ?"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(detail_from_row).transpose()
    }

    /// Replaces the search's last outcome with `outcome` and bumps `updatedAt`.
    pub async fn record_search_run(
        &self,
        id: &str,
        outcome: SearchRunOutcome,
    ) -> Result<Option<SearchDetailRecord>> {
        let detail = format!("{SELECT_SEARCH_DETAIL} WHERE s.id = ?");
        let mut batch = Batch::new();
        batch
            .push(concat!(
                "UPDATE searches SET updated_at = ",
                next_updated_at!(),
                ", title = COALESCE(?, title), query = COALESCE(?, query), \
                 normalized_query = COALESCE(?, normalized_query), request_id = ?, latency_ms = ?, \
                 error = ?, results = ?, answer_text = ?, answer_request_id = ?, \
                 answer_citations = ?, answer_error = ? WHERE id = ?"
            ))
            .bind(now())
            .bind(outcome.title)
            .bind(outcome.query.clone())
            .bind(outcome.query.as_deref().map(normalize_query))
            .bind(outcome.request_id)
            .bind(outcome.latency_ms)
            .bind(outcome.error)
            .bind(serde_json::to_string(&outcome.results)?)
            .bind(outcome.answer_text)
            .bind(outcome.answer_request_id)
            .bind(serde_json::to_string(&outcome.answer_citations)?)
            .bind(outcome.answer_error)
            .bind(id.to_string());
        batch.push(&detail).bind(id.to_string());
        let rows = self.commit(batch).await?;
        // No row: the search does not exist.
        rows.first().map(detail_from_row).transpose()
    }

    /// Stars or unstars; never touches `updatedAt` or the results.
    pub async fn set_search_starred(
        &self,
        id: &str,
        starred: bool,
    ) -> Result<Option<SearchRecord>> {
        let mut tx = self.write_tx().await?;
        if fetch_search(&mut tx, id).await?.is_none() {
            return Ok(None);
        }
        set_membership(&mut tx, Member::Search, id, starred).await?;
        let record = fetch_search(&mut tx, id).await?;
        tx.commit().await?;
        Ok(record)
    }

    /// `false` when the search did not exist.
    pub async fn delete_search(&self, id: &str) -> Result<bool> {
        let deleted = sqlx::query("DELETE FROM searches WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(deleted.rows_affected() > 0)
    }
}

async fn fetch_search(tx: &mut Transaction<'_, Sqlite>, id: &str) -> Result<Option<SearchRecord>> {
    let row = sqlx::query(&format!("{SELECT_SEARCH} WHERE s.id = ?"))
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
    row.as_ref().map(search_from_row).transpose()
}
