//! `GET /openai/v1/models` and `GET /openai/v1/models/{id}`: every serving provider's loaded
//! models (`chat::models::Models`, the lists `GET /v1/models` shows) in OpenAI's list shape,
//! each id `PROVIDER/MODEL`. Provider ids hold no `/` (`config::names`), so the first `/` of an
//! id splits it, and a model's own `/`s stay in the model.

use axum::Json;
use axum::extract::{Path, State};
use serde::Serialize;

use super::errors::OpenAiError;
use crate::http::AppState;

#[derive(Debug, Serialize)]
pub struct ModelList {
    object: &'static str,
    data: Vec<Model>,
}

#[derive(Debug, Serialize)]
pub struct Model {
    id: String,
    object: &'static str,
    /// When chatd loaded the provider's list (Unix seconds): OpenAI's is the model's creation,
    /// which no provider here tells.
    created: i64,
    owned_by: String,
}

pub async fn list(State(state): State<AppState>) -> Json<ModelList> {
    Json(ModelList {
        object: "list",
        data: models(&state).await,
    })
}

pub async fn retrieve(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<Model>, OpenAiError> {
    models(&state)
        .await
        .into_iter()
        .find(|m| m.id == id)
        .map(Json)
        .ok_or_else(|| OpenAiError::model_not_found(&id))
}

/// The models of the providers serving now, by provider id, each list in its provider's order.
async fn models(state: &AppState) -> Vec<Model> {
    let snapshot = state.plugins.snapshot();
    state
        .models
        .current()
        .await
        .into_iter()
        .filter(|(provider, _)| snapshot.provider(provider).is_some())
        .flat_map(|(provider, list)| {
            let created = list
                .loaded_at
                .as_deref()
                .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
                .map_or(0, |t| t.timestamp());
            list.models.into_iter().map(move |model| Model {
                id: format!("{provider}/{model}"),
                object: "model",
                created,
                owned_by: provider.clone(),
            })
        })
        .collect()
}
