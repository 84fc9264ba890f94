//! The memory all plugin instances of one host hold together, and its cap
//! (CHATD_PLUGIN_MEMORY_TOTAL_MIB): one manifest's `limits.memoryMib` bounds one instance, and
//! this bounds them all, so that many calls at once (or long-lived shared instances) cannot
//! take the machine's memory. Past it, the growth that would pass it traps, failing its own
//! call with a message naming the setting; the host and the other calls go on.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The count and its cap: each store's `state::Limiter` takes from it as its memories grow and
/// gives back when the store is dropped. Cheap to clone: a handle.
#[derive(Clone, Debug)]
pub struct TotalMemory(Arc<TotalMemoryInner>);

#[derive(Debug)]
struct TotalMemoryInner {
    cap: usize,
    used: AtomicUsize,
}

impl TotalMemory {
    pub fn new(cap_bytes: usize) -> Self {
        Self(Arc::new(TotalMemoryInner {
            cap: cap_bytes,
            used: AtomicUsize::new(0),
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

    /// Takes `bytes` more, unless that would pass the cap.
    pub(super) fn take(&self, bytes: usize) -> Result<(), usize> {
        self.0
            .used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|after| *after <= self.0.cap)
            })
            .map(drop)
    }

    pub(super) fn give_back(&self, bytes: usize) {
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
