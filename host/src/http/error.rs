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

#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    message: String,
    /// The internal cause of a 5xx, for the log line only; never sent to the client.
    cause: Option<String>,
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
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        Self {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: "internal error".into(),
            cause: Some(cause.to_string()),
        }
    }
    pub fn status(&self) -> StatusCode {
        self.status
    }
    pub fn message(&self) -> &str {
        &self.message
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

impl From<AttachmentError> for ApiError {
    fn from(err: AttachmentError) -> Self {
        ApiError::bad_request(err.0)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            axum::Json(ErrorBody {
                message: self.message,
            }),
        )
            .into_response();
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

/// A JSON request body. Unlike `axum::Json` it accepts a body sent without a Content-Type, treats
/// an empty body as `{}` (every field optional ⇒ the request is valid), answers 400 (never 422)
/// for wrong types and unknown enum values, and names the offending field by its JSON path.
///
/// A body that *declares* another Content-Type is refused (415): browsers send `text/plain` and
/// form bodies cross-site without a CORS preflight, and in open mode that would let any web page
/// write to a local chatd.
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
        if let Some(declared) = declared
            && !bytes.iter().all(u8::is_ascii_whitespace)
            && !is_json(&declared)
        {
            return Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                format!(
                    "Content-Type: must be application/json (got {})",
                    declared.to_str().unwrap_or("a non-text value")
                ),
            ));
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
/// UTF-8 once percent-decoded, say) is a `{message}` 400 like every other error.
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(ApiPath(value)),
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
