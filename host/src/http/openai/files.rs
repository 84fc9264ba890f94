//! The `python` tool's files on `/openai/v1` (docs/openai.md, "Python files"). A request whose
//! `chatd_tools` names `python` runs its code in a container (`store/containers.rs`): a new one,
//! made at its first call, or the one its `chatd_session` names, continued (its files, and its
//! globals while its session lives on the instance). The files the code wrote are named in the
//! answer as OpenAI's code interpreter names them (`container_file_citation` annotations, with
//! the container's id as `chatd_session` beside them) and served at `GET
//! /openai/v1/files/{id}` (OpenAI's File object) and `/content` (the bytes, served so they run
//! nothing: `http/chat_files.rs`), to the container's owner only (another's is not found), while
//! the container lives ([`KEPT_FOR`] after it was last used).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::errors::OpenAiError;
use crate::http::AppState;
use crate::http::error::ApiError;
use crate::people::Caller;
use crate::plugins::builtin::INTERPRETER_TOOL;
use crate::store::containers::{ContainerFileRecord, KEPT_FOR, new_container_id};
use crate::tools::python::Container;

/// The container a request's `python` calls run in: the live one `session` names, or a new one
/// when `chatd_tools` names `python` (`tools`); `None` when it does not.
pub async fn container(
    state: &AppState,
    owner: &str,
    session: Option<&Value>,
    tools: &[String],
) -> Result<Option<Container>, OpenAiError> {
    let python = tools.iter().any(|t| t == INTERPRETER_TOOL);
    let id = match session {
        None | Some(Value::Null) => {
            return Ok(python
                .then(|| Container::new(new_container_id(), owner.into(), state.store.clone())));
        }
        Some(Value::String(id)) => id,
        Some(_) => return Err(OpenAiError::invalid("chatd_session", "must be a string")),
    };
    if !python {
        return Err(OpenAiError::invalid(
            "chatd_session",
            &format!("continues the {INTERPRETER_TOOL} tool's session: chatd_tools must name it"),
        ));
    }
    // Only read: the request is not accepted yet. Its python calls extend the session's life.
    let live = state
        .store
        .container_live(id, owner)
        .await
        .map_err(|e| OpenAiError::from(ApiError::from(e)))?;
    if !live {
        return Err(OpenAiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "chatd_session: no such session {} (unknown, or unused for {} hours)",
                crate::http::error::quoted(id),
                KEPT_FOR.as_secs() / 3600
            ),
        )
        .param("chatd_session")
        .code("session_not_found"));
    }
    Ok(Some(Container::new(
        id.clone(),
        owner.into(),
        state.store.clone(),
    )))
}

/// What an answer adds for `container`'s files: the annotations of the files this request's
/// calls wrote (the newest of each name), each where `text` first mentions it (else at its
/// end), flat as the Responses API's `output_text` has them; and the session's id, when its
/// code ran (`None` when it never did: there is nothing to continue).
pub fn cited(container: Option<&Container>, text: &str) -> (Vec<Value>, Option<String>) {
    let Some(container) = container.filter(|c| c.ran()) else {
        return (Vec::new(), None);
    };
    let annotations = container
        .written()
        .iter()
        .map(|file| annotation(file, text))
        .collect();
    (annotations, Some(container.id.clone()))
}

/// OpenAI's `container_file_citation`: the file, and the span of `text` that names it (character
/// offsets; the name's last part, as the text would write it).
fn annotation(file: &ContainerFileRecord, text: &str) -> Value {
    let base = file.name.rsplit('/').next().unwrap_or(&file.name);
    let (start, end) = match text.find(base) {
        Some(at) => {
            let start = text[..at].chars().count();
            (start, start + base.chars().count())
        }
        None => {
            let end = text.chars().count();
            (end, end)
        }
    };
    json!({
        "type": "container_file_citation",
        "container_id": file.container_id,
        "file_id": file.id,
        "filename": base,
        "start_index": start,
        "end_index": end,
    })
}

/// Chat completions' spelling of [`cited`]'s annotations: each nested under its type's name, as
/// OpenAI's `url_citation` is on a chat message.
pub fn nested(annotations: Vec<Value>) -> Vec<Value> {
    annotations
        .into_iter()
        .map(|mut a| {
            let kind = a["type"].clone();
            if let Some(fields) = a.as_object_mut() {
                fields.remove("type");
            }
            json!({"type": kind, "container_file_citation": a})
        })
        .collect()
}

/// A container file, or OpenAI's 404.
async fn found(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<(ContainerFileRecord, Vec<u8>), Response> {
    match state.store.container_file(id, caller.owner()).await {
        Ok(Some(found)) => Ok(found),
        Ok(None) => Err(OpenAiError::new(
            StatusCode::NOT_FOUND,
            format!(
                "No such File object: {} (unknown, or its session unused for {} hours)",
                crate::http::error::quoted(id),
                KEPT_FOR.as_secs() / 3600
            ),
        )
        .param("file_id")
        .code("not_found")
        .into_response()),
        Err(e) => Err(OpenAiError::from(ApiError::from(e)).into_response()),
    }
}

fn seconds(stamp: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(stamp).map_or(0, |t| t.timestamp())
}

/// `GET /openai/v1/files/{id}`: OpenAI's File object.
pub async fn retrieve(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Response {
    let (file, _) = match found(&state, &caller, &id).await {
        Ok(found) => found,
        Err(response) => return response,
    };
    let name = file
        .name
        .rsplit('/')
        .next()
        .unwrap_or(&file.name)
        .to_string();
    Json(json!({
        "id": file.id,
        "object": "file",
        "bytes": file.size_bytes,
        "created_at": seconds(&file.created_at),
        "expires_at": seconds(&file.expires_at),
        "filename": name,
        "purpose": "assistants_output",
        "status": "processed",
        "status_details": null,
    }))
    .into_response()
}

/// `GET /openai/v1/files/{id}/content`: the file's bytes.
pub async fn content(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Response {
    match found(&state, &caller, &id).await {
        Ok((file, data)) => crate::http::chat_files::served(&file.mime_type, &file.name, data),
        Err(response) => response,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(name: &str) -> ContainerFileRecord {
        ContainerFileRecord {
            id: "cfile_1".into(),
            container_id: "cntr_1".into(),
            name: name.into(),
            mime_type: "text/csv".into(),
            size_bytes: 3,
            created_at: "2026-11-29T00:00:00.000Z".into(),
            expires_at: "2026-11-30T00:00:00.000Z".into(),
        }
    }

    #[test]
    fn a_citation_spans_the_files_name_in_the_text() {
        let cited = annotation(&record("out/data.csv"), "Wrote é data.csv for you.");
        assert_eq!(cited["filename"], "data.csv");
        assert_eq!(
            (cited["start_index"].clone(), cited["end_index"].clone()),
            (json!(8), json!(16))
        );
        let unnamed = annotation(&record("x.csv"), "Done.");
        assert_eq!(
            (unnamed["start_index"].clone(), unnamed["end_index"].clone()),
            (json!(5), json!(5))
        );
        let chat = nested(vec![unnamed]);
        assert_eq!(chat[0]["type"], "container_file_citation");
        assert_eq!(chat[0]["container_file_citation"]["file_id"], "cfile_1");
        assert!(chat[0]["container_file_citation"].get("type").is_none());
    }
}
