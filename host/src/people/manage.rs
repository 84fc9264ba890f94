//! Making people and keys, and turning them off: the rules the CLI (`chatd users`) and the HTTP
//! routes (`/v1/users`, `/v1/keys`) share, stated once. Every refusal names the field and the
//! rule; the callers map [`Refusal`] to their exit code or status.

use super::budget::Budget;
use super::{Caller, Directory, keys};
use crate::store::people::{BUILTIN_ADMIN, KeyRecord, NewKey, PersonRecord};
use crate::store::{Store, StoreError};
use crate::vocabulary::{PersonRole, Scope};

/// A person's name: what `chatd users` commands take, shown in lists and in the 403 a member
/// gets on an admin route.
pub const MAX_PERSON_NAME_CHARS: usize = 64;
/// A key's name (what it is for).
pub const MAX_KEY_NAME_CHARS: usize = 200;

/// Why a change was refused.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    /// The request is wrong (400).
    #[error("{0}")]
    Invalid(String),
    /// The caller may not (403).
    #[error("{0}")]
    Forbidden(String),
    /// It names nothing there is (404).
    #[error("{0}")]
    NotFound(String),
    /// It clashes with what exists (409).
    #[error("{0}")]
    Conflict(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// The rule for a person's name: 1 to [`MAX_PERSON_NAME_CHARS`] ASCII letters, digits, `.`,
/// `_`, `-` or `@`, so it is one word on a command line and in a log, and one spelling.
pub fn person_name(name: &str) -> Result<&str, Refusal> {
    let ok = !name.is_empty()
        && name.len() <= MAX_PERSON_NAME_CHARS
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-' | b'@'));
    if ok {
        Ok(name)
    } else {
        Err(Refusal::Invalid(format!(
            "name: must be 1 to {MAX_PERSON_NAME_CHARS} ASCII letters, digits, '.', '_', '-' or \
             '@' (got {:?}{})",
            name.chars().take(MAX_PERSON_NAME_CHARS).collect::<String>(),
            if name.chars().count() > MAX_PERSON_NAME_CHARS {
                "…"
            } else {
                ""
            }
        )))
    }
}

/// A new key's secret, its digest kept by the store, and what it may do.
pub struct Minted {
    pub record: KeyRecord,
    /// Shown once, to whoever made it.
    pub secret: String,
}

/// Adds a person with a first key named `first key` holding every scope the role allows.
pub async fn add_person(
    store: &Store,
    name: &str,
    role: PersonRole,
) -> Result<(PersonRecord, Minted), Refusal> {
    let name = person_name(name)?;
    let (secret, digest) = keys::mint();
    let first = NewKey {
        user_id: String::new(),
        name: "first key".into(),
        secret_sha256: digest,
        scopes: Scope::allowed_for(role).to_vec(),
        expires_at: None,
        budget: None,
    };
    match store.add_person(name, role, first).await? {
        Some((person, record)) => Ok((person, Minted { record, secret })),
        None => Err(Refusal::Conflict(format!(
            "name: {name:?} is taken (every name is one person's; `admin` is the built-in \
             admin's)"
        ))),
    }
}

/// Disables or enables the person `id`; the built-in admin is ADMIN_TOKEN's holder and is
/// neither. Disabling ends their sessions and spends their login links first (enabling them
/// again brings neither back; their keys work again). What this instance kept of their keys and
/// sessions is forgotten at once.
pub async fn set_disabled(
    store: &Store,
    directory: Option<&Directory>,
    id: &str,
    disabled: bool,
) -> Result<PersonRecord, Refusal> {
    if id == BUILTIN_ADMIN {
        return Err(Refusal::Invalid(
            "disabled: the built-in admin is whoever holds ADMIN_TOKEN; change ADMIN_TOKEN (and \
             revoke the keys made with it) to shut it out"
                .into(),
        ));
    }
    if disabled && store.person(id).await?.is_some() {
        store.end_sessions_of(id).await?;
    }
    if !store.set_person_disabled(id, disabled).await? {
        return Err(Refusal::NotFound("user not found".into()));
    }
    if let Some(directory) = directory {
        directory.forget(id, None);
    }
    store
        .person(id)
        .await?
        .ok_or_else(|| Refusal::NotFound("user not found".into()))
}

/// What a key made by `caller` may do: `requested`, or when omitted every scope the caller may
/// give ([`Caller::key_maker`]). A key only makes keys within its own scopes (so `admin` only an
/// admin's key).
pub fn scopes_for_new_key(
    caller: &Caller,
    requested: Option<&[Scope]>,
) -> Result<Vec<Scope>, Refusal> {
    let (most, _) = caller.key_maker();
    let Some(requested) = requested else {
        return Ok(most);
    };
    if requested.is_empty() {
        return Err(Refusal::Invalid(
            "scopes: must name at least one of chat, openai, mcp, admin".into(),
        ));
    }
    if let Some(beyond) = requested.iter().find(|s| !most.contains(s)) {
        return Err(Refusal::Forbidden(format!(
            "scopes: this key cannot give `{beyond}`: a key makes keys only within its own \
             scopes, and `admin` only for admins"
        )));
    }
    let mut scopes = requested.to_vec();
    scopes.sort_unstable();
    scopes.dedup();
    Ok(scopes)
}

/// When a key made by `caller` ends: `requested`, or the calling key's own end when it has one;
/// a key never outlives the key that made it ([`Caller::key_maker`]).
pub fn expiry_for_new_key(
    caller: &Caller,
    requested: Option<String>,
) -> Result<Option<String>, Refusal> {
    match (caller.key_maker().1, requested) {
        (None, requested) => Ok(requested),
        (Some(own), None) => Ok(Some(own.to_string())),
        (Some(own), Some(requested)) if requested.as_str() <= own => Ok(Some(requested)),
        (Some(_), Some(_)) => Err(Refusal::Invalid(
            "expiresAt: a key cannot outlive the key that makes it".into(),
        )),
    }
}

/// Sets or clears the person `id`'s budget. The built-in admin is the operator and has none;
/// their keys may.
pub async fn set_budget(
    store: &Store,
    directory: Option<&Directory>,
    id: &str,
    budget: Option<Budget>,
) -> Result<PersonRecord, Refusal> {
    if id == BUILTIN_ADMIN {
        return Err(Refusal::Invalid(
            "budget: the built-in admin (ADMIN_TOKEN's holder) has no budget; give one to each \
             of its keys instead (POST /v1/keys)"
                .into(),
        ));
    }
    let text = budget.map(|b| b.to_json().to_string());
    if !store.set_person_budget(id, text.as_deref()).await? {
        return Err(Refusal::NotFound("user not found".into()));
    }
    if let Some(directory) = directory {
        directory.forget(id, None);
    }
    store
        .person(id)
        .await?
        .ok_or_else(|| Refusal::NotFound("user not found".into()))
}

/// What a key made by `caller` may spend: `requested`. A key with a budget makes no keys: theirs
/// would be budgets of their own, beside it, so a budget could be multiplied by making keys.
pub fn budget_for_new_key(
    caller: &Caller,
    requested: Option<Budget>,
) -> Result<Option<Budget>, Refusal> {
    if caller.budgets.key.is_some() {
        return Err(Refusal::Forbidden(
            "this key has a budget, and a key with a budget makes no keys (theirs would spend \
             beside it); make keys with a key without one"
                .into(),
        ));
    }
    Ok(requested)
}

/// Makes a key for `caller`'s person.
pub async fn make_key(
    store: &Store,
    caller: &Caller,
    name: &str,
    scopes: Vec<Scope>,
    expires_at: Option<String>,
    budget: Option<Budget>,
) -> Result<Minted, Refusal> {
    if caller.signed_in_long_ago() {
        return Err(Refusal::Forbidden(format!(
            "a session makes keys only within {} minutes of signing in: sign out and in again",
            super::MAKES_KEYS_WITHIN.as_secs() / 60
        )));
    }
    let (secret, digest) = keys::mint();
    let record = store
        .add_key(&NewKey {
            user_id: caller.id.clone(),
            name: name.to_string(),
            secret_sha256: digest,
            scopes,
            expires_at,
            budget: budget.map(|b| b.to_json().to_string()),
        })
        .await?;
    Ok(Minted { record, secret })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::people::Via;

    #[test]
    fn names_are_one_plain_word() {
        for ok in ["ann", "ann.lee@example.com", "b_2-x", &"x".repeat(64)] {
            assert!(person_name(ok).is_ok(), "{ok}");
        }
        for bad in ["", "a b", "a/b", "a\nb", "Zoë", &"x".repeat(65)] {
            assert!(person_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_key_makes_keys_only_within_its_scopes() {
        let admin = Caller::builtin_admin(Via::AdminToken);
        assert_eq!(scopes_for_new_key(&admin, None).unwrap(), Scope::ALL);
        let narrow = Caller {
            scopes: vec![Scope::Chat, Scope::Openai],
            ..admin.clone()
        };
        assert_eq!(
            scopes_for_new_key(&narrow, None).unwrap(),
            [Scope::Chat, Scope::Openai]
        );
        assert_eq!(
            scopes_for_new_key(&narrow, Some(&[Scope::Openai, Scope::Openai])).unwrap(),
            [Scope::Openai]
        );
        let refused = scopes_for_new_key(&narrow, Some(&[Scope::Mcp])).unwrap_err();
        assert!(matches!(refused, Refusal::Forbidden(m) if m.contains("`mcp`")));
        assert!(matches!(
            scopes_for_new_key(&narrow, Some(&[])),
            Err(Refusal::Invalid(_))
        ));
    }
}
