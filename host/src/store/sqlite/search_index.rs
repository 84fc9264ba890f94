//! The message search's index, written behind. FTS5 writes a segment of its own for every
//! transaction that adds to `messages_fts`, and a persisted completion's two transactions each paid
//! one: 11 of their 31 pages, and 175 µs of its mean latency with the index's trigger dropped
//! (BENCHMARKS.md, "The search index written behind"). So a message's insert only queues its rowid
//! in `messages_fts_pending` (the triggers of the migration `message_search_behind`), and the queue
//! goes into the index as one transaction: every [`EVERY`] off the request path, and before each
//! search, which therefore finds every message committed before it began (the black-box tests
//! search right after they write), unless the index cannot be written then (`message_search.rs`).

use std::time::Duration;

use sqlx::SqlitePool;

use super::batch::{Batch, WeakWriter};
use super::{Result, SqliteStore};

/// How often the queued messages go into the index when nothing searches.
const EVERY: Duration = Duration::from_secs(1);

/// The queue's rows into the index, and the queue emptied, in one transaction: all or none.
const INDEX_PENDING: &str = "INSERT INTO messages_fts (rowid, content) \
     SELECT m.rowid, m.content FROM messages_fts_pending p JOIN messages m ON m.rowid = p.message_rowid";
const EMPTY_PENDING: &str = "DELETE FROM messages_fts_pending";

impl SqliteStore {
    /// Indexes every queued message. A write (through the writer) only when the queue holds
    /// any: the look is a read, so an idle server takes no write lock for it.
    pub(super) async fn index_pending(&self) -> Result<()> {
        let queued: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM messages_fts_pending)")
            .fetch_one(self.pool())
            .await?;
        if queued {
            let mut batch = Batch::new();
            batch.push(INDEX_PENDING).push(EMPTY_PENDING);
            self.commit(batch).await?;
        }
        Ok(())
    }
}

/// Indexes the queue every [`EVERY`] (first at once: what a stopped server left queued). Ends
/// when the store is closed, or dropped: it holds the writer weakly, and a store of its own
/// without the database's lock, so a store dropped without `close` (a test's server) still
/// gives up its lock and its writer's connection.
pub(super) async fn index_behind(pool: SqlitePool, writer: WeakWriter) {
    loop {
        // Held only for the pass, never across the wait.
        let Some(writer) = writer.upgrade() else {
            return;
        };
        let store = SqliteStore {
            pool: pool.clone(),
            writer,
            lock: Default::default(),
            // It writes the search index only, no chat.
            kept: None,
        };
        if store.is_closed() {
            return;
        }
        if let Err(e) = store.index_pending().await {
            if store.is_closed() {
                return;
            }
            tracing::warn!(error = %e, "the message search's index could not take the queued messages; a search will try again");
        }
        drop(store);
        tokio::time::sleep(EVERY).await;
    }
}

#[cfg(test)]
mod tests {
    use super::super::batch::Batch;
    use super::super::chats::{Condition, push_message};
    use crate::store::backend::Chats;
    use crate::store::sqlite::SqliteStore;
    use crate::store::{NewChat, NewMessage};
    use crate::vocabulary::Role;

    /// A store without the indexer (not `exclusive`): the queue is taken only where a test
    /// says, so what it finds is what a search indexed.
    async fn store() -> SqliteStore {
        SqliteStore::open("sqlite::memory:", std::time::Duration::from_secs(5), false)
            .await
            .unwrap()
    }

    /// Counts in one transaction.
    async fn count(tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, sql: &str) -> i64 {
        sqlx::query_scalar(sql).fetch_one(&mut **tx).await.unwrap()
    }
    const QUEUED: &str = "SELECT COUNT(*) FROM messages_fts_pending";
    const INDEXED: &str = "SELECT COUNT(*) FROM messages_fts WHERE messages_fts MATCH 'heron'";

    /// A new chat (through the writer: before a test's transaction takes the lock).
    async fn chat(store: &SqliteStore) -> String {
        store.create_chat(NewChat::owned_by("o")).await.unwrap().id
    }

    /// Appends a user message saying `words` to `chat`, inside `tx`.
    async fn say(tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>, chat: &str, words: &str) {
        let row = NewMessage {
            role: Role::User,
            content: words.into(),
            name: None,
            metadata: None,
        };
        let mut batch = Batch::new();
        push_message(&mut batch, chat, &row, Condition::Always).unwrap();
        batch.run(tx).await.unwrap();
    }

    /// Two chats saying "heron": the first's message indexed, the second's queued in the
    /// returned transaction, still open.
    async fn indexed_and_queued(store: &SqliteStore) -> sqlx::Transaction<'static, sqlx::Sqlite> {
        let (indexed, queued) = (chat(store).await, chat(store).await);
        let mut tx = store.write_tx().await.unwrap();
        say(&mut tx, &indexed, "heron").await;
        tx.commit().await.unwrap();
        store.index_pending().await.unwrap();
        let mut tx = store.write_tx().await.unwrap();
        say(&mut tx, &queued, "heron").await;
        tx
    }

    /// FTS5's integrity check: the external-content index holds what the messages say.
    async fn assert_sound(store: &SqliteStore) {
        sqlx::query("INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)")
            .execute(store.pool())
            .await
            .expect("the index matches the messages");
    }

    async fn hits(store: &SqliteStore, word: &str) -> usize {
        store
            .search_messages(&[word.to_string()], 10, None, "o")
            .await
            .unwrap()
            .unwrap()
            .len()
    }

    /// A message is queued, not indexed, when written; a search indexes the queue first, so it
    /// finds the message all the same, once.
    #[tokio::test]
    async fn a_search_finds_what_was_only_queued() {
        let store = store().await;
        let heron = chat(&store).await;
        let mut tx = store.write_tx().await.unwrap();
        say(&mut tx, &heron, "heron").await;
        assert_eq!(count(&mut tx, QUEUED).await, 1);
        assert_eq!(count(&mut tx, INDEXED).await, 0);
        tx.commit().await.unwrap();
        assert_eq!(hits(&store, "heron").await, 1);
        store.index_pending().await.unwrap();
        assert_eq!(hits(&store, "heron").await, 1);
        let mut tx = store.write_tx().await.unwrap();
        assert_eq!(count(&mut tx, QUEUED).await, 0);
    }

    /// A search whose queue cannot be indexed (here the writer is closed; a full disk, the
    /// lock held past the timeout) reads what the index holds, and the queue waits.
    #[tokio::test]
    async fn a_search_that_cannot_index_the_queue_reads_the_index() {
        let store = store().await;
        let tx = indexed_and_queued(&store).await;
        tx.commit().await.unwrap();
        store.writer.close().await;
        assert!(
            store.index_pending().await.is_err(),
            "the queue cannot be indexed"
        );
        assert_eq!(
            hits(&store, "heron").await,
            1,
            "the indexed message, as a read"
        );
        let mut tx = store.write_tx().await.unwrap();
        assert_eq!(
            count(&mut tx, QUEUED).await,
            1,
            "the queued one still queued"
        );
    }

    /// A server's store indexes the queue by itself, and its indexer never keeps the database's
    /// lock nor, once the store is dropped, its writer: a store dropped without `close` (a
    /// test's server) lets the next one open the same file, and the indexer ends.
    #[tokio::test]
    async fn a_servers_store_indexes_by_itself_and_lets_go_when_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let url = super::super::file_url(&dir);
        let open = || SqliteStore::open(&url, std::time::Duration::from_secs(5), true);
        let first = open().await.unwrap();
        let heron = chat(&first).await;
        let mut tx = first.write_tx().await.unwrap();
        say(&mut tx, &heron, "heron").await;
        tx.commit().await.unwrap();
        // The indexer's pass, awaited (at most a second after the write): it held the writer.
        tokio::time::timeout(std::time::Duration::from_secs(10), async {
            while indexed_words(&first).await == 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the indexer took the queue");
        let writer = first.writer.downgrade();
        drop(first);
        // Its pass ends just after the commit the loop saw, and the indexer with it at the
        // latest when it next wakes: nothing holds the writer then.
        tokio::time::timeout(std::time::Duration::from_secs(5), async {
            while writer.upgrade().is_some() {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the indexer let the writer go");
        let again = open().await.expect("the lock was given up");
        again.close().await;
    }

    /// Indexed rows matching "heron", read without indexing the queue.
    async fn indexed_words(store: &SqliteStore) -> i64 {
        sqlx::query_scalar(INDEXED)
            .fetch_one(store.pool())
            .await
            .unwrap()
    }

    /// A message's text changed, queued or indexed, is found by its new words only, and the
    /// index stays sound.
    #[tokio::test]
    async fn a_changed_message_is_found_by_its_new_text() {
        let store = store().await;
        let mut tx = indexed_and_queued(&store).await;
        sqlx::query("UPDATE messages SET content = 'ibis'")
            .execute(&mut *tx)
            .await
            .unwrap();
        assert_eq!(count(&mut tx, QUEUED).await, 2);
        tx.commit().await.unwrap();
        assert_eq!(hits(&store, "heron").await, 0);
        assert_eq!(hits(&store, "ibis").await, 2);
        assert_sound(&store).await;
    }

    /// Messages deleted while queued, and others once indexed, leave the index sound: the
    /// queued rows go, nothing is deleted from the index that it does not hold (FTS5's
    /// integrity check fails on an external-content index told to delete a row it never held),
    /// and an indexed message deleted is no longer found.
    #[tokio::test]
    async fn deleting_queued_or_indexed_messages_keeps_the_index_sound() {
        let store = store().await;
        let (kept, indexed, queued) = (chat(&store).await, chat(&store).await, chat(&store).await);
        let mut tx = store.write_tx().await.unwrap();
        say(&mut tx, &kept, "heron").await;
        say(&mut tx, &indexed, "ibis").await;
        tx.commit().await.unwrap();
        store.index_pending().await.unwrap();
        let mut tx = store.write_tx().await.unwrap();
        say(&mut tx, &queued, "heron").await;
        assert_eq!(count(&mut tx, QUEUED).await, 1);
        for chat in [&queued, &indexed] {
            sqlx::query("DELETE FROM chats WHERE id = ?")
                .bind(chat)
                .execute(&mut *tx)
                .await
                .unwrap();
        }
        assert_eq!(count(&mut tx, QUEUED).await, 0);
        tx.commit().await.unwrap();
        assert_eq!(hits(&store, "heron").await, 1);
        assert_eq!(hits(&store, "ibis").await, 0);
        assert_sound(&store).await;
        assert!(store.delete_chat(&kept).await.unwrap());
        assert_eq!(hits(&store, "heron").await, 0);
    }
}
