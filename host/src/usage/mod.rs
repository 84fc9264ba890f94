//! What people spend on models: every call to a chat model recorded in the usage ledger
//! (whatever the route, `persist: false` too; not yet the library's embeddings), and budgets
//! checked before a request reaches a model.
//!
//! A request is admitted ([`admit`]) before anything is sent upstream: refused when a budget of
//! its person or its key is spent (the ledger's calls of the period, and what requests running
//! now hold), or when a USD budget meets a model without a price. An admitted request holds its
//! estimate (the transcript's tokens, guessed from its length, and its most output tokens) until
//! it ends, and each of its calls is recorded and drawn from the hold as it ends ([`Spender`]).
//! So concurrent requests, on any instance, overshoot a budget by at most what the requests
//! already running when it was reached spend past their holds. Nothing is recorded, and nothing
//! checked, until people use the deployment (`people::Directory::team_exists`).

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;

use crate::config::pricing::Pricing;
use crate::people::budget::{Budget, Measure, usd};
use crate::people::{Caller, Directory};
use crate::store::usage::{Admission, Counted, LedgerEntry, NewHold, SpendCheck, Whose};
use crate::store::{Store, StoreError};
use crate::telemetry::metrics;
use crate::vocabulary::format_micros;

/// How long a hold counts at most: a request still running after this no longer holds its
/// estimate (its calls are still recorded), and a dead instance's holds stop counting.
pub const HOLD_FOR: Duration = Duration::from_secs(15 * 60);

/// The output tokens a request that names no maximum is taken to hold.
pub const DEFAULT_MAX_OUTPUT: u64 = 4_096;

/// The route kind a call is recorded under.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Chat,
    Openai,
    Title,
    Search,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Chat => "chat",
            Source::Openai => "openai",
            Source::Title => "title",
            Source::Search => "search",
        }
    }
}

/// What a request asks of a model, for its admission.
#[derive(Clone, Debug)]
pub struct Ask<'a> {
    pub source: Source,
    pub provider: &'a str,
    pub model: &'a str,
    /// The input's tokens as guessed from its length.
    pub input_tokens: u64,
    /// The most output tokens it may get (its `max_tokens`, else [`DEFAULT_MAX_OUTPUT`]).
    pub max_output_tokens: u64,
}

/// A spent budget, as a 429 shows it.
#[derive(Clone, Debug, PartialEq)]
pub struct Spent {
    /// `user` (the person's budget) or `key`.
    pub scope: &'static str,
    pub budget: Budget,
    /// In the budget's unit (nano-USD or tokens): the period's calls and the running holds.
    pub spent: i64,
    /// When the period ends (stored form).
    pub resets_at: String,
}

impl Spent {
    /// The 429's `budget` object: `{scope, limit, spent, period, resetsAt, unit}`, USD as
    /// dollars.
    pub fn to_json(&self) -> serde_json::Value {
        let amount = |n: i64| match self.budget.measure {
            Measure::Usd => serde_json::json!(usd(n)),
            Measure::Tokens => serde_json::json!(n),
        };
        serde_json::json!({
            "scope": self.scope,
            "limit": amount(self.budget.limit),
            "spent": amount(self.spent),
            "period": self.budget.period.as_str(),
            "resetsAt": crate::vocabulary::to_millis(&self.resets_at),
            "unit": match self.budget.measure { Measure::Usd => "usd", Measure::Tokens => "tokens" },
        })
    }

    /// The 429's message.
    pub fn message(&self) -> String {
        let whose = match self.scope {
            "key" => "this key's",
            _ => "your",
        };
        format!(
            "{whose} {} budget is spent; it resets at {}",
            self.budget.period.as_str(),
            crate::vocabulary::to_millis(&self.resets_at)
        )
    }
}

/// Why a request was not admitted.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    /// A budget is spent (429).
    #[error("{}", .0.message())]
    Spent(Spent),
    /// A USD budget, and the model has no price (403): the message names the missing entry.
    #[error(
        "no price for {0}: a USD budget counts what each call costs; the operator adds \
         [pricing.\"{0}\"] (or [pricing.\"PROVIDER/*\"]) to the configuration file"
    )]
    NoPrice(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Admits `caller`'s request: `None` when nothing is recorded (no people use the deployment).
pub async fn admit(
    store: &Store,
    directory: &Directory,
    pricing: Arc<Pricing>,
    caller: &Caller,
    ask: &Ask<'_>,
) -> Result<Option<Spender>, Refused> {
    if !directory.team_exists() {
        return Ok(None);
    }
    let budgets: Vec<(&'static str, Budget)> =
        [("user", caller.budgets.person), ("key", caller.budgets.key)]
            .into_iter()
            .filter_map(|(scope, b)| b.map(|b| (scope, b)))
            .collect();
    let price = pricing.price(ask.provider, ask.model);
    if price.is_none() && budgets.iter().any(|(_, b)| b.measure == Measure::Usd) {
        return Err(Refused::NoPrice(format!("{}/{}", ask.provider, ask.model)));
    }
    let needs_price = budgets.iter().any(|(_, b)| b.measure == Measure::Usd);
    let mut spender = Spender {
        needs_price,
        store: store.clone(),
        user_id: caller.id.clone(),
        key_id: caller.key_id().map(String::from),
        source: ask.source,
        pricing,
        hold: std::sync::Mutex::new(None),
    };
    if budgets.is_empty() {
        return Ok(Some(spender));
    }
    let now = Utc::now();
    let checks: Vec<SpendCheck> = budgets
        .iter()
        .map(|(scope, budget)| SpendCheck {
            whose: if *scope == "key" {
                Whose::Key
            } else {
                Whose::User
            },
            id: match *scope {
                "key" => spender.key_id.clone().unwrap_or_default(),
                _ => spender.user_id.clone(),
            },
            counted: match budget.measure {
                Measure::Usd => Counted::Nanos,
                Measure::Tokens => Counted::Tokens,
            },
            since: format_micros(budget.period.window(now).0.timestamp_micros()),
            limit: budget.limit,
        })
        .collect();
    let hold = NewHold {
        user_id: spender.user_id.clone(),
        key_id: spender.key_id.clone(),
        tokens: i64::try_from(ask.input_tokens.saturating_add(ask.max_output_tokens))
            .unwrap_or(i64::MAX),
        cost_nanos: price.map_or(0, |p| p.cost_nanos(ask.input_tokens, ask.max_output_tokens)),
        expires_at: format_micros(
            (now + chrono::Duration::from_std(HOLD_FOR).expect("a short time")).timestamp_micros(),
        ),
    };
    match store.admit(&checks, &hold).await? {
        Admission::Held(id) => {
            *spender.hold.get_mut().unwrap_or_else(|e| e.into_inner()) = Some(id);
            Ok(Some(spender))
        }
        Admission::Over { check, spent } => {
            let (scope, budget) = budgets[check];
            metrics::budget_refused(&caller.id);
            Err(Refused::Spent(Spent {
                scope,
                budget,
                spent,
                resets_at: format_micros(budget.period.window(now).1.timestamp_micros()),
            }))
        }
    }
}

/// An admitted request's account: each of its model calls is recorded with it, and its hold
/// ends with [`Spender::settle`] at the request's end, or when it is dropped (however it ends).
pub struct Spender {
    store: Store,
    user_id: String,
    key_id: Option<String>,
    source: Source,
    pricing: Arc<Pricing>,
    hold: std::sync::Mutex<Option<String>>,
    /// A USD budget is checked: every model called needs a price.
    needs_price: bool,
}

impl Spender {
    /// Whether this account may pay for `provider/model` (a fallback's, say): not without a
    /// price under a USD budget.
    pub fn may_call(&self, provider: &str, model: &str) -> bool {
        !self.needs_price || self.pricing.price(provider, model).is_some()
    }

    /// Records one model call (`tokens`: input and output as its provider reported them; none
    /// reported is recorded as 0). A ledger that cannot be written is logged, never the
    /// request's failure: the answer was paid for and is delivered.
    pub async fn record(&self, provider: &str, model: &str, tokens: Option<(u64, u64)>) {
        let (input_tokens, output_tokens) = tokens.unwrap_or_default();
        let cost_nanos = self
            .pricing
            .price(provider, model)
            .map(|p| p.cost_nanos(input_tokens, output_tokens));
        let entry = LedgerEntry {
            user_id: self.user_id.clone(),
            key_id: self.key_id.clone(),
            source: self.source.as_str(),
            provider: provider.to_string(),
            model: model.to_string(),
            input_tokens,
            output_tokens,
            cost_nanos,
        };
        metrics::spent(&self.user_id, input_tokens, output_tokens, cost_nanos);
        let hold = self.hold.lock().unwrap_or_else(|e| e.into_inner()).clone();
        if let Err(e) = self.store.record_usage(&entry, hold.as_deref()).await {
            tracing::error!(error = %e, user = self.user_id.as_str(), provider, model,
                input_tokens, output_tokens, "could not record a model call in the usage ledger");
        }
    }
}

impl Spender {
    /// Ends the hold: the request made its last call. Awaited, so the person's next request
    /// is not checked against it.
    pub async fn settle(&self) {
        let hold = self.hold.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(hold) = hold
            && let Err(e) = self.store.release_hold(&hold).await
        {
            tracing::warn!(error = %e, "could not end a request's hold; it expires");
        }
    }
}

impl Drop for Spender {
    fn drop(&mut self) {
        let Some(hold) = self
            .hold
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        else {
            return;
        };
        // Outside a runtime (a test's drop) the hold simply expires.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let store = self.store.clone();
            runtime.spawn(async move {
                if let Err(e) = store.release_hold(&hold).await {
                    tracing::warn!(error = %e, "could not end a request's hold; it expires");
                }
            });
        }
    }
}
