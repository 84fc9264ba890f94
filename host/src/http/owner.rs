//! The owner check: a person reaches only their own chats and searches by id. It runs on every
//! route with a path parameter, after routing and after the token check decided the caller
//! (`router_with`'s `route_layer`), and decides each parameter by its name ([`rule`]): an id of
//! someone else's chat or search is replaced, for the handler, by an id that exists nowhere
//! ([`Disowned`], applied by `ApiPath`), so the answer is the handler's own for an unknown id,
//! whatever it is and whatever else the request holds (no existence oracle). A parameter with
//! no rule stops the request with a 500 naming it: a route added later with a new kind of id
//! fails loudly until it is given one (tests/api/isolation.rs calls every route).
//!
//! Ids in request bodies (`chatId` of a completion) are checked where the body is read
//! (`completions/request.rs`); lists filter by owner in their queries (`store/read.rs`).

use axum::extract::{RawPathParams, Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::AppState;
use super::error::{ApiError, Disowned};
use crate::people::Caller;
use crate::store::owners::Owned;

/// What decides a path parameter.
enum Rule {
    /// An owned thing's id: the caller's, or replaced.
    Owned(Owned),
    /// Not decided here: a file within the (checked) chat, a key or a session (the store ends
    /// only the caller's own), a person (admins only), an MCP server (the operator's), a model, a file of
    /// the web client, an `/openai/v1` container file (its query asks for the caller's own:
    /// `store/containers.rs`).
    Free,
}

fn rule(param: &str) -> Option<Rule> {
    match param {
        "chatId" => Some(Rule::Owned(Owned::Chat)),
        "searchId" => Some(Rule::Owned(Owned::Search)),
        "fileId" | "keyId" | "sessionId" | "userId" | "name" | "id" | "file" => Some(Rule::Free),
        _ => None,
    }
}

pub async fn check_owner(State(state): State<AppState>, req: Request, next: Next) -> Response {
    let (mut parts, body) = req.into_parts();
    let Some(caller) = parts.extensions.get::<Caller>().cloned() else {
        // A route open without a token (an MCP login's callback): no person, nothing owned.
        return next.run(Request::from_parts(parts, body)).await;
    };
    // No parameters, or bad ones: the handler's own extractor answers.
    let params = match RawPathParams::from_request_parts(&mut parts, &state).await {
        Ok(params) => params,
        Err(_) => return next.run(Request::from_parts(parts, body)).await,
    };
    let mut disowned = Vec::new();
    for (name, value) in &params {
        match rule(name) {
            Some(Rule::Owned(what)) => match state.store.owns(caller.owner(), what, value).await {
                Ok(true) => {}
                Ok(false) => disowned.push(value.to_string()),
                Err(e) => return ApiError::from(e).into_response(),
            },
            Some(Rule::Free) => {}
            None => {
                return ApiError::internal(format!(
                    "path parameter {name} has no owner rule (http/owner.rs)"
                ))
                .into_response();
            }
        }
    }
    if !disowned.is_empty() {
        parts.extensions.insert(Disowned::new(disowned));
    }
    next.run(Request::from_parts(parts, body)).await
}

use axum::extract::FromRequestParts as _;
