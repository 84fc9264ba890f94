//! Which failed turns are tried again, and after how long (the operator's numbers are
//! `[retry]` of the configuration file, `config::retry`).
//!
//! A turn is tried again only when the upstream refused it before answering anything: a 429, a
//! 500, 502, 503, 504 or 529 status, or a connection that failed before any answer's head came
//! back (the host saw it: a host-driven turn), and the turn gave no event at all (no text, no tool
//! call, not even usage). Nothing of it reached the client then, and nothing was generated to
//! pay for twice: a body cut after its head, or one over a size cap, is not retried, even when
//! nothing of it was decoded yet (a whole answer is decoded at its end; a tool call at its
//! end). A failure after the first event is never retried. An error the upstream reports inside
//! a stream it began (Anthropic's `overloaded_error` after `message_start`) is a failure after
//! the head, and is not retried either. The wait is
//! what the upstream asked for (`retry-after-ms`, `Retry-After`), else an exponential backoff
//! with jitter; a wait past what is left of the turn's budget is not waited for: the turn fails
//! (or goes to the fallback) at once.

use std::time::Duration;

use crate::config::retry::RetryPolicy;
use crate::plugins::runtime::CallError;
use crate::plugins::worlds::provider::{PluginError, TurnOutcome};

/// The first backoff; each next one doubles, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// The statuses that say "not now" rather than "not this": rate limits and an unavailable or
/// overloaded upstream (529 is Anthropic's overloaded).
const RETRIED_STATUSES: [u16; 6] = [429, 500, 502, 503, 504, 529];

/// The error kind (as metrics name it) of a turn that may be tried again: it failed with a
/// refusal that says "not now" and gave no event. `unanswered`: the host sent the request and
/// no answer's head came back (`UpstreamSeen::unanswered`).
pub(super) fn retryable(
    result: &Result<Result<TurnOutcome, PluginError>, CallError>,
    events: usize,
    unanswered: bool,
) -> Option<&'static str> {
    if events > 0 {
        return None;
    }
    match result {
        Ok(Err(PluginError::Upstream(e))) if RETRIED_STATUSES.contains(&e.status) => {
            Some(if e.status < 500 {
                "upstream_4xx"
            } else {
                "upstream_5xx"
            })
        }
        Ok(Err(PluginError::Transport(_))) if unanswered => Some("transport"),
        _ => None,
    }
}

/// How long to wait before try `failed + 1`, after try `failed` (1-based) failed and `waited`
/// was spent waiting already; `None`: no more tries.
pub(super) fn delay(
    policy: &RetryPolicy,
    failed: u32,
    waited: Duration,
    asked: Option<Duration>,
) -> Option<Duration> {
    if failed >= policy.attempts {
        return None;
    }
    let left = policy.max_wait.saturating_sub(waited);
    let wait = asked.unwrap_or_else(|| backoff(failed));
    (wait <= left).then_some(wait)
}

/// The backoff after try `failed`: doubling from [`FIRST_BACKOFF`], with up to a quarter taken
/// off at random, so that clients refused together do not come back together.
fn backoff(failed: u32) -> Duration {
    let full = FIRST_BACKOFF
        .saturating_mul(1 << failed.saturating_sub(1).min(16))
        .min(MAX_BACKOFF);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    full - full.mul_f64(f64::from(nanos % 1000) / 4000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::worlds::provider::UpstreamError;

    fn refused(status: u16) -> Result<Result<TurnOutcome, PluginError>, CallError> {
        Ok(Err(PluginError::Upstream(UpstreamError {
            status,
            message: "no".into(),
        })))
    }

    #[test]
    fn only_refusals_before_any_event_are_retried() {
        assert_eq!(retryable(&refused(429), 0, false), Some("upstream_4xx"));
        assert_eq!(retryable(&refused(529), 0, false), Some("upstream_5xx"));
        assert_eq!(
            retryable(&refused(429), 1, false),
            None,
            "after an event: never"
        );
        for status in [400, 401, 403, 404, 413, 422, 501, 0] {
            assert_eq!(retryable(&refused(status), 0, false), None, "{status}");
        }
        let failed = Ok(Err(PluginError::Transport("reset".into())));
        assert_eq!(retryable(&failed, 0, true), Some("transport"));
        // A body cut after its head (or over a cap), or a plugin's own request: not retried.
        assert_eq!(retryable(&failed, 0, false), None);
        let malformed = Ok(Err(PluginError::MalformedResponse("x".into())));
        assert_eq!(retryable(&malformed, 0, true), None);
    }

    #[test]
    fn waits_stay_within_the_attempts_and_the_budget() {
        let policy = RetryPolicy {
            attempts: 3,
            max_wait: Duration::from_secs(5),
            fallback: None,
        };
        let asked = Some(Duration::from_secs(2));
        assert_eq!(delay(&policy, 1, Duration::ZERO, asked), asked);
        assert_eq!(delay(&policy, 2, Duration::from_secs(2), asked), asked);
        assert_eq!(
            delay(&policy, 3, Duration::ZERO, asked),
            None,
            "attempts used up"
        );
        // A Retry-After past what is left is not waited for.
        assert_eq!(delay(&policy, 1, Duration::from_secs(4), asked), None);
        let own = delay(&policy, 2, Duration::ZERO, None).unwrap();
        assert!(
            own <= Duration::from_secs(1) && own >= Duration::from_millis(750),
            "{own:?}"
        );
        assert!(backoff(30) <= MAX_BACKOFF);
    }
}
