//! Who is asking. A request's [`Caller`] is the built-in admin (ADMIN_TOKEN, or anyone in open
//! mode), a person holding one of their keys, or a person signed in with a session cookie
//! ([`sessions`]); the token check (`http/middleware.rs`) decides it with [`Directory`] and puts
//! it on the request, and what a caller may reach is [`Caller::may`]'s answer, stated once
//! here. Keys are made and digested in [`keys`].

pub mod budget;
pub mod directory;
pub mod keys;
pub mod manage;
pub mod sessions;

pub use directory::Directory;

use crate::store::people::{BUILTIN_ADMIN, KeyRecord, PersonRecord};
use crate::store::sessions::SessionRecord;
use crate::vocabulary::{PersonRole, Scope};
use budget::Budget;

/// How the caller proved who they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Via {
    /// Open mode: no token is configured, so every caller is the built-in admin.
    Open,
    /// ADMIN_TOKEN.
    AdminToken,
    /// One of the person's keys (its id).
    Key(String),
    /// The web client's session cookie (the session's id): the person signed in.
    Session(String),
}

/// The person a request acts for, and what it may reach.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Caller {
    pub id: String,
    pub name: String,
    pub role: PersonRole,
    pub via: Via,
    /// The key's scopes, within what the role allows; every scope for the built-in admin.
    pub scopes: Vec<Scope>,
    /// When the key ends (stored form); `None` for a key without an end and for ADMIN_TOKEN.
    pub expires_at: Option<String>,
    /// The person's budget and the key's, as they were read (`usage/` checks them).
    pub budgets: Budgets,
    /// When the session began (stored form); `None` for a key, ADMIN_TOKEN and open mode.
    pub signed_in_at: Option<String>,
}

/// How long after signing in a session may make keys: a key reaches what a cookie does not
/// (`/openai/v1`, `/mcp`) and outlives the session, so a cookie taken later cannot make one.
pub const MAKES_KEYS_WITHIN: std::time::Duration = std::time::Duration::from_secs(15 * 60);

/// The budgets a caller's requests are checked against.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Budgets {
    pub person: Option<Budget>,
    pub key: Option<Budget>,
}

impl Caller {
    /// The built-in admin, as ADMIN_TOKEN's holder (or anyone, in open mode).
    pub fn builtin_admin(via: Via) -> Self {
        Self {
            id: BUILTIN_ADMIN.to_string(),
            name: BUILTIN_ADMIN.to_string(),
            role: PersonRole::Admin,
            via,
            scopes: Scope::ALL.to_vec(),
            expires_at: None,
            budgets: Budgets::default(),
            signed_in_at: None,
        }
    }

    /// `person` holding `key`: the key's scopes are cut to what the person's role allows, so a
    /// member's key never carries `admin`.
    pub fn with_key(person: &PersonRecord, key: &KeyRecord) -> Self {
        let allowed = Scope::allowed_for(person.role);
        Self {
            id: person.id.clone(),
            name: person.name.clone(),
            role: person.role,
            via: Via::Key(key.id.clone()),
            scopes: key
                .scopes
                .iter()
                .copied()
                .filter(|s| allowed.contains(s))
                .collect(),
            expires_at: key.expires_at.clone(),
            budgets: Budgets {
                person: Budget::stored(person.budget.as_deref()),
                key: Budget::stored(key.budget.as_deref()),
            },
            signed_in_at: None,
        }
    }

    /// `person` signed in with `session`: the cookie reaches what the `chat` scope covers, and
    /// an admin's also what `admin` does (the web client manages people); never `/openai/v1` or
    /// `/mcp`, whose clients hold keys. The person's budget applies.
    pub fn with_session(person: &PersonRecord, session: &SessionRecord) -> Self {
        Self {
            id: person.id.clone(),
            name: person.name.clone(),
            role: person.role,
            via: Via::Session(session.id.clone()),
            scopes: Scope::allowed_for(person.role)
                .iter()
                .copied()
                .filter(|s| matches!(s, Scope::Chat | Scope::Admin))
                .collect(),
            expires_at: Some(session.expires_at.clone()),
            budgets: Budgets {
                person: Budget::stored(person.budget.as_deref()),
                key: None,
            },
            signed_in_at: Some(session.created_at.clone()),
        }
    }

    /// Whether this caller is a session that began more than [`MAKES_KEYS_WITHIN`] ago: it
    /// makes no keys then (sign in again).
    pub fn signed_in_long_ago(&self) -> bool {
        let Some(at) = self.signed_in_at.as_deref() else {
            return false;
        };
        let within = chrono::Duration::from_std(MAKES_KEYS_WITHIN).expect("a short time");
        let cut =
            crate::vocabulary::format_micros((chrono::Utc::now() - within).timestamp_micros());
        at < cut.as_str()
    }

    /// What a key made by this caller may hold at most, and when it must end at the latest: a
    /// key's own scopes and end, so a key never makes a wider or longer-lived one. Signed in
    /// (within [`MAKES_KEYS_WITHIN`] of it), the person acts as themselves: every scope their
    /// role allows, and no end of the session's (a key made in the web client outlives the
    /// visit).
    pub fn key_maker(&self) -> (Vec<Scope>, Option<&str>) {
        match self.via {
            Via::Session(_) => (Scope::allowed_for(self.role).to_vec(), None),
            _ => (self.scopes.clone(), self.expires_at.as_deref()),
        }
    }

    /// Whether this caller may reach what `scope` covers.
    pub fn may(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }

    /// Whose things this caller sees and makes: the owner stored with each chat and search.
    pub fn owner(&self) -> &str {
        &self.id
    }

    /// The key or session this caller used (its id), if any.
    pub fn credential_id(&self) -> Option<&str> {
        match &self.via {
            Via::Key(id) | Via::Session(id) => Some(id),
            _ => None,
        }
    }

    /// The session this caller is signed in with, if any.
    pub fn session_id(&self) -> Option<&str> {
        match &self.via {
            Via::Session(id) => Some(id),
            _ => None,
        }
    }

    /// The key this caller used, if it used one.
    pub fn key_id(&self) -> Option<&str> {
        match &self.via {
            Via::Key(id) => Some(id),
            _ => None,
        }
    }
}

/// What reaching `path` (relative to the root or to `/api`) needs: `openai` under
/// `/openai/v1`, `mcp` at `/mcp`, `admin` for people (`/v1/users`), MCP servers' connections
/// and `/metrics`, `chat` for every other route.
pub fn scope_for(path: &str) -> Scope {
    let under = |prefix: &str| {
        path == prefix
            || path
                .strip_prefix(prefix)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    if under("/openai/v1") {
        Scope::Openai
    } else if under("/mcp") {
        Scope::Mcp
    } else if under("/v1/users") || under("/metrics") || is_connection(path) {
        Scope::Admin
    } else {
        Scope::Chat
    }
}

/// `/v1/mcp-servers/{name}/connect` and `/disconnect`: an MCP server is the operator's, and so
/// is whether chatd is logged in to it for every person. A person's own login to a `per_user`
/// one (`/v1/mcp-servers/{name}/login`) is `chat`'s: it reaches only their own calls.
fn is_connection(path: &str) -> bool {
    path.strip_prefix("/v1/mcp-servers/")
        .and_then(|rest| rest.split_once('/'))
        .is_some_and(|(name, action)| {
            !name.is_empty() && matches!(action, "connect" | "disconnect")
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_path_needs_its_scope() {
        for (path, scope) in [
            ("/openai/v1/chat/completions", Scope::Openai),
            ("/openai/v1", Scope::Openai),
            ("/openai/v10/x", Scope::Chat),
            ("/mcp", Scope::Mcp),
            ("/mcpx", Scope::Chat),
            ("/v1/users", Scope::Admin),
            ("/v1/users/u1", Scope::Admin),
            ("/v1/usersx", Scope::Chat),
            ("/metrics", Scope::Admin),
            ("/v1/mcp-servers/t/connect", Scope::Admin),
            ("/v1/mcp-servers/t/disconnect", Scope::Admin),
            ("/v1/mcp-servers", Scope::Chat),
            ("/v1/mcp-servers/t/callback", Scope::Chat),
            ("/v1/mcp-servers/t/login", Scope::Chat),
            ("/v1/chats", Scope::Chat),
            ("/v1/keys", Scope::Chat),
        ] {
            assert_eq!(scope_for(path), scope, "{path}");
        }
    }

    #[test]
    fn a_members_key_never_carries_admin() {
        let member = PersonRecord {
            id: "u".into(),
            name: "ann".into(),
            role: PersonRole::Member,
            disabled: false,
            created_at: String::new(),
            budget: None,
        };
        let key = KeyRecord {
            id: "k".into(),
            user_id: "u".into(),
            name: "k".into(),
            scopes: Scope::ALL.to_vec(),
            created_at: String::new(),
            expires_at: None,
            revoked_at: None,
            budget: None,
        };
        let caller = Caller::with_key(&member, &key);
        assert_eq!(caller.scopes, [Scope::Chat, Scope::Openai, Scope::Mcp]);
        assert!(!caller.may(Scope::Admin));
        assert_eq!(caller.key_id(), Some("k"));
        assert!(Caller::builtin_admin(Via::AdminToken).may(Scope::Admin));
    }
}
