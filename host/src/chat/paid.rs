//! A turn's model call in its account (`usage/`): at what the upstream reported, or, for a turn
//! stopped or failed after the upstream began answering and before it said what the turn used
//! (usage comes last), at a guess from the input and what came out. Either was paid for.

use super::round::{Reply, Turn};
use crate::plugins::worlds::provider::TurnRequest;
use crate::usage::Spender;

/// What is known of a turn before it runs, for its guess.
pub(super) struct Paying {
    input_guess: u64,
    sent_before: usize,
}

impl Paying {
    pub(super) fn new(request: &TurnRequest, reply: &Reply) -> Self {
        Self {
            input_guess: super::history::token_estimate(&request.messages),
            sent_before: reply.len(),
        }
    }

    /// Records `turn` of `(provider, model)`, whose usage was `tokens`. A turn the upstream
    /// never began to answer is no call: nothing is recorded.
    pub(super) async fn record(
        self,
        spender: &Spender,
        (provider, model): (&str, &str),
        turn: &Turn,
        tokens: Option<(u64, u64)>,
        reply: &Reply,
    ) {
        let answered = matches!(turn.result, Some(Ok(Ok(_))));
        if answered || tokens.is_some() {
            spender.record(provider, model, tokens).await;
        } else if turn.events > 0 {
            // About four bytes a token, as the hold's guess.
            let out = (reply.len() - self.sent_before).max(turn.text.len())
                + turn.held.iter().map(String::len).sum::<usize>()
                + turn
                    .calls
                    .iter()
                    .map(|c| c.arguments_json.len())
                    .sum::<usize>();
            let guess = (self.input_guess, out as u64 / 4 + 1);
            spender.record(provider, model, Some(guess)).await;
        }
    }
}
