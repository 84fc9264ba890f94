//! What one session's folder may hold, and what it holds now ([`Budget`]): every write and
//! every creation of [`super::tree`] goes through it.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use super::Limits;
use super::error::{FsError, FsResult};
use crate::plugins::memory::TotalMemory;

/// What one session's folder may hold, and what it holds now. Shared by its nodes' writers; the
/// bytes are also taken from the memory all plugin instances share ([`TotalMemory`]), so files
/// count against the same cap as the interpreter's memory, and are given back when the folder
/// goes.
#[derive(Debug)]
pub struct Budget {
    pub limits: Limits,
    bytes: AtomicU64,
    entries: AtomicUsize,
    /// Files and folders created since [`Budget::new_call`].
    created: AtomicUsize,
    /// The call now running, counted from 1; a file remembers the call that last wrote it.
    call: AtomicU64,
    memory: TotalMemory,
}

impl Budget {
    pub(super) fn new(limits: Limits, memory: TotalMemory) -> Self {
        Self {
            limits,
            bytes: AtomicU64::new(0),
            entries: AtomicUsize::new(0),
            created: AtomicUsize::new(0),
            call: AtomicU64::new(0),
            memory,
        }
    }

    /// A call starts: its creations are counted from zero, its writes marked with its number.
    pub fn new_call(&self) -> u64 {
        self.created.store(0, Ordering::Relaxed);
        self.call.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn bytes(&self) -> u64 {
        self.bytes.load(Ordering::Relaxed)
    }

    /// A file goes from `old` to `new` bytes.
    pub(super) fn resize(&self, old: u64, new: u64) -> FsResult<()> {
        if new > self.limits.max_file_bytes {
            return Err(FsError::FileTooLarge);
        }
        if new <= old {
            let less = old - new;
            self.bytes.fetch_sub(less, Ordering::Relaxed);
            self.memory.give_back(less as usize);
            return Ok(());
        }
        let more = new - old;
        let fits = self
            .bytes
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(more)
                    .filter(|after| *after <= self.limits.max_folder_bytes)
            })
            .is_ok();
        if !fits {
            return Err(FsError::NoSpace);
        }
        if self.memory.take(more as usize).is_err() {
            self.bytes.fetch_sub(more, Ordering::Relaxed);
            return Err(FsError::NoSpace);
        }
        Ok(())
    }

    /// A file or folder is created (by the running call when `counted`).
    pub(super) fn create(&self, counted: bool) -> FsResult<()> {
        if self.entries.load(Ordering::Relaxed) >= self.limits.max_entries {
            return Err(FsError::NoSpace);
        }
        if counted {
            let created = self.created.fetch_add(1, Ordering::Relaxed);
            if created >= self.limits.max_files_per_call {
                self.created.fetch_sub(1, Ordering::Relaxed);
                return Err(FsError::Quota);
            }
        }
        self.entries.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    pub(super) fn remove(&self) {
        self.entries.fetch_sub(1, Ordering::Relaxed);
    }

    pub(super) fn call(&self) -> u64 {
        self.call.load(Ordering::Relaxed)
    }
}
