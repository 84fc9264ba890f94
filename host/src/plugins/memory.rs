//! The memory all plugin instances of one host hold together, and its cap
//! (CHATD_PLUGIN_MEMORY_TOTAL_MIB): one manifest's `limits.memoryMib` bounds one instance, and
//! this bounds them all, so that many calls at once (or long-lived shared instances) cannot
//! take the machine's memory. Past it, the growth that would pass it traps, failing its own
//! call with a message naming the setting; the host and the other calls go on. Before that, what
//! can be given back is: idle interpreter sessions ([`Reclaim`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};

/// The count and its cap: each store's `state::Limiter` takes from it as its memories grow and
/// gives back when the store is dropped. Cheap to clone: a handle.
#[derive(Clone, Debug)]
pub struct TotalMemory(Arc<TotalMemoryInner>);

struct TotalMemoryInner {
    cap: usize,
    used: AtomicUsize,
    /// What ends idle sessions when a growth would pass the cap (the interpreter's sessions).
    reclaim: OnceLock<Weak<dyn Reclaim>>,
}

impl std::fmt::Debug for TotalMemoryInner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TotalMemory")
            .field("cap", &self.cap)
            .field("used", &self.used)
            .finish()
    }
}

/// Holders of memory that can give some back on demand: idle sessions, ended until `fits`
/// says the growth waiting fits, or none is left. Whether any was ended.
pub trait Reclaim: Send + Sync {
    fn reclaim(&self, fits: &mut dyn FnMut() -> bool) -> bool;
}

impl TotalMemory {
    pub fn new(cap_bytes: usize) -> Self {
        Self(Arc::new(TotalMemoryInner {
            cap: cap_bytes,
            used: AtomicUsize::new(0),
            reclaim: OnceLock::new(),
        }))
    }

    /// No cap (tools outside a server: `chatd plugins call`, one-off loads).
    pub fn unlimited() -> Self {
        Self::new(usize::MAX)
    }

    /// Bytes held by all instances now.
    pub fn in_use(&self) -> usize {
        self.0.used.load(Ordering::Relaxed)
    }

    /// The cap, in bytes.
    pub fn cap(&self) -> usize {
        self.0.cap
    }

    /// Who gives memory back when it runs short (set once; later calls are ignored).
    pub fn set_reclaim(&self, reclaim: Weak<dyn Reclaim>) {
        let _ = self.0.reclaim.set(reclaim);
    }

    /// Takes `bytes` more, unless that would pass the cap even after idle sessions are ended.
    pub(crate) fn take(&self, bytes: usize) -> Result<(), usize> {
        if self.try_take(bytes).is_ok() {
            return Ok(());
        }
        let Some(reclaim) = self.0.reclaim.get().and_then(Weak::upgrade) else {
            return self.try_take(bytes);
        };
        let cap = self.0.cap;
        reclaim.reclaim(&mut || self.in_use().saturating_add(bytes) <= cap);
        self.try_take(bytes)
    }

    fn try_take(&self, bytes: usize) -> Result<(), usize> {
        self.0
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|after| *after <= self.0.cap)
            })
            .map(drop)
    }

    pub(crate) fn give_back(&self, bytes: usize) {
        self.0.used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

impl Default for TotalMemory {
    fn default() -> Self {
        Self::unlimited()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_taken_stays_within_the_cap_until_given_back() {
        let total = TotalMemory::new(100);
        assert!(total.take(60).is_ok());
        assert!(total.clone().take(50).is_err(), "60 + 50 passes 100");
        assert!(total.take(40).is_ok());
        assert_eq!(total.in_use(), 100);
        total.give_back(60);
        assert!(total.take(50).is_ok());
        assert_eq!(total.in_use(), 90);
        assert!(TotalMemory::unlimited().take(usize::MAX).is_ok());
    }
}
