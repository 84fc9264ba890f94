//! `GET /v1/usage`: what the caller's model calls used and cost, from the usage ledger
//! (`usage/`), summed by day, model or key; admins may sum everyone's by person
//! (`groupBy=user`). Never another person's calls otherwise, whatever the role.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::AppState;
use super::error::{ApiError, ApiQuery, ApiResult, ErrorBody};
use crate::people::Caller;
use crate::people::budget::{Period, usd};
use crate::store::usage::{Group, UsageRow};
use crate::vocabulary::{Scope, format_micros, to_millis};

#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(rename_all = "camelCase")]
pub struct UsageQuery {
    /// The first moment counted: ISO 8601, or a day (`2026-12-01`, its start, UTC). Default:
    /// the start of this month (UTC).
    pub from: Option<String>,
    /// The first moment not counted (likewise; a day counts to its start). Default: now.
    pub to: Option<String>,
    /// `day` (default), `model` (`PROVIDER/MODEL`), `key` (the key's id; null for ADMIN_TOKEN),
    /// or, for admins, `user` (everyone's calls, by person id).
    #[param(pattern = "^(day|model|key|user)$")]
    pub group_by: Option<String>,
}

/// One group's sums.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageGroup {
    /// The day, `PROVIDER/MODEL`, key id or person id.
    pub group: Option<String>,
    pub calls: i64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub total_tokens: i64,
    /// At the configured prices when each call was made.
    pub cost_usd: f64,
    /// Calls of models without a price (not in `costUsd`).
    pub unpriced_calls: i64,
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UsageResponse {
    pub from: String,
    pub to: String,
    pub group_by: String,
    pub groups: Vec<UsageGroup>,
    /// Every group summed (`group` is null).
    pub total: UsageGroup,
    /// The budgets this caller's requests are checked against (as `usage` counts them).
    pub budgets: CallerBudgets,
}

/// The caller's person's budget and its key's; `null`: none.
#[derive(Debug, Serialize, ToSchema)]
pub struct CallerBudgets {
    #[schema(value_type = Option<super::users::BudgetSchema>)]
    pub user: Option<serde_json::Value>,
    #[schema(value_type = Option<super::users::BudgetSchema>)]
    pub key: Option<serde_json::Value>,
}

#[utoipa::path(get, path = "/usage", tag = "users", params(UsageQuery),
    responses((status = 200, body = UsageResponse), (status = 400, body = ErrorBody),
        (status = 403, description = "groupBy=user by a member", body = ErrorBody)))]
pub async fn usage(
    State(state): State<AppState>,
    caller: Caller,
    ApiQuery(query): ApiQuery<UsageQuery>,
) -> ApiResult<Json<UsageResponse>> {
    let (group, group_by) = match query.group_by.as_deref().unwrap_or("day") {
        "day" => (Group::Day, "day"),
        "model" => (Group::Model, "model"),
        "key" => (Group::Key, "key"),
        "user" => (Group::User, "user"),
        _ => {
            return Err(ApiError::bad_request(
                "groupBy: must be day, model, key or user",
            ));
        }
    };
    if group == Group::User && !caller.may(Scope::Admin) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "groupBy=user sums everyone's usage: it needs an admin's key with the `admin` scope",
        ));
    }
    let now = Utc::now();
    let from = match &query.from {
        Some(text) => moment("from", text)?,
        None => Period::Month.window(now).0,
    };
    let to = match &query.to {
        Some(text) => moment("to", text)?,
        None => now + chrono::Duration::milliseconds(1),
    };
    if from >= to {
        return Err(ApiError::bad_request("to: must be after from"));
    }
    let (from, to) = (
        format_micros(from.timestamp_micros()),
        format_micros(to.timestamp_micros()),
    );
    let person = (group != Group::User).then(|| caller.owner());
    let rows = state.store.usage_report(group, &from, &to, person).await?;
    let mut total = UsageRow {
        group: None,
        calls: 0,
        input_tokens: 0,
        output_tokens: 0,
        cost_nanos: 0,
        unpriced: 0,
    };
    for row in &rows {
        total.calls += row.calls;
        total.input_tokens += row.input_tokens;
        total.output_tokens += row.output_tokens;
        total.cost_nanos += row.cost_nanos;
        total.unpriced += row.unpriced;
    }
    Ok(Json(UsageResponse {
        from: to_millis(&from),
        to: to_millis(&to),
        group_by: group_by.to_string(),
        groups: rows.into_iter().map(shown).collect(),
        total: shown(total),
        budgets: CallerBudgets {
            user: caller.budgets.person.map(|b| b.to_json()),
            key: caller.budgets.key.map(|b| b.to_json()),
        },
    }))
}

fn shown(row: UsageRow) -> UsageGroup {
    UsageGroup {
        group: row.group,
        calls: row.calls,
        input_tokens: row.input_tokens,
        output_tokens: row.output_tokens,
        total_tokens: row.input_tokens.saturating_add(row.output_tokens),
        cost_usd: usd(row.cost_nanos),
        unpriced_calls: row.unpriced,
    }
}

/// `field`'s time: RFC 3339, or a day's start (UTC), between the years 2000 and 9999.
fn moment(field: &str, text: &str) -> ApiResult<DateTime<Utc>> {
    let at = DateTime::parse_from_rfc3339(text)
        .map(|at| at.with_timezone(&Utc))
        .or_else(|_| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .map(|d| d.and_hms_opt(0, 0, 0).expect("midnight").and_utc())
        })
        .map_err(|_| {
            ApiError::bad_request(format!(
                "{field}: must be an ISO 8601 time or a day such as 2026-12-01 (got {})",
                super::error::quoted(text)
            ))
        })?;
    use chrono::Datelike as _;
    if !(2000..=9999).contains(&at.year()) {
        return Err(ApiError::bad_request(format!(
            "{field}: must be between the years 2000 and 9999"
        )));
    }
    Ok(at)
}
