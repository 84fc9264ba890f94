//! `POST /openai/v1/chat/completions`: the body turned into the contract's completion
//! (`chat_request.rs`), run as `POST /v1/chat-completions` runs one without a chat
//! (`runs::chat::complete`: recorded as a call, retried and fallen back as configured, chatd's
//! tools in its loop when `chatd_tools` names them), and answered as OpenAI's
//! `chat.completion`.

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::chat_request::ChatCompletionRequest;
use super::errors::OpenAiError;
use crate::http::AppState;
use crate::http::completions::{finished, prepare};
use crate::http::error::ApiJson;
use crate::runs::chat;

pub async fn complete(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<ChatCompletionRequest>,
) -> Response {
    if body.stream == Some(true) {
        return OpenAiError::bad_request(
            "stream",
            "stream: not supported by this server's /openai/v1 yet (docs/openai.md)",
        )
        .code("unsupported_parameter")
        .into_response();
    }
    let model_id = body.model.clone();
    let request = match body.into_contract(&state) {
        Ok(request) => request,
        Err(refused) => return refused.into_response(),
    };
    // The contract's checks (attachments, sampling, the provider's plugin) answer `{message}`,
    // which `errors::reshape` turns into OpenAI's shape with the same status.
    let run = match prepare(&state, request, false).await {
        Ok(run) => run,
        Err(refused) => return refused.into_response(),
    };
    let (call, completed) = chat::complete(&state.run_context(), run).await;
    let finished = match finished(completed) {
        Ok(finished) => finished,
        Err(failed) => return failed.into_response(),
    };
    // The model that answered: the fallback's when it did.
    let model_id = match &finished.fallback {
        Some((provider, model)) => format!("{provider}/{model}"),
        None => model_id,
    };
    let usage = finished.usage.unwrap_or_default();
    Json(json!({
        "id": format!("chatcmpl-{}", call.id),
        "object": "chat.completion",
        "created": chrono::Utc::now().timestamp(),
        "model": model_id,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": finished.text, "refusal": null},
            "logprobs": null,
            "finish_reason": "stop",
        }],
        "usage": {
            "prompt_tokens": usage.input_tokens,
            "completion_tokens": usage.output_tokens,
            "total_tokens": usage.total_tokens,
        },
    }))
    .into_response()
}
