//! `POST /openai/v1/responses`: the Responses API, stateless. The body is read as the
//! completion it asks for (`responses_request.rs`: its input items straight into the contract's
//! messages, its other fields by the readers chat completions' share), run as every
//! completion here is (`runs::chat`: recorded, retried, fallen back, chatd's tools in its loop
//! when `chatd_tools` names them), and answered as a `response` object (`response_object.rs`),
//! or streamed as its events (`response_events.rs` over `stream.rs`).

use axum::Json;
use axum::extract::State;
use axum::response::{IntoResponse, Response};

use super::answer::outcome;
use super::prepare::{Prepared, prepare};
use super::response_events::ResponseEvents;
use super::response_object::{Echo, Sent};
use super::responses_request::{Read, ResponsesRequest};
use super::stream;
use crate::http::AppState;
use crate::http::error::ApiJson;
use crate::people::Caller;
use crate::runs::chat;

pub async fn create(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<ResponsesRequest>,
) -> Response {
    let instructions = body.instructions.clone().filter(|i| !i.is_empty());
    let temperature = body.temperature;
    let options = Sent::of(&body);
    let Read {
        chat: request,
        messages,
        tools,
    } = match body.read() {
        Ok(read) => read,
        Err(refused) => return refused.into_response(),
    };
    let streamed = request.stream == Some(true);
    let max_output_tokens = request.max_completion_tokens;
    let model = request.model.clone();
    // The request's one snapshot of the plugins: its provider and its tools both read it.
    let offer = state.tools.offered(caller.owner()).await;
    let contracted = match request.contract(&offer, Some(messages)) {
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
    let echo = |call_id: &str| Echo {
        id: format!("resp_{call_id}"),
        created_at: chrono::Utc::now().timestamp(),
        model,
        instructions,
        tools,
        temperature,
        max_output_tokens,
        options,
        names,
        container,
    };
    if streamed {
        let tapped = chat::tapped(&state.run_context(), run);
        let events = ResponseEvents::new(echo(&tapped.call.id));
        return stream::respond(tapped, events).await;
    }
    let (call, completed) = chat::complete(&state.run_context(), run).await;
    match outcome(completed) {
        Ok(finished) => Json(echo(&call.id).finished(&finished)).into_response(),
        Err(failed) => failed.into_response(),
    }
}
