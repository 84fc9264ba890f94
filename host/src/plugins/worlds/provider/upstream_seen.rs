//! What the host sees of a host-driven turn's upstream request besides what the plugin decodes:
//! whether it was sent, whether an answer's head came back, and the wait an error status asked
//! for (the retry policy's inputs, `chat/retry.rs`).

use std::time::Duration;

/// What the host saw of a turn's upstream request besides what the plugin decoded: whether it
/// sent the request and had an answer's head back, and how long an error status asked the
/// client to wait before trying again. A plugin-driven turn sends its requests itself, so the
/// host sees nothing of it.
#[derive(Debug, Default)]
pub struct UpstreamSeen {
    sent: std::sync::atomic::AtomicBool,
    answered: std::sync::atomic::AtomicBool,
    retry_after: std::sync::Mutex<Option<Duration>>,
}

impl UpstreamSeen {
    /// The wait the upstream asked for with its error status, if it asked.
    pub fn retry_after(&self) -> Option<Duration> {
        *self.retry_after.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The host sent the turn's request and no answer came back: the connection failed before
    /// the upstream answered anything (so nothing of the turn was generated).
    pub fn unanswered(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        self.sent.load(Relaxed) && !self.answered.load(Relaxed)
    }

    /// The host is sending the turn's request.
    pub(crate) fn sending(&self) {
        self.sent.store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// The answer's head: an error status's `retry-after-ms` or `Retry-After` is kept.
    pub(crate) fn head<'a>(&self, status: u16, headers: impl Iterator<Item = (&'a str, &'a str)>) {
        self.answered
            .store(true, std::sync::atomic::Ordering::Relaxed);
        if status >= 400 {
            *self.retry_after.lock().unwrap_or_else(|e| e.into_inner()) =
                retry_after(headers, std::time::SystemTime::now());
        }
    }
}

/// The wait a response asks for: `retry-after-ms` (milliseconds, the OpenAI and Anthropic SDKs'
/// header) before `Retry-After` (seconds, or an HTTP date; RFC 9110 §10.2.3). Anything
/// unreadable is no wait asked.
fn retry_after<'a>(
    headers: impl Iterator<Item = (&'a str, &'a str)>,
    now: std::time::SystemTime,
) -> Option<Duration> {
    let (mut ms, mut after) = (None, None);
    for (name, value) in headers {
        let value = value.trim();
        if name.eq_ignore_ascii_case("retry-after-ms") {
            ms = value
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0 && *v < 1e12)
                .map(|v| Duration::from_micros((v * 1000.0) as u64));
        } else if name.eq_ignore_ascii_case("retry-after") {
            after = match value.parse::<u64>() {
                Ok(secs) => Some(Duration::from_secs(secs.min(1 << 32))),
                Err(_) => httpdate::parse_http_date(value)
                    .ok()
                    .map(|at| at.duration_since(now).unwrap_or_default()),
            };
        }
    }
    ms.or(after)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::SystemTime;

    #[test]
    fn retry_after_reads_milliseconds_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let read = |headers: &[(&str, &str)]| retry_after(headers.iter().copied(), now);
        assert_eq!(read(&[("Retry-After", "3")]), Some(Duration::from_secs(3)));
        assert_eq!(
            read(&[("retry-after", "2"), ("retry-after-ms", "250.5")]),
            Some(Duration::from_micros(250_500))
        );
        let date = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(
            read(&[("retry-after", &date)]),
            Some(Duration::from_secs(7))
        );
        // A date already past asks for no wait; nonsense is no answer.
        let past = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(read(&[("retry-after", &past)]), Some(Duration::ZERO));
        assert_eq!(
            read(&[("retry-after", "soon"), ("retry-after-ms", "-1")]),
            None
        );
        assert_eq!(read(&[]), None);
    }

    #[test]
    fn only_an_error_status_is_asked_for_its_wait() {
        let seen = UpstreamSeen::default();
        assert!(!seen.unanswered(), "nothing sent yet");
        seen.sending();
        assert!(seen.unanswered());
        seen.head(200, [("retry-after", "3")].into_iter());
        assert!(!seen.unanswered());
        assert_eq!(seen.retry_after(), None);
        seen.head(429, [("retry-after", "3")].into_iter());
        assert_eq!(seen.retry_after(), Some(Duration::from_secs(3)));
    }
}
