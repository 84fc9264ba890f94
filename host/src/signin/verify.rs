//! Checking an ID token (OpenID Connect Core §3.1.3.7) with `jsonwebtoken`: its signature by one
//! of the provider's published keys (asymmetric algorithms only: never `none`, never a shared
//! secret), its issuer exactly the configured one, its audience this client, its expiry (a
//! minute's leeway for clocks), and its `nonce` this sign-in's. A token signed by a key not in
//! the set is [`Unverified::UnknownKey`]: the provider may have rotated its keys, and the caller
//! fetches them again once.

use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation, decode, decode_header};
use serde_json::{Map, Value};
use subtle::ConstantTimeEq;

/// The algorithms an ID token may be signed with: a provider's own key pairs.
const ACCEPTED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// Clocks differ: an ID token is taken up to this long past its `exp` (and before its `nbf`).
const LEEWAY_SECS: u64 = 60;

/// What the token must say.
pub struct Expected<'a> {
    pub issuer: &'a str,
    pub client_id: &'a str,
    pub nonce: &'a str,
}

/// Why a token is not taken.
#[derive(Debug, PartialEq, Eq)]
pub enum Unverified {
    /// Signed by a key the set does not hold (by `kid`, or no key fits).
    UnknownKey,
    /// Anything else: the message says what, never the token.
    Bad(String),
}

/// The claims of `token`, when every check passes.
pub fn verify(
    token: &str,
    keys: &JwkSet,
    expected: &Expected<'_>,
) -> Result<Map<String, Value>, Unverified> {
    let bad = |why: &str| Unverified::Bad(format!("the ID token {why}"));
    let header = decode_header(token).map_err(|_| bad("is not a signed JWT"))?;
    if !ACCEPTED.contains(&header.alg) {
        return Err(bad(&format!(
            "is signed with {:?}, which is not accepted (only the provider's key pairs: RS*, PS*, \
             ES256, ES384, EdDSA)",
            header.alg
        )));
    }
    let jwk = match &header.kid {
        Some(kid) => keys.find(kid),
        // Without a `kid`, the one key there is (a set of one is common).
        None => match keys.keys.as_slice() {
            [only] => Some(only),
            _ => None,
        },
    }
    .ok_or(Unverified::UnknownKey)?;
    let key = DecodingKey::from_jwk(jwk).map_err(|_| bad("names a key chatd cannot use"))?;
    let mut validation = Validation::new(header.alg);
    validation.set_issuer(&[expected.issuer]);
    validation.set_audience(&[expected.client_id]);
    validation.set_required_spec_claims(&["exp", "iss", "aud", "sub"]);
    validation.validate_nbf = true;
    validation.leeway = LEEWAY_SECS;
    let data = decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| {
        use jsonwebtoken::errors::ErrorKind;
        match e.kind() {
            ErrorKind::InvalidSignature => bad("has a signature that does not verify"),
            ErrorKind::ExpiredSignature => bad("has expired"),
            ErrorKind::ImmatureSignature => bad("is not valid yet (nbf)"),
            ErrorKind::InvalidIssuer => bad("was issued by another issuer than the configured one"),
            ErrorKind::InvalidAudience => bad("is not for this client (aud)"),
            ErrorKind::MissingRequiredClaim(claim) => bad(&format!("has no `{claim}`")),
            ErrorKind::InvalidAlgorithm => bad("is signed with another algorithm than its key's"),
            _ => bad("could not be read"),
        }
    })?;
    let claims = data.claims;
    let nonce = claims.get("nonce").and_then(Value::as_str).unwrap_or("");
    if !bool::from(nonce.as_bytes().ct_eq(expected.nonce.as_bytes())) {
        return Err(bad("does not carry this sign-in's nonce"));
    }
    // Several audiences: the party it was issued to must be this client (Core §3.1.3.7 4-6);
    // without an `azp` to say so, other audiences are parties chatd does not know.
    let audiences = match claims.get("aud") {
        Some(Value::Array(all)) => all.len(),
        _ => 1,
    };
    match claims.get("azp").and_then(Value::as_str) {
        Some(azp) if azp != expected.client_id => {
            return Err(bad("was issued to another client (azp)"));
        }
        None if audiences > 1 => {
            return Err(bad("names other audiences besides this client, and no azp"));
        }
        _ => {}
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use jsonwebtoken::{EncodingKey, Header, encode};
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
    use serde_json::json;

    /// A P-256 key made now: its signing key and its JWK set (`kid` "k1").
    fn key_pair() -> (EncodingKey, JwkSet) {
        let rng = ring::rand::SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let point = pair.public_key().as_ref();
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let set = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "use": "sig",
            "alg": "ES256", "x": b64(&point[1..33]), "y": b64(&point[33..65])}]});
        (
            EncodingKey::from_ec_der(pkcs8.as_ref()),
            serde_json::from_value(set).unwrap(),
        )
    }

    fn now() -> i64 {
        chrono::Utc::now().timestamp()
    }

    fn claims() -> Value {
        json!({"iss": "https://id.example", "aud": "chatd", "sub": "u1", "nonce": "n-1",
            "iat": now(), "exp": now() + 300, "preferred_username": "ann"})
    }

    fn sign(key: &EncodingKey, claims: &Value, kid: Option<&str>) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = kid.map(String::from);
        encode(&header, claims, key).unwrap()
    }

    const EXPECTED: Expected<'static> = Expected {
        issuer: "https://id.example",
        client_id: "chatd",
        nonce: "n-1",
    };

    fn refusal(token: &str, keys: &JwkSet) -> String {
        match verify(token, keys, &EXPECTED) {
            Err(Unverified::Bad(why)) => why,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_token_of_the_providers_key_for_this_sign_in_is_taken() {
        let (key, keys) = key_pair();
        let taken = verify(&sign(&key, &claims(), Some("k1")), &keys, &EXPECTED).unwrap();
        assert_eq!(taken["preferred_username"], "ann");
        // Without a kid, the set's one key.
        assert!(verify(&sign(&key, &claims(), None), &keys, &EXPECTED).is_ok());
    }

    #[test]
    fn every_check_refuses_its_own_fault() {
        let (key, keys) = key_pair();
        let with = |change: &dyn Fn(&mut Value)| {
            let mut c = claims();
            change(&mut c);
            sign(&key, &c, Some("k1"))
        };
        assert!(refusal(&with(&|c| c["nonce"] = json!("other")), &keys).contains("nonce"));
        assert!(refusal(&with(&|c| c["exp"] = json!(now() - 120)), &keys).contains("expired"));
        assert!(
            refusal(&with(&|c| c["iss"] = json!("https://evil.example")), &keys).contains("issuer")
        );
        assert!(refusal(&with(&|c| c["aud"] = json!("other")), &keys).contains("aud"));
        assert!(refusal(&with(&|c| c["azp"] = json!("other")), &keys).contains("azp"));
        assert!(
            refusal(&with(&|c| c["aud"] = json!(["chatd", "other"])), &keys).contains("audiences")
        );
        let both = with(&|c| {
            c["aud"] = json!(["chatd", "other"]);
            c["azp"] = json!("chatd");
        });
        assert!(verify(&both, &keys, &EXPECTED).is_ok());
        assert!(
            refusal(
                &with(&|c| {
                    c.as_object_mut().unwrap().remove("nonce");
                }),
                &keys
            )
            .contains("nonce")
        );
        // A payload changed after signing.
        let token = sign(&key, &claims(), Some("k1"));
        let parts: Vec<&str> = token.split('.').collect();
        let mut forged = claims();
        forged["sub"] = json!("admin");
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(forged.to_string());
        let tampered = format!("{}.{b64}.{}", parts[0], parts[2]);
        assert!(refusal(&tampered, &keys).contains("signature"));
        // Another key's signature, under the same kid.
        let (other, _) = key_pair();
        assert!(refusal(&sign(&other, &claims(), Some("k1")), &keys).contains("signature"));
        // A key the set does not hold: perhaps rotated.
        assert_eq!(
            verify(&sign(&key, &claims(), Some("k2")), &keys, &EXPECTED),
            Err(Unverified::UnknownKey)
        );
        // `none` and a shared secret are never taken.
        let hs = encode(
            &Header::new(Algorithm::HS256),
            &claims(),
            &EncodingKey::from_secret(b"chatd"),
        )
        .unwrap();
        assert!(refusal(&hs, &keys).contains("not accepted"));
        let unsigned = format!(
            "{}.{}.",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims().to_string())
        );
        assert!(refusal(&unsigned, &keys).contains("JWT"));
        assert!(refusal("not a token", &keys).contains("JWT"));
    }
}
