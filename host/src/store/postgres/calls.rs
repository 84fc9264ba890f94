//! Model calls (LlmCall records) and the chat writes around a completion, on PostgreSQL. The
//! rules are those of `Store::begin_call`, `finish_call` and `fail_call`; here each is one
//! transaction, made safe against concurrent writers by row locks: the chat's row for the
//! transcript, the call's row for its outcome.

use super::chats::{fetch_chat, insert_messages, load_messages, touch_chat};
use super::{PgStore, next_updated_at, put};
use crate::store::backend::Calls;
use crate::store::{CallUsage, ChatRecord, MessageRecord, NewCall, NewMessage, Result};
use crate::vocabulary::now;

impl Calls for PgStore {
    /// The transcript is read under the chat's row lock, whatever was `read` before: here that
    /// read is one round trip inside a transaction that takes several anyway, where checking an
    /// earlier read (its length against the last `seq`, as SQLite's does) would save nothing.
    async fn begin_call(
        &self,
        call: NewCall,
        _read: Option<Vec<MessageRecord>>,
        new_rows: impl Fn(&[MessageRecord]) -> Vec<NewMessage>,
    ) -> Result<bool> {
        let mut tx = self.tx().await?;
        if let Some(chat_id) = &call.chat_id {
            // The chat's row is locked first: the transcript read next is the one the new rows
            // follow, whoever else is writing to it.
            let Some((at, last)) = touch_chat(&mut tx, chat_id).await? else {
                return Ok(false);
            };
            sqlx::query(
                "UPDATE chats SET last_used_provider = $1, last_used_model = $2, \
                 initiated_model = CASE WHEN initiated_provider IS NULL THEN $2 ELSE initiated_model END, \
                 initiated_provider = COALESCE(initiated_provider, $1) WHERE id = $3",
            )
            .bind(put(&call.provider))
            .bind(put(&call.model))
            .bind(chat_id)
            .execute(&mut *tx)
            .await?;
            let rows = new_rows(&load_messages(&mut tx, chat_id).await?);
            insert_messages(&mut tx, chat_id, &at, last, &rows).await?;
        }
        sqlx::query(
            "INSERT INTO llm_calls (id, chat_id, provider, model, created_at, instance_id) \
             VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (id) DO NOTHING",
        )
        .bind(&call.id)
        .bind(&call.chat_id)
        .bind(put(&call.provider))
        .bind(put(&call.model))
        .bind(now())
        .bind(&*self.instance)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(true)
    }

    async fn finish_call(
        &self,
        call_id: &str,
        chat_id: Option<&str>,
        assistant: Option<NewMessage>,
        usage: Option<CallUsage>,
        latency_ms: u64,
        answered_by: Option<&(String, String)>,
    ) -> Result<()> {
        let mut tx = self.tx().await?;
        // The call's outcome first: it locks the row, so a concurrent `fail_call` either ended
        // it before (and this stores no reply) or waits for this commit (and changes nothing).
        let ended = sqlx::query(
            "UPDATE llm_calls SET completed_at = $1, input_tokens = $2, output_tokens = $3, \
             total_tokens = $4, latency_ms = $5, answered_provider = $6, answered_model = $7 \
             WHERE id = $8 AND completed_at IS NULL",
        )
        .bind(now())
        .bind(usage.map(|u| u.input_tokens as i64))
        .bind(usage.map(|u| u.output_tokens as i64))
        .bind(usage.map(|u| u.total_tokens as i64))
        .bind(latency_ms as i64)
        .bind(answered_by.map(|(p, _)| p.as_str()))
        .bind(answered_by.map(|(_, m)| m.as_str()))
        .bind(call_id)
        .execute(&mut *tx)
        .await?;
        if ended.rows_affected() > 0
            && let (Some(chat_id), Some(message)) = (chat_id, assistant)
            && let Some((at, last)) = touch_chat(&mut tx, chat_id).await?
        {
            insert_messages(&mut tx, chat_id, &at, last, &[message]).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn fail_call(
        &self,
        call_id: &str,
        error: &str,
        usage: Option<CallUsage>,
        latency_ms: u64,
    ) -> Result<()> {
        sqlx::query(
            "UPDATE llm_calls SET completed_at = $1, error = $2, input_tokens = $3, \
             output_tokens = $4, total_tokens = $5, latency_ms = $6 \
             WHERE id = $7 AND completed_at IS NULL",
        )
        .bind(now())
        .bind(put(error))
        .bind(usage.map(|u| u.input_tokens as i64))
        .bind(usage.map(|u| u.output_tokens as i64))
        .bind(usage.map(|u| u.total_tokens as i64))
        .bind(latency_ms as i64)
        .bind(call_id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn set_title_if_unset(&self, chat_id: &str, title: &str) -> Result<Option<ChatRecord>> {
        let mut tx = self.tx().await?;
        sqlx::query(concat!(
            "UPDATE chats SET title = $1, updated_at = ",
            next_updated_at!(2),
            " WHERE id = $3 AND (title IS NULL OR TRIM(title) = '')"
        ))
        .bind(put(title))
        .bind(now())
        .bind(chat_id)
        .execute(&mut *tx)
        .await?;
        let record = fetch_chat(&mut tx, chat_id).await?;
        tx.commit().await?;
        Ok(record)
    }
}
