//! Free text as each backend stores it. PostgreSQL's `TEXT` cannot hold U+0000, which clients may
//! send; there such text is stored escaped ([`put`]) and read back through [`Text`], which undoes
//! the escape. SQLite stores text as given, and [`Text`] reads it as is. Ids, stamps and JSON
//! (which escapes U+0000 itself) need none of it.

use sqlx::error::BoxDynError;
use sqlx::postgres::{PgTypeInfo, PgValueRef, Postgres};
use sqlx::sqlite::{Sqlite, SqliteTypeInfo, SqliteValueRef};
use sqlx::{Decode, Type};

/// PostgreSQL's TEXT cannot hold U+0000, which SQLite's can and any client string may carry, so
/// free text is stored escaped: [`ESCAPE`] doubled stands for itself and [`ESCAPE`] `0` for
/// U+0000. The mapping is one-to-one, so equality (the reuseByQuery key) and emptiness hold as
/// they would on the text itself. Ids, stamps and JSON (which escapes U+0000) need none of it.
const ESCAPE: char = '\u{10FFFF}';

/// `text` as PostgreSQL stores it: borrowed when there is nothing to escape, the usual case.
pub(super) fn put(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\0', ESCAPE]) {
        return text.into();
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => out.extend([ESCAPE, '0']),
            ESCAPE => out.extend([ESCAPE, ESCAPE]),
            c => out.push(c),
        }
    }
    out.into()
}

pub(super) fn put_opt(text: Option<&str>) -> Option<std::borrow::Cow<'_, str>> {
    text.map(put)
}

/// Text as it was given to [`put`].
fn take(text: String) -> String {
    if !text.contains(ESCAPE) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match (c, c == ESCAPE) {
            (_, true) => match chars.next() {
                Some('0') => out.push('\0'),
                Some(other) => out.push(other),
                None => out.push(ESCAPE),
            },
            (c, false) => out.push(c),
        }
    }
    out
}

/// A free-text column, decoded as it was written on either backend.
#[derive(Debug)]
pub(super) struct Text(pub String);

impl Type<Sqlite> for Text {
    fn type_info() -> SqliteTypeInfo {
        <String as Type<Sqlite>>::type_info()
    }
    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <String as Type<Sqlite>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Sqlite> for Text {
    fn decode(value: SqliteValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Text(<String as Decode<'r, Sqlite>>::decode(value)?))
    }
}

impl Type<Postgres> for Text {
    fn type_info() -> PgTypeInfo {
        <String as Type<Postgres>>::type_info()
    }
    fn compatible(ty: &PgTypeInfo) -> bool {
        <String as Type<Postgres>>::compatible(ty)
    }
}

impl<'r> Decode<'r, Postgres> for Text {
    fn decode(value: PgValueRef<'r>) -> Result<Self, BoxDynError> {
        Ok(Text(take(<String as Decode<'r, Postgres>>::decode(value)?)))
    }
}

/// An optional free-text column as a plain `Option<String>`.
pub(super) fn opt(text: Option<Text>) -> Option<String> {
    text.map(|t| t.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_text_has_no_nul_and_comes_back_as_given() {
        let e = ESCAPE;
        for given in [
            String::new(),
            "plain".into(),
            "a\0b".into(),
            format!("{e}"),
            format!("{e}0"),
            format!("\0{e}{e}0\0"),
        ] {
            let stored = put(&given);
            assert!(!stored.contains('\0'), "{stored:?}");
            assert_eq!(take(stored.into_owned()), given);
        }
        assert!(matches!(put("plain"), std::borrow::Cow::Borrowed(_)));
        // One-to-one: different texts are stored differently.
        assert_ne!(put("\0"), put(&format!("{e}0")));
    }
}
