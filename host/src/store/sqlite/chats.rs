//! Chats, their messages, and chat stars (membership in the reserved `starred` project).
//!
//! Transcript order is the per-chat `seq` column, assigned inside the inserting transaction, not
//! the timestamp: two messages written in the same millisecond keep the order they were sent in.

use sqlx::sqlite::{SqliteArguments, SqliteRow};
use sqlx::{Arguments, FromRow, Row, Sqlite, Transaction};

use super::batch::Batch;
use super::kept::Kept;
use super::{Member, Result, SqliteStore, set_membership};
use crate::store::backend::Chats;
use crate::store::read::{self, ChatRow, MessageRow, select_chat, select_messages};
use crate::store::{ChatPatch, ChatRecord, ChatSettings, MessageRecord, NewChat, NewMessage};
use crate::vocabulary::{new_id, now};

/// For a batch, whose placeholders are `?`.
pub(super) const SELECT_CHAT_BY_ID: &str = concat!(select_chat!(), " WHERE c.id = ?");

/// What must hold, besides the chat existing, for a batch's write to a chat to be made.
pub(super) enum Condition {
    Always,
    /// The transcript's last `seq` is this one: nothing was appended since it was read.
    LastSeq {
        chat_id: String,
        last: i64,
    },
    /// The message with this id is stored: the one before, in the same batch, was written.
    Stored(String),
    /// The call with this id has not ended: a call that failed meanwhile gets no reply.
    CallOpen(String),
}

impl Condition {
    /// The condition as a `WHERE` clause's continuation (`AND …`).
    fn sql(&self) -> &'static str {
        match self {
            Condition::Always => "",
            Condition::LastSeq { .. } => {
                " AND (SELECT COALESCE(MAX(seq), 0) FROM messages WHERE chat_id = ?) = ?"
            }
            Condition::Stored(_) => " AND EXISTS (SELECT 1 FROM messages WHERE id = ?)",
            Condition::CallOpen(_) => {
                " AND EXISTS (SELECT 1 FROM llm_calls WHERE id = ? AND completed_at IS NULL)"
            }
        }
    }

    /// Appends `statement` with this condition after its `WHERE` clause, then `tail`, and binds
    /// the condition's arguments: the statement's own must be bound before.
    pub fn push(self, batch: &mut Batch, statement: &str, tail: &str) {
        batch.push(&format!("{statement}{}{tail}", self.sql()));
        match self {
            Condition::Always => {}
            Condition::LastSeq { chat_id, last } => {
                batch.bind(chat_id).bind(last);
            }
            Condition::Stored(id) | Condition::CallOpen(id) => {
                batch.bind(id);
            }
        }
    }
}

/// Adds to `batch` the bump of a chat's `updatedAt`, `RETURNING` the new value: no row when the
/// chat does not exist or `only` does not hold.
pub(super) fn touch_chat(batch: &mut Batch, chat_id: &str, only: Condition) {
    batch.bind(now()).bind(chat_id.to_string());
    only.push(
        batch,
        concat!(
            "UPDATE chats SET updated_at = ",
            next_updated_at!(),
            " WHERE id = ?"
        ),
        " RETURNING updated_at",
    );
}

/// A chat's row, then its messages in transcript order: two reads sent as one query.
const CHAT_WITH_MESSAGES: &str = concat!(
    select_chat!(),
    " WHERE c.id = ?;\n",
    select_messages!(),
    " WHERE chat_id = ? ORDER BY seq"
);

/// The same, of the chat only when its owner is the one bound after each of its ids.
const OWNED_CHAT_WITH_MESSAGES: &str = concat!(
    select_chat!(),
    " WHERE c.id = ? AND c.owner_id = ?;\n",
    select_messages!(),
    " WHERE chat_id = ? AND EXISTS (SELECT 1 FROM chats WHERE id = ? AND owner_id = ?) ORDER BY seq"
);

/// The rows of [`CHAT_WITH_MESSAGES`] (or [`OWNED_CHAT_WITH_MESSAGES`]): the chat's comes
/// first; a chat that does not exist (or is another owner's) has no messages either.
fn chat_with_messages(rows: &[SqliteRow]) -> Result<Option<(ChatRecord, Vec<MessageRecord>)>> {
    let Some((chat, messages)) = rows.split_first() else {
        return Ok(None);
    };
    let messages = messages
        .iter()
        .map(|row| MessageRow::from_row(row)?.record())
        .collect::<Result<_>>()?;
    Ok(Some((chat_from_row(chat)?, messages)))
}

pub(super) fn chat_from_row(row: &SqliteRow) -> Result<ChatRecord> {
    ChatRow::from_row(row)?.record()
}

impl Chats for SqliteStore {
    async fn create_chat(&self, chat: NewChat) -> Result<ChatRecord> {
        let id = new_id();
        let at = now();
        let (provider, model) = match chat.provider_model {
            Some((p, m)) => (Some(p), Some(m)),
            None => (None, None),
        };
        let mut batch = Batch::new();
        batch
            .push(
                "INSERT INTO chats (id, title, created_at, updated_at, initiated_provider, initiated_model, \
                 last_used_provider, last_used_model, additional_system_prompt, enabled_tools, \
                 owner_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(id.clone())
            .bind(chat.title)
            .bind(at.clone())
            .bind(at)
            .bind(provider.clone())
            .bind(model.clone())
            .bind(provider)
            .bind(model)
            .bind(chat.additional_system_prompt)
            .bind(serde_json::to_string(&chat.enabled_tools)?)
            .bind(chat.owner_id);
        for message in &chat.messages {
            push_message(&mut batch, &id, message, Condition::Always)?;
        }
        batch.push(SELECT_CHAT_BY_ID).bind(id);
        let rows = self.commit(batch).await?;
        chat_from_row(rows.last().expect("inserted in this transaction"))
    }

    /// The chat and its transcript, in one round trip: two reads sent as one query, without a
    /// transaction. A message appended in between shows up with the chat's older `updatedAt`,
    /// which no reader can tell from a slightly earlier read.
    async fn get_chat_with_messages(
        &self,
        id: &str,
    ) -> Result<Option<(ChatRecord, Vec<MessageRecord>)>> {
        let rows = sqlx::query(CHAT_WITH_MESSAGES)
            .bind(id)
            .bind(id)
            .fetch_all(&self.pool)
            .await?;
        chat_with_messages(&rows)
    }

    /// The owner's chat's settings and its transcript: kept in the process (`kept.rs`), else
    /// read on the writer's connection ([`SqliteStore::read_on_writer`]), where the call's
    /// record follows: one round trip against two with the pool's (its lending and the ping
    /// sqlx sends when it is given back), and the pages the last write left still cached; then
    /// kept. Another owner's chat is not read at all.
    async fn chat_to_continue(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<(ChatSettings, Option<Vec<MessageRecord>>)>> {
        let kept = self.kept.as_deref();
        if let Some((settings, transcript)) = kept.and_then(|kept| kept.get(id, owner)) {
            return Ok(Some((settings, Some(transcript))));
        }
        // Before the read: a write to chats made meanwhile keeps it from being kept.
        let mark = kept.map(Kept::mark);
        let mut args = SqliteArguments::default();
        for value in [id, owner, id, id, owner] {
            args.add(value.to_string()).map_err(sqlx::Error::Encode)?;
        }
        let rows = self.read_on_writer(OWNED_CHAT_WITH_MESSAGES, args).await?;
        let Some((chat, transcript)) = chat_with_messages(&rows)? else {
            return Ok(None);
        };
        let settings = chat.settings();
        if let (Some(kept), Some(mark)) = (kept, mark) {
            kept.keep(mark, id, owner, &settings, &transcript);
        }
        Ok(Some((settings, Some(transcript))))
    }

    /// Applies a settings update and bumps `updatedAt`. `None` when the chat does not exist.
    async fn update_chat(&self, id: &str, patch: ChatPatch) -> Result<Option<ChatRecord>> {
        let (set_prompt, prompt) = match patch.additional_system_prompt {
            Some(p) => (true, p),
            None => (false, None),
        };
        let tools = patch
            .enabled_tools
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?;
        let mut batch = Batch::new();
        batch
            .push(concat!(
                "UPDATE chats SET updated_at = ",
                next_updated_at!(),
                ", title = COALESCE(?, title), \
                 additional_system_prompt = CASE WHEN ? THEN ? ELSE additional_system_prompt END, \
                 enabled_tools = COALESCE(?, enabled_tools) WHERE id = ?"
            ))
            .bind(now())
            .bind(patch.title)
            .bind(set_prompt)
            .bind(prompt)
            .bind(tools)
            .bind(id.to_string());
        batch.push(SELECT_CHAT_BY_ID).bind(id.to_string());
        let rows = self.commit_forgetting(batch, id).await?;
        rows.first().map(chat_from_row).transpose()
    }

    /// Stars or unstars; never touches `updatedAt` or the transcript. Starring twice keeps the
    /// first `starredAt`.
    async fn set_chat_starred(&self, id: &str, starred: bool) -> Result<Option<ChatRecord>> {
        let mut tx = self.write_tx().await?;
        if fetch_chat(&mut tx, id).await?.is_none() {
            return Ok(None);
        }
        set_membership(&mut tx, Member::Chat, id, starred).await?;
        let record = fetch_chat(&mut tx, id).await?;
        tx.commit().await?;
        Ok(record)
    }

    /// Deletes the chat with its messages and stars. `false` when it did not exist.
    async fn delete_chat(&self, id: &str) -> Result<bool> {
        let mut batch = Batch::new();
        batch
            .push("DELETE FROM chats WHERE id = ? RETURNING id")
            .bind(id.to_string());
        let deleted = self.commit_forgetting(batch, id).await?;
        Ok(!deleted.is_empty())
    }

    /// Appends a message and bumps the chat's `updatedAt`. `None` when the chat does not exist.
    async fn append_message(
        &self,
        chat_id: &str,
        message: NewMessage,
    ) -> Result<Option<MessageRecord>> {
        let mut batch = Batch::new();
        touch_chat(&mut batch, chat_id, Condition::Always);
        let id = push_message(&mut batch, chat_id, &message, Condition::Always)?;
        // A tool's row, in the middle of a call: the kept chat is read again after it.
        let rows = self.commit_forgetting(batch, chat_id).await?;
        // No row: the chat does not exist, and the insert inserted nothing.
        let Some(touched) = rows.first() else {
            return Ok(None);
        };
        let at: String = touched.try_get("updated_at")?;
        Ok(Some(stored_message(id, at, message)))
    }
}

pub(super) async fn fetch_chat(
    tx: &mut Transaction<'_, Sqlite>,
    id: &str,
) -> Result<Option<ChatRecord>> {
    read::sqlite::chat(&mut **tx, id).await
}

/// Adds the insert of `message` to `batch`, at the end of the chat's transcript and stamped with
/// the chat's `updated_at` as the batch has left it (after [`touch_chat`], the new one). Inserts
/// nothing when the chat does not exist or `only` does not hold. Returns the new message's id.
pub(super) fn push_message(
    batch: &mut Batch,
    chat_id: &str,
    message: &NewMessage,
    only: Condition,
) -> Result<String> {
    push_message_then(batch, chat_id, message, only, "")
}

/// [`push_message`], its statement ending in `tail` (a `RETURNING` clause).
pub(super) fn push_message_then(
    batch: &mut Batch,
    chat_id: &str,
    message: &NewMessage,
    only: Condition,
    tail: &str,
) -> Result<String> {
    let id = new_id();
    let metadata = message
        .metadata
        .as_ref()
        .map(serde_json::to_string)
        .transpose()?;
    batch
        .bind(id.clone())
        .bind(message.role.as_str())
        .bind(message.content.clone())
        .bind(message.name.clone())
        .bind(metadata)
        .bind(chat_id.to_string())
        .bind(chat_id.to_string());
    only.push(
        batch,
        "INSERT INTO messages (id, chat_id, seq, created_at, role, content, name, metadata) \
         SELECT ?, c.id, t.last + 1, c.updated_at, ?, ?, ?, ? \
         FROM chats c, (SELECT COALESCE(MAX(seq), 0) AS last FROM messages WHERE chat_id = ?) t \
         WHERE c.id = ?",
        tail,
    );
    Ok(id)
}

/// The record of a message stored by [`push_message`] at `at`.
pub(super) fn stored_message(id: String, at: String, message: NewMessage) -> MessageRecord {
    MessageRecord {
        id,
        created_at: at,
        role: message.role,
        content: message.content,
        name: message.name,
        metadata: message.metadata,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::backend::Chats;

    async fn store() -> SqliteStore {
        SqliteStore::open("sqlite::memory:", std::time::Duration::from_secs(5), true)
            .await
            .unwrap()
    }

    /// A completion's chat and transcript are read on the writer's connection, as the pool's
    /// would give them (and then kept: `kept.rs`).
    #[tokio::test]
    async fn a_chat_to_continue_is_read_on_the_writer() {
        let store = store().await;
        let chat = store
            .create_chat(NewChat::owned_by(crate::store::people::BUILTIN_ADMIN))
            .await
            .unwrap();
        store
            .append_message(
                &chat.id,
                NewMessage {
                    role: crate::vocabulary::Role::User,
                    content: "a".into(),
                    name: None,
                    metadata: None,
                },
            )
            .await
            .unwrap();
        let admin = crate::store::people::BUILTIN_ADMIN;
        let continued = store.chat_to_continue(&chat.id, admin).await.unwrap();
        let (settings, messages) = continued.unwrap();
        let messages = messages.expect("read ahead");
        assert_eq!((settings, messages.len()), (chat.settings(), 1));
        assert_eq!(messages[0].content, "a");
        let missing = store.chat_to_continue("no-such-chat", admin).await.unwrap();
        assert!(missing.is_none());
        // Another owner's chat is not found, and none of it is read.
        let others = store.chat_to_continue(&chat.id, "another").await.unwrap();
        assert!(others.is_none());
        let mut args = SqliteArguments::default();
        for value in [chat.id.as_str(), "another", &chat.id, &chat.id, "another"] {
            args.add(value.to_string()).unwrap();
        }
        let rows = store.read_on_writer(OWNED_CHAT_WITH_MESSAGES, args);
        assert!(rows.await.unwrap().is_empty());
        // Once the writer is closed the read fails (of a chat not kept), where the pool still
        // answers.
        store.kept.as_ref().unwrap().forget(&chat.id);
        store.writer.close().await;
        assert!(store.chat_to_continue(&chat.id, admin).await.is_err());
        assert!(
            store
                .get_chat_with_messages(&chat.id)
                .await
                .unwrap()
                .is_some()
        );
    }
}
