//! Who an ID token's claims are here. A person is known by the provider's issuer and subject
//! once they signed in. At a first sign-in, a person made beforehand (`chatd users add`) whose
//! name is exactly the token's name claim, and who has signed in with no provider yet, becomes
//! that subject's: never the built-in admin (ADMIN_TOKEN's holder), never a disabled person, and
//! an admin only when the token's admin claim makes them one. Else, with `new_people`, a person
//! is made under that name (a suffix when it is taken). With `admin_claim`, the role follows the
//! claim at every sign-in. A disabled person is refused.

use serde_json::{Map, Value};

use super::SignInError;
use crate::config::oidc::Oidc;
use crate::people::manage::{MAX_PERSON_NAME_CHARS, person_name};
use crate::store::Store;
use crate::store::people::{BUILTIN_ADMIN, PersonRecord};
use crate::vocabulary::PersonRole;

/// The person `claims` (an ID token's, checked) sign in as.
pub async fn signed_in(
    store: &Store,
    oidc: &Oidc,
    claims: &Map<String, Value>,
) -> Result<PersonRecord, SignInError> {
    let sub = claims
        .get("sub")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| SignInError::Refused("the ID token has no `sub`".into()))?;
    // The issuer is one URL, without spaces: the pair is unambiguous.
    let subject = format!("{} {sub}", oidc.issuer);
    let role = role_of(oidc, claims);
    let person = match store.person_by_subject(&subject).await? {
        Some(person) => person,
        None => first_sign_in(store, oidc, claims, &subject, role).await?,
    };
    if person.disabled {
        return Err(SignInError::Forbidden(format!(
            "{} is disabled here: an admin enables them (chatd users enable {})",
            person.name, person.name
        )));
    }
    match role {
        Some(role) if role != person.role && person.id != BUILTIN_ADMIN => {
            store.set_person_role(&person.id, role).await?;
            Ok(PersonRecord { role, ..person })
        }
        _ => Ok(person),
    }
}

/// What the admin claim makes the person: `None` when roles are not the provider's.
fn role_of(oidc: &Oidc, claims: &Map<String, Value>) -> Option<PersonRole> {
    let (claim, value) = oidc.admin.as_ref()?;
    let holds = match claims.get(claim) {
        Some(Value::String(s)) => s == value,
        Some(Value::Array(items)) => items.iter().any(|i| i.as_str() == Some(value)),
        Some(Value::Bool(b)) => value == &b.to_string(),
        _ => false,
    };
    Some(if holds {
        PersonRole::Admin
    } else {
        PersonRole::Member
    })
}

/// The name the claims give: the configured claim, else a verified `email`, else `sub`; cut
/// to what a person's name may hold. With whether it is the claim exactly (nothing replaced or
/// cut): only then may it name a person made beforehand.
fn claimed_name(oidc: &Oidc, claims: &Map<String, Value>) -> (String, bool) {
    let text = |name: &str| {
        claims
            .get(name)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let verified = claims.get("email_verified").and_then(Value::as_bool) == Some(true);
    let name = match oidc.name_claim.as_str() {
        // An address the provider has not verified names no one.
        "email" if !verified => None,
        claim => text(claim),
    }
    .or_else(|| text("email").filter(|_| verified))
    .or_else(|| text("sub"))
    .unwrap_or("person");
    let plain: String = name
        .chars()
        .map(|c| match c {
            c if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '@') => c,
            _ => '_',
        })
        .take(MAX_PERSON_NAME_CHARS - 5)
        .collect();
    let exact = plain == name;
    (plain, exact)
}

async fn first_sign_in(
    store: &Store,
    oidc: &Oidc,
    claims: &Map<String, Value>,
    subject: &str,
    role: Option<PersonRole>,
) -> Result<PersonRecord, SignInError> {
    let (name, exact) = claimed_name(oidc, claims);
    if exact
        && let Some(person) = store.person_named(&name).await?
        && person.id != BUILTIN_ADMIN
    {
        if person.disabled {
            return Err(SignInError::Forbidden(format!(
                "{name} is disabled here: an admin enables them (chatd users enable {name})"
            )));
        }
        // A name is easier to come by at a provider than an admin's standing here.
        let may = person.role != PersonRole::Admin || role == Some(PersonRole::Admin);
        if may && store.link_subject(&person.id, subject).await? {
            return Ok(person);
        }
    }
    if !oidc.new_people {
        return Err(SignInError::Forbidden(format!(
            "no one here is named {name:?}: an admin adds you first (chatd users add {name})"
        )));
    }
    // The name, else the name and a short suffix: a name is one person's.
    for attempt in 0..5 {
        let candidate = match attempt {
            0 => name.clone(),
            _ => format!(
                "{name}-{}",
                &crate::vocabulary::new_id().replace('-', "")[28..32]
            ),
        };
        if person_name(&candidate).is_err() {
            continue;
        }
        let made = store
            .add_signed_in_person(&candidate, role.unwrap_or(PersonRole::Member), subject)
            .await;
        match made {
            Ok(Some(person)) => return Ok(person),
            Ok(None) => continue,
            // Two first sign-ins of one subject at once: the other made the person.
            Err(e) => match store.person_by_subject(subject).await? {
                Some(person) => return Ok(person),
                None => return Err(e.into()),
            },
        }
    }
    Err(SignInError::Forbidden(format!(
        "no free name near {name:?} for a new person: an admin adds you (chatd users add)"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn oidc(name_claim: &str) -> Oidc {
        crate::config::oidc::check(
            toml::from_str(&format!(
                "[oidc]\nissuer = \"https://id.example\"\nclient_id = \"c\"\n\
                 admin_claim = \"groups\"\nadmin_value = \"chatd-admins\"\nname_claim = \"{name_claim}\""
            ))
            .unwrap(),
        )
        .unwrap()
        .unwrap()
    }

    fn claims(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn the_admin_claim_decides_the_role_and_names_are_plain() {
        let o = oidc("preferred_username");
        let admin = claims(json!({"groups": ["x", "chatd-admins"]}));
        assert_eq!(role_of(&o, &admin), Some(PersonRole::Admin));
        assert_eq!(
            role_of(&o, &claims(json!({"groups": "chatd-admins"}))),
            Some(PersonRole::Admin)
        );
        assert_eq!(
            role_of(&o, &claims(json!({"groups": ["x"]}))),
            Some(PersonRole::Member)
        );
        assert_eq!(role_of(&o, &claims(json!({}))), Some(PersonRole::Member));
        let named = claims(json!({"preferred_username": "Zoë Smith", "sub": "s"}));
        assert_eq!(claimed_name(&o, &named), ("Zo__Smith".into(), false));
        assert!(person_name(&claimed_name(&o, &named).0).is_ok());
        let plain = claims(json!({"preferred_username": "ann.lee", "sub": "s"}));
        assert_eq!(claimed_name(&o, &plain), ("ann.lee".into(), true));
        let email = oidc("email");
        let unverified = claims(json!({"email": "ann@example.com", "sub": "s1"}));
        assert_eq!(claimed_name(&email, &unverified).0, "s1");
        let verified =
            claims(json!({"email": "ann@example.com", "email_verified": true, "sub": "s1"}));
        assert_eq!(claimed_name(&email, &verified).0, "ann@example.com");
        let long = claims(json!({"preferred_username": "x".repeat(200)}));
        let (cut, exact) = claimed_name(&o, &long);
        assert!(cut.len() <= MAX_PERSON_NAME_CHARS - 5 && !exact);
    }
}
