//! The servers' signs of life, and the calls a server left open when it stopped without ending
//! them (kill -9, a crash, power loss). A graceful shutdown ends every call itself (docs/api.md,
//! "Shutdown"). Each server process is a row of `instances` that it renews (SQLite: every
//! [`HEARTBEAT`]; PostgreSQL: a lease);
//! a call left open by a server no longer alive is closed with [`LOST_REPLY`] and a latency up
//! to that server's last sign of life. Which servers count as gone is the backend's rule: on
//! SQLite every earlier process (one process per database, `sqlite/liveness.rs`); on
//! PostgreSQL those whose lease ran out (`postgres/liveness.rs`). The loop that beats is
//! `runs/beat.rs`: on a shared database a lost lease concerns runs too.

use chrono::DateTime;

/// How often a server on SQLite records that it is alive: the most a lost call's end and latency
/// can be short of the truth (one small write a second).
pub const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(1);

/// The error a call left open by a stopped server is closed with.
pub const LOST_REPLY: &str = "the server stopped before the reply was finished";

/// When a call lost with its server ended, and its latency: the server's last sign of life
/// `alive` (or the call's start, when it started after that sign or there is none).
pub(super) fn lost_call_end(created_at: &str, alive: Option<&str>) -> (String, i64) {
    match alive {
        Some(alive) if millis_between(created_at, alive) > 0 => {
            (alive.to_string(), millis_between(created_at, alive))
        }
        _ => (created_at.to_string(), 0),
    }
}

/// Milliseconds from `start` to `end` (stored timestamps); 0 when `end` is not later or either
/// does not parse.
pub(super) fn millis_between(start: &str, end: &str) -> i64 {
    match (
        DateTime::parse_from_rfc3339(start),
        DateTime::parse_from_rfc3339(end),
    ) {
        (Ok(start), Ok(end)) => (end - start).num_milliseconds().max(0),
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::millis_between;

    #[test]
    fn latency_is_the_time_between_two_stored_stamps_never_negative() {
        let start = "2026-11-24T10:00:00.250000Z";
        assert_eq!(millis_between(start, "2026-11-24T10:00:05.750000Z"), 5_500);
        assert_eq!(millis_between(start, "2026-11-24T09:00:00.000000Z"), 0);
        assert_eq!(millis_between(start, "not a time"), 0);
    }

    #[test]
    fn a_lost_call_ends_at_the_last_sign_of_life() {
        let start = "2026-11-24T10:00:00.250000Z";
        let alive = "2026-11-24T10:00:05.750000Z";
        assert_eq!(
            super::lost_call_end(start, Some(alive)),
            (alive.to_string(), 5_500)
        );
        assert_eq!(
            super::lost_call_end(alive, Some(start)),
            (alive.to_string(), 0)
        );
        assert_eq!(super::lost_call_end(start, None), (start.to_string(), 0));
    }
}
