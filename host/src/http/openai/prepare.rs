//! What both of OpenAI's fronts (`chat.rs`, `responses.rs`) do between reading a body and
//! running it, in one place: the exchanges chatd kept for the client's earlier calls put back
//! (`kept.rs`), the `python` tool's container found or made (`files.rs`), then the checks every
//! front shares (`completions::prepare_with`), whose refusals come back in OpenAI's shape with
//! the field they are about as `param` (the messages named where the client wrote them,
//! `messages[1]` or the Responses API's `input[1]`, through `completions::Origins`).

use super::chat_request::Contracted;
use super::client_tools::ToolNames;
use super::errors::OpenAiError;
use super::{files, kept};
use crate::http::AppState;
use crate::http::completions::prepare_with;
use crate::people::Caller;
use crate::runs::chat::ChatRun;
use crate::tools::Offer;
use crate::tools::python::Container;

/// A request ready to run, with what its answer names beside the run's own events.
pub struct Prepared {
    pub run: ChatRun,
    /// The `python` tool's session, when the request has one: the answer cites its files.
    pub container: Option<Container>,
    /// The client's tool names both ways, for the calls the answer hands back.
    pub names: ToolNames,
}

/// `contracted` made ready to run against `offer`, the request's one snapshot of the plugins;
/// nothing is stored or sent until all of it holds.
pub async fn prepare(
    state: &AppState,
    caller: &Caller,
    offer: &Offer<'_>,
    mut contracted: Contracted,
    streamed: bool,
) -> Result<Prepared, OpenAiError> {
    kept::restore(state, caller.owner(), &mut contracted.client.exchange).await?;
    let tools = contracted
        .request
        .enabled_tools
        .as_deref()
        .unwrap_or_default();
    let container =
        files::container(state, caller.owner(), contracted.session.as_ref(), tools).await?;
    contracted.client.container = container.clone();
    let run = prepare_with(
        state,
        caller,
        offer,
        contracted.request,
        streamed,
        contracted.client,
    )
    .await?;
    Ok(Prepared {
        run,
        container,
        names: contracted.names,
    })
}
