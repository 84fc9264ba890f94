//! A run's event log and its readers, the event ids clients resume with, and the switch a
//! client's stop throws: what a run's task and its clients share.
//!
//! A run's events are kept in order in its [`RunLog`] until the run ends. A reader holds a
//! cursor into the log: it takes what is there under the lock, then waits for the length to
//! grow. Replay and follow are the same loop, so an attaching client can neither miss an event
//! nor see one twice, and a slow reader never holds up the run (there is no per-reader queue).
//!
//! On a shared database the owner's log also hands each event to the database writer
//! (`runs/shared.rs`), and an instance following another's run keeps a mirror of its log, filled
//! from the database by sequence: the frames, ids included, are the owner's byte for byte.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use bytes::Bytes;
use tokio::sync::{Notify, watch};

use crate::store::RunEvent;

/// Takes each event an owner logs, in order, to record it where other instances read it.
pub(crate) type Forward = Box<dyn Fn(RunEvent) + Send + Sync>;

/// One run's events, in order, each already framed for SSE (`id:`, `event:`, `data:`), so every
/// reader sends the same bytes without serializing again.
///
/// An event's id is `<run>-<position>`: the run's tag, then the event's 1-based position. The tag
/// is what tells a `Last-Event-ID` of this run from one of an earlier run of the same chat or
/// search, whose positions would otherwise skip events of this one.
pub struct RunLog {
    /// This run's part of its event ids, written as 8 hex digits.
    tag: u32,
    events: Mutex<Events>,
    /// The number of events, and whether the last one was terminal.
    len: watch::Sender<(usize, bool)>,
    /// The owner's hand-off to the database (shared runs), with the run's id.
    forward: Option<(Arc<str>, Forward)>,
    /// A copy of a run another instance owns, which may be behind the ids its clients were
    /// given.
    mirror: bool,
}

impl std::fmt::Debug for RunLog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunLog")
            .field("tag", &self.tag)
            .field("len", &*self.len.borrow())
            .field("mirror", &self.mirror)
            .finish_non_exhaustive()
    }
}

#[derive(Default)]
struct Events {
    frames: Vec<Bytes>,
    /// Set when the terminal event's position is taken: only the terminal event comes after.
    closed: bool,
}

/// The next run's tag. Counting from a random start: two runs of one process never share a tag
/// (short of 2^32 runs), and a restarted server's tags have nothing to do with the last one's,
/// so an id kept from before a restart matches a new run only by a 1-in-2^32 chance (as does one
/// from a run of the same chat on another instance).
static NEXT_TAG: LazyLock<AtomicU32> = LazyLock::new(|| {
    use std::hash::BuildHasher;
    // The standard library's hasher keys are random per process: a random number without a
    // dependency for it.
    let random = std::collections::hash_map::RandomState::new().hash_one(std::process::id());
    AtomicU32::new(random as u32)
});

pub(crate) fn next_tag() -> u32 {
    NEXT_TAG.fetch_add(1, Ordering::Relaxed)
}

impl Default for RunLog {
    fn default() -> Self {
        Self::new(next_tag(), None, false)
    }
}

impl RunLog {
    pub(crate) fn new(tag: u32, forward: Option<(Arc<str>, Forward)>, mirror: bool) -> Self {
        Self {
            tag,
            events: Mutex::default(),
            len: watch::Sender::new((0, false)),
            forward,
            mirror,
        }
    }

    /// Appends an event: `name` and its JSON `data`. Its SSE id is the run's tag and its 1-based
    /// position. Once [`RunLog::close`] took the terminal event's position, only that event is
    /// taken.
    pub fn push(&self, name: &str, data: &str, terminal: bool) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if events.closed && !terminal {
            return;
        }
        let seq = events.frames.len() + 1;
        // Under the lock, so the database gets them in order. The terminal event is written by
        // `Run::finish`, before it is pushed here.
        if let (Some((run_id, forward)), false) = (&self.forward, terminal) {
            forward(RunEvent {
                run_id: run_id.clone(),
                seq: seq as u32,
                name: name.to_string(),
                data: data.to_string(),
                terminal,
            });
        }
        self.append(&mut events, name, data, terminal);
    }

    /// Takes the terminal event's position: events pushed from now on are dropped, but for the
    /// terminal one.
    pub(crate) fn close(&self) -> u32 {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        events.closed = true;
        events.frames.len() as u32 + 1
    }

    /// A mirror's next event from the database: taken only at the next position, so a
    /// duplicate or one out of order (two catch-ups crossing) changes nothing.
    pub(crate) fn push_at(&self, event: &RunEvent) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if event.seq as usize == events.frames.len() + 1 && !self.len.borrow().1 {
            self.append(&mut events, &event.name, &event.data, event.terminal);
        }
    }

    fn append(&self, events: &mut Events, name: &str, data: &str, terminal: bool) {
        let id = events.frames.len() + 1;
        let mut frame = String::with_capacity(data.len() + name.len() + 48);
        // Writing to a String cannot fail.
        let _ = write!(frame, "id: {:08x}-{id}\nevent: ", self.tag);
        frame.push_str(name);
        // JSON text has no raw newlines, so one `data:` line carries it.
        frame.push_str("\ndata: ");
        frame.push_str(data);
        frame.push_str("\n\n");
        events.frames.push(Bytes::from(frame));
        // Under the lock, so readers see lengths in push order.
        self.len.send_replace((id, terminal));
    }

    /// How many events are logged, and whether the last is terminal.
    pub(crate) fn len(&self) -> (usize, bool) {
        *self.len.borrow()
    }

    /// A reader from the first event.
    pub fn reader(self: &Arc<Self>) -> RunReader {
        self.reader_at(0)
    }

    /// A reader after `last` (a `Last-Event-ID`) when it is one of this run's events; from the
    /// first event when it is not (it came from an earlier run: all of this one is new to its
    /// client) or there is none. A position this run has not reached is not one of its events
    /// either: no client was given its id, and skipping to it would hide events that client
    /// never saw. A mirror is the exception: the owner gave out ids before they reached the
    /// database, so a position ahead of a mirror is one it has yet to catch up with.
    pub fn reader_after(self: &Arc<Self>, last: Option<&EventId>) -> RunReader {
        match last {
            Some(last)
                if last.run == Some(self.tag)
                    && (self.mirror || last.position <= self.len.borrow().0) =>
            {
                self.reader_at(last.position)
            }
            _ => self.reader(),
        }
    }

    fn reader_at(self: &Arc<Self>, skip: usize) -> RunReader {
        RunReader {
            log: self.clone(),
            len: self.len.subscribe(),
            cursor: skip,
        }
    }
}

/// An event id as the `id:` lines give it, `<run>-<position>`: what a client sends back as
/// `Last-Event-ID` to resume after that event.
#[derive(Debug, PartialEq, Eq)]
pub struct EventId {
    /// `None` for a bare position: the ids of chatd before run tags, which can only name an
    /// event of a run that is gone (runs do not outlive the server).
    run: Option<u32>,
    position: usize,
}

impl EventId {
    /// `None` unless `text` is 8 hex digits, `-` and a position, or a position alone.
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let (run, position) = match text.split_once('-') {
            Some((run, position)) => {
                let hex = run.len() == 8 && run.bytes().all(|b| b.is_ascii_hexdigit());
                (
                    Some(u32::from_str_radix(run, 16).ok().filter(|_| hex)?),
                    position,
                )
            }
            None => (None, text),
        };
        // Digits only: `usize`'s parser would take a sign too.
        if position.is_empty() || !position.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Some(Self {
            run,
            position: position.parse().ok()?,
        })
    }
}

/// Reads a run's events from a position: first what is logged, then each new one, until the
/// terminal event.
pub struct RunReader {
    log: Arc<RunLog>,
    len: watch::Receiver<(usize, bool)>,
    cursor: usize,
}

impl RunReader {
    /// The next frames (all logged since the last call), or `None` after the terminal event.
    pub async fn next(&mut self) -> Option<Vec<Bytes>> {
        let cursor = self.cursor;
        // A new event, or the end (a resumed reader may already be past the last event).
        let (len, terminal) = match self
            .len
            .wait_for(|(len, terminal)| *len > cursor || *terminal)
            .await
        {
            Ok(seen) => *seen,
            // The log was dropped with its run: nothing more will come.
            Err(_) => return None,
        };
        let events = self.log.events.lock().unwrap_or_else(|e| e.into_inner());
        let frames = &events.frames;
        if len <= cursor {
            self.cursor = len;
            // Past the end of a mirror that ended: its client saw events of the owner's that
            // never reached the database (the owner died, or lost the run). It still gets the
            // run's end.
            return (terminal && len < cursor).then(|| frames[len - 1..len].to_vec());
        }
        self.cursor = len;
        Some(frames[cursor.min(frames.len())..len.min(frames.len())].to_vec())
    }

    /// Whether the reader has passed the terminal event.
    pub fn finished(&self) -> bool {
        let (len, terminal) = *self.len.borrow();
        terminal && self.cursor >= len
    }
}

/// The switch a client's stop throws (`POST /v1/chats/:chatId/stream/cancel`), shared by a run's
/// registry entry (`runs`) and its completion. A flag and a `Notify`: a few dozen bytes per run,
/// where a watch channel took half a KiB (memory per live stream, BENCHMARKS.md).
#[derive(Debug, Default)]
pub struct StopSwitch {
    requested: AtomicBool,
    notify: Notify,
}

impl StopSwitch {
    /// Asks the run to stop; any later wait sees it too.
    pub fn request(&self) {
        self.requested.store(true, Ordering::SeqCst);
        self.notify.notify_waiters();
    }
}

/// What a completion watches for a client's stop; a run nobody can stop has none
/// ([`Stop::default`]).
#[derive(Clone, Debug, Default)]
pub struct Stop(Option<Arc<StopSwitch>>);

impl Stop {
    pub fn new(switch: Arc<StopSwitch>) -> Self {
        Self(Some(switch))
    }

    /// Resolves once a stop is requested; never, for a run nobody can stop.
    pub async fn requested(&self) {
        let Some(switch) = &self.0 else {
            return std::future::pending().await;
        };
        loop {
            // Made before the flag is read: `notify_waiters` wakes every `Notified` that
            // exists, polled or not, so a request between the two is not missed.
            let notified = switch.notify.notified();
            if switch.requested.load(Ordering::SeqCst) {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[tokio::test]
    async fn a_reader_replays_then_follows_without_loss_or_repeats() {
        let log = Arc::new(RunLog::default());
        log.push("meta", "{}", false);
        log.push("delta", r#"{"text":"a"}"#, false);
        let mut late = log.reader();
        let first_id = EventId::parse(&format!("{:08x}-1", log.tag)).unwrap();
        let mut resumed = log.reader_after(Some(&first_id));
        let writer = {
            let log = log.clone();
            tokio::spawn(async move {
                for i in 0..100 {
                    log.push("delta", &format!(r#"{{"text":"{i}"}}"#), false);
                    tokio::task::yield_now().await;
                }
                log.push("done", "{}", true);
            })
        };
        let mut seen = Vec::new();
        while !late.finished() {
            seen.extend(late.next().await.unwrap());
        }
        writer.await.unwrap();
        assert_eq!(seen.len(), 103);
        for (i, frame) in seen.iter().enumerate() {
            let text = std::str::from_utf8(frame).unwrap();
            let id = format!("id: {:08x}-{}\n", log.tag, i + 1);
            assert!(text.starts_with(&id), "{text}");
        }
        let first = resumed.next().await.unwrap();
        let id = format!("id: {:08x}-2\n", log.tag);
        assert!(std::str::from_utf8(&first[0]).unwrap().starts_with(&id));
    }

    #[test]
    fn event_ids_parse_as_the_id_lines_give_them() {
        let id = EventId::parse(" 0a1B2c3d-12 ").unwrap();
        assert_eq!((id.run, id.position), (Some(0x0a1b2c3d), 12));
        let bare = EventId::parse("7").unwrap();
        assert_eq!((bare.run, bare.position), (None, 7));
        for bad in [
            "",
            "-12",
            "0a1b2c3d-",
            "0a1b2c3d-x",
            "0a1b2c3d--1",
            "0a1b2c3d-+1",
            "+1",
            "zz-1",
            "abc-1",
            "0a1b2c3d0-1",
        ] {
            assert_eq!(EventId::parse(bad), None, "{bad:?}");
        }
    }

    #[tokio::test]
    async fn an_id_from_another_run_replays_this_one_from_the_start() {
        let (earlier, log) = (RunLog::default(), Arc::new(RunLog::default()));
        assert_ne!(earlier.tag, log.tag);
        log.push("meta", "{}", false);
        log.push("delta", "{}", false);
        for stale in [format!("{:08x}-1", earlier.tag), "1".to_string()] {
            let stale = EventId::parse(&stale).unwrap();
            let frames = log.reader_after(Some(&stale)).next().await.unwrap();
            assert_eq!(frames.len(), 2, "{stale:?}");
        }
        let own = EventId::parse(&format!("{:08x}-1", log.tag)).unwrap();
        assert_eq!(log.reader_after(Some(&own)).next().await.unwrap().len(), 1);
    }

    #[tokio::test]
    async fn a_position_past_the_end_replays_from_the_start() {
        let log = Arc::new(RunLog::default());
        log.push("meta", "{}", false);
        log.push("done", "{}", true);
        let at = |position: usize| EventId::parse(&format!("{:08x}-{position}", log.tag));
        // Resumed after its last event, a finished run has nothing more to give.
        assert!(log.reader_after(at(2).as_ref()).next().await.is_none());
        // No client was given an id past the end: all of the run is new to it.
        let mut reader = log.reader_after(at(5).as_ref());
        assert_eq!(reader.next().await.unwrap().len(), 2);
        assert!(reader.next().await.is_none());
    }
}
