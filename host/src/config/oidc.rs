//! `[auth.oidc]` of the configuration file: signing in to the web client with an OpenID Connect
//! provider (docs/teams.md, "Signing in with an identity provider"). The flow is `signin/`'s.
//!
//! ```toml
//! [auth.oidc]
//! issuer = "https://keycloak.example.com/realms/team"  # exactly as the provider names itself
//! client_id = "chatd"
//! client_secret = "${OIDC_CLIENT_SECRET}"                # optional: a public client uses PKCE only
//! admin_claim = "groups"        # optional, with admin_value: who is an admin, at each sign-in
//! admin_value = "chatd-admins"  # the claim equals it, or is a list holding it
//! new_people = false            # the default: only people made beforehand (chatd users add)
//! name_claim = "preferred_username"  # a new person's name (else `email`, else `sub`)
//! scopes = ["openid", "profile", "email"]
//! ```

use serde::Deserialize;
use url::Url;

use super::Secret;

/// `[auth]`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAuth {
    #[serde(default)]
    oidc: Option<RawOidc>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawOidc {
    issuer: String,
    client_id: String,
    client_secret: Option<String>,
    admin_claim: Option<String>,
    admin_value: Option<String>,
    #[serde(default)]
    new_people: bool,
    name_claim: Option<String>,
    scopes: Option<Vec<String>>,
}

/// A checked `[auth.oidc]`.
#[derive(Clone, Debug)]
pub struct Oidc {
    /// As configured, compared exactly with the discovery document's and each ID token's `iss`.
    pub issuer: String,
    /// The issuer as a URL: discovery is `{issuer}/.well-known/openid-configuration`.
    pub issuer_url: Url,
    pub client_id: String,
    pub client_secret: Option<Secret>,
    /// The claim and the value that make a person an admin; `None`: roles are not the
    /// provider's (a new person is a member, and no one's role changes).
    pub admin: Option<(String, String)>,
    /// Whether a first sign-in makes a person; else (the default, deny by default) only people
    /// made beforehand sign in: anyone with an account at a public provider could otherwise.
    pub new_people: bool,
    /// The claim a new person's name is taken from.
    pub name_claim: String,
    /// What the authorization asks for; `openid` always among them.
    pub scopes: Vec<String>,
}

/// Checks `[auth]`: `None` without `[auth.oidc]`.
pub fn check(raw: RawAuth) -> Result<Option<Oidc>, String> {
    let Some(raw) = raw.oidc else {
        return Ok(None);
    };
    let issuer = raw.issuer.trim().to_string();
    let issuer_url = Url::parse(&issuer)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https") && u.host().is_some())
        .filter(|u| u.query().is_none() && u.fragment().is_none())
        .ok_or("auth.oidc.issuer: must be an absolute http(s) URL without query or fragment")?;
    let client_id = raw.client_id.trim().to_string();
    if client_id.is_empty() {
        return Err("auth.oidc.client_id: must not be empty".into());
    }
    let admin = match (raw.admin_claim, raw.admin_value) {
        (None, None) => None,
        (Some(claim), Some(value)) if !claim.trim().is_empty() => {
            Some((claim.trim().to_string(), value))
        }
        _ => {
            return Err(
                "auth.oidc.admin_claim, admin_value: give both (a claim and the value that makes \
                 an admin) or neither"
                    .into(),
            );
        }
    };
    let mut scopes = raw
        .scopes
        .unwrap_or_else(|| vec!["openid".into(), "profile".into(), "email".into()]);
    if let Some(bad) = scopes.iter().find(|s| {
        s.is_empty()
            || !s
                .chars()
                .all(|c| c.is_ascii_graphic() && c != '"' && c != '\\')
    }) {
        return Err(format!("auth.oidc.scopes: {bad:?} is not a scope"));
    }
    if !scopes.iter().any(|s| s == "openid") {
        scopes.insert(0, "openid".into());
    }
    Ok(Some(Oidc {
        issuer,
        issuer_url,
        client_id,
        client_secret: super::values::api_key(raw.client_secret),
        admin,
        new_people: raw.new_people,
        name_claim: raw
            .name_claim
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "preferred_username".into()),
        scopes,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> Result<Option<Oidc>, String> {
        let raw: RawAuth = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        check(raw)
    }

    #[test]
    fn a_provider_needs_an_issuer_and_a_client_and_gets_openid() {
        let oidc = parse(
            "[oidc]\nissuer = \"https://id.example.com/realms/t\"\nclient_id = \"chatd\"\n\
             scopes = [\"email\"]",
        )
        .unwrap()
        .unwrap();
        assert_eq!(oidc.issuer, "https://id.example.com/realms/t");
        assert_eq!(oidc.scopes, ["openid", "email"]);
        assert!(!oidc.new_people && oidc.admin.is_none() && oidc.client_secret.is_none());
        assert_eq!(oidc.name_claim, "preferred_username");
        assert!(parse("").unwrap().is_none());
        for (bad, field) in [
            (
                "[oidc]\nissuer = \"id.example.com\"\nclient_id = \"c\"",
                "auth.oidc.issuer",
            ),
            (
                "[oidc]\nissuer = \"https://i\"\nclient_id = \" \"",
                "auth.oidc.client_id",
            ),
            (
                "[oidc]\nissuer = \"https://i\"\nclient_id = \"c\"\nadmin_claim = \"groups\"",
                "auth.oidc.admin_claim",
            ),
            (
                "[oidc]\nissuer = \"https://i\"\nclient_id = \"c\"\nscopes = [\"a b\"]",
                "auth.oidc.scopes",
            ),
        ] {
            let why = parse(bad).unwrap_err();
            assert!(why.starts_with(field), "{why}");
        }
        assert!(parse("[oidc]\nissuer = \"https://i\"\nclient_id = \"c\"\nextra = 1").is_err());
    }
}
