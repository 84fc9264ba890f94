//! Model calls (LlmCall records) and the chat writes around a completion: the new history rows
//! and the provider/model bookkeeping when a call starts, the assistant message and the usage
//! when it ends (one transaction: the contract's "persisted, then `done`"), the error when it
//! fails. Also the conditional title write of title suggestion.

use sqlx::Row;

use super::batch::Batch;
use super::chats::{
    Condition, SELECT_CHAT_BY_ID, chat_from_row, push_message, push_message_then, stored_message,
    touch_chat,
};
use super::kept::Kept;
use super::{Result, SqliteStore};
use crate::store::backend::Calls;
use crate::store::read;
use crate::store::{CallUsage, ChatRecord, MessageRecord, NewCall, NewMessage};
use crate::vocabulary::now;

impl Calls for SqliteStore {
    /// Starts a call, in one transaction: stores the rows `new_rows` picks from the chat's
    /// transcript (so two calls with the same history cannot both store it), sets the chat's
    /// last-used provider and model (and the initiated ones if unset), and records the call.
    /// `false` when the chat does not exist (deleted meanwhile).
    ///
    /// One round trip in the usual case, the writes, made on condition that the transcript has
    /// not grown since it was `read` (messages are only ever appended, and an import refuses
    /// `seq`s that do not run 1, 2, 3…: its length is its last `seq`); two when the caller did
    /// not read it, outside any transaction, here. When it has grown, the transcript is read
    /// again under the write lock and `new_rows` asked again, and the kept chat is forgotten
    /// (`kept.rs`: it fell behind); when it has not, the rows stored extend the kept transcript
    /// (or, too large to keep, have it forgotten).
    async fn begin_call(
        &self,
        call: NewCall,
        read: Option<Vec<MessageRecord>>,
        new_rows: impl Fn(&[MessageRecord]) -> Vec<NewMessage>,
    ) -> Result<bool> {
        let Some(chat_id) = &call.chat_id else {
            self.commit(call_batch(&call, &[], None)?.0).await?;
            return Ok(true);
        };
        let transcript = match read {
            Some(transcript) => transcript,
            None => read::sqlite::messages(&self.pool, chat_id).await?,
        };
        let after = transcript.len();
        let rows = new_rows(&transcript);
        let (batch, ids) = call_batch(&call, &rows, Some(after as i64))?;
        drop(transcript);
        // Kept for the kept transcript only where it fits there; otherwise dropped once bound,
        // before the write: with attachments they can be tens of MiB, and the write copies them
        // again.
        let kept = self.kept.as_deref().filter(|_| Kept::holds(&rows));
        let rows = kept.map(|_| rows);
        let touched = self.commit(batch).await?;
        if let Some(chat) = touched.first() {
            if let (Some(kept), Some(rows)) = (kept, rows) {
                let at: String = chat.try_get("updated_at")?;
                let stored = ids.into_iter().zip(rows);
                let stored = stored.map(|(id, row)| stored_message(id, at.clone(), row));
                kept.extend(chat_id, after, stored.collect());
            } else if let Some(kept) = &self.kept {
                kept.forget(chat_id);
            }
            return Ok(true);
        }
        if let Some(kept) = &self.kept {
            kept.forget(chat_id);
        }
        let mut tx = self.write_tx().await?;
        let (batch, _) = call_batch(
            &call,
            &new_rows(&read::sqlite::messages(&mut *tx, chat_id).await?),
            None,
        )?;
        let touched = batch.run(&mut tx).await?;
        if touched.is_empty() {
            // The chat does not exist (deleted meanwhile): nothing is kept.
            return Ok(false);
        }
        tx.commit().await?;
        Ok(true)
    }

    /// Ends a call that succeeded: its assistant message (when it has a chat) and its usage and
    /// latency, in one transaction.
    async fn finish_call(
        &self,
        call_id: &str,
        chat_id: Option<&str>,
        assistant: Option<NewMessage>,
        usage: Option<CallUsage>,
        latency_ms: u64,
        answered_by: Option<&(String, String)>,
    ) -> Result<()> {
        let mut batch = Batch::new();
        let mut reply = None;
        if let (Some(chat_id), Some(message)) = (chat_id, &assistant) {
            // A chat deleted meanwhile gets nothing; the call is still completed. A call that
            // ended meanwhile (a run stopped at shutdown, recorded as failed while this waited
            // for the writer) keeps that outcome, and gets no reply.
            let open = || Condition::CallOpen(call_id.to_string());
            touch_chat(&mut batch, chat_id, open());
            let tail = " RETURNING seq";
            reply = Some(push_message_then(
                &mut batch,
                chat_id,
                message,
                open(),
                tail,
            )?);
        }
        batch
            .push(
                "UPDATE llm_calls SET completed_at = ?, input_tokens = ?, output_tokens = ?, \
                 total_tokens = ?, latency_ms = ?, answered_provider = ?, answered_model = ? \
                 WHERE id = ? AND completed_at IS NULL",
            )
            .bind(now())
            .bind(usage.map(|u| u.input_tokens as i64))
            .bind(usage.map(|u| u.output_tokens as i64))
            .bind(usage.map(|u| u.total_tokens as i64))
            .bind(latency_ms as i64)
            .bind(answered_by.map(|(p, _)| p.clone()))
            .bind(answered_by.map(|(_, m)| m.clone()))
            .bind(call_id.to_string());
        let rows = self.commit(batch).await?;
        // The reply stored: it extends the kept transcript, at its place.
        if let (Some(kept), Some(chat_id), Some(id), Some(message), [touched, stored]) =
            (&self.kept, chat_id, reply, assistant, rows.as_slice())
        {
            let at: String = touched.try_get("updated_at")?;
            let seq: i64 = stored.try_get("seq")?;
            let after = usize::try_from(seq - 1).unwrap_or(usize::MAX);
            kept.extend(chat_id, after, vec![stored_message(id, at, message)]);
        }
        Ok(())
    }

    /// Ends a call that failed: its error and latency (and whatever usage was reported). A call
    /// that already ended keeps its outcome (a run stopped while its success was committing).
    async fn fail_call(
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

    /// Sets the title only if the chat still has none (a title set meanwhile wins). Returns the
    /// chat as it is afterwards; `None` when it does not exist.
    async fn set_title_if_unset(&self, chat_id: &str, title: &str) -> Result<Option<ChatRecord>> {
        let mut batch = Batch::new();
        batch
            .push(concat!(
                "UPDATE chats SET title = ?, updated_at = ",
                next_updated_at!(),
                " WHERE id = ? AND (title IS NULL OR TRIM(title) = '')"
            ))
            .bind(title.to_string())
            .bind(now())
            .bind(chat_id.to_string());
        batch.push(SELECT_CHAT_BY_ID).bind(chat_id.to_string());
        let rows = self.commit(batch).await?;
        rows.first().map(chat_from_row).transpose()
    }
}

/// The writes that start `call`: with a chat, its update (`RETURNING` a row when it was made)
/// and `rows` appended to its transcript; then the call's record.
///
/// With `after`, all of them or none: only if the transcript's last `seq` is still `after`. The
/// chat's update and the first row check that; each later row checks that the one before it
/// was stored, and the call's record that the last one was (or, without rows, the `seq` again),
/// so a transcript that grew meanwhile gets none of them, and they never land out of order.
/// Returns the batch and the ids the rows are stored under.
fn call_batch(
    call: &NewCall,
    rows: &[NewMessage],
    after: Option<i64>,
) -> Result<(Batch, Vec<String>)> {
    let mut batch = Batch::new();
    let mut ids = Vec::with_capacity(rows.len());
    let unchanged = |chat_id: &str| match after {
        Some(last) => Condition::LastSeq {
            chat_id: chat_id.to_string(),
            last,
        },
        None => Condition::Always,
    };
    // What the call's record waits for: the chat's last write in this batch.
    let mut recorded = Condition::Always;
    if let Some(chat_id) = &call.chat_id {
        // Every right-hand side reads the row as it was, so `initiated_model` is set exactly
        // when `initiated_provider` was still unset.
        batch
            .bind(now())
            .bind(call.provider.clone())
            .bind(call.model.clone())
            .bind(call.model.clone())
            .bind(call.provider.clone())
            .bind(chat_id.clone());
        unchanged(chat_id).push(
            &mut batch,
            concat!(
                "UPDATE chats SET updated_at = ",
                next_updated_at!(),
                ", last_used_provider = ?, last_used_model = ?, \
                 initiated_model = CASE WHEN initiated_provider IS NULL THEN ? ELSE initiated_model END, \
                 initiated_provider = COALESCE(initiated_provider, ?) WHERE id = ?"
            ),
            " RETURNING updated_at",
        );
        recorded = unchanged(chat_id);
        for message in rows {
            let only = std::mem::replace(&mut recorded, Condition::Always);
            let id = push_message(&mut batch, chat_id, message, only)?;
            if after.is_some() {
                recorded = Condition::Stored(id.clone());
            }
            ids.push(id);
        }
    }
    // Not for a chat that does not exist: its foreign key would fail the whole batch.
    batch
        .bind(call.id.clone())
        .bind(call.chat_id.clone())
        .bind(call.provider.clone())
        .bind(call.model.clone())
        .bind(now())
        .bind(call.chat_id.clone())
        .bind(call.chat_id.clone());
    recorded.push(
        &mut batch,
        "INSERT INTO llm_calls (id, chat_id, provider, model, created_at) \
         SELECT ?, ?, ?, ?, ? WHERE (? IS NULL OR EXISTS (SELECT 1 FROM chats WHERE id = ?))",
        " ON CONFLICT (id) DO NOTHING",
    );
    Ok((batch, ids))
}
