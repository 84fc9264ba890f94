//! Whose each chat and search is (`owner_id`, both backends): what the owner check
//! (`http/owner.rs`) asks before a route touches one by id, and what narrows a list of ids
//! (`GET /v1/active-runs`) to the caller's. Lists and searches filter by owner in their own
//! queries (`read.rs`, the message search).
//!
//! Written once for both databases, as `logins.rs` is.

use super::{Backend, Result, Store, measured};

/// Which owned table an id is looked up in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owned {
    Chat,
    Search,
}

impl Owned {
    fn owner_query(self) -> &'static str {
        match self {
            Owned::Chat => "SELECT owner_id FROM chats WHERE id = $1",
            Owned::Search => "SELECT owner_id FROM searches WHERE id = $1",
        }
    }
}

macro_rules! owners {
    ($db:ty) => {
        use super::*;

        pub async fn owner<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            what: Owned,
            id: &str,
        ) -> Result<Option<String>> {
            let row: Option<(String,)> = sqlx::query_as(what.owner_query())
                .bind(id)
                .fetch_optional(ex)
                .await?;
            Ok(row.map(|(owner,)| owner))
        }
    };
}

mod on_sqlite {
    owners!(sqlx::Sqlite);
}

mod on_postgres {
    owners!(sqlx::Postgres);
}

impl Store {
    /// The owner of the chat or search `id`; `None` when there is none.
    pub async fn owner_of(&self, what: Owned, id: &str) -> Result<Option<String>> {
        // No stored id holds U+0000 (PostgreSQL's text cannot): such an id names nothing.
        if id.contains('\0') {
            return Ok(None);
        }
        measured(self.backend_name(), "owner_of", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => on_sqlite::owner(db.pool(), what, id).await,
                Backend::Postgres(db) => on_postgres::owner(db.pool(), what, id).await,
            }
        })
        .await
    }

    /// Whether `owner` owns the chat or search `id` (one that does not exist is nobody's).
    pub async fn owns(&self, owner: &str, what: Owned, id: &str) -> Result<bool> {
        Ok(self.owner_of(what, id).await?.as_deref() == Some(owner))
    }
}
