//! `POST /openai/v1/chat/completions`: the body turned into the contract's completion
//! (`chat_request.rs`), run as `POST /v1/chat-completions` runs one without a chat
//! (`runs::chat`: recorded as a call, retried and fallen back as configured, chatd's tools in
//! its loop when `chatd_tools` names them), and answered as OpenAI's `chat.completion`, or
//! streamed as its chunks (`stream.rs`).

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::answer::{answering_model, outcome, usage_json};
use super::chat_request::ChatCompletionRequest;
use super::stream;
use crate::http::AppState;
use crate::http::completions::prepare;
use crate::http::error::ApiJson;
use crate::runs::chat;

pub async fn complete(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ChatCompletionRequest>,
) -> Response {
    let streamed = body.stream == Some(true);
    let include_usage = match body.include_usage() {
        Ok(include) => include,
        Err(refused) => return refused.into_response(),
    };
    let model_id = body.model.clone();
    let request = match body.into_contract(&state) {
        Ok(request) => request,
        Err(refused) => return refused.into_response(),
    };
    // The contract's checks (attachments, sampling, the provider's plugin) answer `{message}`,
    // which `errors::reshape` turns into OpenAI's shape with the same status.
    let run = match prepare(&state, request, streamed).await {
        Ok(run) => run,
        Err(refused) => return refused.into_response(),
    };
    if streamed {
        let tapped = chat::tapped(&state.run_context(), run);
        return stream::respond(tapped, model_id, include_usage).await;
    }
    let (call, completed) = chat::complete(&state.run_context(), run).await;
    let finished = match outcome(completed) {
        Ok(finished) => finished,
        Err(failed) => return failed.into_response(),
    };
    let usage = finished.usage.unwrap_or_default();
    Json(json!({
        "id": format!("chatcmpl-{}", call.id),
        "object": "chat.completion",
        "created": chrono::Utc::now().timestamp(),
        "model": answering_model(&finished, model_id),
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": finished.text, "refusal": null},
            "logprobs": null,
            "finish_reason": "stop",
        }],
        "usage": usage_json(usage),
    }))
    .into_response()
}
