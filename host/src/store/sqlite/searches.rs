//! Searches: the query, the last run's results, answer and errors, and search stars.
//!
//! Results and citations are JSON arrays kept as the search plugin returned them: the contract
//! leaves their fields open, so the store does not pick them apart.

use sqlx::{FromRow, Sqlite, Transaction};

use super::batch::Batch;
use super::{Member, Result, SqliteStore, set_membership};
use crate::store::backend::Searches;
use crate::store::read::{self, SearchDetailRow, select_search_detail};
use crate::store::{
    NewSearch, SearchDetailRecord, SearchRecord, SearchRunOutcome, normalize_query,
};
use crate::vocabulary::{new_id, now};

impl Searches for SqliteStore {
    /// Creates a search; with `reuse_by_query`, first looks for the most recently updated search
    /// with the same normalized query and returns that instead (`true` = reused). Lookup and
    /// insert share one write transaction, so concurrent callers with a new query end up with one
    /// search, not one each.
    async fn create_search(
        &self,
        search: NewSearch,
        reuse_by_query: bool,
    ) -> Result<(SearchRecord, bool)> {
        let mut tx = self.write_tx().await?;
        if reuse_by_query && let Some(query) = &search.query {
            let found =
                read::sqlite::search_by_query(&mut *tx, &normalize_query(query), &search.owner_id)
                    .await?;
            if let Some(existing) = found {
                tx.commit().await?;
                return Ok((existing, true));
            }
        }
        let id = new_id();
        let at = now();
        sqlx::query(
            "INSERT INTO searches (id, title, query, normalized_query, created_at, updated_at, \
             results, answer_citations, owner_id) VALUES (?, ?, ?, ?, ?, ?, '[]', '[]', ?)",
        )
        .bind(&id)
        .bind(&search.title)
        .bind(&search.query)
        .bind(search.query.as_deref().map(normalize_query))
        .bind(&at)
        .bind(&at)
        .bind(&search.owner_id)
        .execute(&mut *tx)
        .await?;
        let record = fetch_search(&mut tx, &id)
            .await?
            .expect("inserted in this transaction");
        tx.commit().await?;
        Ok((record, false))
    }

    /// Replaces the search's last outcome with `outcome` and bumps `updatedAt`.
    async fn record_search_run(
        &self,
        id: &str,
        outcome: SearchRunOutcome,
    ) -> Result<Option<SearchDetailRecord>> {
        let detail = concat!(select_search_detail!(), " WHERE s.id = ?");
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
        batch.push(detail).bind(id.to_string());
        let rows = self.commit(batch).await?;
        // No row: the search does not exist.
        rows.first()
            .map(|row| SearchDetailRow::from_row(row)?.record())
            .transpose()
    }

    /// Stars or unstars; never touches `updatedAt` or the results.
    async fn set_search_starred(&self, id: &str, starred: bool) -> Result<Option<SearchRecord>> {
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
    async fn delete_search(&self, id: &str) -> Result<bool> {
        let deleted = sqlx::query("DELETE FROM searches WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(deleted.rows_affected() > 0)
    }
}

async fn fetch_search(tx: &mut Transaction<'_, Sqlite>, id: &str) -> Result<Option<SearchRecord>> {
    read::sqlite::search(&mut **tx, id).await
}
