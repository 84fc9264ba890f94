//! `GET /metrics`: the Prometheus scrape endpoint, outside the contract's API and its OpenAPI
//! document. Served unless CHATD_METRICS=off; behind the token in token mode unless
//! CHATD_METRICS=open (`middleware::require_token`). The families are `telemetry::metrics`'s;
//! what only the server's state knows (the pool's connections, the plugin instances' kept
//! memory) is read at each scrape.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use super::AppState;
use crate::telemetry::metrics;

/// Where the scrape endpoint is (also under `/api`).
pub const PATH: &str = "/metrics";

pub async fn scrape(State(state): State<AppState>) -> impl IntoResponse {
    let (in_use, idle) = state.store.pool_connections();
    metrics::store_pool(state.store.backend_name(), in_use, idle);
    metrics::plugin_memory_kept(state.plugins.kept_memory_bytes());
    (
        [
            (header::CONTENT_TYPE, metrics::CONTENT_TYPE),
            (header::CACHE_CONTROL, "no-store"),
        ],
        metrics::render(),
    )
}
