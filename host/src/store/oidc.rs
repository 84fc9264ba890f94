//! Sign-ins with an identity provider begun and not yet finished (`oidc_logins`; both
//! backends): kept under the SHA-256 of their `state`, taken once by their callback on whichever
//! instance it reaches, only from the browser that began them and before they expire. The flow
//! is `signin/`'s.

use super::people::people_op;
use super::{Backend, Result, Store, measured};
use crate::vocabulary::now;

/// A sign-in begun: what its callback checks and sends.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingLogin {
    /// The SHA-256 of the cookie that binds the sign-in to the browser that began it.
    pub browser_sha256: String,
    pub nonce: String,
    /// PKCE's verifier.
    pub verifier: String,
}

const ADD: &str = "INSERT INTO oidc_logins \
    (state_sha256, browser_sha256, nonce, verifier, created_at, expires_at) \
    VALUES ($1, $2, $3, $4, $5, $6)";
const TAKE: &str = "DELETE FROM oidc_logins \
    WHERE state_sha256 = $1 AND browser_sha256 = $2 AND expires_at > $3 \
    RETURNING browser_sha256, nonce, verifier";
const SWEEP: &str = "DELETE FROM oidc_logins WHERE expires_at <= $1";

macro_rules! oidc {
    ($db:ty) => {
        use super::*;

        pub async fn add(
            tx: &mut sqlx::Transaction<'_, $db>,
            (state, login, expires_at): (&str, &PendingLogin, &str),
        ) -> Result<()> {
            let at = now();
            sqlx::query(SWEEP).bind(&at).execute(&mut **tx).await?;
            sqlx::query(ADD)
                .bind(state)
                .bind(&login.browser_sha256)
                .bind(&login.nonce)
                .bind(&login.verifier)
                .bind(&at)
                .bind(expires_at)
                .execute(&mut **tx)
                .await?;
            Ok(())
        }

        pub async fn take<'e>(
            ex: impl sqlx::Executor<'e, Database = $db>,
            (state, browser): (&str, &str),
        ) -> Result<Option<PendingLogin>> {
            let row: Option<(String, String, String)> = sqlx::query_as(TAKE)
                .bind(state)
                .bind(browser)
                .bind(now())
                .fetch_optional(ex)
                .await?;
            Ok(row.map(|(browser_sha256, nonce, verifier)| PendingLogin {
                browser_sha256,
                nonce,
                verifier,
            }))
        }
    };
}

mod on_sqlite {
    oidc!(sqlx::Sqlite);
}

mod on_postgres {
    oidc!(sqlx::Postgres);
}

impl Store {
    /// Keeps a sign-in begun, under its `state`'s digest, until `expires_at`; forgets expired
    /// ones.
    pub async fn add_oidc_login(
        &self,
        state_sha256: &str,
        login: &PendingLogin,
        expires_at: &str,
    ) -> Result<()> {
        measured(self.backend_name(), "add_oidc_login", self.timeout, async {
            match &self.backend {
                Backend::Sqlite(db) => {
                    let mut tx = db.write_tx().await?;
                    on_sqlite::add(&mut tx, (state_sha256, login, expires_at)).await?;
                    Ok(tx.commit().await?)
                }
                Backend::Postgres(db) => {
                    let mut tx = db.tx().await?;
                    on_postgres::add(&mut tx, (state_sha256, login, expires_at)).await?;
                    Ok(tx.commit().await?)
                }
            }
        })
        .await
    }

    /// Takes the sign-in begun under this `state` digest by the browser whose cookie has
    /// `browser_sha256`: once, and only before it expires. Another browser's callback takes
    /// nothing, so it cannot spend the sign-in.
    pub async fn take_oidc_login(
        &self,
        state_sha256: &str,
        browser_sha256: &str,
    ) -> Result<Option<PendingLogin>> {
        people_op!(
            self,
            "take_oidc_login",
            write,
            take((state_sha256, browser_sha256))
        )
    }
}
