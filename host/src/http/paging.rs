//! Pages of `GET /v1/chats` and `GET /v1/searches`: `?limit=N` asks for the newest N and a
//! `nextCursor`, `?cursor=C` for the page after the one that gave C. Without either, the lists
//! are whole, as the contract has them. A cursor is opaque to clients: the last row's stored
//! `updatedAt` and id, in URL-safe base64. `?title=T` (with or without the others) keeps the
//! rows whose title holds T, so a client finds any row by its title however old it is.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::Deserialize;
use utoipa::IntoParams;

use super::error::{ApiError, ApiResult};
use super::limits::MAX_TITLE_CHARS;
use crate::store::{PageAfter, TitleMatch};

/// A page's size when a cursor comes without `limit`.
pub const DEFAULT_PAGE: u32 = 100;
/// The most rows one page may ask for.
pub const MAX_PAGE: u32 = 1000;

#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// How many rows (1 to 1000); the response then has `nextCursor` when more may follow.
    #[param(minimum = 1, maximum = 1000)]
    pub limit: Option<u32>,
    /// The `nextCursor` of the page before.
    #[param(min_length = 1)]
    pub cursor: Option<String>,
    /// Only the rows whose title (a search's query when it has no title) holds this text, case
    /// ignored; the whole list of them without `limit` or `cursor`.
    #[param(min_length = 1, max_length = 500)]
    pub title: Option<String>,
}

/// What a list request asks for: everything, or one page (`limit` [`u32::MAX`]: every row
/// titled so), of the rows titled so when `title` is given.
pub enum Wanted {
    All,
    Page {
        limit: u32,
        after: Option<PageAfter>,
        title: Option<TitleMatch>,
    },
}

impl PageQuery {
    pub fn wanted(&self) -> ApiResult<Wanted> {
        let title = self.title.as_deref().map(title).transpose()?;
        if self.limit.is_none() && self.cursor.is_none() {
            return Ok(match title {
                None => Wanted::All,
                title => Wanted::Page {
                    limit: u32::MAX,
                    after: None,
                    title,
                },
            });
        }
        let limit = self.limit.unwrap_or(DEFAULT_PAGE);
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(ApiError::bad_request(format!(
                "limit: must be from 1 to {MAX_PAGE}"
            )));
        }
        let after = self.cursor.as_deref().map(decode).transpose()?;
        Ok(Wanted::Page {
            limit,
            after,
            title,
        })
    }
}

/// `title`: 1 to 500 characters (a title's most), matched as written; no NUL (PostgreSQL's TEXT
/// refuses one, and SQLite's LIKE would end the pattern there).
fn title(text: &str) -> ApiResult<TitleMatch> {
    let chars = text.chars().count();
    if chars == 0 || chars > MAX_TITLE_CHARS {
        return Err(ApiError::bad_request(format!(
            "title: must be 1 to {MAX_TITLE_CHARS} characters"
        )));
    }
    if text.contains('\0') {
        return Err(ApiError::bad_request("title: must not contain NUL"));
    }
    Ok(TitleMatch::containing(text))
}

/// A page of `rows` fetched with one row more than `limit`: the rows to send, and the cursor
/// of the next page when that extra row showed there is one.
pub fn split<T>(
    mut rows: Vec<T>,
    limit: u32,
    key: impl Fn(&T) -> (&str, &str),
) -> (Vec<T>, Option<String>) {
    if rows.len() <= limit as usize {
        return (rows, None);
    }
    rows.truncate(limit as usize);
    let next = rows.last().map(|row| {
        let (updated_at, id) = key(row);
        encode(updated_at, id)
    });
    (rows, next)
}

fn encode(updated_at: &str, id: &str) -> String {
    URL_SAFE_NO_PAD.encode(format!("{updated_at}\n{id}"))
}

fn decode(cursor: &str) -> ApiResult<PageAfter> {
    let invalid =
        || ApiError::bad_request("cursor: not a cursor this server gave (use nextCursor)");
    let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    let (updated_at, id) = text.split_once('\n').ok_or_else(invalid)?;
    // A stored stamp (`YYYY-MM-DDTHH:MM:SS.ffffffZ`) and an id with no NUL (PostgreSQL's TEXT
    // refuses one).
    let stamp = chrono::NaiveDateTime::parse_from_str(updated_at, "%Y-%m-%dT%H:%M:%S%.fZ");
    if stamp.is_err() || id.is_empty() || id.contains('\0') {
        return Err(invalid());
    }
    Ok(PageAfter {
        updated_at: updated_at.to_string(),
        id: id.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cursor_round_trips_and_a_forged_one_is_refused() {
        let cursor = encode("2026-11-27T09:15:03.123456Z", "0193-abc");
        let after = decode(&cursor).unwrap();
        assert_eq!(after.updated_at, "2026-11-27T09:15:03.123456Z");
        assert_eq!(after.id, "0193-abc");
        for bad in [
            "",
            "!!",
            &URL_SAFE_NO_PAD.encode("no newline"),
            &URL_SAFE_NO_PAD.encode("yesterday\nid"),
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn limits_outside_the_range_are_refused() {
        for limit in [0, MAX_PAGE + 1] {
            let query = PageQuery {
                limit: Some(limit),
                ..PageQuery::default()
            };
            assert!(query.wanted().is_err(), "{limit}");
        }
        assert!(matches!(PageQuery::default().wanted(), Ok(Wanted::All)));
    }

    #[test]
    fn a_title_alone_asks_for_every_row_titled_so() {
        let query = |title: &str| PageQuery {
            title: Some(title.to_string()),
            ..PageQuery::default()
        };
        match query("50%_off\\").wanted() {
            Ok(Wanted::Page {
                limit: u32::MAX,
                after: None,
                title: Some(title),
            }) => assert_eq!(title.pattern(), "%50\\%\\_off\\\\%"),
            _ => panic!("not every row titled so"),
        }
        assert!(query("").wanted().is_err());
        assert!(query(&"é".repeat(500)).wanted().is_ok());
        assert!(query(&"é".repeat(501)).wanted().is_err());
        assert!(query("a\0b").wanted().is_err());
    }

    #[test]
    fn the_extra_row_makes_the_next_cursor() {
        let rows = vec![("t3", "c"), ("t2", "b"), ("t1", "a")];
        let (page, next) = split(rows.clone(), 2, |r| (r.0, r.1));
        assert_eq!(page, vec![("t3", "c"), ("t2", "b")]);
        assert_eq!(next, Some(encode("t2", "b")));
        let (page, next) = split(rows, 3, |r| (r.0, r.1));
        assert_eq!(page.len(), 3);
        assert_eq!(next, None);
    }
}
