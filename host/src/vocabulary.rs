//! The words the API, the store and the runs share: roles, search types, ids and timestamps. A role
//! or a search type is the same word stored and on the wire, so its serde and schema derives are
//! here (the map's one exception besides `http/`, the streams' events and `attachments/wire.rs`).
//! Nothing here touches SQL or HTTP. Provider ids are plain strings: which ones exist is the
//! running server's data (`plugins::snapshot::Snapshot::provider`), and stored chats keep whatever
//! id they were written with.

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicI64, Ordering};

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    System,
    User,
    Assistant,
    Tool,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

impl FromStr for Role {
    type Err = UnknownValue;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "system" => Ok(Role::System),
            "user" => Ok(Role::User),
            "assistant" => Ok(Role::Assistant),
            "tool" => Ok(Role::Tool),
            other => Err(UnknownValue(other.to_string())),
        }
    }
}

/// `type` of a run: how hard the engine searches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SearchType {
    Auto,
    Fast,
    Deep,
    Instant,
}

impl SearchType {
    pub fn as_str(self) -> &'static str {
        match self {
            SearchType::Auto => "auto",
            SearchType::Fast => "fast",
            SearchType::Deep => "deep",
            SearchType::Instant => "instant",
        }
    }
}

/// What a person may do: an admin manages people and budgets; a member has only their own
/// things. Neither reads another person's chats (docs/teams.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PersonRole {
    Admin,
    Member,
}

/// What a key may reach (docs/teams.md, "Keys and scopes"): `chat` every `/v1` route but
/// `/v1/users`, `openai` `/openai/v1`, `mcp` `/mcp`, `admin` `/v1/users` and the operator's
/// routes. The order is the order keys list them in.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, ToSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Chat,
    Openai,
    Mcp,
    Admin,
}

/// Where a library file is (docs/files.md): its text being made, made and indexed, or not
/// to be made (its `error` says why).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum FileStatus {
    Processing,
    Ready,
    Failed,
}

/// Words with one stored and wire spelling, listed once.
macro_rules! words {
    ($ty:ty { $($variant:ident = $word:literal),* $(,)? }) => {
        impl $ty {
            pub const ALL: &'static [$ty] = &[$(<$ty>::$variant),*];
            pub fn as_str(self) -> &'static str {
                match self { $(<$ty>::$variant => $word),* }
            }
        }
        impl FromStr for $ty {
            type Err = UnknownValue;
            fn from_str(s: &str) -> Result<Self, Self::Err> {
                match s {
                    $($word => Ok(<$ty>::$variant),)*
                    other => Err(UnknownValue(other.to_string())),
                }
            }
        }
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

words!(PersonRole { Admin = "admin", Member = "member" });
words!(Scope { Chat = "chat", Openai = "openai", Mcp = "mcp", Admin = "admin" });
words!(FileStatus { Processing = "processing", Ready = "ready", Failed = "failed" });

impl Scope {
    /// The scopes a person of `role` may hold: every one, `admin` only for admins.
    pub fn allowed_for(role: PersonRole) -> &'static [Scope] {
        match role {
            PersonRole::Admin => Scope::ALL,
            PersonRole::Member => &Scope::ALL[..3],
        }
    }
}

/// A stored value that is not one of the enum's variants (only possible if the database was edited
/// by hand).
#[derive(Debug, Clone, thiserror::Error)]
#[error("unknown value {0:?}")]
pub struct UnknownValue(pub String);

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A new opaque id. UUIDv7: time-ordered, so index inserts stay at the right edge of the b-tree.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Now, as a stored timestamp: ISO 8601 UTC with microseconds and `Z`. Fixed width, so stored
/// timestamps sort correctly as text. Strictly increasing within the process, so two writes in
/// the same instant still sort in the order they happened. Clients see milliseconds
/// ([`to_millis`]).
pub fn now() -> String {
    format_micros(next_micros(i64::MIN))
}

/// A stored timestamp as the contract shows it: milliseconds and `Z`.
pub fn to_millis(stored: &str) -> String {
    // Fast path for the stored shape `YYYY-MM-DDTHH:MM:SS.ffffffZ`: keep the first three
    // fraction digits. Lists format hundreds of these per request, and chrono's formatter
    // showed up in profiles.
    let b = stored.as_bytes();
    if b.len() == 27 && b[19] == b'.' && b[26] == b'Z' && b[20..26].iter().all(u8::is_ascii_digit) {
        let mut out = String::with_capacity(24);
        out.push_str(&stored[..23]);
        out.push('Z');
        return out;
    }
    match chrono::DateTime::parse_from_rfc3339(stored) {
        Ok(t) => t
            .with_timezone(&chrono::Utc)
            .format("%Y-%m-%dT%H:%M:%S%.3fZ")
            .to_string(),
        Err(_) => stored.to_string(),
    }
}

/// `micros` since the epoch as a stored timestamp (`YYYY-MM-DDTHH:MM:SS.ffffffZ`). chrono's
/// RFC 3339 writer, not `format`: a format string is parsed at every call, and every write
/// stamps its rows (`format_micros_writes_the_stored_shape`).
pub fn format_micros(micros: i64) -> String {
    chrono::DateTime::from_timestamp_micros(micros)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

fn next_micros(at_least: i64) -> i64 {
    static LAST: AtomicI64 = AtomicI64::new(i64::MIN);
    let now = chrono::Utc::now().timestamp_micros();
    let mut last = LAST.load(Ordering::Relaxed);
    loop {
        let next = now.max(at_least).max(last.saturating_add(1));
        match LAST.compare_exchange_weak(last, next, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return next,
            Err(seen) => last = seen,
        }
    }
}

/// Trims a free-text field; blank becomes `None` (the contract's "blank → null").
pub fn trimmed_or_none(value: Option<&str>) -> Option<String> {
    value
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_string)
}

/// Whole JSON numbers as JSON Schema's `integer` reads them: `5` and `5.0` alike (a generated
/// client may send either). For `#[serde(default, deserialize_with = …)]` on optional fields.
pub mod whole {
    use serde::de::{Error, Unexpected};
    use serde::{Deserialize, Deserializer};

    fn number<'de, D: Deserializer<'de>>(d: D) -> Result<Option<serde_json::Number>, D::Error> {
        Option::<serde_json::Number>::deserialize(d)
    }

    fn not_whole<E: Error>(n: &serde_json::Number, expected: &str) -> E {
        match n.as_f64() {
            Some(f) => E::invalid_value(Unexpected::Float(f), &expected),
            None => E::invalid_value(Unexpected::Other("a number"), &expected),
        }
    }

    pub fn option_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
        let Some(n) = number(d)? else { return Ok(None) };
        if let Some(v) = n.as_u64() {
            return Ok(Some(v));
        }
        match n.as_f64() {
            // 2^64 as a float: the first whole number past u64's range.
            Some(f) if f.fract() == 0.0 && (0.0..18_446_744_073_709_551_616.0).contains(&f) => {
                Ok(Some(f as u64))
            }
            _ => Err(not_whole(&n, "a whole number from 0")),
        }
    }

    pub fn option_i64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<i64>, D::Error> {
        let Some(n) = number(d)? else { return Ok(None) };
        if let Some(v) = n.as_i64() {
            return Ok(Some(v));
        }
        match n.as_f64() {
            Some(f)
                if f.fract() == 0.0
                    && (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) =>
            {
                Ok(Some(f as i64))
            }
            _ => Err(not_whole(&n, "a whole number")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same text `format("%Y-%m-%dT%H:%M:%S%.6fZ")` wrote before, which the stored rows
    /// and their text order rely on: the epoch, whole seconds, the last microsecond of a year,
    /// before the epoch, the first year.
    #[test]
    fn format_micros_writes_the_stored_shape() {
        for micros in [
            -62_135_596_800_000_000,
            -1,
            0,
            1_764_892_800_000_000,
            1_764_892_800_123_456,
            1_798_761_599_999_999,
            253_402_300_799_999_999,
        ] {
            let old = chrono::DateTime::from_timestamp_micros(micros)
                .unwrap()
                .format("%Y-%m-%dT%H:%M:%S%.6fZ")
                .to_string();
            assert_eq!(format_micros(micros), old, "{micros}");
            assert_eq!(format_micros(micros).len(), 27);
        }
    }

    #[test]
    fn whole_numbers_may_be_written_as_floats() {
        #[derive(serde::Deserialize)]
        struct N {
            #[serde(default, deserialize_with = "whole::option_u64")]
            u: Option<u64>,
            #[serde(default, deserialize_with = "whole::option_i64")]
            i: Option<i64>,
        }
        let n: N = serde_json::from_str(r#"{"u": 5.0, "i": -3.0}"#).unwrap();
        assert_eq!((n.u, n.i), (Some(5), Some(-3)));
        let n: N = serde_json::from_str(r#"{"u": 7, "i": null}"#).unwrap();
        assert_eq!((n.u, n.i), (Some(7), None));
        let n: N = serde_json::from_str("{}").unwrap();
        assert_eq!((n.u, n.i), (None, None));
        for bad in [
            r#"{"u": 5.5}"#,
            r#"{"u": -1}"#,
            r#"{"i": 1e300}"#,
            r#"{"u": "5"}"#,
        ] {
            assert!(serde_json::from_str::<N>(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn stored_timestamps_are_fixed_width_and_strictly_increasing() {
        let stamps: Vec<String> = (0..1000).map(|_| now()).collect();
        assert!(stamps.iter().all(|s| s.len() == 27 && s.ends_with('Z')));
        assert!(stamps.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(
            to_millis("2026-11-22T01:02:03.004567Z"),
            "2026-11-22T01:02:03.004Z"
        );
    }

    #[test]
    fn blank_is_none() {
        assert_eq!(trimmed_or_none(Some("  a b ")), Some("a b".into()));
        assert_eq!(trimmed_or_none(Some(" \n\t ")), None);
        assert_eq!(trimmed_or_none(None), None);
    }

    #[test]
    fn enums_round_trip() {
        for role in [Role::System, Role::User, Role::Assistant, Role::Tool] {
            assert_eq!(role.as_str().parse::<Role>().unwrap(), role);
        }
        assert!("robot".parse::<Role>().is_err());
    }
}
