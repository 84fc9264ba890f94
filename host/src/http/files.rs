//! The caller's library of documents (docs/files.md): `POST /v1/files` (the one route that takes
//! `multipart/form-data`: a `file`, an optional `collection`), `GET /v1/files[?collection=]`,
//! `GET|DELETE /v1/files/:fileId` and `GET /v1/files/:fileId/content`.
//!
//! An upload is refused only for what can be told without reading the content: its size
//! ([`MAX_FILE_BYTES`], 413), the library's caps (413), a declared type the library does not take
//! (400). Anything else is accepted (201, `processing`), and a file whose content is not what
//! it says ends `failed` with its `error` (`library/`). The same bytes again are the same file
//! (200), processed again if it had failed; its name and collection stay the first upload's. Every query names the caller as the owner (`store/library.rs`): another person's file
//! id is not found, as an unknown one is. The original is served as an attachment that runs
//! nothing (`chat_files::served`).

use axum::Json;
use axum::extract::multipart::{Field, MultipartRejection};
use axum::extract::{Multipart, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::error::{ApiError, ApiPath, ApiQuery, ApiResult, ErrorBody, quoted};
use super::limits;
use crate::library::formats::Format;
use crate::people::Caller;
use crate::store::library::{
    Added, Cap, LibraryFileRecord, MAX_LIBRARY_BYTES, MAX_LIBRARY_FILES, NewLibraryFile,
};
use crate::vocabulary::{FileStatus, to_millis};

pub const FILE_NOT_FOUND: &str = "file not found";
/// The largest file taken, in bytes.
pub const MAX_FILE_BYTES: usize = 25 << 20;
/// The longest `collection`, in characters.
pub const MAX_COLLECTION_CHARS: usize = 200;
/// The longest file name kept, in characters (a longer one is refused).
pub const MAX_FILE_NAME_CHARS: usize = 255;

/// A library file as the API shows it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LibraryFile {
    pub id: String,
    pub name: String,
    pub mime_type: String,
    pub size_bytes: i64,
    /// `null`: in no collection.
    pub collection: Option<String>,
    pub status: FileStatus,
    /// Why it failed (`failed` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Its pages, for a format that has them (`ready` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<i64>,
    /// Its chunks (`ready` only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub chunks: Option<i64>,
    pub created_at: String,
}

impl From<LibraryFileRecord> for LibraryFile {
    fn from(r: LibraryFileRecord) -> Self {
        Self {
            id: r.id,
            name: r.name,
            mime_type: r.mime_type,
            size_bytes: r.size_bytes,
            collection: r.collection,
            status: r.status,
            error: r.error,
            pages: r.pages,
            chunks: r.chunks,
            created_at: to_millis(&r.created_at),
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct LibraryFiles {
    pub files: Vec<LibraryFile>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct FileDeleted {
    pub deleted: bool,
}

/// The upload's form.
#[derive(ToSchema)]
#[allow(dead_code)] // The document's schema only: the handler reads the parts itself.
pub struct UploadForm {
    /// The document: PDF, DOCX, XLSX, CSV, HTML, Markdown or plain text, at most 25 MiB. Its
    /// part's `Content-Type` says which (else its file name's ending).
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
    /// A name to group files by (the search's `collection`).
    #[schema(min_length = 1, max_length = 200)]
    collection: Option<String>,
}

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Only the files of this collection (trimmed; blank: every file).
    #[param(min_length = 1, max_length = 200)]
    pub collection: Option<String>,
}

#[utoipa::path(post, path = "/files", tag = "files",
    request_body(content = UploadForm, content_type = "multipart/form-data"),
    responses((status = 201, description = "Added: processing", body = LibraryFile),
        (status = 200, description = "The same bytes were added before: that file", body = LibraryFile),
        (status = 400, body = ErrorBody),
        (status = 413, description = "The file, or the library, would pass a limit", body = ErrorBody)))]
pub async fn upload_file(
    State(state): State<AppState>,
    caller: Caller,
    form: Result<Multipart, MultipartRejection>,
) -> ApiResult<Response> {
    let mut form = form.map_err(|e| {
        ApiError::bad_request(format!(
            "body: must be multipart/form-data with a boundary ({})",
            e.body_text()
        ))
    })?;
    let mut file: Option<(String, Format, Vec<u8>)> = None;
    let mut collection: Option<String> = None;
    while let Some(field) = form.next_field().await.map_err(form_error)? {
        match field.name() {
            Some("file") if file.is_some() => {
                return Err(ApiError::bad_request("file: must be given once"));
            }
            Some("file") => file = Some(read_file(field).await?),
            Some("collection") if collection.is_some() => {
                return Err(ApiError::bad_request("collection: must be given once"));
            }
            Some("collection") => {
                let text = field.text().await.map_err(form_error)?;
                collection = Some(collection_field(&text)?);
            }
            other => {
                return Err(ApiError::bad_request(match other {
                    Some(name) => format!(
                        "{}: unknown field (the fields are file and collection)",
                        quoted(name)
                    ),
                    None => "a part without a name (the fields are file and collection)".into(),
                }));
            }
        }
    }
    let Some((name, format, content)) = file else {
        return Err(ApiError::bad_request("file: required, a file part"));
    };
    let new = NewLibraryFile {
        name,
        mime_type: format.mime_type().to_string(),
        collection,
        content,
    };
    match state.store.add_library_file(caller.owner(), new).await? {
        Added::New(record) => {
            state.library.added();
            Ok((StatusCode::CREATED, Json(LibraryFile::from(record))).into_response())
        }
        Added::Same(record) => {
            Ok((StatusCode::OK, Json(LibraryFile::from(record))).into_response())
        }
        Added::Again(record) => {
            state.library.added();
            Ok((StatusCode::OK, Json(LibraryFile::from(record))).into_response())
        }
        Added::Full(cap) => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            match cap {
                Cap::Files => format!(
                    "file: the library holds at most {MAX_LIBRARY_FILES} files; delete some first"
                ),
                Cap::Bytes => format!(
                    "file: the library holds at most {} GiB of files; delete some first",
                    MAX_LIBRARY_BYTES >> 30
                ),
            },
        )),
    }
}

/// The `file` part: its name (the last part of its file name), its format, its bytes (at most
/// [`MAX_FILE_BYTES`], read no further).
async fn read_file(mut field: Field<'_>) -> ApiResult<(String, Format, Vec<u8>)> {
    let given = field.file_name().unwrap_or_default();
    let name = given
        .rsplit(['/', '\\'])
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    if name.is_empty() {
        return Err(ApiError::bad_request(
            "file: must be a file part with a file name",
        ));
    }
    limits::at_most(&name, "file: its name", MAX_FILE_NAME_CHARS)?;
    if name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "file: its name must hold no control characters",
        ));
    }
    let Some(format) = Format::declared(field.content_type(), &name) else {
        return Err(ApiError::bad_request(format!(
            "file: type {} is not one the library takes ({})",
            field
                .content_type()
                .map_or("(none, and no known name ending)".into(), quoted),
            Format::listed()
        )));
    };
    let mut content = Vec::new();
    while let Some(piece) = field.chunk().await.map_err(form_error)? {
        if content.len() + piece.len() > MAX_FILE_BYTES {
            return Err(too_large());
        }
        content.extend_from_slice(&piece);
    }
    Ok((name, format, content))
}

fn too_large() -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!("file: must be at most {} MiB", MAX_FILE_BYTES >> 20),
    )
}

/// `collection`: non-blank, at most [`MAX_COLLECTION_CHARS`], no control characters; trimmed.
fn collection_field(text: &str) -> ApiResult<String> {
    let Some(collection) = limits::non_blank(Some(text), "collection", MAX_COLLECTION_CHARS)?
    else {
        return Err(ApiError::bad_request(
            "collection: must be a non-blank string",
        ));
    };
    if collection.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "collection: must hold no control characters",
        ));
    }
    Ok(collection)
}

/// A malformed form, or one past the body's limit.
fn form_error(e: axum::extract::multipart::MultipartError) -> ApiError {
    if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
        return too_large();
    }
    ApiError::bad_request(format!(
        "body: not a valid multipart form ({})",
        e.body_text()
    ))
}

#[utoipa::path(get, path = "/files", tag = "files", params(ListQuery),
    responses((status = 200, body = LibraryFiles), (status = 400, body = ErrorBody)))]
pub async fn list_files(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<LibraryFiles>> {
    // Only a filter: any text of 1 to 200 characters finds what it names, trimmed (a blank one
    // filters nothing); an empty one is not a collection (the document's `minLength`).
    if query.collection.as_deref() == Some("") {
        return Err(ApiError::bad_request(
            "collection: must be at least 1 character (leave it out for every file)",
        ));
    }
    let collection = limits::optional(
        query.collection.as_deref(),
        "collection",
        MAX_COLLECTION_CHARS,
    )?;
    let files = state
        .store
        .library_files(caller.owner(), collection.as_deref())
        .await?;
    Ok(Json(LibraryFiles {
        files: files.into_iter().map(Into::into).collect(),
    }))
}

#[utoipa::path(get, path = "/files/{fileId}", tag = "files",
    params(("fileId" = String, Path)),
    responses((status = 200, body = LibraryFile), (status = 404, body = ErrorBody)))]
pub async fn get_file(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<LibraryFile>> {
    let file = state
        .store
        .library_file(caller.owner(), &id)
        .await?
        .ok_or_else(|| ApiError::not_found(FILE_NOT_FOUND))?;
    Ok(Json(file.into()))
}

#[utoipa::path(delete, path = "/files/{fileId}", tag = "files",
    params(("fileId" = String, Path)),
    responses((status = 200, body = FileDeleted), (status = 404, body = ErrorBody)))]
pub async fn delete_file(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Json<FileDeleted>> {
    if !state.store.delete_library_file(caller.owner(), &id).await? {
        return Err(ApiError::not_found(FILE_NOT_FOUND));
    }
    Ok(Json(FileDeleted { deleted: true }))
}

#[utoipa::path(get, path = "/files/{fileId}/content", tag = "files",
    params(("fileId" = String, Path)),
    responses((status = 200, description = "The original, as an attachment, with the type it was stored as", content(
                  (String = "application/pdf"),
                  (String = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
                  (String = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
                  (String = "text/csv"), (String = "text/html"), (String = "text/markdown"), (String = "text/plain"))),
              (status = 404, body = ErrorBody)))]
pub async fn file_content(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(id): ApiPath<String>,
) -> ApiResult<Response> {
    let store = &state.store;
    let (file, content) = match store.library_file(caller.owner(), &id).await? {
        Some(file) => match store.library_content(caller.owner(), &id).await? {
            Some(content) => (file, content),
            None => return Err(ApiError::not_found(FILE_NOT_FOUND)),
        },
        None => return Err(ApiError::not_found(FILE_NOT_FOUND)),
    };
    Ok(super::chat_files::served(
        &file.mime_type,
        &file.name,
        content,
    ))
}
