//! OpenAI's wire under `/openai/v1` (and `/api/openai/v1`, as `/api` mirrors every route), so
//! the clients people already use (the official SDKs, IDE agents, other front ends) reach
//! chatd's providers: `docs/openai.md`. The routes sit behind the same Host, origin and token
//! checks as every route; they are not in `/openapi.json` (OpenAI's own reference describes
//! them), and their errors are OpenAI's shape rather than `{message}` ([`errors`]). The files
//! the `python` tool wrote for a request are served here too ([`files`]).

mod answer;
mod chat;
mod chat_request;
mod chunks;
mod client_tools;
pub mod errors;
mod files;
mod kept;
mod models;
mod options;
mod prepare;
mod response_events;
mod response_object;
mod responses;
mod responses_request;
mod stream;
mod tuning;
mod wire;

use axum::Router;
use axum::routing::{get, post};

use super::AppState;

/// The pinned prefix, relative to the root or to `/api`.
pub const PREFIX: &str = "/openai/v1";

pub fn routes() -> Router<AppState> {
    Router::new()
        .route(&format!("{PREFIX}/models"), get(models::list))
        .route(&format!("{PREFIX}/models/{{*id}}"), get(models::retrieve))
        .route(&format!("{PREFIX}/chat/completions"), post(chat::complete))
        .route(&format!("{PREFIX}/responses"), post(responses::create))
        .route(&format!("{PREFIX}/files/{{id}}"), get(files::retrieve))
        .route(
            &format!("{PREFIX}/files/{{id}}/content"),
            get(files::content),
        )
}
