//! People and their keys (`users`, `api_keys`; both backends). A key is kept as the SHA-256 of its
//! secret, never the secret: finding a key is a lookup of that digest (`people/keys.rs` makes
//! it), so no stored secret is ever compared. The built-in admin ([`BUILTIN_ADMIN`], the holder of
//! ADMIN_TOKEN) is a row of its own, made by the migration.
//!
//! Written once for both databases, as `logins.rs` is.

use super::{Backend, Result, Store, measured};
use crate::vocabulary::{PersonRole, Scope, UnknownValue, new_id, now};

/// The built-in admin's id: the owner of everything made with ADMIN_TOKEN, and of everything
/// made before people existed.
pub const BUILTIN_ADMIN: &str = "admin";

/// A person as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PersonRecord {
    pub id: String,
    pub name: String,
    pub role: PersonRole,
    pub disabled: bool,
    pub created_at: String,
    /// The budget's JSON (`people/budget.rs`), if it has one.
    pub budget: Option<String>,
}

/// A key as stored, without its secret (the store never has it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyRecord {
    pub id: String,
    pub user_id: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    /// The budget's JSON (`people/budget.rs`), if it has one.
    pub budget: Option<String>,
}

/// A key to keep: its secret's digest and what it may do.
#[derive(Clone, Debug)]
pub struct NewKey {
    pub user_id: String,
    pub name: String,
    pub secret_sha256: String,
    pub scopes: Vec<Scope>,
    pub expires_at: Option<String>,
    pub budget: Option<String>,
}

const PERSON: &str = "SELECT id, name, role, disabled, created_at, budget FROM users";
const KEY: &str = "SELECT id, user_id, name, scopes, created_at, expires_at, revoked_at, budget \
                   FROM api_keys";
const ADD_PERSON: &str = "INSERT INTO users (id, name, role, disabled, created_at) \
                          VALUES ($1, $2, $3, FALSE, $4) ON CONFLICT (name) DO NOTHING";
const ADD_KEY: &str = "INSERT INTO api_keys \
                       (id, user_id, name, secret_sha256, scopes, created_at, expires_at, budget) \
                       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)";
const SET_DISABLED: &str = "UPDATE users SET disabled = $2 WHERE id = $1";
const SET_BUDGET: &str = "UPDATE users SET budget = $2 WHERE id = $1";
const SET_ROLE: &str = "UPDATE users SET role = $2 WHERE id = $1";
const LINK_SUBJECT: &str =
    "UPDATE users SET oidc_subject = $2 WHERE id = $1 AND oidc_subject IS NULL";
const REVOKE: &str = "UPDATE api_keys SET revoked_at = $3 \
                      WHERE id = $1 AND user_id = $2 AND revoked_at IS NULL";

type PersonRow = (String, String, String, bool, String, Option<String>);
type KeyRow = (
    String,
    String,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
);

fn person(row: PersonRow) -> Result<PersonRecord> {
    let (id, name, role, disabled, created_at, budget) = row;
    Ok(PersonRecord {
        id,
        name,
        role: role.parse()?,
        disabled,
        created_at,
        budget,
    })
}

fn key(row: KeyRow) -> Result<KeyRecord> {
    let (id, user_id, name, scopes, created_at, expires_at, revoked_at, budget) = row;
    let words: Vec<String> = serde_json::from_str(&scopes)?;
    let scopes = words
        .iter()
        .map(|w| w.parse())
        .collect::<std::result::Result<Vec<Scope>, UnknownValue>>()?;
    Ok(KeyRecord {
        id,
        user_id,
        name,
        scopes,
        created_at,
        expires_at,
        revoked_at,
        budget,
    })
}

fn scopes_json(scopes: &[Scope]) -> String {
    let words: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
    serde_json::to_string(&words).expect("a list of words serializes")
}

macro_rules! people {
    ($db:ty) => {
        use super::*;

        pub async fn people<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
        ) -> Result<Vec<PersonRecord>> {
            let rows: Vec<PersonRow> = sqlx::query_as(&format!("{PERSON} ORDER BY created_at, id"))
                .fetch_all(ex)
                .await?;
            rows.into_iter().map(person).collect()
        }

        pub async fn person_where<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            column: &str,
            value: &str,
        ) -> Result<Option<PersonRecord>> {
            let row: Option<PersonRow> = sqlx::query_as(&format!("{PERSON} WHERE {column} = $1"))
                .bind(value)
                .fetch_optional(ex)
                .await?;
            row.map(person).transpose()
        }

        pub async fn add_person(
            tx: &mut sqlx::Transaction<'_, $db>,
            id: &str,
            name: &str,
            role: PersonRole,
        ) -> Result<bool> {
            let done = sqlx::query(ADD_PERSON)
                .bind(id)
                .bind(name)
                .bind(role.as_str())
                .bind(now())
                .execute(&mut **tx)
                .await?;
            Ok(done.rows_affected() == 1)
        }

        pub async fn add_key<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            new: &NewKey,
        ) -> Result<KeyRecord> {
            let record = KeyRecord {
                id: new_id(),
                user_id: new.user_id.clone(),
                name: new.name.clone(),
                scopes: new.scopes.clone(),
                created_at: now(),
                expires_at: new.expires_at.clone(),
                revoked_at: None,
                budget: new.budget.clone(),
            };
            sqlx::query(ADD_KEY)
                .bind(&record.id)
                .bind(&record.user_id)
                .bind(&record.name)
                .bind(&new.secret_sha256)
                .bind(scopes_json(&record.scopes))
                .bind(&record.created_at)
                .bind(&record.expires_at)
                .bind(&record.budget)
                .execute(ex)
                .await?;
            Ok(record)
        }

        pub async fn keys_of<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            user_id: &str,
        ) -> Result<Vec<KeyRecord>> {
            let rows: Vec<KeyRow> = sqlx::query_as(&format!(
                "{KEY} WHERE user_id = $1 AND revoked_at IS NULL ORDER BY created_at, id"
            ))
            .bind(user_id)
            .fetch_all(ex)
            .await?;
            rows.into_iter().map(key).collect()
        }

        pub async fn key_by_secret<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            secret_sha256: &str,
        ) -> Result<Option<KeyRecord>> {
            let row: Option<KeyRow> = sqlx::query_as(&format!("{KEY} WHERE secret_sha256 = $1"))
                .bind(secret_sha256)
                .fetch_optional(ex)
                .await?;
            row.map(key).transpose()
        }

        pub async fn set_disabled<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            id: &str,
            disabled: bool,
        ) -> Result<bool> {
            let done = sqlx::query(SET_DISABLED)
                .bind(id)
                .bind(disabled)
                .execute(ex)
                .await?;
            Ok(done.rows_affected() == 1)
        }

        pub async fn set_budget<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            id: &str,
            budget: Option<&str>,
        ) -> Result<bool> {
            let done = sqlx::query(SET_BUDGET)
                .bind(id)
                .bind(budget)
                .execute(ex)
                .await?;
            Ok(done.rows_affected() == 1)
        }

        pub async fn set_role<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            (id, role): (&str, PersonRole),
        ) -> Result<bool> {
            let done = sqlx::query(SET_ROLE)
                .bind(id)
                .bind(role.as_str())
                .execute(ex)
                .await?;
            Ok(done.rows_affected() == 1)
        }

        pub async fn link_subject<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            (id, subject): (&str, &str),
        ) -> Result<bool> {
            let done = sqlx::query(LINK_SUBJECT)
                .bind(id)
                .bind(subject)
                .execute(ex)
                .await?;
            Ok(done.rows_affected() == 1)
        }

        /// A person without a key, known by `subject` (signed in with an identity provider).
        pub async fn add_signed_in(
            tx: &mut sqlx::Transaction<'_, $db>,
            (name, role, subject): (&str, PersonRole, &str),
        ) -> Result<Option<PersonRecord>> {
            let id = new_id();
            if !add_person(tx, &id, name, role).await? {
                return Ok(None);
            }
            link_subject(&mut **tx, (&id, subject)).await?;
            person_where(&mut **tx, "id", &id).await
        }

        pub async fn revoke<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            user_id: &str,
            key_id: &str,
        ) -> Result<bool> {
            let done = sqlx::query(REVOKE)
                .bind(key_id)
                .bind(user_id)
                .bind(now())
                .execute(ex)
                .await?;
            Ok(done.rows_affected() == 1)
        }
    };
}

mod on_sqlite {
    people!(sqlx::Sqlite);
}

mod on_postgres {
    people!(sqlx::Postgres);
}

/// One of the functions above on the store's pool (reads, and single-statement writes on
/// PostgreSQL) or in a write transaction of its own (SQLite's writes take its lock up front).
macro_rules! people_op {
    ($store:expr, $op:literal, write, $f:ident($($arg:expr),*)) => {
        measured($store.backend_name(), $op, $store.timeout, async {
            match &$store.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    let out = on_sqlite::$f(&mut *tx, $($arg),*).await?;
                    tx.commit().await?;
                    Ok(out)
                }
                Backend::Postgres(db) => on_postgres::$f(db.pool(), $($arg),*).await,
            }
        })
        .await
    };
    ($store:expr, $op:literal, read, $f:ident($($arg:expr),*)) => {
        measured($store.backend_name(), $op, $store.timeout, async {
            match &$store.backend {
                Backend::Sqlite(db) => on_sqlite::$f(db.pool(), $($arg),*).await,
                Backend::Postgres(db) => on_postgres::$f(db.pool(), $($arg),*).await,
            }
        })
        .await
    };
}

pub(super) use people_op;

impl Store {
    /// Every person, the built-in admin first.
    pub async fn people(&self) -> Result<Vec<PersonRecord>> {
        people_op!(self, "people", read, people())
    }

    /// The person with this id.
    pub async fn person(&self, id: &str) -> Result<Option<PersonRecord>> {
        if id.contains('\0') {
            return Ok(None);
        }
        people_op!(self, "person", read, person_where("id", id))
    }

    /// The person with this name.
    pub async fn person_named(&self, name: &str) -> Result<Option<PersonRecord>> {
        people_op!(self, "person_named", read, person_where("name", name))
    }

    /// Adds a person named `name` with a first key (whose `user_id` is set to the new person's
    /// id), in one transaction; `None` when the name is taken.
    pub async fn add_person(
        &self,
        name: &str,
        role: PersonRole,
        first_key: NewKey,
    ) -> Result<Option<(PersonRecord, KeyRecord)>> {
        let id = new_id();
        let first_key = NewKey {
            user_id: id.clone(),
            ..first_key
        };
        measured(self.backend_name(), "add_person", self.timeout, async {
            macro_rules! add {
                ($on:ident, $tx:expr) => {{
                    let mut tx = $tx;
                    if !$on::add_person(&mut tx, &id, name, role).await? {
                        return Ok(None);
                    }
                    let key = $on::add_key(&mut *tx, &first_key).await?;
                    let person = $on::person_where(&mut *tx, "id", &id).await?;
                    tx.commit().await?;
                    Ok(person.map(|p| (p, key)))
                }};
            }
            match &self.backend {
                Backend::Sqlite(db) => add!(on_sqlite, db.write_tx().await?),
                Backend::Postgres(db) => add!(on_postgres, db.tx().await?),
            }
        })
        .await
    }

    /// Disables or enables a person; whether they exist.
    pub async fn set_person_disabled(&self, id: &str, disabled: bool) -> Result<bool> {
        if id.contains('\0') {
            return Ok(false);
        }
        people_op!(
            self,
            "set_person_disabled",
            write,
            set_disabled(id, disabled)
        )
    }

    /// Sets or clears a person's budget (its JSON); whether they exist.
    pub async fn set_person_budget(&self, id: &str, budget: Option<&str>) -> Result<bool> {
        if id.contains('\0') {
            return Ok(false);
        }
        people_op!(self, "set_person_budget", write, set_budget(id, budget))
    }

    /// Keeps a new key.
    pub async fn add_key(&self, new: &NewKey) -> Result<KeyRecord> {
        people_op!(self, "add_key", write, add_key(new))
    }

    /// A person's keys that are not revoked (expired ones included), oldest first.
    pub async fn keys_of(&self, user_id: &str) -> Result<Vec<KeyRecord>> {
        people_op!(self, "keys_of", read, keys_of(user_id))
    }

    /// The key whose secret has this SHA-256 (hex), revoked or not.
    pub async fn key_by_secret(&self, secret_sha256: &str) -> Result<Option<KeyRecord>> {
        people_op!(self, "key_by_secret", read, key_by_secret(secret_sha256))
    }

    /// The person signed in with an identity provider as `subject` (its issuer and subject).
    pub async fn person_by_subject(&self, subject: &str) -> Result<Option<PersonRecord>> {
        people_op!(
            self,
            "person_by_subject",
            read,
            person_where("oidc_subject", subject)
        )
    }

    /// Links `subject` to the person `id`; whether they had none yet.
    pub async fn link_subject(&self, id: &str, subject: &str) -> Result<bool> {
        people_op!(self, "link_subject", write, link_subject((id, subject)))
    }

    /// Sets a person's role; whether they exist.
    pub async fn set_person_role(&self, id: &str, role: PersonRole) -> Result<bool> {
        people_op!(self, "set_person_role", write, set_role((id, role)))
    }

    /// Adds a person named `name`, without a key, known by `subject`; `None` when the name is
    /// taken.
    pub async fn add_signed_in_person(
        &self,
        name: &str,
        role: PersonRole,
        subject: &str,
    ) -> Result<Option<PersonRecord>> {
        measured(
            self.backend_name(),
            "add_signed_in_person",
            self.timeout,
            async {
                macro_rules! add {
                    ($on:ident, $tx:expr) => {{
                        let mut tx = $tx;
                        let person = $on::add_signed_in(&mut tx, (name, role, subject)).await?;
                        tx.commit().await?;
                        Ok(person)
                    }};
                }
                match &self.backend {
                    Backend::Sqlite(db) => add!(on_sqlite, db.write_tx().await?),
                    Backend::Postgres(db) => add!(on_postgres, db.tx().await?),
                }
            },
        )
        .await
    }

    /// Revokes one of `user_id`'s keys; whether it was theirs and live.
    pub async fn revoke_key(&self, user_id: &str, key_id: &str) -> Result<bool> {
        if key_id.contains('\0') {
            return Ok(false);
        }
        people_op!(self, "revoke_key", write, revoke(user_id, key_id))
    }
}
