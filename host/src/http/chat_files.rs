//! `GET /v1/chats/:chatId/files/:fileId`: a file the `python` tool's code wrote in the chat, as
//! its tool message's `metadata.files` lists it (an addition to the contract, docs/api.md).
//!
//! The bytes are the code's, so untrusted: PNG, JPEG and SVG are served `inline` (the web client
//! shows them through `<img>`), everything else as an `attachment`; every answer carries
//! `nosniff` and a CSP that runs nothing (`sandbox`, `default-src 'none'`), so an SVG opened on
//! its own, or an HTML file, cannot run a script in chatd's origin.

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::{ApiError, ApiPath, ApiResult, ErrorBody};

/// Types shown as images by the web client; anything else is downloaded.
const SHOWN: [&str; 3] = ["image/png", "image/jpeg", "image/svg+xml"];

/// What a file's answer may do in a browser: nothing but be an image.
const POLICY: &str = "default-src 'none'; img-src data:; style-src 'unsafe-inline'; sandbox";

#[utoipa::path(get, path = "/chats/{chatId}/files/{fileId}", tag = "chats",
    params(("chatId" = String, Path), ("fileId" = String, Path)),
    responses((status = 200, description = "The file's bytes, with its type", content_type = "application/octet-stream"),
              (status = 404, body = ErrorBody)))]
pub async fn chat_file(
    State(state): State<AppState>,
    ApiPath((chat_id, file_id)): ApiPath<(String, String)>,
) -> ApiResult<Response> {
    let (file, data) = state
        .store
        .chat_file(&chat_id, &file_id)
        .await?
        .ok_or_else(|| ApiError::not_found("file not found"))?;
    Ok(served(&file.mime_type, &file.name, data))
}

/// A file the code wrote, served so it runs nothing (the module's rule; `/openai/v1`'s files
/// are served the same way).
pub(crate) fn served(mime_type: &str, name: &str, data: Vec<u8>) -> Response {
    let mime = HeaderValue::from_str(mime_type)
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    let shown = SHOWN.contains(&mime_type);
    let disposition = content_disposition(if shown { "inline" } else { "attachment" }, name);
    let headers = [
        (header::CONTENT_TYPE, mime),
        (header::CONTENT_DISPOSITION, disposition),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(POLICY),
        ),
        // A file id is never reused for other bytes.
        (
            header::CACHE_CONTROL,
            HeaderValue::from_static("private, max-age=86400"),
        ),
    ];
    (headers, data).into_response()
}

/// `inline` or `attachment` with the file's name (its last part): ASCII as `filename`, the name
/// itself as RFC 5987's `filename*`.
fn content_disposition(kind: &str, name: &str) -> HeaderValue {
    let base = name.rsplit('/').next().unwrap_or(name);
    let ascii: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_graphic() && c != '"' && c != '\\' || c == ' ' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let encoded: String = base
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'.' | b'-' | b'_' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect();
    HeaderValue::from_str(&format!(
        "{kind}; filename=\"{ascii}\"; filename*=UTF-8''{encoded}"
    ))
    .unwrap_or(HeaderValue::from_static("attachment"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_quoted_safely_and_kept_whole_in_utf8() {
        assert_eq!(
            content_disposition("inline", "out/chart.svg"),
            "inline; filename=\"chart.svg\"; filename*=UTF-8''chart.svg"
        );
        assert_eq!(
            content_disposition("attachment", "a \"b\"\r\n.csv"),
            "attachment; filename=\"a _b___.csv\"; filename*=UTF-8''a%20%22b%22%0D%0A.csv"
        );
        assert_eq!(
            content_disposition("attachment", "données.csv"),
            "attachment; filename=\"donn_es.csv\"; filename*=UTF-8''donn%C3%A9es.csv"
        );
    }
}
