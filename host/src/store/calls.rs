//! Model calls (LlmCall records) and the chat writes around a completion: the new history rows
//! and the provider/model bookkeeping when a call starts, the assistant message and the usage
//! when it ends (one transaction: the contract's "persisted, then `done`"), the error when it
//! fails. Also the conditional title write of title suggestion.

use sqlx::Row;

use super::chats::{fetch_chat, insert_message, load_messages, next_updated_at};
use super::{ChatRecord, MessageRecord, NewMessage, Result, Store};
use crate::model::{Provider, now};

/// Token accounting of a call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub total_tokens: u64,
}

/// A call going to a provider.
#[derive(Clone, Debug)]
pub struct NewCall {
    /// Chosen by the caller, which announces it (`meta.callId`) before this is stored.
    pub id: String,
    /// The chat it belongs to, if any (a non-streaming completion without `chatId` has none).
    pub chat_id: Option<String>,
    pub provider: Provider,
    pub model: String,
}

/// A stored call, as tests and operators read it.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRecord {
    pub id: String,
    pub chat_id: Option<String>,
    pub provider: String,
    pub model: String,
    pub created_at: String,
    pub completed_at: Option<String>,
    pub usage: Option<CallUsage>,
    pub latency_ms: Option<i64>,
    pub error: Option<String>,
}

impl Store {
    /// Starts a call, in one transaction: stores the rows `new_rows` picks from the chat's
    /// transcript as it is now (so two calls with the same history cannot both store it), sets
    /// the chat's last-used provider and model (and the initiated ones if unset), and records the
    /// call. `false` when the chat does not exist (deleted meanwhile).
    pub async fn begin_call(
        &self,
        call: NewCall,
        new_rows: impl FnOnce(&[MessageRecord]) -> Vec<NewMessage>,
    ) -> Result<bool> {
        let mut tx = self.write_tx().await?;
        if let Some(chat_id) = &call.chat_id {
            let Some(at) = next_updated_at(&mut tx, chat_id).await? else {
                return Ok(false);
            };
            // Every right-hand side reads the row as it was, so `initiated_model` is set exactly
            // when `initiated_provider` was still unset.
            sqlx::query(
                "UPDATE chats SET updated_at = ?, last_used_provider = ?, last_used_model = ?, \
                 initiated_model = CASE WHEN initiated_provider IS NULL THEN ? ELSE initiated_model END, \
                 initiated_provider = COALESCE(initiated_provider, ?) WHERE id = ?",
            )
            .bind(&at)
            .bind(call.provider.as_str())
            .bind(&call.model)
            .bind(&call.model)
            .bind(call.provider.as_str())
            .bind(chat_id)
            .execute(&mut *tx)
            .await?;
            let stored = load_messages(&mut tx, chat_id).await?;
            for message in &new_rows(&stored) {
                insert_message(&mut tx, chat_id, message, &at).await?;
            }
        }
        sqlx::query(
            "INSERT INTO llm_calls (id, chat_id, provider, model, created_at) VALUES (?, ?, ?, ?, ?) \
             ON CONFLICT (id) DO NOTHING",
        )
        .bind(&call.id)
        .bind(&call.chat_id)
        .bind(call.provider.as_str())
        .bind(&call.model)
        .bind(now())
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    /// Ends a call that succeeded: its assistant message (when it has a chat) and its usage and
    /// latency, in one transaction.
    pub async fn finish_call(
        &self,
        call_id: &str,
        chat_id: Option<&str>,
        assistant: Option<NewMessage>,
        usage: Option<CallUsage>,
        latency_ms: u64,
    ) -> Result<()> {
        let mut tx = self.write_tx().await?;
        if let (Some(chat_id), Some(message)) = (chat_id, assistant)
            && let Some(at) = next_updated_at(&mut tx, chat_id).await?
        {
            sqlx::query("UPDATE chats SET updated_at = ? WHERE id = ?")
                .bind(&at)
                .bind(chat_id)
                .execute(&mut *tx)
                .await?;
            insert_message(&mut tx, chat_id, &message, &at).await?;
        }
        sqlx::query(
            "UPDATE llm_calls SET completed_at = ?, input_tokens = ?, output_tokens = ?, \
             total_tokens = ?, latency_ms = ? WHERE id = ?",
        )
        .bind(now())
        .bind(usage.map(|u| u.input_tokens as i64))
        .bind(usage.map(|u| u.output_tokens as i64))
        .bind(usage.map(|u| u.total_tokens as i64))
        .bind(latency_ms as i64)
        .bind(call_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Ends a call that failed: its error and latency (and whatever usage was reported). A call
    /// that already ended keeps its outcome (a run stopped while its success was committing).
    pub async fn fail_call(
        &self,
        call_id: &str,
        error: &str,
        usage: Option<CallUsage>,
        latency_ms: u64,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE llm_calls SET completed_at = ?, error = ?, input_tokens = ?, output_tokens = ?, \
             total_tokens = ?, latency_ms = ? WHERE id = ? AND completed_at IS NULL",
        )
        .bind(now())
        .bind(error)
        .bind(usage.map(|u| u.input_tokens as i64))
        .bind(usage.map(|u| u.output_tokens as i64))
        .bind(usage.map(|u| u.total_tokens as i64))
        .bind(latency_ms as i64)
        .bind(call_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn get_call(&self, id: &str) -> Result<Option<CallRecord>> {
        let row = sqlx::query(
            "SELECT id, chat_id, provider, model, created_at, completed_at, input_tokens, \
             output_tokens, total_tokens, latency_ms, error FROM llm_calls WHERE id = ?",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        let tokens = |c: &str| -> Result<Option<u64>> {
            Ok(row.try_get::<Option<i64>, _>(c)?.map(|n| n.max(0) as u64))
        };
        let usage = match (
            tokens("input_tokens")?,
            tokens("output_tokens")?,
            tokens("total_tokens")?,
        ) {
            (Some(input_tokens), Some(output_tokens), Some(total_tokens)) => Some(CallUsage {
                input_tokens,
                output_tokens,
                total_tokens,
            }),
            _ => None,
        };
        Ok(Some(CallRecord {
            id: row.try_get("id")?,
            chat_id: row.try_get("chat_id")?,
            provider: row.try_get("provider")?,
            model: row.try_get("model")?,
            created_at: row.try_get("created_at")?,
            completed_at: row.try_get("completed_at")?,
            usage,
            latency_ms: row.try_get("latency_ms")?,
            error: row.try_get("error")?,
        }))
    }

    /// Sets the title only if the chat still has none (a title set meanwhile wins). Returns the
    /// chat as it is afterwards; `None` when it does not exist.
    pub async fn set_title_if_unset(
        &self,
        chat_id: &str,
        title: &str,
    ) -> Result<Option<ChatRecord>> {
        let mut tx = self.write_tx().await?;
        let Some(at) = next_updated_at(&mut tx, chat_id).await? else {
            return Ok(None);
        };
        sqlx::query(
            "UPDATE chats SET title = ?, updated_at = ? WHERE id = ? AND (title IS NULL OR TRIM(title) = '')",
        )
        .bind(title)
        .bind(&at)
        .bind(chat_id)
        .execute(&mut *tx)
        .await?;
        let chat = fetch_chat(&mut tx, chat_id).await?;
        tx.commit().await?;
        Ok(chat)
    }
}
