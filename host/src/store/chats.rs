//! Chats, their messages, and chat stars (membership in the reserved `starred` project).
//!
//! Transcript order is the per-chat `seq` column, assigned inside the inserting transaction, not
//! the timestamp: two messages written in the same millisecond keep the order they were sent in.

use serde_json::Value;
use sqlx::sqlite::SqliteRow;
use sqlx::{Row, Sqlite, Transaction};

use super::{Member, Result, Store, json, set_membership};
use crate::model::{Provider, Role, new_id, now, now_after};

#[derive(Clone, Debug, PartialEq)]
pub struct ChatRecord {
    pub id: String,
    pub title: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    /// When the chat joined the `starred` project; `None` when not starred.
    pub starred_at: Option<String>,
    pub initiated_provider: Option<Provider>,
    pub initiated_model: Option<String>,
    pub last_used_provider: Option<Provider>,
    pub last_used_model: Option<String>,
    pub additional_system_prompt: Option<String>,
    pub enabled_tools: Vec<String>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct MessageRecord {
    pub id: String,
    pub created_at: String,
    pub role: Role,
    pub content: String,
    pub name: Option<String>,
    pub metadata: Option<Value>,
}

#[derive(Clone, Debug, Default)]
pub struct NewChat {
    pub title: Option<String>,
    /// Sets both the initiated and the last-used provider/model.
    pub provider_model: Option<(Provider, String)>,
    pub additional_system_prompt: Option<String>,
    pub enabled_tools: Vec<String>,
    pub messages: Vec<NewMessage>,
}

#[derive(Clone, Debug)]
pub struct NewMessage {
    pub role: Role,
    pub content: String,
    pub name: Option<String>,
    pub metadata: Option<Value>,
}

/// A chat settings update; `None` leaves a field unchanged.
#[derive(Clone, Debug, Default)]
pub struct ChatPatch {
    pub title: Option<String>,
    /// `Some(None)` clears the prompt.
    pub additional_system_prompt: Option<Option<String>>,
    pub enabled_tools: Option<Vec<String>>,
}

pub(super) const SELECT_CHAT: &str = "SELECT c.id, c.title, c.created_at, c.updated_at, s.created_at AS starred_at, \
     c.initiated_provider, c.initiated_model, c.last_used_provider, c.last_used_model, \
     c.additional_system_prompt, c.enabled_tools \
     FROM chats c LEFT JOIN project_chats s ON s.chat_id = c.id AND s.project_id = 'starred'";

pub(super) fn chat_from_row(row: &SqliteRow) -> Result<ChatRecord> {
    let provider = |column: &str| -> Result<Option<Provider>> {
        Ok(row
            .try_get::<Option<String>, _>(column)?
            .map(|p| p.parse())
            .transpose()?)
    };
    Ok(ChatRecord {
        id: row.try_get("id")?,
        title: row.try_get("title")?,
        created_at: row.try_get("created_at")?,
        updated_at: row.try_get("updated_at")?,
        starred_at: row.try_get("starred_at")?,
        initiated_provider: provider("initiated_provider")?,
        initiated_model: row.try_get("initiated_model")?,
        last_used_provider: provider("last_used_provider")?,
        last_used_model: row.try_get("last_used_model")?,
        additional_system_prompt: row.try_get("additional_system_prompt")?,
        enabled_tools: json(row.try_get::<&str, _>("enabled_tools")?)?,
    })
}

const SELECT_MESSAGES: &str = "SELECT id, created_at, role, content, name, metadata FROM messages WHERE chat_id = ? ORDER BY seq";

/// A chat's transcript, inside a transaction.
pub(super) async fn load_messages(
    tx: &mut Transaction<'_, Sqlite>,
    chat_id: &str,
) -> Result<Vec<MessageRecord>> {
    let rows = sqlx::query(SELECT_MESSAGES)
        .bind(chat_id)
        .fetch_all(&mut **tx)
        .await?;
    rows.iter().map(message_from_row).collect()
}

fn message_from_row(row: &SqliteRow) -> Result<MessageRecord> {
    Ok(MessageRecord {
        id: row.try_get("id")?,
        created_at: row.try_get("created_at")?,
        role: row.try_get::<&str, _>("role")?.parse()?,
        content: row.try_get("content")?,
        name: row.try_get("name")?,
        metadata: row
            .try_get::<Option<&str>, _>("metadata")?
            .map(json)
            .transpose()?,
    })
}

impl Store {
    pub async fn create_chat(&self, chat: NewChat) -> Result<ChatRecord> {
        let id = new_id();
        let at = now();
        let (provider, model) = match &chat.provider_model {
            Some((p, m)) => (Some(p.as_str()), Some(m.as_str())),
            None => (None, None),
        };
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "INSERT INTO chats (id, title, created_at, updated_at, initiated_provider, initiated_model, \
             last_used_provider, last_used_model, additional_system_prompt, enabled_tools) \
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(&id)
        .bind(&chat.title)
        .bind(&at)
        .bind(&at)
        .bind(provider)
        .bind(model)
        .bind(provider)
        .bind(model)
        .bind(&chat.additional_system_prompt)
        .bind(serde_json::to_string(&chat.enabled_tools)?)
        .execute(&mut *tx)
        .await?;
        for message in &chat.messages {
            insert_message(&mut tx, &id, message, &at).await?;
        }
        let record = fetch_chat(&mut tx, &id)
            .await?
            .expect("inserted in this transaction");
        tx.commit().await?;
        Ok(record)
    }

    /// All chats, most recently updated first.
    pub async fn list_chats(&self) -> Result<Vec<ChatRecord>> {
        let rows = sqlx::query(&format!(
            "{SELECT_CHAT} ORDER BY c.updated_at DESC, c.id DESC"
        ))
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(chat_from_row).collect()
    }

    pub async fn get_chat(&self, id: &str) -> Result<Option<ChatRecord>> {
        let row = sqlx::query(&format!("{SELECT_CHAT} WHERE c.id = ?"))
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(chat_from_row).transpose()
    }

    /// The chat and its transcript. Two reads without a transaction (each a round trip to the
    /// database thread): a message appended in between shows up with the chat's older
    /// `updatedAt`, which no reader can tell from a slightly earlier read.
    pub async fn get_chat_with_messages(
        &self,
        id: &str,
    ) -> Result<Option<(ChatRecord, Vec<MessageRecord>)>> {
        let Some(chat) = self.get_chat(id).await? else {
            return Ok(None);
        };
        let rows = sqlx::query(SELECT_MESSAGES)
            .bind(id)
            .fetch_all(&self.pool)
            .await?;
        let messages = rows.iter().map(message_from_row).collect::<Result<_>>()?;
        Ok(Some((chat, messages)))
    }

    /// Applies a settings update and bumps `updatedAt`. `None` when the chat does not exist.
    pub async fn update_chat(&self, id: &str, patch: ChatPatch) -> Result<Option<ChatRecord>> {
        let mut tx = self.write_tx().await?;
        let Some(updated_at) = next_updated_at(&mut tx, id).await? else {
            return Ok(None);
        };
        let (set_prompt, prompt) = match patch.additional_system_prompt {
            Some(p) => (true, p),
            None => (false, None),
        };
        let tools = patch
            .enabled_tools
            .as_ref()
            .map(serde_json::to_string)
            .transpose()?;
        sqlx::query(
            "UPDATE chats SET updated_at = ?, title = COALESCE(?, title), \
             additional_system_prompt = CASE WHEN ? THEN ? ELSE additional_system_prompt END, \
             enabled_tools = COALESCE(?, enabled_tools) WHERE id = ?",
        )
        .bind(updated_at)
        .bind(&patch.title)
        .bind(set_prompt)
        .bind(prompt)
        .bind(tools)
        .bind(id)
        .execute(&mut *tx)
        .await?;
        let record = fetch_chat(&mut tx, id).await?;
        tx.commit().await?;
        Ok(record)
    }

    /// Stars or unstars; never touches `updatedAt` or the transcript. Starring twice keeps the
    /// first `starredAt`.
    pub async fn set_chat_starred(&self, id: &str, starred: bool) -> Result<Option<ChatRecord>> {
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
    pub async fn delete_chat(&self, id: &str) -> Result<bool> {
        let deleted = sqlx::query("DELETE FROM chats WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(deleted.rows_affected() > 0)
    }

    /// Appends a message and bumps the chat's `updatedAt`. `None` when the chat does not exist.
    pub async fn append_message(
        &self,
        chat_id: &str,
        message: NewMessage,
    ) -> Result<Option<MessageRecord>> {
        let mut tx = self.write_tx().await?;
        let Some(at) = next_updated_at(&mut tx, chat_id).await? else {
            return Ok(None);
        };
        sqlx::query("UPDATE chats SET updated_at = ? WHERE id = ?")
            .bind(&at)
            .bind(chat_id)
            .execute(&mut *tx)
            .await?;
        let record = insert_message(&mut tx, chat_id, &message, &at).await?;
        tx.commit().await?;
        Ok(Some(record))
    }
}

pub(super) async fn fetch_chat(
    tx: &mut Transaction<'_, Sqlite>,
    id: &str,
) -> Result<Option<ChatRecord>> {
    let row = sqlx::query(&format!("{SELECT_CHAT} WHERE c.id = ?"))
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
    row.as_ref().map(chat_from_row).transpose()
}

/// The chat's next `updatedAt` (strictly later than the current one); `None` when it does not exist.
pub(super) async fn next_updated_at(
    tx: &mut Transaction<'_, Sqlite>,
    id: &str,
) -> Result<Option<String>> {
    let current: Option<String> = sqlx::query_scalar("SELECT updated_at FROM chats WHERE id = ?")
        .bind(id)
        .fetch_optional(&mut **tx)
        .await?;
    Ok(current.as_deref().map(now_after))
}

pub(super) async fn insert_message(
    tx: &mut Transaction<'_, Sqlite>,
    chat_id: &str,
    message: &NewMessage,
    at: &str,
) -> Result<MessageRecord> {
    let id = new_id();
    let metadata = message
        .metadata
        .as_ref()
        .map(serde_json::to_string)
        .transpose()?;
    sqlx::query(
        "INSERT INTO messages (id, chat_id, seq, created_at, role, content, name, metadata) \
         SELECT ?, ?, COALESCE(MAX(seq), 0) + 1, ?, ?, ?, ?, ? FROM messages WHERE chat_id = ?",
    )
    .bind(&id)
    .bind(chat_id)
    .bind(at)
    .bind(message.role.as_str())
    .bind(&message.content)
    .bind(&message.name)
    .bind(metadata)
    .bind(chat_id)
    .execute(&mut **tx)
    .await?;
    Ok(MessageRecord {
        id,
        created_at: at.to_string(),
        role: message.role,
        content: message.content.clone(),
        name: message.name.clone(),
        metadata: message.metadata.clone(),
    })
}
