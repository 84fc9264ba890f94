//! The HTTP layer's one error type, rendered as `{ "message": … }`, and the JSON body extractor
//! whose rejections are rendered the same way (axum's own rejections are plain text).
//!
//! Errors do not log themselves: a 5xx carries its cause in a response extension
//! ([`ErrorCause`]) and the request-log middleware writes it on the request's log line.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::request::Parts;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;
use utoipa::ToSchema;

use crate::attachments::AttachmentError;
use crate::store::StoreError;

/// The body of every error response.
#[derive(Debug, Serialize, ToSchema)]
pub struct ErrorBody {
    /// What went wrong; for bad input it names the field and the rule.
    pub message: String,
}

/// The body of a 429 for a spent budget (`usage/`).
#[derive(Debug, Serialize, ToSchema)]
pub struct BudgetErrorBody {
    pub message: String,
    /// `{scope: user|key, limit, spent, period: day|week|month, resetsAt, unit: usd|tokens}`.
    #[schema(value_type = Object)]
    pub budget: serde_json::Value,
}

#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    /// The internal cause of a 5xx, for the log line only; never sent to the client.
    cause: Option<String>,
    /// A spent budget's `budget` object, sent beside the message.
    budget: Option<Box<serde_json::Value>>,
    /// The request field a 400 is about ([`ApiError::invalid`]): the message begins with it,
    /// and `/openai/v1` sends it as `param`.
    field: Option<String>,
}

/// The internal cause of an error response, read by the request-log middleware.
#[derive(Clone, Debug)]
pub struct ErrorCause(pub String);

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            cause: None,
            budget: None,
            field: None,
        }
    }
    /// A 400: the request's `field` breaks `rule` (`field: rule`, as every check words it).
    pub fn invalid(field: impl Into<String>, rule: impl std::fmt::Display) -> Self {
        let field = field.into();
        Self {
            field: Some(field.clone()),
            ..Self::bad_request(format!("{field}: {rule}"))
        }
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, message)
    }
    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "missing or invalid token: send Authorization: Bearer <ADMIN_TOKEN>",
        )
    }
    /// A `chatd_` key that does not (or no longer) open anything.
    pub fn refused_key() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "invalid key: it is unknown, revoked or expired, or its person is disabled",
        )
    }
    /// A caller whose key lacks the scope a route needs (403): an admin's key names the scope,
    /// a member's their role (only admins have `admin`).
    pub fn out_of_scope(caller: &crate::people::Caller, needed: crate::vocabulary::Scope) -> Self {
        use crate::vocabulary::{PersonRole, Scope};
        let message = if needed == Scope::Admin && caller.role == PersonRole::Member {
            format!("this route is for admins, and {} is a member", caller.name)
        } else {
            format!("this key's scopes do not include `{needed}`, which this route needs")
        };
        Self::new(StatusCode::FORBIDDEN, message)
    }
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: "internal error".into(),
            cause: Some(cause.to_string()),
            budget: None,
            field: None,
        }
    }
    /// The spent budget's object, when this is its 429.
    pub fn budget(&self) -> Option<&serde_json::Value> {
        self.budget.as_deref()
    }
    pub fn status(&self) -> StatusCode {
        self.status
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The request field the error is about, when it is one ([`ApiError::invalid`]).
    pub fn field(&self) -> Option<&str> {
        self.field.as_deref()
    }
    /// The status, the message and the internal cause, for a route that answers in a shape of
    /// its own (`/openai/v1`).
    pub fn into_parts(self) -> (StatusCode, String, Option<String>) {
        (self.status, self.message, self.cause)
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            // Not this request's fault nor a bug: another instance can serve it.
            StoreError::LeaseLost | StoreError::Unavailable { .. } => {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, err.to_string())
            }
            err => ApiError::internal(err),
        }
    }
}

impl From<crate::people::manage::Refusal> for ApiError {
    fn from(refusal: crate::people::manage::Refusal) -> Self {
        use crate::people::manage::Refusal;
        match refusal {
            Refusal::Invalid(m) => ApiError::bad_request(m),
            Refusal::Forbidden(m) => ApiError::new(StatusCode::FORBIDDEN, m),
            Refusal::NotFound(m) => ApiError::not_found(m),
            Refusal::Conflict(m) => ApiError::new(StatusCode::CONFLICT, m),
            Refusal::Store(e) => e.into(),
        }
    }
}

impl From<crate::usage::Refused> for ApiError {
    fn from(refused: crate::usage::Refused) -> Self {
        use crate::usage::Refused;
        match refused {
            Refused::Spent(spent) => Self {
                budget: Some(Box::new(spent.to_json())),
                ..ApiError::new(StatusCode::TOO_MANY_REQUESTS, spent.message())
            },
            e @ Refused::NoPrice(_) => ApiError::new(StatusCode::FORBIDDEN, e.to_string()),
            Refused::Store(e) => e.into(),
        }
    }
}

impl From<AttachmentError> for ApiError {
    fn from(err: AttachmentError) -> Self {
        ApiError::invalid(err.field, err.rule)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = match self.budget {
            None => (
                self.status,
                axum::Json(ErrorBody {
                    message: bounded(self.message),
                }),
            )
                .into_response(),
            Some(budget) => {
                let mut response = (
                    self.status,
                    axum::Json(BudgetErrorBody {
                        message: bounded(self.message),
                        budget: *budget,
                    }),
                )
                    .into_response();
                // Not before the period resets: the OpenAI SDKs read this and do not retry.
                response
                    .headers_mut()
                    .insert(SHOULD_RETRY, HeaderValue::from_static("false"));
                response
            }
        };
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if let Some(cause) = self.cause {
            response.extensions_mut().insert(ErrorCause(cause));
        }
        response
    }
}

/// The header telling the OpenAI SDKs whether to try again (`false` for a spent budget).
pub const SHOULD_RETRY: &str = "x-should-retry";

/// Characters of the caller's input an error message quotes ([`quoted`], [`bounded`]).
pub const QUOTE_CHARS: usize = 200;
/// The longest error message sent, in characters.
pub const MAX_MESSAGE_CHARS: usize = 2_000;

/// `text` quoted (Rust's escapes) as an error message shows what the caller sent: its first
/// [`QUOTE_CHARS`] characters, and `…` when there was more. A 3 MiB field is not echoed back.
pub fn quoted(text: &str) -> String {
    match text.char_indices().nth(QUOTE_CHARS) {
        Some((cut, _)) => format!("{:?}…", &text[..cut]),
        None => format!("{text:?}"),
    }
}

/// An error message as sent: every span it quotes (serde's `` `…` `` and `"…"`, where a `\`
/// escapes within the latter) cut to [`QUOTE_CHARS`], then the whole to [`MAX_MESSAGE_CHARS`].
/// Messages written here quote through [`quoted`]; this bounds the words of libraries too. A
/// caller whose input holds a quote mark can end a span early, so the hard bound on what is
/// echoed is [`MAX_MESSAGE_CHARS`].
pub fn bounded(message: String) -> String {
    if message.chars().count() <= QUOTE_CHARS {
        return message;
    }
    let mut out = String::with_capacity(message.len().min(MAX_MESSAGE_CHARS * 4));
    let mut quote: Option<(char, usize)> = None;
    let mut escaped = false;
    for c in message.chars() {
        match quote {
            Some((close, _)) if c == close && !escaped => {
                quote = None;
                out.push(c);
            }
            Some((close, n)) => {
                escaped = close == '"' && c == '\\' && !escaped;
                if n < QUOTE_CHARS {
                    out.push(c);
                } else if n == QUOTE_CHARS {
                    out.push('…');
                }
                quote = Some((close, n + 1));
            }
            None => {
                if c == '`' || c == '"' {
                    quote = Some((c, 0));
                }
                out.push(c);
            }
        }
    }
    match out.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &out[..cut]),
        None => out,
    }
}

/// A JSON request body. Like `axum::Json` it needs `Content-Type: application/json` (or
/// `application/*+json`) for a body that is not empty (415 otherwise: browsers send `text/plain`,
/// form and typeless bodies cross-site without a CORS preflight); unlike it, it treats an empty
/// body as `{}` (every field optional ⇒ the request is valid), answers 400 (never 422) for wrong
/// types and unknown enum values, and names the offending field by its JSON path.
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let declared = req.headers().get(header::CONTENT_TYPE).cloned();
        let deadline = req.extensions().get::<BodyDeadline>().copied();
        let read = Bytes::from_request(req, state);
        let read = match deadline {
            Some(deadline) => tokio::time::timeout_at(deadline.at, read)
                .await
                .map_err(|_| {
                    ApiError::new(StatusCode::REQUEST_TIMEOUT, body_too_slow(deadline.total))
                })?,
            None => read.await,
        };
        let bytes = read.map_err(body_rejection)?;
        if !bytes.iter().all(u8::is_ascii_whitespace) {
            let got = match &declared {
                Some(declared) if is_json(declared) => None,
                Some(declared) => Some(quoted(declared.to_str().unwrap_or("a non-text value"))),
                None => Some("none".into()),
            };
            if let Some(got) = got {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    format!("Content-Type: a request body must be application/json (got {got})"),
                ));
            }
        }
        parse_json(&bytes).map(ApiJson)
    }
}

fn is_json(content_type: &HeaderValue) -> bool {
    let Ok(value) = content_type.to_str() else {
        return false;
    };
    let essence = value
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || (essence.starts_with("application/") && essence.ends_with("+json"))
}

pub fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let bytes = match bytes.iter().find(|b| !b.is_ascii_whitespace()) {
        // No body at all is `{}`; white space alone is no JSON text.
        None if bytes.is_empty() => b"{}".as_slice(),
        None => {
            return Err(ApiError::bad_request(
                "request body is not valid JSON: it holds only white space",
            ));
        }
        // Every body in the API is an object; serde would otherwise accept an array for a struct.
        Some(b'{') => bytes,
        Some(_) if serde_json::from_slice::<serde::de::IgnoredAny>(bytes).is_err() => {
            return Err(ApiError::bad_request("request body is not valid JSON"));
        }
        Some(_) => return Err(ApiError::bad_request("request body: must be a JSON object")),
    };
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let inner = err.inner();
        if inner.is_syntax() || inner.is_eof() {
            return ApiError::bad_request(format!("request body is not valid JSON: {inner}"));
        }
        match err.path().to_string().as_str() {
            "." => ApiError::bad_request(format!("request body: {inner}")),
            path => ApiError::bad_request(format!("{path}: {inner}")),
        }
    })?;
    de.end()
        .map_err(|e| ApiError::bad_request(format!("request body is not valid JSON: {e}")))?;
    Ok(value)
}

/// A path parameter. Like `axum::extract::Path`, but a rejection (an id that is not valid
/// UTF-8 once percent-decoded, say) is a `{message}` 400 like every other error, and an id of
/// someone else's chat or search (`owner.rs`) reaches the handler as one that exists nowhere.
pub struct ApiPath<T>(pub T);

/// Path parameter values that name someone else's things (`owner.rs` finds them), each
/// replaced for the handler by an id no chat or search has (a fresh one).
#[derive(Clone, Debug)]
pub struct Disowned {
    values: Vec<String>,
    nowhere: String,
}

impl Disowned {
    pub fn new(values: Vec<String>) -> Self {
        Self {
            values,
            nowhere: crate::vocabulary::new_id(),
        }
    }

    /// `value`, or the id that exists nowhere when it is someone else's.
    fn replace(&self, value: &mut String) {
        if self.values.iter().any(|v| v == value) {
            value.clone_from(&self.nowhere);
        }
    }
}

/// What a path parameter can be read as: each value can be replaced ([`Disowned`]).
pub trait PathValues {
    fn disown(&mut self, disowned: &Disowned);
}

impl PathValues for String {
    fn disown(&mut self, disowned: &Disowned) {
        disowned.replace(self);
    }
}

impl PathValues for (String, String) {
    fn disown(&mut self, disowned: &Disowned) {
        disowned.replace(&mut self.0);
        disowned.replace(&mut self.1);
    }
}

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    S: Send + Sync,
    T: DeserializeOwned + PathValues + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(mut value)) => {
                if let Some(disowned) = parts.extensions.get::<Disowned>() {
                    value.disown(disowned);
                }
                Ok(ApiPath(value))
            }
            Err(rejection) => Err(ApiError::new(
                rejection.status(),
                format!("path: {}", rejection.body_text()),
            )),
        }
    }
}

/// Query parameters. Like `axum::extract::Query`, but a rejection (a `limit` that is not a
/// number, say) is a `{message}` 400 naming the parameter, like every other error.
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(ApiQuery(value)),
            Err(rejection) => Err(ApiError::bad_request(format!(
                "query: {}",
                rejection
                    .body_text()
                    .trim_start_matches("Failed to deserialize query string: ")
            ))),
        }
    }
}

/// The 413 message; the OpenAPI document says the same.
pub(super) fn body_too_large() -> String {
    format!(
        "request body is larger than the {} MiB limit",
        super::MAX_BODY_BYTES / crate::attachments::MIB
    )
}

/// The 408 message for a body that stopped arriving; the OpenAPI document says the same.
pub(super) const BODY_STOPPED: &str = "request body: stopped arriving before its end";

/// The 408 message for a body that arrived too slowly in all; the OpenAPI document says the same.
pub(super) fn body_too_slow(total: std::time::Duration) -> String {
    format!(
        "request body: not all of it arrived within {} s of the request",
        total.as_secs_f64()
    )
}

/// When a request's body must be all in ([`super::BODY_DEADLINE`] after the request arrived),
/// set on the request by the router's middleware.
#[derive(Clone, Copy, Debug)]
pub struct BodyDeadline {
    at: tokio::time::Instant,
    total: std::time::Duration,
}

impl BodyDeadline {
    pub fn after(total: std::time::Duration) -> Self {
        Self {
            at: tokio::time::Instant::now() + total,
            total,
        }
    }
}

fn body_rejection(rejection: BytesRejection) -> ApiError {
    let status = rejection.status();
    if status == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(status, body_too_large())
    } else if stopped_arriving(&rejection) {
        ApiError::new(StatusCode::REQUEST_TIMEOUT, BODY_STOPPED)
    } else {
        ApiError::new(
            status,
            format!("cannot read the request body: {}", rejection.body_text()),
        )
    }
}

/// Whether the body was cut by the router's idle timeout (`super::BODY_IDLE_TIMEOUT`), which
/// axum reports as just another body error: its cause is found down the error's sources.
fn stopped_arriving(rejection: &BytesRejection) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(rejection);
    while let Some(error) = cause {
        if error.is::<tower_http::timeout::TimeoutError>() {
            return true;
        }
        cause = error.source();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Body {
        items: Vec<Item>,
    }
    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Item {
        role: crate::vocabulary::Role,
    }

    #[test]
    fn messages_quote_a_bounded_prefix_of_the_input() {
        let long = "x".repeat(3 << 20);
        let err = parse_json::<Body>(format!(r#"{{"items":[{{"role":"{long}"}}]}}"#).as_bytes())
            .unwrap_err();
        let sent = bounded(err.message().to_string());
        assert!(sent.len() < 1_000, "{} bytes", sent.len());
        assert!(
            sent.starts_with("items[0].role: unknown variant `xxx")
                && sent.contains("expected one of"),
            "{sent}"
        );
        assert_eq!(quoted("abc"), "\"abc\"");
        assert_eq!(
            quoted(&"é".repeat(300)),
            format!("{:?}…", "é".repeat(QUOTE_CHARS))
        );
        let unclosed = format!("no tool named \"{long}");
        assert!(bounded(unclosed).chars().count() <= QUOTE_CHARS + 20);
        assert_eq!(bounded("short".into()), "short");
        // An escaped quote does not end a span; a caller's own quote mark may, and then the
        // whole message is still bounded.
        let escaped = bounded(format!("name {}", quoted(&format!("a\"{long}"))));
        assert!(
            escaped.chars().count() <= QUOTE_CHARS + 20,
            "{}",
            escaped.len()
        );
        let breaking = bounded(format!("unknown variant `x`{long}`"));
        assert!(breaking.chars().count() <= MAX_MESSAGE_CHARS + 1);
    }

    #[test]
    fn messages_name_the_field() {
        let err =
            parse_json::<Body>(br#"{"items":[{"role":"user"},{"role":"robot"}]}"#).unwrap_err();
        assert_eq!(err.status(), StatusCode::BAD_REQUEST);
        assert!(
            err.message()
                .starts_with("items[1].role: unknown variant `robot`"),
            "{}",
            err.message()
        );
        let err = parse_json::<Body>(b"{not json").unwrap_err();
        assert!(err.message().starts_with("request body is not valid JSON"));
        let err = parse_json::<Body>(b"[]").unwrap_err();
        assert_eq!(err.message(), "request body: must be a JSON object");
        let err = parse_json::<Body>(b"").unwrap_err();
        assert!(
            err.message().contains("missing field `items`"),
            "{}",
            err.message()
        );
    }
}
