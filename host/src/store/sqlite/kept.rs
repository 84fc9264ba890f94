//! Chats kept in the process after a completion read them, so the next completion on the chat
//! reads nothing from the database: its settings and transcript are here
//! (`Chats::chat_to_continue`). A persisted completion made three round trips to SQLite's
//! thread; this drops the first (BENCHMARKS.md, "A chat kept in the process").
//!
//! Sound because a serving chatd is the only process that writes chats and messages to its
//! database: it holds the database's process lock (`SqliteStore::open`, one lock for one file), and
//! a command beside it (`chatd users`) writes people, keys, login links and sessions only, and
//! applies no migration under it (`beside_a_server_nothing_is_migrated`). So every change to a kept
//! chat is made here, and each of its writes forgets the chat or extends its transcript:
//! - its settings (`update_chat`) and its removal (`delete_chat`): forgotten once the write is
//!   made, and a read that began before the write is not kept (the `epoch`);
//! - its transcript: a call's new rows (`begin_call`) and its reply (`finish_call`) extend it
//!   with the rows as stored, each only where the transcript ends where it did when the row
//!   was placed; a tool's row (`append_message`) forgets it.
//!
//! A kept transcript is so always a prefix of the stored one, never different: messages are
//! only appended. One that fell behind (a write whose caller was dropped before extending it, a
//! race lost to another call, rows too large to keep) is caught where it is used: `begin_call`
//! writes only if the transcript's length is still the kept one, and reads it again otherwise
//! (forgetting the chat). PostgreSQL keeps nothing: several instances write it.

use std::collections::HashMap;
use std::sync::Mutex;

use crate::store::{ChatSettings, MessageRecord, NewMessage};

/// The most bytes of messages one kept chat may hold; a longer transcript is read each time.
const MOST_PER_CHAT: usize = 1 << 20;
/// The most bytes of messages kept in all; past it, chats are let go (any, not the oldest).
const MOST_IN_ALL: usize = 32 << 20;

/// The kept chats ([module docs](self)).
#[derive(Debug, Default)]
pub(super) struct Kept {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    /// Bumped by each [`Kept::forget`]: a read made before it is not kept.
    epoch: u64,
    chats: HashMap<String, Chat>,
    /// The bytes of every kept chat's messages.
    bytes: usize,
}

#[derive(Debug)]
struct Chat {
    owner: String,
    settings: ChatSettings,
    transcript: Vec<MessageRecord>,
    bytes: usize,
}

impl Kept {
    /// `owner`'s chat `id`, when it is kept: its settings and a copy of its transcript.
    pub fn get(&self, id: &str, owner: &str) -> Option<(ChatSettings, Vec<MessageRecord>)> {
        let inner = self.lock();
        let chat = inner.chats.get(id).filter(|c| c.owner == owner)?;
        Some((chat.settings.clone(), chat.transcript.clone()))
    }

    /// What [`Kept::keep`] is given, taken before the read it keeps.
    pub fn mark(&self) -> u64 {
        self.lock().epoch
    }

    /// Keeps a chat read after `mark` was taken, unless a chat was forgotten since (the read
    /// may be older than that write) or it is too long to keep.
    pub fn keep(
        &self,
        mark: u64,
        id: &str,
        owner: &str,
        settings: &ChatSettings,
        transcript: &[MessageRecord],
    ) {
        let bytes = transcript.iter().map(size).sum::<usize>();
        let mut inner = self.lock();
        if inner.epoch != mark || bytes > MOST_PER_CHAT {
            return;
        }
        inner.remove(id);
        inner.bytes += bytes;
        let chat = Chat {
            owner: owner.to_string(),
            settings: settings.clone(),
            transcript: transcript.to_vec(),
            bytes,
        };
        inner.chats.insert(id.to_string(), chat);
        inner.fit(id);
    }

    /// Appends `rows`, just stored after the transcript's first `after` rows, to chat `id`'s
    /// kept transcript; forgets it when that is not where its transcript ends (it fell behind,
    /// or another row came first).
    pub fn extend(&self, id: &str, after: usize, rows: Vec<MessageRecord>) {
        let mut inner = self.lock();
        let Some(chat) = inner.chats.get_mut(id) else {
            return;
        };
        let bytes = rows.iter().map(size).sum::<usize>();
        if chat.transcript.len() != after || chat.bytes + bytes > MOST_PER_CHAT {
            inner.remove(id);
            return;
        }
        chat.transcript.extend(rows);
        chat.bytes += bytes;
        inner.bytes += bytes;
        inner.fit(id);
    }

    /// Whether `rows` could extend a kept transcript: not more than one kept chat may hold.
    pub fn holds(rows: &[NewMessage]) -> bool {
        let bytes: usize = rows
            .iter()
            .map(|m| said(&m.content, &m.name, &m.metadata))
            .sum();
        bytes <= MOST_PER_CHAT
    }

    /// Lets chat `id` go, after a write that changed it otherwise; a read begun before is not
    /// kept either.
    pub fn forget(&self, id: &str) {
        let mut inner = self.lock();
        inner.epoch += 1;
        inner.remove(id);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Inner {
    fn remove(&mut self, id: &str) {
        if let Some(chat) = self.chats.remove(id) {
            self.bytes -= chat.bytes;
        }
    }

    /// Lets other chats than `id` go until all of them fit in [`MOST_IN_ALL`].
    fn fit(&mut self, id: &str) {
        while self.bytes > MOST_IN_ALL {
            let Some(other) = self.chats.keys().find(|k| *k != id).cloned() else {
                return;
            };
            self.remove(&other);
        }
    }
}

/// About what a kept message holds, in bytes.
fn size(message: &MessageRecord) -> usize {
    std::mem::size_of::<MessageRecord>()
        + message.id.len()
        + message.created_at.len()
        + said(&message.content, &message.name, &message.metadata)
}

/// The bytes of what a message says: its content, name and metadata (as JSON).
fn said(content: &str, name: &Option<String>, metadata: &Option<serde_json::Value>) -> usize {
    let metadata = metadata.as_ref().map_or(0, |m| m.to_string().len());
    content.len() + name.as_ref().map_or(0, String::len) + metadata
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::Role;

    fn row(content: &str) -> MessageRecord {
        MessageRecord {
            id: format!("m-{}", content.len()),
            created_at: "2026-12-05T00:00:00.000000Z".into(),
            role: Role::User,
            content: content.into(),
            name: None,
            metadata: None,
        }
    }

    fn settings(prompt: &str) -> ChatSettings {
        ChatSettings {
            additional_system_prompt: Some(prompt.into()),
            enabled_tools: Vec::new(),
        }
    }

    fn contents(kept: &Kept, id: &str) -> Option<Vec<String>> {
        let (_, transcript) = kept.get(id, "ann")?;
        Some(transcript.into_iter().map(|m| m.content).collect())
    }

    #[test]
    fn a_kept_chat_is_its_owners_only() {
        let kept = Kept::default();
        kept.keep(kept.mark(), "c", "ann", &settings("p"), &[row("a")]);
        assert_eq!(kept.get("c", "ann").unwrap().0, settings("p"));
        assert!(kept.get("c", "bob").is_none());
        assert!(kept.get("d", "ann").is_none());
    }

    #[test]
    fn a_read_from_before_a_forget_is_not_kept() {
        let kept = Kept::default();
        let mark = kept.mark();
        // A settings write lands while the read is on its way.
        kept.forget("c");
        kept.keep(mark, "c", "ann", &settings("old"), &[row("a")]);
        assert!(kept.get("c", "ann").is_none());
        kept.keep(kept.mark(), "c", "ann", &settings("new"), &[row("a")]);
        assert_eq!(kept.get("c", "ann").unwrap().0, settings("new"));
        kept.forget("c");
        assert!(kept.get("c", "ann").is_none());
    }

    #[test]
    fn rows_extend_a_transcript_only_where_it_ends() {
        let kept = Kept::default();
        kept.keep(kept.mark(), "c", "ann", &settings("p"), &[row("a")]);
        kept.extend("c", 1, vec![row("b"), row("c")]);
        assert_eq!(contents(&kept, "c").unwrap(), ["a", "b", "c"]);
        // Placed after the second row: the kept transcript is not the stored one then.
        kept.extend("c", 2, vec![row("x")]);
        assert!(kept.get("c", "ann").is_none());
        // Nothing kept, nothing extended.
        kept.extend("c", 0, vec![row("y")]);
        assert!(kept.get("c", "ann").is_none());
    }

    #[test]
    fn long_transcripts_are_not_kept_and_all_of_them_fit() {
        let kept = Kept::default();
        let long = "x".repeat(MOST_PER_CHAT);
        kept.keep(kept.mark(), "long", "ann", &settings("p"), &[row(&long)]);
        assert!(kept.get("long", "ann").is_none());
        kept.keep(kept.mark(), "c", "ann", &settings("p"), &[row("a")]);
        kept.extend("c", 1, vec![row(&long)]);
        assert!(kept.get("c", "ann").is_none(), "grown past the cap: let go");
        let half = "x".repeat(MOST_PER_CHAT / 2);
        for i in 0..(2 * MOST_IN_ALL / MOST_PER_CHAT + 2) {
            kept.keep(
                kept.mark(),
                &format!("c{i}"),
                "ann",
                &settings("p"),
                &[row(&half)],
            );
        }
        let inner = kept.lock();
        assert!(inner.bytes <= MOST_IN_ALL, "{} bytes kept", inner.bytes);
        let counted: usize = inner.chats.values().map(|c| c.bytes).sum();
        assert_eq!(counted, inner.bytes);
        assert!(inner.chats.len() > 1);
    }

    /// Through the store: what a completion continues is what is stored, after each write to
    /// the chat, and a kept chat is read without the database.
    mod store {
        use crate::store::backend::{Calls, Chats};
        use crate::store::people::BUILTIN_ADMIN;
        use crate::store::sqlite::SqliteStore;
        use crate::store::sqlite::batch::tests::{call, user};
        use crate::store::{ChatPatch, ChatSettings, MessageRecord, NewChat, NewMessage};
        use crate::vocabulary::Role;

        async fn store() -> SqliteStore {
            let timeout = std::time::Duration::from_secs(5);
            SqliteStore::open("sqlite::memory:", timeout, true)
                .await
                .unwrap()
        }

        fn said(role: Role, content: &str) -> NewMessage {
            NewMessage {
                role,
                ..user(content)
            }
        }

        /// What a completion would continue, checked against a read of the database.
        async fn continued(store: &SqliteStore, id: &str) -> (ChatSettings, Vec<MessageRecord>) {
            let (settings, transcript) = store
                .chat_to_continue(id, BUILTIN_ADMIN)
                .await
                .unwrap()
                .expect("the chat");
            let transcript = transcript.expect("read ahead");
            let (chat, stored) = store.get_chat_with_messages(id).await.unwrap().unwrap();
            assert_eq!(settings, chat.settings());
            assert_eq!(transcript, stored);
            (settings, transcript)
        }

        fn kept_len(store: &SqliteStore, id: &str) -> Option<usize> {
            let kept = store.kept.as_ref().unwrap();
            kept.get(id, BUILTIN_ADMIN).map(|(_, t)| t.len())
        }

        /// A call: its rows stored after `read`, then its reply.
        async fn answer(store: &SqliteStore, id: &str, chat: &str, read: Vec<MessageRecord>) {
            let rows = vec![said(Role::User, &format!("question {id}"))];
            let begun = store.begin_call(call(id, chat), Some(read), |_| rows.clone());
            assert!(begun.await.unwrap());
            let reply = said(Role::Assistant, &format!("answer {id}"));
            let finished = store.finish_call(id, Some(chat), Some(reply), None, 1, None);
            finished.await.unwrap();
        }

        #[tokio::test]
        async fn a_kept_chat_follows_every_write_to_it() {
            let store = store().await;
            let chat = store
                .create_chat(NewChat::owned_by(BUILTIN_ADMIN))
                .await
                .unwrap();
            store
                .append_message(&chat.id, said(Role::User, "a"))
                .await
                .unwrap();
            let (_, read) = continued(&store, &chat.id).await;
            assert_eq!(kept_len(&store, &chat.id), Some(1), "kept once read");

            // A call's rows and its reply extend it, as stored.
            answer(&store, "call-1", &chat.id, read).await;
            assert_eq!(kept_len(&store, &chat.id), Some(3));
            let (_, read) = continued(&store, &chat.id).await;

            // Its settings changed: forgotten, and read again.
            let patch = ChatPatch {
                additional_system_prompt: Some(Some("Be brief.".into())),
                ..ChatPatch::default()
            };
            store.update_chat(&chat.id, patch).await.unwrap();
            assert_eq!(kept_len(&store, &chat.id), None);
            let (settings, _) = continued(&store, &chat.id).await;
            assert_eq!(
                settings.additional_system_prompt.as_deref(),
                Some("Be brief.")
            );

            // Another call stored its rows after the ones this one read: this one's are
            // placed after them, and the chat is read again.
            answer(&store, "call-2", &chat.id, read.clone()).await;
            answer(&store, "call-3", &chat.id, read).await;
            let (_, transcript) = continued(&store, &chat.id).await;
            assert_eq!(transcript.len(), 7);

            // A tool's row in the middle of a call: forgotten, and read again.
            let tool = said(Role::Tool, "a result");
            store.append_message(&chat.id, tool).await.unwrap();
            assert_eq!(kept_len(&store, &chat.id), None);
            continued(&store, &chat.id).await;

            // Deleted: no chat to continue, kept or not.
            assert!(store.delete_chat(&chat.id).await.unwrap());
            let gone = store
                .chat_to_continue(&chat.id, BUILTIN_ADMIN)
                .await
                .unwrap();
            assert!(gone.is_none());
        }

        /// Kept, a chat is continued without a round trip: with the writer closed, a kept
        /// chat still answers, and one not kept cannot be read.
        #[tokio::test]
        async fn a_kept_chat_is_continued_without_reading() {
            let store = store().await;
            let owned = || NewChat::owned_by(BUILTIN_ADMIN);
            let kept = store.create_chat(owned()).await.unwrap();
            let other = store.create_chat(owned()).await.unwrap();
            continued(&store, &kept.id).await;
            assert_eq!(kept_len(&store, &kept.id), Some(0));
            // Another owner's is not found, kept or not.
            let others = store.chat_to_continue(&kept.id, "another").await;
            assert!(others.unwrap().is_none());
            store.writer.close().await;
            let read = store.chat_to_continue(&kept.id, BUILTIN_ADMIN).await;
            assert!(read.unwrap().is_some());
            assert!(
                store
                    .chat_to_continue(&other.id, BUILTIN_ADMIN)
                    .await
                    .is_err()
            );
            // A settings write that fails forgets the chat all the same: whether it was made
            // is not known to the kept copy.
            let patch = ChatPatch {
                additional_system_prompt: Some(Some("Be brief.".into())),
                ..ChatPatch::default()
            };
            assert!(store.update_chat(&kept.id, patch).await.is_err());
            assert_eq!(kept_len(&store, &kept.id), None);
        }

        /// A store beside a server (`chatd users`) keeps nothing: it is not the only writer.
        #[tokio::test]
        async fn only_a_server_keeps_chats() {
            let timeout = std::time::Duration::from_secs(5);
            let beside = SqliteStore::open("sqlite::memory:", timeout, false);
            assert!(beside.await.unwrap().kept.is_none());
        }
    }
}
