//! A person's keys: make one (its secret shown once), list them (never a secret), revoke one.
//! Each caller reaches only their own person's keys; the rules are `people/manage.rs`'s, the
//! guide docs/teams.md.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use super::AppState;
use super::error::{ApiError, ApiJson, ApiPath, ApiResult, ErrorBody};
use super::limits;
use crate::people::Caller;
use crate::people::budget::Budget;
use crate::people::manage::{self, MAX_KEY_NAME_CHARS};
use crate::store::people::KeyRecord;
use chrono::Datelike as _;

use crate::vocabulary::{Scope, format_micros, to_millis};

pub const KEY_NOT_FOUND: &str = "key not found";

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateKeyRequest {
    /// What the key is for; non-blank.
    #[schema(max_length = 200)]
    pub name: Option<String>,
    /// Within the calling key's own scopes; omitted: all of them.
    #[schema(min_items = 1)]
    pub scopes: Option<Vec<Scope>>,
    /// ISO 8601, in the future; omitted: the key does not expire.
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
    /// What the key may spend, beside its person's budget.
    #[schema(value_type = Option<super::users::BudgetSchema>)]
    pub budget: Option<serde_json::Value>,
}

/// A key as listed: never its secret.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeySummary {
    pub id: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub created_at: String,
    pub expires_at: Option<String>,
    /// The key's budget; `null`: none.
    #[schema(value_type = Option<super::users::BudgetSchema>)]
    pub budget: Option<serde_json::Value>,
}

impl From<KeyRecord> for KeySummary {
    fn from(r: KeyRecord) -> Self {
        Self {
            budget: Budget::stored(r.budget.as_deref()).map(|b| b.to_json()),
            id: r.id,
            name: r.name,
            scopes: r.scopes,
            created_at: to_millis(&r.created_at),
            expires_at: r.expires_at.as_deref().map(to_millis),
        }
    }
}

/// A key just made: its secret, shown this once.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CreatedKey {
    pub id: String,
    /// `chatd_…`: send it as `Authorization: Bearer`. chatd keeps only its hash.
    pub key: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub created_at: String,
    pub expires_at: Option<String>,
    #[schema(value_type = Option<super::users::BudgetSchema>)]
    pub budget: Option<serde_json::Value>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeysResponse {
    pub keys: Vec<KeySummary>,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct KeyDeleted {
    pub deleted: bool,
}

#[utoipa::path(post, path = "/keys", tag = "keys", request_body = CreateKeyRequest,
    responses((status = 200, body = CreatedKey), (status = 400, body = ErrorBody),
        (status = 403, description = "a scope beyond the calling key's, or a calling key with a budget", body = ErrorBody),
        (status = 409, description = "open mode: keys need ADMIN_TOKEN", body = ErrorBody)))]
pub async fn create_key(
    State(state): State<AppState>,
    caller: Caller,
    ApiJson(body): ApiJson<CreateKeyRequest>,
) -> ApiResult<Json<CreatedKey>> {
    if state.token.is_none() {
        return Err(ApiError::new(
            axum::http::StatusCode::CONFLICT,
            "keys need token mode: set ADMIN_TOKEN (in open mode every caller is the admin)",
        ));
    }
    let Some(name) = limits::non_blank(body.name.as_deref(), "name", MAX_KEY_NAME_CHARS)? else {
        return Err(ApiError::bad_request("name: required, a non-blank string"));
    };
    if name.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            "name: must hold no control characters",
        ));
    }
    let scopes = manage::scopes_for_new_key(&caller, body.scopes.as_deref())?;
    let requested = body.expires_at.as_deref().map(future_time).transpose()?;
    let expires_at = manage::expiry_for_new_key(&caller, requested)?;
    let budget = super::users::budget_field(body.budget.as_ref())?.flatten();
    let budget = manage::budget_for_new_key(&caller, budget)?;
    let minted = manage::make_key(&state.store, &caller, &name, scopes, expires_at, budget).await?;
    state.people.team_made();
    let KeySummary {
        id,
        name,
        scopes,
        created_at,
        expires_at,
        budget,
    } = minted.record.into();
    Ok(Json(CreatedKey {
        id,
        key: minted.secret,
        name,
        scopes,
        created_at,
        expires_at,
        budget,
    }))
}

/// `expiresAt`: a time in the future, as stored.
fn future_time(value: &str) -> ApiResult<String> {
    let at = chrono::DateTime::parse_from_rfc3339(value).map_err(|_| {
        ApiError::bad_request(format!(
            "expiresAt: must be an ISO 8601 time such as 2027-01-31T00:00:00Z (got {value:?})"
        ))
    })?;
    let micros = at.timestamp_micros();
    if micros <= chrono::Utc::now().timestamp_micros() {
        return Err(ApiError::bad_request("expiresAt: must be in the future"));
    }
    // Stored times are compared as text: a fixed four-digit year.
    if at.with_timezone(&chrono::Utc).year() > 9999 {
        return Err(ApiError::bad_request(
            "expiresAt: must be before the year 10000",
        ));
    }
    Ok(format_micros(micros))
}

#[utoipa::path(get, path = "/keys", tag = "keys",
    responses((status = 200, body = KeysResponse)))]
pub async fn list_keys(
    State(state): State<AppState>,
    caller: Caller,
) -> ApiResult<Json<KeysResponse>> {
    let keys = state.store.keys_of(caller.owner()).await?;
    Ok(Json(KeysResponse {
        keys: keys.into_iter().map(Into::into).collect(),
    }))
}

#[utoipa::path(delete, path = "/keys/{keyId}", tag = "keys",
    params(("keyId" = String, Path)),
    responses((status = 200, body = KeyDeleted), (status = 404, body = ErrorBody)))]
pub async fn delete_key(
    State(state): State<AppState>,
    caller: Caller,
    ApiPath(key_id): ApiPath<String>,
) -> ApiResult<Json<KeyDeleted>> {
    if !state.store.revoke_key(caller.owner(), &key_id).await? {
        return Err(ApiError::not_found(KEY_NOT_FOUND));
    }
    state.people.forget(caller.owner(), Some(&key_id));
    Ok(Json(KeyDeleted { deleted: true }))
}
