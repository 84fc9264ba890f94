//! `POST /openai/v1/chat/completions`: the body turned into the contract's completion
//! (`chat_request.rs`), run as `POST /v1/chat-completions` runs one without a chat
//! (`runs::chat`: recorded as a call, retried and fallen back as configured, chatd's tools in
//! its loop when `chatd_tools` names them), and answered as OpenAI's `chat.completion`, or
//! streamed as its chunks (`chunks.rs` over `stream.rs`); the files its `python` calls wrote
//! named as `files.rs` says.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::answer::{answering_model, finish_reason, outcome, usage_json};
use super::chat_request::ChatCompletionRequest;
use super::chunks::Chunks;
use super::files;
use super::prepare::{Prepared, prepare};
use super::stream;
use crate::http::AppState;
use crate::http::error::ApiJson;
use crate::people::Caller;
use crate::runs::chat;

pub async fn complete(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<ChatCompletionRequest>,
) -> Response {
    let streamed = body.stream == Some(true);
    let include_usage = match body.include_usage() {
        Ok(include) => include,
        Err(refused) => return refused.into_response(),
    };
    let model_id = body.model.clone();
    // The request's one snapshot of the plugins: its provider and its tools both read it.
    let offer = state.tools.offered(caller.owner()).await;
    let contracted = match body.into_contract(&offer) {
        Ok(contracted) => contracted,
        Err(refused) => return refused.into_response(),
    };
    let Prepared {
        run,
        container,
        names,
    } = match prepare(&state, &caller, &offer, contracted, streamed).await {
        Ok(prepared) => prepared,
        Err(refused) => return refused.into_response(),
    };
    // The snapshot is the request's, not the run's: a reload frees the old plugins as soon as
    // no run needs them (each run holds its own plugins).
    drop(offer);
    if streamed {
        let tapped = chat::tapped(&state.run_context(), run);
        let chunks = Chunks {
            id: format!("chatcmpl-{}", tapped.call.id),
            created: chrono::Utc::now().timestamp(),
            model: model_id,
            include_usage,
            names,
            opened: false,
            container,
            text: String::new(),
        };
        return stream::respond(tapped, chunks).await;
    }
    let (call, completed) = chat::complete(&state.run_context(), run).await;
    let finished = match outcome(completed) {
        Ok(finished) => finished,
        Err(failed) => return failed.into_response(),
    };
    let usage = finished.usage.unwrap_or_default();
    let model = answering_model(&finished, model_id);
    let calls = names.calls_json(&finished.client_calls);
    let finish_reason = finish_reason(&finished);
    let (annotations, session) = files::cited(container.as_ref(), &finished.text);
    let content = if calls.is_empty() {
        Value::String(finished.text)
    } else {
        // As OpenAI's: no text is null, not "".
        let text = Some(finished.text).filter(|t| !t.is_empty());
        text.map_or(Value::Null, Value::String)
    };
    let mut message = json!({"role": "assistant", "content": content, "refusal": null});
    if !calls.is_empty() {
        message["tool_calls"] = Value::Array(calls);
    }
    if !annotations.is_empty() {
        message["annotations"] = Value::Array(files::nested(annotations));
    }
    let mut answer = json!({
        "id": format!("chatcmpl-{}", call.id),
        "object": "chat.completion",
        "created": chrono::Utc::now().timestamp(),
        "model": model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": finish_reason,
        }],
        "usage": usage_json(usage),
    });
    if let Some(session) = session {
        answer["chatd_session"] = json!(session);
    }
    Json(answer).into_response()
}
