//! Signing in with the identity provider of `[auth.oidc]` (docs/teams.md, "Signing in with an
//! identity provider"): `GET /v1/auth/methods` says which ways the web client offers;
//! `GET /v1/auth/oidc/start` begins a sign-in and sends the browser to the provider, with a
//! cookie binding the sign-in to it (HttpOnly, SameSite=Lax, ten minutes); the provider sends
//! it back to `GET /v1/auth/oidc/callback`, which finishes it, sets the session cookie
//! (`sessions.rs`) and sends the browser to the web client. None needs a token: the flow is
//! its own proof (`signin/`).

use axum::Json;
use axum::extract::{OriginalUri, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::cookies::{cookie, named, public_base, secure};
use super::error::{ApiError, ApiQuery, ApiResult, ErrorBody};
use crate::signin::{Callback, PENDING_FOR, SignInError};

/// The routes that need no token (`middleware::OPEN_PATHS`).
pub const METHODS_PATH: &str = "/v1/auth/methods";
pub const START_PATH: &str = "/v1/auth/oidc/start";
pub const CALLBACK_PATH: &str = "/v1/auth/oidc/callback";

/// The cookie binding a sign-in to the browser that began it (`__Host-` before it over https).
const BROWSER_COOKIE: &str = "chatd_oidc_login";

#[derive(Debug, Serialize, ToSchema)]
pub struct AuthMethods {
    /// Whether the web client offers signing in with the identity provider (`[auth.oidc]`, in
    /// token mode).
    pub oidc: bool,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct OidcCallbackQuery {
    code: Option<String>,
    /// The sign-in's state; read as optional so its absence is this API's 401, not the
    /// extractor's.
    #[param(required = true)]
    state: Option<String>,
    error: Option<String>,
    /// RFC 9207's `iss`: when the provider sends it, it must be the configured issuer.
    iss: Option<String>,
}

#[utoipa::path(get, path = "/auth/methods", tag = "sessions", security(()),
    responses((status = 200, body = AuthMethods)))]
pub async fn methods(State(state): State<AppState>) -> Json<AuthMethods> {
    Json(AuthMethods {
        oidc: state.token.is_some() && state.oidc().is_some(),
    })
}

#[utoipa::path(get, path = "/auth/oidc/start", tag = "sessions", security(()),
    responses((status = 303, description = "to the identity provider; the response sets the cookie the callback checks"),
              (status = 404, body = ErrorBody, description = "no identity provider is configured ([auth.oidc]), or the server is in open mode"),
              (status = 503, body = ErrorBody, description = "the identity provider or the store could not be reached")))]
pub async fn start(
    State(state): State<AppState>,
    headers: HeaderMap,
    uri: OriginalUri,
) -> ApiResult<Response> {
    let oidc = configured(&state)?;
    let (base, _) = public_base(&state, &headers, &uri);
    let secure = secure(&state);
    let begun = state
        .signin
        .begin(&oidc, &state.store, &format!("{base}{CALLBACK_PATH}"))
        .await
        .map_err(refusal)?;
    let binding = format!(
        "{}={}; Path=/; Max-Age={}; HttpOnly; SameSite=Lax{}",
        named(BROWSER_COOKIE, secure),
        begun.browser,
        PENDING_FOR.as_secs(),
        if secure { "; Secure" } else { "" }
    );
    Ok(see_other(begun.url.as_str(), &[binding]))
}

#[utoipa::path(get, path = "/auth/oidc/callback", tag = "sessions", security(()),
    params(OidcCallbackQuery),
    responses((status = 303, description = "signed in: to the web client, with the session cookie set"),
              (status = 401, body = ErrorBody, description = "no such sign-in (its `state` is unknown, used or older than ten minutes), another browser's, the provider's refusal, another issuer, or an ID token that fails a check"),
              (status = 403, body = ErrorBody, description = "the person is disabled, or is not here and `new_people = false`"),
              (status = 404, body = ErrorBody, description = "no identity provider is configured"),
              (status = 503, body = ErrorBody, description = "the identity provider or the store could not be reached")))]
pub async fn callback(
    State(state): State<AppState>,
    ApiQuery(query): ApiQuery<OidcCallbackQuery>,
    headers: HeaderMap,
    uri: OriginalUri,
) -> ApiResult<Response> {
    let oidc = configured(&state)?;
    if let Some(iss) = &query.iss
        && *iss != oidc.issuer
    {
        return Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "iss: the answer comes from another issuer than the configured one",
        ));
    }
    let (base, _) = public_base(&state, &headers, &uri);
    let secure = secure(&state);
    let browser = cookie(&headers, &named(BROWSER_COOKIE, secure));
    let person = state
        .signin
        .finish(
            &oidc,
            &state.store,
            &format!("{base}{CALLBACK_PATH}"),
            Callback {
                code: query.code.as_deref(),
                state: query.state.as_deref(),
                error: query.error.as_deref(),
                browser: browser.as_deref(),
            },
        )
        .await
        .map_err(refusal)?;
    let user_agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok());
    let (_, secret) =
        crate::people::sessions::start(&state.store, &person.id, "oidc", user_agent).await?;
    state.people.team_made();
    let cleared = format!(
        "{}=; Path=/; Max-Age=0; HttpOnly; SameSite=Lax{}",
        named(BROWSER_COOKIE, secure),
        if secure { "; Secure" } else { "" }
    );
    Ok(see_other(
        &format!("{base}/"),
        &[super::sessions::session_cookie(&secret, secure), cleared],
    ))
}

/// `[auth.oidc]`, in token mode (people need it).
fn configured(state: &AppState) -> ApiResult<std::sync::Arc<crate::config::oidc::Oidc>> {
    match (state.token.is_some(), state.oidc()) {
        (true, Some(oidc)) => Ok(oidc),
        _ => Err(ApiError::not_found(
            "no identity provider is configured ([auth.oidc] in the configuration file, in token \
             mode)",
        )),
    }
}

fn refusal(error: SignInError) -> ApiError {
    match error {
        SignInError::Refused(why) => ApiError::new(StatusCode::UNAUTHORIZED, why),
        SignInError::Forbidden(why) => ApiError::new(StatusCode::FORBIDDEN, why),
        SignInError::Unavailable(why) => ApiError::new(StatusCode::SERVICE_UNAVAILABLE, why),
        SignInError::Store(e) => e.into(),
    }
}

fn see_other(location: &str, cookies: &[String]) -> Response {
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(location) {
        headers.insert(header::LOCATION, value);
    }
    for c in cookies {
        if let Ok(value) = HeaderValue::from_str(c) {
            headers.append(header::SET_COOKIE, value);
        }
    }
    response
}
