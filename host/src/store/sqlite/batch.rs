//! Several statements sent to the database as one query.
//!
//! sqlx gives each SQLite connection a worker thread of its own, and every query is a round trip
//! to it: a channel send, a thread wake-up, and a wake-up back. On the 2-core machine that hop
//! cost more than the statements themselves (BENCHMARKS.md: recording a completion's start took
//! about half a millisecond in eight hops). sqlx runs every statement of a query string in turn
//! on that thread, binding the arguments across them in order, so a batch is one hop whatever its
//! length, and [`SqliteStore::commit`] makes it a transaction in that same hop.

use std::sync::Arc;

use sqlx::sqlite::{SqliteArguments, SqliteConnectOptions, SqliteConnection, SqliteRow};
use sqlx::{Arguments, ConnectOptions, Connection, Encode, Sqlite, Transaction, Type};

use super::{Result, SqliteStore, StoreError};

/// Statements and their arguments. Arguments are owned (`'static`): sqlx copies borrowed ones
/// for its worker thread anyway, and [`SqliteStore::commit`] hands the batch to a task of its own.
#[derive(Default)]
pub(super) struct Batch {
    sql: String,
    args: SqliteArguments<'static>,
    /// The first argument that could not be encoded; reported when the batch runs.
    refused: Option<sqlx::error::BoxDynError>,
}

impl Batch {
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends a statement. The batch's `?` placeholders, across all its statements, take the
    /// [`Batch::bind`] values in order, whether they were bound before or after the push.
    pub fn push(&mut self, statement: &str) -> &mut Self {
        self.sql.push_str(statement);
        self.sql.push_str(";\n");
        self
    }

    pub fn bind<T>(&mut self, value: T) -> &mut Self
    where
        T: Encode<'static, Sqlite> + Type<Sqlite> + 'static,
    {
        if let Err(e) = self.args.add(value) {
            self.refused.get_or_insert(e);
        }
        self
    }

    fn into_parts(self) -> Result<(String, SqliteArguments<'static>)> {
        match self.refused {
            Some(e) => Err(sqlx::Error::Encode(e).into()),
            None => Ok((self.sql, self.args)),
        }
    }

    /// Runs the statements in order inside `tx` and returns the rows they produced, in order
    /// (`SELECT`s and `RETURNING` clauses). A statement that fails ends the batch there.
    pub async fn run(self, tx: &mut Transaction<'_, Sqlite>) -> Result<Vec<SqliteRow>> {
        let (sql, args) = self.into_parts()?;
        Ok(sqlx::query_with(&sql, args).fetch_all(&mut **tx).await?)
    }
}

/// The connection [`SqliteStore::commit`] writes through: one, outside the pool. SQLite lets one
/// writer in at a time, so more would only queue on its lock; and a pooled connection costs a
/// round trip more each time (sqlx pings every connection given back to its pool), which
/// measured as a tenth of a persisted completion's added latency.
#[derive(Clone, Debug)]
pub(super) struct Writer {
    /// Behind an `Arc`: the options are 320 bytes, every clone of the store would carry them,
    /// and each live run holds several (the app state of its work and of its stop path, its
    /// chat log).
    options: Arc<SqliteConnectOptions>,
    /// A tokio mutex, not a std one: it is held across the write's round trip.
    slot: Arc<tokio::sync::Mutex<Slot>>,
}

/// A [`Writer`] that is gone once every store holding it is dropped.
pub(super) struct WeakWriter {
    options: std::sync::Weak<SqliteConnectOptions>,
    slot: std::sync::Weak<tokio::sync::Mutex<Slot>>,
}

impl WeakWriter {
    pub fn upgrade(&self) -> Option<Writer> {
        Some(Writer {
            options: self.options.upgrade()?,
            slot: self.slot.upgrade()?,
        })
    }
}

#[derive(Debug, Default)]
struct Slot {
    /// `None` once a connection was given up (the next write opens another) or closed.
    conn: Option<SqliteConnection>,
    closed: bool,
}

impl Writer {
    pub async fn open(options: SqliteConnectOptions) -> sqlx::Result<Self> {
        let conn = options.connect().await?;
        let options = Arc::new(options);
        Ok(Self {
            options,
            slot: Arc::new(tokio::sync::Mutex::new(Slot {
                conn: Some(conn),
                closed: false,
            })),
        })
    }

    /// A handle that does not keep the writer open: a task that outlives no store.
    pub fn downgrade(&self) -> WeakWriter {
        WeakWriter {
            options: Arc::downgrade(&self.options),
            slot: Arc::downgrade(&self.slot),
        }
    }

    /// Waits for a write in progress, then closes the connection; later writes fail.
    pub async fn close(&self) {
        let mut slot = self.slot.lock().await;
        slot.closed = true;
        if let Some(conn) = slot.conn.take() {
            let _ = conn.close().await;
        }
    }
}

impl SqliteStore {
    /// Runs `batch` as one write transaction in one round trip: `BEGIN IMMEDIATE`, the
    /// statements, `COMMIT`, sent as one query. For writes that need no answer from the database
    /// in the middle: a condition goes into the statements themselves (`WHERE EXISTS …`), and
    /// their `RETURNING` rows tell the caller what happened.
    ///
    /// sqlx's `Transaction` cannot be used here (its `BEGIN` and `COMMIT` are hops of their
    /// own), so this does what it would: a batch that fails halfway is rolled back before the
    /// next write. And it runs in a task of its own, because a caller dropped mid-batch would
    /// otherwise stop sqlx's worker between two statements and leave the transaction open,
    /// holding SQLite's write lock.
    pub(super) async fn commit(&self, batch: Batch) -> Result<Vec<SqliteRow>> {
        let (sql, args) = batch.into_parts()?;
        self.on_writer(format!("BEGIN IMMEDIATE;\n{sql}COMMIT;"), args, true, None)
            .await
    }

    /// [`SqliteStore::commit`] of a write that changes chat `chat_id` otherwise than a call's
    /// rows do: the kept chat is forgotten once the write is made or failed (`kept.rs`), in
    /// the writer's task, so a caller dropped meanwhile cannot leave it kept.
    pub(super) async fn commit_forgetting(
        &self,
        batch: Batch,
        chat_id: &str,
    ) -> Result<Vec<SqliteRow>> {
        let (sql, args) = batch.into_parts()?;
        let sql = format!("BEGIN IMMEDIATE;\n{sql}COMMIT;");
        self.on_writer(sql, args, true, Some(chat_id.to_string()))
            .await
    }

    /// Runs a read on the writer's connection, between its writes, in one round trip. For the
    /// read a write follows (a completion's chat and transcript): that connection's page cache
    /// still holds the pages its last write left, where any other connection's was dropped by
    /// that write (SQLite empties a connection's cache whenever another has written since its
    /// last read), and no pool's connection is lent and given back (sqlx pings every connection
    /// given back: a round trip more). Writes wait for it, so it is not for a large read that
    /// no write follows.
    pub(super) async fn read_on_writer(
        &self,
        sql: &'static str,
        args: SqliteArguments<'static>,
    ) -> Result<Vec<SqliteRow>> {
        self.on_writer(sql.to_string(), args, false, None).await
    }

    /// Runs `sql` on the writer's connection, in a task of its own (see [`SqliteStore::commit`]:
    /// a dropped caller must not stop sqlx's worker mid-query); a `transaction` that fails is
    /// rolled back. Then the kept chat `forget` names is forgotten, whatever the outcome.
    async fn on_writer(
        &self,
        sql: String,
        args: SqliteArguments<'static>,
        transaction: bool,
        forget: Option<String>,
    ) -> Result<Vec<SqliteRow>> {
        let writer = self.writer.clone();
        let kept = forget.and_then(|id| Some((self.kept.clone()?, id)));
        let task = tokio::spawn(async move {
            let result = write(&writer, sql, args, transaction).await;
            if let Some((kept, id)) = kept {
                kept.forget(&id);
            }
            result
        });
        match task.await {
            Ok(result) => Ok(result?),
            Err(_) => Err(StoreError::Sql(sqlx::Error::WorkerCrashed)),
        }
    }
}

/// [`SqliteStore::on_writer`]'s work, in its task.
async fn write(
    writer: &Writer,
    sql: String,
    args: SqliteArguments<'static>,
    transaction: bool,
) -> sqlx::Result<Vec<SqliteRow>> {
    let mut slot = writer.slot.lock().await;
    if slot.closed {
        return Err(sqlx::Error::PoolClosed);
    }
    let conn = match &mut slot.conn {
        Some(conn) => conn,
        none => none.insert(writer.options.connect().await?),
    };
    let result = sqlx::query_with(&sql, args).fetch_all(&mut *conn).await;
    // The statements after the failing one did not run, `COMMIT` among them. When the rollback
    // fails too (`BEGIN` itself failed, or the connection is broken), the connection is given
    // up.
    if transaction && result.is_err() && sqlx::query("ROLLBACK").execute(&mut *conn).await.is_err()
    {
        slot.conn = None;
    }
    result
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::store::backend::{Calls, Chats};
    use crate::store::sqlite::SqliteStore;
    use crate::store::{MessageRecord, NewCall, NewChat, NewMessage};
    use crate::vocabulary::Role;

    pub(in crate::store::sqlite) fn user(content: &str) -> NewMessage {
        NewMessage {
            role: Role::User,
            content: content.into(),
            name: None,
            metadata: None,
        }
    }

    pub(in crate::store::sqlite) fn call(id: &str, chat_id: &str) -> NewCall {
        NewCall {
            id: id.into(),
            chat_id: Some(chat_id.into()),
            provider: "p".into(),
            model: "m".into(),
        }
    }

    /// The contents of a chat's messages, in order.
    async fn transcript(store: &SqliteStore, chat_id: &str) -> Vec<String> {
        let (_, messages) = store
            .get_chat_with_messages(chat_id)
            .await
            .unwrap()
            .unwrap();
        messages.into_iter().map(|m| m.content).collect()
    }

    async fn store() -> SqliteStore {
        SqliteStore::open("sqlite::memory:", std::time::Duration::from_secs(5), true)
            .await
            .unwrap()
    }

    /// What [`next_updated_at!`] makes of a stored stamp, given the `now` it is bound to.
    async fn next(store: &SqliteStore, stored: &str, now: &str) -> String {
        let mut tx = store.write_tx().await.unwrap();
        let mut batch = Batch::new();
        batch
            .push(concat!(
                "SELECT ",
                next_updated_at!(),
                " AS next FROM (SELECT ? AS updated_at)"
            ))
            .bind(now.to_string())
            .bind(stored.to_string());
        let rows = batch.run(&mut tx).await.unwrap();
        sqlx::Row::get(&rows[0], "next")
    }

    #[tokio::test]
    async fn next_updated_at_is_now_or_the_next_millisecond() {
        let store = store().await;
        let cases = [
            // (stored, now, next, why)
            (
                "2026-11-22T10:00:00.123456Z",
                "2026-11-22T10:00:00.200001Z",
                "2026-11-22T10:00:00.200001Z",
                "the clock has moved on: now",
            ),
            (
                "2026-11-22T10:00:00.123456Z",
                "2026-11-22T10:00:00.123999Z",
                "2026-11-22T10:00:00.124000Z",
                "the same millisecond: the next one",
            ),
            (
                "2026-11-22T10:00:00.123456Z",
                "2026-11-22T09:59:58.000000Z",
                "2026-11-22T10:00:00.124000Z",
                "a stored stamp ahead of the clock: the millisecond after it",
            ),
            (
                "2026-12-31T23:59:59.999999Z",
                "2026-11-22T09:59:58.000000Z",
                "2027-01-01T00:00:00.000000Z",
                "carries into the seconds, the day and the year",
            ),
            (
                "2026-11-22T10:00:00.123Z",
                "2026-11-22T09:59:58.000000Z",
                "2026-11-22T10:00:00.124000Z",
                "a stamp with milliseconds only is read the same way",
            ),
        ];
        for (stored, now, expected, why) in cases {
            assert_eq!(next(&store, stored, now).await, expected, "{why}");
        }
    }

    #[tokio::test]
    async fn a_batch_binds_its_arguments_across_statements_in_order() {
        let store = store().await;
        let chat = store
            .create_chat(NewChat::owned_by(crate::store::people::BUILTIN_ADMIN))
            .await
            .unwrap();
        // One batch: the chat's update, three inserts and the call's insert.
        let begun = store
            .begin_call(call("call-1", &chat.id), None, |_| {
                vec![user("a"), user("b"), user("c")]
            })
            .await
            .unwrap();
        assert!(begun);
        let (after, messages) = store
            .get_chat_with_messages(&chat.id)
            .await
            .unwrap()
            .unwrap();
        let contents: Vec<&str> = messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(contents, ["a", "b", "c"]);
        assert!(messages.iter().all(|m| m.created_at == after.updated_at));
        assert!(
            crate::vocabulary::to_millis(&after.updated_at)
                > crate::vocabulary::to_millis(&chat.updated_at)
        );
        assert_eq!(after.last_used_model.as_deref(), Some("m"));
        assert_eq!(
            crate::store::read::sqlite::call(store.pool(), "call-1")
                .await
                .unwrap()
                .unwrap()
                .model,
            "m"
        );
    }

    #[tokio::test]
    async fn a_batch_for_a_missing_chat_keeps_nothing() {
        let store = store().await;
        let begun = store
            .begin_call(call("call-2", "no-such-chat"), Some(Vec::new()), |_| {
                vec![user("lost")]
            })
            .await
            .unwrap();
        assert!(!begun);
        // The call's insert is conditional too: a foreign key failure would have failed the
        // whole batch.
        assert!(
            crate::store::read::sqlite::call(store.pool(), "call-2")
                .await
                .unwrap()
                .is_none()
        );
    }

    /// The history a client sends, stored without the turns the transcript already has.
    fn new_turns<'a>(history: &'a [&'a str]) -> impl Fn(&[MessageRecord]) -> Vec<NewMessage> + 'a {
        move |stored| {
            history
                .iter()
                .filter(|turn| !stored.iter().any(|m| m.content == **turn))
                .map(|turn| user(turn))
                .collect()
        }
    }

    /// Two workers: the test blocks one while the other serves a concurrent write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_transcript_that_grew_since_it_was_read_is_read_again() {
        let store = store().await;
        let chat = store
            .create_chat(NewChat::owned_by(crate::store::people::BUILTIN_ADMIN))
            .await
            .unwrap();
        let history = ["x", "y"];
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let runtime = tokio::runtime::Handle::current();
        let new_rows = |stored: &[MessageRecord]| {
            if asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst) == 0 {
                // Between this call's read and its write, another request stores "z".
                let (store, chat_id, runtime) = (store.clone(), chat.id.clone(), runtime.clone());
                let other = std::thread::spawn(move || {
                    runtime.block_on(store.append_message(&chat_id, user("z")))
                });
                assert!(other.join().unwrap().unwrap().is_some());
            }
            new_turns(&history)(stored)
        };
        let begun = store.begin_call(call("call-3", &chat.id), None, new_rows);
        assert!(begun.await.unwrap());
        assert_eq!(asked.into_inner(), 2, "the rows were picked again");
        let contents = transcript(&store, &chat.id).await;
        // None of the first write landed (not even "y", whose own position was free after
        // "z"): all of this call's rows come after the other request's, in order, once.
        assert_eq!(contents, ["z", "x", "y"]);
        assert!(
            crate::store::read::sqlite::call(store.pool(), "call-3")
                .await
                .unwrap()
                .is_some()
        );
    }

    /// The transcript the request's check read is used as it is, unless it grew since.
    #[tokio::test]
    async fn a_transcript_read_before_is_used_unless_it_grew() {
        let store = store().await;
        let chat = store
            .create_chat(NewChat::owned_by(crate::store::people::BUILTIN_ADMIN))
            .await
            .unwrap();
        let read = |chat_id: String| {
            let store = store.clone();
            async move {
                store
                    .get_chat_with_messages(&chat_id)
                    .await
                    .unwrap()
                    .unwrap()
                    .1
            }
        };
        let first = read(chat.id.clone()).await;
        let asked = std::sync::atomic::AtomicUsize::new(0);
        let new_rows = |history: &'static [&'static str]| {
            let asked = &asked;
            move |stored: &[MessageRecord]| {
                asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                new_turns(history)(stored)
            }
        };
        let begun = store.begin_call(
            call("call-5", &chat.id),
            Some(first.clone()),
            new_rows(&["a"]),
        );
        assert!(begun.await.unwrap());
        assert_eq!(asked.swap(0, std::sync::atomic::Ordering::SeqCst), 1);
        // Read before "a" was stored: stale, so the rows are picked again from the transcript
        // as it is under the write lock, and "a" is not stored twice.
        let begun = store.begin_call(call("call-6", &chat.id), Some(first), new_rows(&["a", "b"]));
        assert!(begun.await.unwrap());
        assert_eq!(asked.swap(0, std::sync::atomic::Ordering::SeqCst), 2);
        assert_eq!(transcript(&store, &chat.id).await, ["a", "b"]);
        // Read after: picked from as it is, in the one write.
        let current = read(chat.id.clone()).await;
        let begun = store.begin_call(
            call("call-7", &chat.id),
            Some(current),
            new_rows(&["a", "b", "c"]),
        );
        assert!(begun.await.unwrap());
        assert_eq!(asked.into_inner(), 1);
        assert_eq!(transcript(&store, &chat.id).await, ["a", "b", "c"]);
    }

    #[tokio::test]
    async fn a_call_that_failed_meanwhile_keeps_its_outcome_and_gets_no_reply() {
        let store = store().await;
        let chat = store
            .create_chat(NewChat::owned_by(crate::store::people::BUILTIN_ADMIN))
            .await
            .unwrap();
        assert!(
            store
                .begin_call(call("call-4", &chat.id), None, |_| vec![user("q")])
                .await
                .unwrap()
        );
        // A shutdown recorded the run as stopped; then its success reaches the writer.
        let reply = NewMessage {
            role: Role::Assistant,
            ..user("late reply")
        };
        store
            .fail_call("call-4", "shutdown", None, 5)
            .await
            .unwrap();
        store
            .finish_call("call-4", Some(&chat.id), Some(reply), None, 9, None)
            .await
            .unwrap();
        let contents = transcript(&store, &chat.id).await;
        assert_eq!(contents, ["q"]);
        let record = crate::store::read::sqlite::call(store.pool(), "call-4")
            .await
            .unwrap()
            .unwrap();
        assert_eq!(record.error.as_deref(), Some("shutdown"));
        assert_eq!(record.latency_ms, Some(5));
    }

    /// A write whose caller is dropped once it has begun (here waiting for the writer) is made
    /// all the same, whole, and its kept chat forgotten: it is finished in a task of its own.
    #[tokio::test]
    async fn a_write_whose_caller_is_dropped_is_still_made() {
        let (store, admin) = (store().await, crate::store::people::BUILTIN_ADMIN);
        let chat = store.create_chat(NewChat::owned_by(admin)).await.unwrap();
        store.chat_to_continue(&chat.id, admin).await.unwrap();
        assert!(store.kept.as_ref().unwrap().get(&chat.id, admin).is_some());
        let busy = store.writer.slot.lock().await;
        let mut batch = Batch::new();
        for set in ["title = 'first'", "additional_system_prompt = 'second'"] {
            let statement = format!("UPDATE chats SET {set} WHERE id = ?");
            batch.push(&statement).bind(chat.id.clone());
        }
        let mut caller = Box::pin(store.commit_forgetting(batch, &chat.id));
        assert!(futures::poll!(caller.as_mut()).is_pending());
        // The write's task runs, and waits for the writer.
        tokio::task::yield_now().await;
        drop(caller);
        drop(busy);
        // The writer's lock serves in turn: a write queued after it is made after it (this one
        // forgets no chat).
        let mut next = Batch::new();
        next.push("SELECT 1");
        store.commit(next).await.unwrap();
        let after = crate::store::read::sqlite::chat(store.pool(), &chat.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(after.title.as_deref(), Some("first"));
        assert_eq!(after.additional_system_prompt.as_deref(), Some("second"));
        assert!(store.kept.as_ref().unwrap().get(&chat.id, admin).is_none());
    }

    #[tokio::test]
    async fn a_failing_statement_rolls_the_whole_batch_back() {
        let store = store().await;
        let chat = store
            .create_chat(NewChat::owned_by(crate::store::people::BUILTIN_ADMIN))
            .await
            .unwrap();
        let mut batch = Batch::new();
        batch
            .push("UPDATE chats SET title = ? WHERE id = ?")
            .bind("changed")
            .bind(chat.id.clone());
        // Fails: `role` may not be NULL.
        batch
            .push("INSERT INTO messages (id, chat_id, seq, created_at, role, content) VALUES (?, ?, 1, ?, NULL, '')")
            .bind("m1")
            .bind(chat.id.clone())
            .bind("2026-11-22T10:00:00.000000Z");
        assert!(store.commit(batch).await.is_err());
        let after = crate::store::read::sqlite::chat(store.pool(), &chat.id)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(after.title, None);
        // The write lock was released: the next write does not wait out the busy timeout.
        let written = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            store.append_message(&chat.id, user("after")),
        );
        assert!(written.await.unwrap().unwrap().is_some());
        // Nor does a write through another connection.
        let starred = tokio::time::timeout(
            std::time::Duration::from_secs(2),
            store.set_chat_starred(&chat.id, true),
        );
        assert!(starred.await.unwrap().unwrap().is_some());
    }

    #[tokio::test]
    async fn a_writer_whose_rollback_fails_gives_up_its_connection_and_opens_another() {
        use std::str::FromStr;
        let dir = tempfile::tempdir().unwrap();
        let url = super::super::file_url(&dir);
        let store = SqliteStore::open(&url, std::time::Duration::from_secs(5), true)
            .await
            .unwrap();
        // The write lock, held by another connection; the writer's connection swapped for one
        // that does not wait for it, so its `BEGIN IMMEDIATE` fails at once, and then its
        // `ROLLBACK` (there is no transaction to roll back).
        let options = SqliteConnectOptions::from_str(&url).unwrap();
        let mut holder = options.connect().await.unwrap();
        sqlx::query("BEGIN IMMEDIATE")
            .execute(&mut holder)
            .await
            .unwrap();
        let impatient = options
            .clone()
            .busy_timeout(std::time::Duration::ZERO)
            .connect()
            .await
            .unwrap();
        store.writer.slot.lock().await.conn = Some(impatient);

        assert!(
            store
                .create_chat(NewChat::owned_by(crate::store::people::BUILTIN_ADMIN))
                .await
                .is_err()
        );
        assert!(
            store.writer.slot.lock().await.conn.is_none(),
            "the connection was given up"
        );
        sqlx::query("ROLLBACK").execute(&mut holder).await.unwrap();
        // The next write opens a connection of its own, with the store's options.
        let chat = store
            .create_chat(NewChat::owned_by(crate::store::people::BUILTIN_ADMIN))
            .await
            .unwrap();
        assert!(store.writer.slot.lock().await.conn.is_some());
        assert_eq!(
            crate::store::read::sqlite::chat(store.pool(), &chat.id)
                .await
                .unwrap()
                .unwrap()
                .id,
            chat.id
        );
        assert_eq!(
            crate::store::read::sqlite::chats(store.pool(), crate::store::people::BUILTIN_ADMIN)
                .await
                .unwrap()
                .len(),
            1
        );
    }
}
