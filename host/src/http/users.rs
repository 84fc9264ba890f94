//! People, for admins (the `admin` scope: `people::scope_for`): list them, add one (with a first
//! key, shown once), disable or enable one. An admin manages people; no route here shows what a
//! person has made. The rules are `people/manage.rs`'s, shared with `chatd users`.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::error::{ApiError, ApiJson, ApiPath, ApiResult, ErrorBody};
use crate::people::budget::Budget;
use crate::people::manage;
use crate::store::people::PersonRecord;
use crate::vocabulary::{PersonRole, to_millis};

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserSummary {
    pub id: String,
    pub name: String,
    pub role: PersonRole,
    pub disabled: bool,
    pub created_at: String,
    /// The person's budget; `null`: none.
    #[schema(value_type = Option<BudgetSchema>)]
    pub budget: Option<serde_json::Value>,
}

impl From<PersonRecord> for UserSummary {
    fn from(p: PersonRecord) -> Self {
        Self {
            budget: Budget::stored(p.budget.as_deref()).map(|b| b.to_json()),
            id: p.id,
            name: p.name,
            role: p.role,
            disabled: p.disabled,
            created_at: to_millis(&p.created_at),
        }
    }
}

/// A budget: exactly one of `usd` and `tokens`, per `period` (UTC; a week starts on Monday).
/// What it counts and when it refuses is docs/teams.md's.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
pub struct BudgetSchema {
    /// USD per period (needs every model called to have a price).
    #[schema(exclusive_minimum = 0.0)]
    pub usd: Option<f64>,
    /// Input and output tokens per period.
    #[schema(minimum = 1)]
    pub tokens: Option<u64>,
    pub period: BudgetPeriod,
}

#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum BudgetPeriod {
    Day,
    Week,
    Month,
}

/// A field that may be given as `null` (which says something) or left out (which says nothing).
pub(super) fn given<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(d).map(Some)
}

/// A request's `budget` field, checked: `Some(None)` clears it.
pub(super) fn budget_field(value: Option<&serde_json::Value>) -> ApiResult<Option<Option<Budget>>> {
    value
        .map(|v| Budget::parse("budget", v).map_err(ApiError::bad_request))
        .transpose()
}

#[derive(Debug, Serialize, ToSchema)]
pub struct UsersResponse {
    pub users: Vec<UserSummary>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateUserRequest {
    /// 1 to 64 ASCII letters, digits, `.`, `_`, `-` or `@`; unique.
    #[schema(pattern = "^[A-Za-z0-9._@-]{1,64}$")]
    pub name: Option<String>,
    /// Omitted: `member`.
    pub role: Option<PersonRole>,
}

/// A person just added, with their first key (every scope the role allows), shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatedUser {
    pub id: String,
    pub name: String,
    pub role: PersonRole,
    pub key: String,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PatchUserRequest {
    /// A disabled person's keys are refused at once on this instance, within a second on others.
    pub disabled: Option<bool>,
    /// The person's budget; `null` removes it.
    #[serde(default, deserialize_with = "given")]
    #[schema(value_type = Option<BudgetSchema>, nullable)]
    pub budget: Option<serde_json::Value>,
}

#[utoipa::path(get, path = "/users", tag = "users",
    responses((status = 200, body = UsersResponse), (status = 403, body = ErrorBody)))]
pub async fn list_users(State(state): State<AppState>) -> ApiResult<Json<UsersResponse>> {
    let people = state.store.people().await?;
    Ok(Json(UsersResponse {
        users: people.into_iter().map(Into::into).collect(),
    }))
}

#[utoipa::path(post, path = "/users", tag = "users", request_body = CreateUserRequest,
    responses((status = 200, body = CreatedUser), (status = 400, body = ErrorBody),
        (status = 409, description = "the name is taken, or open mode (people need ADMIN_TOKEN)", body = ErrorBody)))]
pub async fn create_user(
    State(state): State<AppState>,
    ApiJson(body): ApiJson<CreateUserRequest>,
) -> ApiResult<Json<CreatedUser>> {
    if state.token.is_none() {
        return Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "people need token mode: set ADMIN_TOKEN (in open mode every caller is the admin, \
             so people could not be kept apart)",
        ));
    }
    let Some(name) = body.name else {
        return Err(ApiError::bad_request("name: required"));
    };
    let role = body.role.unwrap_or(PersonRole::Member);
    let (person, key) = manage::add_person(&state.store, &name, role).await?;
    state.people.team_made();
    Ok(Json(CreatedUser {
        id: person.id,
        name: person.name,
        role: person.role,
        key: key.secret,
    }))
}

#[utoipa::path(patch, path = "/users/{userId}", tag = "users", request_body = PatchUserRequest,
    params(("userId" = String, Path)),
    responses((status = 200, body = UserSummary), (status = 400, body = ErrorBody),
        (status = 404, body = ErrorBody)))]
pub async fn patch_user(
    State(state): State<AppState>,
    ApiPath(user_id): ApiPath<String>,
    ApiJson(body): ApiJson<PatchUserRequest>,
) -> ApiResult<Json<UserSummary>> {
    // Both checked before either is written.
    let budget = budget_field(body.budget.as_ref())?;
    let mut person = None;
    if let Some(disabled) = body.disabled {
        person = Some(
            manage::set_disabled(&state.store, Some(&state.people), &user_id, disabled).await?,
        );
    }
    if let Some(budget) = budget {
        person =
            Some(manage::set_budget(&state.store, Some(&state.people), &user_id, budget).await?);
    }
    let person = match person {
        Some(person) => person,
        None => state
            .store
            .person(&user_id)
            .await?
            .ok_or_else(|| ApiError::not_found("user not found"))?,
    };
    Ok(Json(person.into()))
}
