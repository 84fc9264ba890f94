//! OpenAI's error shape, `{"error": {"message", "type", "param", "code"}}`, on every status a
//! `/openai/v1` path can answer: the handlers' own errors ([`OpenAiError`]) and, rewritten by
//! [`reshape`], the `{message}` errors of the layers every route shares (the Host, origin and
//! token checks, the body extractor's 408/413/415, the fallback's 404 and 405, a caught panic's
//! 500). The official SDKs read `error.code` and `error.type` and choose their exception class
//! from the status; a `{message}` body would reach their users as an unexplained error.

use axum::Json;
use axum::extract::Request;
use std::time::Duration;

use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::PREFIX;
use crate::http::error::{ApiError, ErrorCause, bounded};

/// An error answered in OpenAI's shape.
#[derive(Debug)]
pub struct OpenAiError {
    status: StatusCode,
    message: String,
    param: Option<String>,
    code: Option<&'static str>,
    /// `Retry-After`, whole seconds rounded up.
    retry_after: Option<Duration>,
    /// The internal cause of a 5xx, for the log line only (`ErrorCause`).
    cause: Option<String>,
    /// A spent budget's object (`usage/`): its 429 is OpenAI's `insufficient_quota`, which the
    /// SDKs do not retry (`x-should-retry: false`).
    budget: Option<Box<Value>>,
}

/// The shared layers' error, with the field it is about as `param`.
impl From<ApiError> for OpenAiError {
    fn from(error: ApiError) -> Self {
        let budget = error.budget().cloned();
        let param = error.field().map(String::from);
        let (status, message, cause) = error.into_parts();
        Self {
            cause,
            param,
            ..Self::new(status, message).with_budget(budget)
        }
    }
}

impl OpenAiError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
            param: None,
            code: default_code(status),
            retry_after: None,
            cause: None,
            budget: None,
        }
    }

    /// The error of a spent budget, when `budget` is its object.
    fn with_budget(mut self, budget: Option<Value>) -> Self {
        if budget.is_some() {
            self.code = Some("insufficient_quota");
            self.budget = budget.map(Box::new);
        }
        self
    }

    /// A 429 after chatd's own tries, with the wait the upstream asked for.
    pub fn rate_limited(message: impl Into<String>, retry_after: Option<Duration>) -> Self {
        Self {
            retry_after,
            ..Self::new(StatusCode::TOO_MANY_REQUESTS, message)
        }
    }

    /// A 400 about the request's field `param`.
    pub fn bad_request(param: &str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, message).param(param)
    }

    /// A 404 for a model id that names no provider this server serves (`code: model_not_found`,
    /// as OpenAI's).
    pub fn model_not_found(id: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            format!(
                "model: {} is not one this server has: PROVIDER/MODEL, with a provider it serves (GET {PREFIX}/models)",
                crate::http::error::quoted(id)
            ),
        )
        .param("model")
        .code("model_not_found")
    }

    /// A 400: `param` breaks `rule` (said after its name).
    pub fn invalid(param: &str, rule: &str) -> Self {
        Self::bad_request(param, format!("{param}: {rule}"))
    }

    /// A 400 for a field, or a value of it, this server does not honour (yet): refused by
    /// name rather than dropped (`code: unsupported_parameter`).
    pub fn unsupported(param: &str) -> Self {
        Self::bad_request(
            param,
            format!("{param}: not supported by this server's /openai/v1 yet (docs/openai.md)"),
        )
        .code("unsupported_parameter")
    }

    /// The request field the error is about.
    pub fn param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    pub fn code(mut self, code: &'static str) -> Self {
        self.code = Some(code);
        self
    }

    /// The field the error names, if any.
    pub fn param_name(&self) -> &str {
        self.param.as_deref().unwrap_or_default()
    }

    /// The body, `{"error": {...}}`: also a stream's error chunk once its head has gone out.
    pub fn body(&self) -> Value {
        let mut body = json!({
            "error": {
                "message": bounded(self.message.clone()),
                // OpenAI's own answer to a spent quota names it in both.
                "type": if self.budget.is_some() { "insufficient_quota" } else { error_type(self.status) },
                "param": self.param,
                "code": self.code,
            }
        });
        if let Some(budget) = &self.budget {
            body["error"]["budget"] = Value::clone(budget);
        }
        body
    }

    /// The internal cause of a 5xx, if any (for the log; never sent).
    pub fn cause(&self) -> Option<&str> {
        self.cause.as_deref()
    }
}

impl IntoResponse for OpenAiError {
    fn into_response(self) -> Response {
        let mut response = (self.status, Json(self.body())).into_response();
        if self.budget.is_some() {
            response.headers_mut().insert(
                crate::http::error::SHOULD_RETRY,
                HeaderValue::from_static("false"),
            );
        }
        if let Some(wait) = self.retry_after {
            let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        if let Some(cause) = self.cause {
            response.extensions_mut().insert(ErrorCause(cause));
        }
        response
    }
}

/// OpenAI's `type` for a status.
fn error_type(status: StatusCode) -> &'static str {
    match status.as_u16() {
        401 => "authentication_error",
        403 => "permission_error",
        429 => "rate_limit_error",
        500..=599 => "api_error",
        _ => "invalid_request_error",
    }
}

/// The `code` an error of this status carries unless its handler names a closer one.
fn default_code(status: StatusCode) -> Option<&'static str> {
    Some(match status.as_u16() {
        400 => "invalid_request",
        401 => "invalid_api_key",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        408 => "request_timeout",
        413 => "request_too_large",
        415 => "unsupported_media_type",
        429 => "rate_limit_exceeded",
        503 => "service_unavailable",
        500..=599 => "server_error",
        _ => return None,
    })
}

/// The longest error body read back for rewriting; every `{message}` body is far shorter
/// (messages are bounded) and says its length, so one longer or of unknown length is not ours
/// and goes out as it came.
const MAX_ERROR_BODY: u64 = 64 * 1024;

/// Middleware, outside every layer that can refuse a request: on a `/openai/v1` path, an error
/// answered `{message}` leaves as [`OpenAiError`] with the same status, message and headers
/// (`WWW-Authenticate`, `Retry-After`, and the log's cause in the extensions). A body already
/// in OpenAI's shape, or a success, goes out untouched.
pub async fn reshape(req: Request, next: Next) -> Response {
    use axum::body::HttpBody as _;
    let ours = is_openai_path(req.uri().path());
    let response = next.run(req).await;
    let status = response.status();
    if !ours || !(status.is_client_error() || status.is_server_error()) {
        return response;
    }
    let json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    let small = response
        .body()
        .size_hint()
        .exact()
        .is_some_and(|n| n <= MAX_ERROR_BODY);
    if !json || !small {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    let Ok(bytes) = axum::body::to_bytes(body, MAX_ERROR_BODY as usize).await else {
        // A body that said its length and then failed: its status stands, with a message.
        let error = OpenAiError::new(status, "the error's body could not be read");
        return Response::from_parts(parts, error.into_response().into_body());
    };
    // Only `{message}` is rewritten; anything else (OpenAI's shape already) goes out as it came.
    let mut value = serde_json::from_slice::<Value>(&bytes)
        .ok()
        .filter(|value| value.get("error").is_none());
    let budget = value
        .as_mut()
        .and_then(|v| v.get_mut("budget"))
        .map(Value::take);
    let message = value.and_then(|value| value.get("message")?.as_str().map(String::from));
    let body = match message {
        Some(message) => OpenAiError::new(status, message)
            .with_budget(budget)
            .into_response()
            .into_body(),
        None => axum::body::Body::from(bytes),
    };
    Response::from_parts(parts, body)
}

/// Whether `path` (relative to the root or to `/api`) is under [`PREFIX`].
fn is_openai_path(path: &str) -> bool {
    path.strip_prefix(PREFIX)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_openai_types_and_codes() {
        assert_eq!(error_type(StatusCode::UNAUTHORIZED), "authentication_error");
        assert_eq!(error_type(StatusCode::NOT_FOUND), "invalid_request_error");
        assert_eq!(
            error_type(StatusCode::TOO_MANY_REQUESTS),
            "rate_limit_error"
        );
        assert_eq!(error_type(StatusCode::SERVICE_UNAVAILABLE), "api_error");
        assert_eq!(
            default_code(StatusCode::UNAUTHORIZED),
            Some("invalid_api_key")
        );
        assert_eq!(default_code(StatusCode::IM_A_TEAPOT), None);
    }

    #[test]
    fn only_paths_under_the_prefix_are_reshaped() {
        assert!(is_openai_path("/openai/v1"));
        assert!(is_openai_path("/openai/v1/models"));
        assert!(!is_openai_path("/openai/v10/models"));
        assert!(!is_openai_path("/v1/models"));
    }
}
