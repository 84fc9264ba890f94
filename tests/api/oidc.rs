//! Signing in with an OpenID Connect provider (docs/teams.md, "Signing in with an identity
//! provider"), against a provider made here on loopback with a key made at test time: the
//! code flow with PKCE, `state` and `nonce`; a person made at first sign-in, or matched to one
//! made beforehand; the role following the admin claim; and each fault refused: a replayed
//! `state`, another browser, a wrong `nonce`, an expired or tampered ID token, another issuer
//! (in the token or in the redirect), a rotated key taken. The browser's side, against the
//! certified `oidc-provider`, is `tests/web/oidc.rs`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode as AxumStatus};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use reqwest::StatusCode;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};

use crate::people::{TOKEN, add_person, users_cli};
use crate::support::{Options, TestServer};

const CLIENT_ID: &str = "chatd";
const CLIENT_SECRET: &str = "op-secret";

/// What the provider does wrong, for one sign-in.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Fault {
    #[default]
    None,
    WrongNonce,
    Expired,
    OtherIssuer,
    Tampered,
    /// The redirect names another issuer (RFC 9207's `iss`).
    OtherIss,
    /// The token endpoint refuses the code, quoting it in its description.
    RefuseCode,
}

struct Key {
    kid: String,
    signing: EncodingKey,
    jwk: Value,
}

fn key(kid: &str) -> Key {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair =
        EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).unwrap();
    let point = pair.public_key().as_ref();
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    Key {
        kid: kid.into(),
        signing: EncodingKey::from_ec_der(pkcs8.as_ref()),
        jwk: json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
            "x": b64(&point[1..33]), "y": b64(&point[33..65])}),
    }
}

/// An authorization the provider granted, until its code is exchanged.
struct Granted {
    nonce: String,
    challenge: String,
    redirect_uri: String,
}

struct Op {
    issuer: String,
    key: Key,
    /// The claims of the next ID token (beside iss, aud, exp, iat, nonce).
    claims: Value,
    fault: Fault,
    codes: HashMap<String, Granted>,
    /// Token requests seen, with whether the client authenticated as configured.
    authenticated: Vec<bool>,
}

type Shared = Arc<Mutex<Op>>;

/// The provider, listening; its issuer.
async fn provider() -> (Shared, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", listener.local_addr().unwrap());
    let op = Arc::new(Mutex::new(Op {
        issuer: issuer.clone(),
        key: key("k1"),
        claims: json!({}),
        fault: Fault::None,
        codes: HashMap::new(),
        authenticated: Vec::new(),
    }));
    let app = Router::new()
        .route("/.well-known/openid-configuration", get(discovery))
        .route("/jwks", get(jwks))
        .route("/authorize", get(authorize))
        .route("/token", post(token))
        .with_state(op.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (op, issuer)
}

async fn discovery(State(op): State<Shared>) -> Json<Value> {
    let issuer = op.lock().unwrap().issuer.clone();
    Json(json!({
        "issuer": issuer,
        "authorization_endpoint": format!("{issuer}/authorize"),
        "token_endpoint": format!("{issuer}/token"),
        "jwks_uri": format!("{issuer}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["ES256"],
        "code_challenge_methods_supported": ["S256"],
    }))
}

async fn jwks(State(op): State<Shared>) -> Json<Value> {
    Json(json!({"keys": [op.lock().unwrap().key.jwk.clone()]}))
}

async fn authorize(State(op): State<Shared>, Query(q): Query<HashMap<String, String>>) -> Response {
    let mut op = op.lock().unwrap();
    assert_eq!(q["response_type"], "code");
    assert_eq!(q["client_id"], CLIENT_ID);
    assert_eq!(q["code_challenge_method"], "S256");
    assert!(q["scope"].split(' ').any(|s| s == "openid"), "{q:?}");
    let code = format!("code-{}", op.codes.len());
    op.codes.insert(
        code.clone(),
        Granted {
            nonce: q["nonce"].clone(),
            challenge: q["code_challenge"].clone(),
            redirect_uri: q["redirect_uri"].clone(),
        },
    );
    let iss = match op.fault {
        Fault::OtherIss => "http://other.example".to_string(),
        _ => op.issuer.clone(),
    };
    let mut to = url::Url::parse(&q["redirect_uri"]).unwrap();
    to.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &q["state"])
        .append_pair("iss", &iss);
    Redirect::to(to.as_str()).into_response()
}

async fn token(State(op): State<Shared>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&body).into_owned().collect();
    let mut op = op.lock().unwrap();
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!("{CLIENT_ID}:{CLIENT_SECRET}"))
    );
    let authenticated =
        headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(basic.as_str());
    op.authenticated.push(authenticated);
    let Some(granted) = op.codes.remove(&form["code"]) else {
        return (
            AxumStatus::BAD_REQUEST,
            Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    };
    if op.fault == Fault::RefuseCode {
        let quoted = format!("the code {} is not valid", form["code"]);
        return (
            AxumStatus::BAD_REQUEST,
            Json(json!({"error": "invalid_grant", "error_description": quoted})),
        )
            .into_response();
    }
    let verifier_ok = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(
        <sha2::Sha256 as sha2::Digest>::digest(form["code_verifier"].as_bytes()),
    ) == granted.challenge;
    if !authenticated || !verifier_ok || form["redirect_uri"] != granted.redirect_uri {
        return (
            AxumStatus::BAD_REQUEST,
            Json(json!({"error": "invalid_grant"})),
        )
            .into_response();
    }
    let now = chrono::Utc::now().timestamp();
    let mut claims = json!({"iss": op.issuer, "aud": CLIENT_ID, "iat": now, "exp": now + 300,
        "nonce": granted.nonce});
    for (k, v) in op.claims.as_object().unwrap() {
        claims[k] = v.clone();
    }
    match op.fault {
        Fault::WrongNonce => claims["nonce"] = json!("not-this-one"),
        Fault::Expired => claims["exp"] = json!(now - 600),
        Fault::OtherIssuer => claims["iss"] = json!("http://other.example"),
        _ => {}
    }
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(op.key.kid.clone());
    let mut id_token = encode(&header, &claims, &op.key.signing).unwrap();
    if op.fault == Fault::Tampered {
        let parts: Vec<&str> = id_token.split('.').collect();
        claims["sub"] = json!("someone-else");
        let body = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(claims.to_string());
        id_token = format!("{}.{body}.{}", parts[0], parts[2]);
    }
    Json(json!({"access_token": "at", "token_type": "Bearer", "id_token": id_token}))
        .into_response()
}

/// A token-mode server whose configuration file names the provider `issuer`.
async fn server(issuer: &str, new_people: bool) -> (TestServer, tempfile::TempDir) {
    let files = tempfile::tempdir().unwrap();
    let config = files.path().join("chatd.toml");
    std::fs::write(
        &config,
        format!(
            "[auth.oidc]\nissuer = \"{issuer}\"\nclient_id = \"{CLIENT_ID}\"\n\
             client_secret = \"{CLIENT_SECRET}\"\nadmin_claim = \"groups\"\n\
             admin_value = \"chatd-admins\"\nnew_people = {new_people}\n"
        ),
    )
    .unwrap();
    let server = TestServer::start_with(Options {
        token: Some(TOKEN.into()),
        config: Some(config),
        ..Options::default()
    })
    .await;
    (server, files)
}

fn browser() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

fn set_cookie(res: &reqwest::Response, name: &str) -> Option<String> {
    res.headers()
        .get_all("set-cookie")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(|c| c.strip_prefix(&format!("{name}=")))
        .and_then(|rest| rest.split(';').next())
        .map(String::from)
}

/// One sign-in as a browser makes it, up to the callback: the callback's URL and the binding
/// cookie.
async fn to_callback(server: &TestServer) -> (String, String) {
    let client = browser();
    let start = client
        .get(format!("{}/v1/auth/oidc/start", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(start.status(), StatusCode::SEE_OTHER);
    let binding = set_cookie(&start, "chatd_oidc_login").expect("a binding cookie");
    let cookie = start.headers()["set-cookie"].to_str().unwrap().to_string();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Lax"),
        "{cookie}"
    );
    let authorize = start.headers()["location"].to_str().unwrap().to_string();
    let url = url::Url::parse(&authorize).unwrap();
    let query: HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(
        query["redirect_uri"],
        format!("{}/v1/auth/oidc/callback", server.base)
    );
    assert!(
        query["state"].len() >= 40 && query["nonce"].len() >= 40,
        "{query:?}"
    );
    let back = client.get(&authorize).send().await.unwrap();
    assert!(back.status().is_redirection());
    (
        back.headers()["location"].to_str().unwrap().to_string(),
        binding,
    )
}

/// The callback reached with `binding` (or none): its status, and the session cookie or the
/// refusal's body.
async fn callback(callback: &str, binding: Option<&str>) -> (StatusCode, Result<String, Value>) {
    let mut req = browser().get(callback);
    if let Some(binding) = binding {
        req = req.header("cookie", format!("chatd_oidc_login={binding}"));
    }
    let res = req.send().await.unwrap();
    let status = res.status();
    match set_cookie(&res, "chatd_session") {
        Some(session) if status == StatusCode::SEE_OTHER => (status, Ok(session)),
        _ => (status, Err(res.json().await.unwrap_or(Value::Null))),
    }
}

/// A whole sign-in with the provider saying `claims`: the session cookie, or the refusal.
async fn sign_in(
    server: &TestServer,
    op: &Shared,
    claims: Value,
    fault: Fault,
) -> (StatusCode, Result<String, Value>) {
    {
        let mut op = op.lock().unwrap();
        op.claims = claims;
        op.fault = fault;
    }
    let (url, binding) = to_callback(server).await;
    callback(&url, Some(&binding)).await
}

async fn who(server: &TestServer, session: &str) -> Value {
    let res = server
        .client
        .get(format!("{}/v1/auth/session", server.base))
        .header("cookie", format!("chatd_session={session}"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    res.json::<Value>().await.unwrap()["user"].clone()
}

fn refused(outcome: (StatusCode, Result<String, Value>), status: StatusCode, says: &str) {
    let (got, body) = outcome;
    let body = body.expect_err("refused");
    assert_eq!(got, status, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains(says), "{message:?} should say {says:?}");
}

#[tokio::test]
async fn a_person_signs_in_with_the_provider_and_the_role_follows_its_claim() {
    let (op, issuer) = provider().await;
    let (server, _files) = server(&issuer, true).await;
    let (status, methods) = server.get("/v1/auth/methods").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(methods["oidc"], true);

    let ann = json!({"sub": "ann-1", "preferred_username": "ann", "groups": ["chatd-admins"]});
    let (status, session) = sign_in(&server, &op, ann.clone(), Fault::None).await;
    assert_eq!(status, StatusCode::SEE_OTHER);
    let session = session.unwrap();
    let user = who(&server, &session).await;
    assert_eq!(
        (user["name"].as_str(), user["role"].as_str()),
        (Some("ann"), Some("admin"))
    );
    assert!(
        op.lock().unwrap().authenticated.iter().all(|a| *a),
        "client_secret_basic"
    );
    // The same subject again is the same person; out of the group, a member.
    let mut member = ann.clone();
    member["groups"] = json!([]);
    let (_, again) = sign_in(&server, &op, member, Fault::None).await;
    let again = who(&server, &again.unwrap()).await;
    assert_eq!(again["id"], user["id"]);
    assert_eq!(again["role"], "member");
    // Another subject with the same name is someone else.
    let other = json!({"sub": "ann-2", "preferred_username": "ann"});
    let (_, other) = sign_in(&server, &op, other, Fault::None).await;
    let other = who(&server, &other.unwrap()).await;
    assert_ne!(other["id"], user["id"]);
    assert!(
        other["name"].as_str().unwrap().starts_with("ann-"),
        "{other}"
    );

    // A key rotated since the keys were fetched: fetched again, and taken.
    op.lock().unwrap().key = key("k2");
    let (status, _) = sign_in(&server, &op, ann.clone(), Fault::None).await;
    assert_eq!(status, StatusCode::SEE_OTHER);

    // A disabled person is refused.
    assert!(users_cli(&server, &["disable", "ann"]).status.success());
    refused(
        sign_in(&server, &op, ann, Fault::None).await,
        StatusCode::FORBIDDEN,
        "disabled",
    );
    server.stop().await;
}

#[tokio::test]
async fn every_fault_of_a_sign_in_is_refused() {
    let (op, issuer) = provider().await;
    let (server, _files) = server(&issuer, true).await;
    let ann = json!({"sub": "ann-1", "preferred_username": "ann"});
    for (fault, says) in [
        (Fault::WrongNonce, "nonce"),
        (Fault::Expired, "expired"),
        (Fault::OtherIssuer, "issuer"),
        (Fault::Tampered, "signature"),
        (Fault::OtherIss, "iss"),
        (Fault::RefuseCode, "invalid_grant"),
    ] {
        let outcome = sign_in(&server, &op, ann.clone(), fault).await;
        // No refusal quotes the code it was about (the provider's codes are `code-N`).
        let said = outcome.1.clone().unwrap_err().to_string();
        assert!(!said.contains("code-"), "{said}");
        refused(outcome, StatusCode::UNAUTHORIZED, says);
    }
    op.lock().unwrap().fault = Fault::None;
    // A replayed state: the first callback signs in, the same again finds nothing.
    let (url, binding) = to_callback(&server).await;
    assert_eq!(
        callback(&url, Some(&binding)).await.0,
        StatusCode::SEE_OTHER
    );
    refused(
        callback(&url, Some(&binding)).await,
        StatusCode::UNAUTHORIZED,
        "state",
    );
    // Another browser (no binding cookie, or another's) cannot finish a sign-in.
    let (url, _) = to_callback(&server).await;
    refused(
        callback(&url, None).await,
        StatusCode::UNAUTHORIZED,
        "browser",
    );
    let (url, _) = to_callback(&server).await;
    refused(
        callback(&url, Some("forged")).await,
        StatusCode::UNAUTHORIZED,
        "browser",
    );
    let bare = format!("{}/v1/auth/oidc/callback?code=x", server.base);
    refused(
        callback(&bare, None).await,
        StatusCode::UNAUTHORIZED,
        "state",
    );
    // The provider's own refusal (the person said no), from the browser that began it.
    let (url, binding) = to_callback(&server).await;
    let state = url::Url::parse(&url)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "state")
        .unwrap()
        .1
        .into_owned();
    let denied = format!(
        "{}/v1/auth/oidc/callback?state={state}&error=access_denied",
        server.base
    );
    refused(
        callback(&denied, Some(&binding)).await,
        StatusCode::UNAUTHORIZED,
        "access_denied",
    );
    // Nothing was made of the refused sign-ins: one person, one session.
    let sessions: Vec<(i64,)> = server
        .raw_db()
        .await
        .rows("SELECT COUNT(*) FROM sessions", &[])
        .await;
    assert_eq!(sessions[0].0, 1);
    let (_, users) = server.get("/v1/users").await;
    let names: Vec<&str> = users["users"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["admin", "ann"]);
    server.stop().await;
}

#[tokio::test]
async fn only_people_made_beforehand_sign_in_when_the_file_says_so() {
    let (op, issuer) = provider().await;
    let (server, _files) = server(&issuer, false).await;
    refused(
        sign_in(
            &server,
            &op,
            json!({"sub": "s-1", "preferred_username": "zed"}),
            Fault::None,
        )
        .await,
        StatusCode::FORBIDDEN,
        "no one here is named",
    );
    let (bob_id, _) = add_person(&server, "bob", "member").await;
    let (_, session) = sign_in(
        &server,
        &op,
        json!({"sub": "s-2", "preferred_username": "bob"}),
        Fault::None,
    )
    .await;
    assert_eq!(who(&server, &session.unwrap()).await["id"], bob_id.as_str());
    // Bob is now that subject's: another subject named bob is no one here.
    refused(
        sign_in(
            &server,
            &op,
            json!({"sub": "s-3", "preferred_username": "bob"}),
            Fault::None,
        )
        .await,
        StatusCode::FORBIDDEN,
        "no one here is named",
    );
    // A name that had to be changed to fit matches no one: "bob smith" is not bob_smith.
    add_person(&server, "bob_smith", "member").await;
    refused(
        sign_in(
            &server,
            &op,
            json!({"sub": "s-5", "preferred_username": "bob smith"}),
            Fault::None,
        )
        .await,
        StatusCode::FORBIDDEN,
        "no one here is named",
    );
    // An admin made beforehand is matched only when the provider says admin too.
    let (boss_id, _) = add_person(&server, "boss", "admin").await;
    refused(
        sign_in(
            &server,
            &op,
            json!({"sub": "s-6", "preferred_username": "boss"}),
            Fault::None,
        )
        .await,
        StatusCode::FORBIDDEN,
        "no one here is named",
    );
    let admin_claims =
        json!({"sub": "s-6", "preferred_username": "boss", "groups": ["chatd-admins"]});
    let (_, session) = sign_in(&server, &op, admin_claims, Fault::None).await;
    assert_eq!(
        who(&server, &session.unwrap()).await["id"],
        boss_id.as_str()
    );
    // The built-in admin is never a provider's subject.
    refused(
        sign_in(
            &server,
            &op,
            json!({"sub": "s-4", "preferred_username": "admin"}),
            Fault::None,
        )
        .await,
        StatusCode::FORBIDDEN,
        "no one here is named",
    );
    server.stop().await;
}

#[tokio::test]
async fn without_a_provider_there_is_no_sign_in_to_begin() {
    let server = crate::people::token_server().await;
    let (status, methods) = server.get("/v1/auth/methods").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(methods["oidc"], false);
    let res = browser()
        .get(format!("{}/v1/auth/oidc/start", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    server.stop().await;
}

/// A provider that cannot be reached is a 503 naming it, and nothing is kept of the attempt.
#[tokio::test]
async fn a_provider_out_of_reach_is_a_503_naming_it() {
    let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let issuer = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let (server, _files) = server(&issuer, true).await;
    let res = browser()
        .get(format!("{}/v1/auth/oidc/start", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let body: Value = res.json().await.unwrap();
    let message = body["message"].as_str().unwrap();
    assert!(message.starts_with("the identity provider"), "{message}");
    let kept: Vec<(i64,)> = server
        .raw_db()
        .await
        .rows("SELECT COUNT(*) FROM oidc_logins", &[])
        .await;
    assert_eq!(kept[0].0, 0);
    server.stop().await;
}
