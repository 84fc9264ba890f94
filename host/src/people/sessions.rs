//! Signing in to the web client: login links and sessions. A link (`chatd users login-link
//! NAME`) works once, for [`LINK_FOR`]; using it starts a session, whose secret goes to the
//! browser as the [`COOKIE`] and lasts [`SESSION_FOR`] unless ended first. What a session may
//! reach is [`super::Caller::with_session`]'s; finding one is [`super::Directory::session`]'s.

use std::time::Duration;

use super::manage::Refusal;
use super::{Directory, keys};
use crate::store::Store;
use crate::store::people::{BUILTIN_ADMIN, PersonRecord};
use crate::store::sessions::{NewSession, SessionRecord};
use crate::vocabulary::format_micros;

/// How long a login link works.
pub const LINK_FOR: Duration = Duration::from_secs(15 * 60);

/// How long a session lasts unless ended first. Fixed from its start (no sliding), so a stolen
/// cookie's worth ends on a known day.
pub const SESSION_FOR: Duration = Duration::from_secs(14 * 24 * 60 * 60);

/// The session cookie's name (after `__Host-` over https: `http/cookies.rs`).
pub const COOKIE: &str = "chatd_session";

/// What a login link's secret starts with (secret scanners know `chatd_`).
const LINK_PREFIX: &str = "chatd_link_";

/// The longest `User-Agent` kept with a session (it only helps its owner tell sessions apart).
const MAX_USER_AGENT_CHARS: usize = 200;

/// A new login link for the person `name`: the person and the link's secret (shown once), and
/// when it stops working (stored form).
pub async fn make_link(
    store: &Store,
    name: &str,
) -> Result<(PersonRecord, String, String), Refusal> {
    let Some(person) = store.person_named(name).await? else {
        return Err(Refusal::NotFound(format!("no user is named {name:?}")));
    };
    if person.id == BUILTIN_ADMIN {
        // ADMIN_TOKEN is its proof: a session would outlive changing it.
        return Err(Refusal::Invalid(
            "admin is the built-in admin, who signs in with ADMIN_TOKEN; make a person with the \
             admin role for the web client (chatd users add NAME --role admin)"
                .into(),
        ));
    }
    if person.disabled {
        return Err(Refusal::Invalid(format!(
            "{name} is disabled: enable them first (`chatd users enable {name}`)"
        )));
    }
    let (secret, digest) = keys::mint_with(LINK_PREFIX);
    let expires_at = later(LINK_FOR);
    store
        .add_login_link(&digest, &person.id, &expires_at)
        .await?;
    Ok((person, secret, expires_at))
}

/// Uses the login link `secret` (once) and starts its person's session: the session and the
/// cookie's secret; `None` when the link is unknown, used, expired, or its person is disabled.
pub async fn sign_in_with_link(
    store: &Store,
    secret: &str,
    user_agent: Option<&str>,
) -> Result<Option<(SessionRecord, String)>, Refusal> {
    if !secret.starts_with(LINK_PREFIX) {
        return Ok(None);
    }
    let (cookie, new) = new_session(String::new(), "link", user_agent);
    let Some(session) = store.sign_in_with_link(&keys::digest(secret), &new).await? else {
        return Ok(None);
    };
    let active = store
        .person(&session.user_id)
        .await?
        .is_some_and(|p| !p.disabled);
    if !active {
        store.end_session(&session.user_id, &session.id).await?;
        return Ok(None);
    }
    sweep(store).await;
    Ok(Some((session, cookie)))
}

/// Starts a session for the person `user_id` (signed in by `via`): the session and the
/// cookie's secret.
pub async fn start(
    store: &Store,
    user_id: &str,
    via: &'static str,
    user_agent: Option<&str>,
) -> Result<(SessionRecord, String), Refusal> {
    let (cookie, new) = new_session(user_id.to_string(), via, user_agent);
    let session = store.add_session(&new).await?;
    sweep(store).await;
    Ok((session, cookie))
}

/// Ends `user_id`'s session `id` (signed out, or ended from their list of sessions): refused
/// at once here, within a second on every other instance.
pub async fn end(
    store: &Store,
    directory: &Directory,
    user_id: &str,
    id: &str,
) -> Result<(), Refusal> {
    if !store.end_session(user_id, id).await? {
        return Err(Refusal::NotFound("session not found".into()));
    }
    directory.forget(user_id, Some(id));
    Ok(())
}

fn new_session(
    user_id: String,
    via: &'static str,
    user_agent: Option<&str>,
) -> (String, NewSession) {
    let (cookie, digest) = keys::mint_with("");
    let user_agent = user_agent.map(|ua| ua.chars().take(MAX_USER_AGENT_CHARS).collect());
    let new = NewSession {
        user_id,
        secret_sha256: digest,
        via,
        user_agent,
        expires_at: later(SESSION_FOR),
    };
    (cookie, new)
}

/// Now plus `span`, in stored form.
fn later(span: Duration) -> String {
    let at = chrono::Utc::now() + chrono::Duration::from_std(span).expect("a short time");
    format_micros(at.timestamp_micros())
}

/// Forgets links and sessions that ended a day ago or more; a failure only leaves them longer.
async fn sweep(store: &Store) {
    let before = chrono::Utc::now() - chrono::Duration::days(1);
    if let Err(e) = store
        .sweep_sessions(&format_micros(before.timestamp_micros()))
        .await
    {
        tracing::warn!(error = %e, "could not sweep ended sessions and used login links");
    }
}
