//! Chats, their messages, and chat stars, on PostgreSQL.
//!
//! Transcript order is the per-chat `seq` column. Every write that appends to a transcript
//! first updates the chat's row (bumping `updated_at`), which locks it until commit: the next
//! `seq` is read by a later statement, after any other appender committed.

use sqlx::{Postgres, Transaction};

use super::{Member, PgStore, next_updated_at, put, put_opt, set_membership};
use crate::store::backend::Chats;
use crate::store::read;
use crate::store::{
    ChatPatch, ChatRecord, ChatSettings, MessageRecord, NewChat, NewMessage, Result,
};
use crate::vocabulary::{new_id, now};

impl Chats for PgStore {
    async fn create_chat(&self, chat: NewChat) -> Result<ChatRecord> {
        let id = new_id();
        let at = now();
        let (provider, model) = match chat.provider_model {
            Some((p, m)) => (Some(p), Some(m)),
            None => (None, None),
        };
        let mut tx = self.tx().await?;
        sqlx::query(
            "INSERT INTO chats (id, title, created_at, updated_at, initiated_provider, \
             initiated_model, last_used_provider, last_used_model, additional_system_prompt, \
             enabled_tools, owner_id) VALUES ($1, $2, $3, $3, $4, $5, $4, $5, $6, $7, $8)",
        )
        .bind(&id)
        .bind(put_opt(chat.title.as_deref()))
        .bind(&at)
        .bind(put_opt(provider.as_deref()))
        .bind(put_opt(model.as_deref()))
        .bind(put_opt(chat.additional_system_prompt.as_deref()))
        .bind(serde_json::to_string(&chat.enabled_tools)?)
        .bind(&chat.owner_id)
        .execute(&mut *tx)
        .await?;
        insert_messages(&mut tx, &id, &at, 0, &chat.messages).await?;
        let record = fetch_chat(&mut tx, &id)
            .await?
            .expect("inserted in this transaction");
        tx.commit().await?;
        Ok(record)
    }

    /// Both reads in one repeatable-read transaction: one snapshot, so the transcript is the
    /// one the chat's `updatedAt` describes.
    async fn get_chat_with_messages(
        &self,
        id: &str,
    ) -> Result<Option<(ChatRecord, Vec<MessageRecord>)>> {
        let mut tx = self.tx().await?;
        sqlx::query("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
            .execute(&mut *tx)
            .await?;
        let Some(chat) = fetch_chat(&mut tx, id).await? else {
            return Ok(None);
        };
        let messages = load_messages(&mut tx, id).await?;
        tx.commit().await?;
        Ok(Some((chat, messages)))
    }

    /// The chat alone: the call's record reads the transcript under the chat's lock
    /// (`calls.rs`), in a round trip of its transaction.
    async fn chat_to_continue(
        &self,
        id: &str,
        owner: &str,
    ) -> Result<Option<(ChatSettings, Option<Vec<MessageRecord>>)>> {
        let chat = read::postgres::chat(&self.pool, id).await?;
        Ok(chat
            .filter(|chat| chat.owner_id == owner)
            .map(|chat| (chat.settings(), None)))
    }

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
        let mut tx = self.tx().await?;
        sqlx::query(concat!(
            "UPDATE chats SET updated_at = ",
            next_updated_at!(1),
            ", title = COALESCE($2, title), \
             additional_system_prompt = CASE WHEN $3 THEN $4 ELSE additional_system_prompt END, \
             enabled_tools = COALESCE($5, enabled_tools) WHERE id = $6"
        ))
        .bind(now())
        .bind(put_opt(patch.title.as_deref()))
        .bind(set_prompt)
        .bind(put_opt(prompt.as_deref()))
        .bind(tools)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let record = fetch_chat(&mut tx, id).await?;
        tx.commit().await?;
        Ok(record)
    }

    async fn set_chat_starred(&self, id: &str, starred: bool) -> Result<Option<ChatRecord>> {
        let mut tx = self.tx().await?;
        // Locked, so a delete cannot come between the check and the membership's insert.
        let exists = sqlx::query("SELECT 1 FROM chats WHERE id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await?;
        if exists.is_none() {
            return Ok(None);
        }
        set_membership(&mut tx, Member::Chat, id, starred).await?;
        let record = fetch_chat(&mut tx, id).await?;
        tx.commit().await?;
        Ok(record)
    }

    async fn delete_chat(&self, id: &str) -> Result<bool> {
        let deleted = sqlx::query("DELETE FROM chats WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(deleted.rows_affected() > 0)
    }

    async fn append_message(
        &self,
        chat_id: &str,
        message: NewMessage,
    ) -> Result<Option<MessageRecord>> {
        let mut tx = self.tx().await?;
        let Some((at, last)) = touch_chat(&mut tx, chat_id).await? else {
            return Ok(None);
        };
        let ids =
            insert_messages(&mut tx, chat_id, &at, last, std::slice::from_ref(&message)).await?;
        tx.commit().await?;
        let id = ids.into_iter().next().expect("one message inserted");
        Ok(Some(MessageRecord {
            id,
            created_at: at,
            role: message.role,
            content: message.content,
            name: message.name,
            metadata: message.metadata,
        }))
    }
}

pub(super) async fn fetch_chat(
    tx: &mut Transaction<'_, Postgres>,
    id: &str,
) -> Result<Option<ChatRecord>> {
    read::postgres::chat(&mut **tx, id).await
}

/// A chat's transcript, inside a transaction.
pub(super) async fn load_messages(
    tx: &mut Transaction<'_, Postgres>,
    chat_id: &str,
) -> Result<Vec<MessageRecord>> {
    read::postgres::messages(&mut **tx, chat_id).await
}

/// Bumps the chat's `updated_at`, locking its row until the transaction ends; the new stamp and
/// the transcript's last `seq`, read after the lock was taken. `None` when the chat does not
/// exist.
pub(super) async fn touch_chat(
    tx: &mut Transaction<'_, Postgres>,
    chat_id: &str,
) -> Result<Option<(String, i64)>> {
    let Some(at) = sqlx::query_scalar::<_, String>(concat!(
        "UPDATE chats SET updated_at = ",
        next_updated_at!(1),
        " WHERE id = $2 RETURNING updated_at"
    ))
    .bind(now())
    .bind(chat_id)
    .fetch_optional(&mut **tx)
    .await?
    else {
        return Ok(None);
    };
    let last: i64 =
        sqlx::query_scalar("SELECT COALESCE(MAX(seq), 0)::BIGINT FROM messages WHERE chat_id = $1")
            .bind(chat_id)
            .fetch_one(&mut **tx)
            .await?;
    Ok(Some((at, last)))
}

/// Inserts `messages` after `seq` `after`, stamped `at`, in one statement; their new ids.
pub(super) async fn insert_messages(
    tx: &mut Transaction<'_, Postgres>,
    chat_id: &str,
    at: &str,
    after: i64,
    messages: &[NewMessage],
) -> Result<Vec<String>> {
    if messages.is_empty() {
        return Ok(Vec::new());
    }
    let mut ids = Vec::with_capacity(messages.len());
    let mut roles = Vec::with_capacity(messages.len());
    let mut contents = Vec::with_capacity(messages.len());
    let mut names = Vec::with_capacity(messages.len());
    let mut metadata = Vec::with_capacity(messages.len());
    for message in messages {
        ids.push(new_id());
        roles.push(message.role.as_str());
        contents.push(put(&message.content));
        names.push(put_opt(message.name.as_deref()));
        metadata.push(
            message
                .metadata
                .as_ref()
                .map(serde_json::to_string)
                .transpose()?,
        );
    }
    // `unnest … WITH ORDINALITY` keeps the given order for the `seq`s.
    sqlx::query(
        "INSERT INTO messages (id, chat_id, seq, created_at, role, content, name, metadata) \
         SELECT m.id, $1, $2 + m.n, $3, m.role, m.content, m.name, m.metadata \
         FROM unnest($4::TEXT[], $5::TEXT[], $6::TEXT[], $7::TEXT[], $8::TEXT[]) \
         WITH ORDINALITY AS m (id, role, content, name, metadata, n)",
    )
    .bind(chat_id)
    .bind(after)
    .bind(at)
    .bind(&ids)
    .bind(&roles)
    .bind(&contents)
    .bind(&names)
    .bind(&metadata)
    .execute(&mut **tx)
    .await?;
    Ok(ids)
}
