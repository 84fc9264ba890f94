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
use super::errors::OpenAiError;
use super::files;
use super::kept;
use super::response_events::ResponseEvents;
use super::response_object::{Echo, Sent};
use super::responses_request::{Read, ResponsesRequest};
use super::stream;
use crate::http::AppState;
use crate::http::completions::prepare_with;
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
    let mut contracted = match request.contract(&offer, Some(messages)) {
        Ok(contracted) => contracted,
        Err(refused) => return refused.into_response(),
    };
    if let Err(failed) =
        kept::restore(&state, caller.owner(), &mut contracted.client.exchange).await
    {
        return failed.into_response();
    }
    let enabled = contracted
        .request
        .enabled_tools
        .as_deref()
        .unwrap_or_default();
    let container = match files::container(
        &state,
        caller.owner(),
        contracted.session.as_ref(),
        enabled,
    )
    .await
    {
        Ok(container) => container,
        Err(refused) => return refused.into_response(),
    };
    contracted.client.container = container.clone();
    // The shared checks name each message by its item (`input[1]`: `completions::Origins`).
    let run = match prepare_with(
        &state,
        &caller,
        &offer,
        contracted.request,
        streamed,
        contracted.client,
    )
    .await
    {
        Ok(run) => run,
        Err(refused) => return OpenAiError::from(refused).into_response(),
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
        names: contracted.names,
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
