//! The server tools' exchange a client's request needs back (`chat/kept.rs`): an assistant
//! message whose calls carry ids chatd made gets the rounds of chatd's tools kept under them,
//! from the store (on PostgreSQL, whichever instance kept them), before its own calls.

use super::errors::OpenAiError;
use crate::chat::history::Exchange;
use crate::chat::kept;
use crate::http::AppState;
use crate::http::error::ApiError;

/// Fills in `before` of each assistant row whose calls chatd named (`call_chatd_…`; rows with
/// other ids have nothing kept and are not looked up). An exchange that is gone (expired, or
/// never kept) is logged and the model goes on without it: the client's own calls and results
/// are whole either way. A store that cannot answer is the store's 503.
pub async fn restore(
    state: &AppState,
    owner: &str,
    exchange: &mut [Option<Exchange>],
) -> Result<(), OpenAiError> {
    for row in exchange.iter_mut().flatten() {
        let Exchange::Calls { calls, before } = row else {
            continue;
        };
        let Some(id) = calls
            .iter()
            .map(|c| c.id.as_str())
            .find(|id| id.starts_with(kept::ID_PREFIX))
        else {
            continue;
        };
        let found = state.store.kept_exchange(id, owner, kept::KEPT_FOR).await;
        match found.map_err(ApiError::from)? {
            Some(text) => match kept::from_json(&text) {
                Some(rounds) => *before = rounds,
                None => tracing::error!(call_id = id, "a kept exchange could not be read"),
            },
            None => tracing::warn!(
                call_id = id,
                "no server tools' exchange is kept for this call (an hour after it was last \
                 used); the model goes on without it"
            ),
        }
    }
    Ok(())
}
