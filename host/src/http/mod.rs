//! The HTTP layer: routes, DTOs, the error type, auth and request logging (where wire types may
//! be declared besides: ARCHITECTURE.md, "Invariants"). Handlers translate between DTOs and
//! store records; they hold no SQL and no vendor payloads.
//!
//! Routes are registered through `utoipa_axum`'s `routes!`, which records each handler's
//! OpenAPI operation as it adds the route: `/openapi.json` is generated from the same list the
//! router serves, so the two cannot drift. The whole app is mounted twice, at `/` and `/api`.
//! The bundled web client ([`web`]) is served beside the API, outside the OpenAPI document.

pub mod chat_files;
pub mod chats;
pub mod completions;
pub mod cookies;
pub mod error;
pub mod files;
pub mod host;
pub mod keys;
pub mod limits;
pub mod mcp;
pub mod mcp_servers;
pub mod message_search;
pub mod meta;
pub mod metrics;
pub mod middleware;
pub mod oidc;
pub mod openai;
pub mod openapi;
pub mod origin;
pub mod owner;
pub mod paging;
pub mod search_runs;
pub mod searches;
pub mod serve;
pub mod sessions;
pub mod sse;
pub mod stop;
pub mod title;
pub mod usage;
pub mod users;
pub mod web;

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::{DefaultBodyLimit, OriginalUri};
use axum::http::{StatusCode, header};
use axum::routing::get;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::attachments::MIB;
use crate::chat::ChatSettings;
use crate::chat::models::Models;
use crate::config::MetricsAccess;
use crate::plugins::loading::plugin_host::PluginHost;
use crate::runs::ActiveRuns;
use crate::runs::ready::Readiness;
use crate::store::Store;
use crate::tools::Tools;
use error::ApiError;
pub use middleware::TokenDigest;

/// Request bodies, inline attachments included, are capped at 32 MiB (413 above).
pub const MAX_BODY_BYTES: usize = 32 * MIB;

/// A request body that stops arriving for this long is refused (408): a client that sends a
/// head and part of a body would otherwise hold its connection and handler for ever (hyper
/// limits only the time to send the head). Between pieces: a large attachment on a slow link
/// still arrives.
pub const BODY_IDLE_TIMEOUT: Duration = Duration::from_secs(30);

/// A request body not all in this long after its request arrived is refused (408), however
/// steadily it trickles: one byte a second never trips [`BODY_IDLE_TIMEOUT`]. 32 MiB in this
/// time needs about 110 KiB/s.
pub const BODY_DEADLINE: Duration = Duration::from_secs(300);

/// How long a request body may take: between two of its pieces, and in all.
#[derive(Clone, Copy, Debug)]
pub struct BodyTimeouts {
    pub idle: Duration,
    pub total: Duration,
}

impl Default for BodyTimeouts {
    fn default() -> Self {
        Self {
            idle: BODY_IDLE_TIMEOUT,
            total: BODY_DEADLINE,
        }
    }
}

/// What every handler can reach: its [`Handles`] behind one `Arc`. Every `from_fn_with_state`
/// layer and `State` extractor clones the state for each request; as a struct of handles, a
/// clone and its drop were chatd's busiest functions in a `persist: false` stream's profile
/// (BENCHMARKS.md, "Where a stream's CPU goes"); as one `Arc` they are one count up and down.
#[derive(Clone)]
pub struct AppState(Arc<Handles>);

impl std::ops::Deref for AppState {
    type Target = Handles;

    fn deref(&self) -> &Handles {
        &self.0
    }
}

/// The server's parts a handler reaches, each a handle to what it shares with the runs and the
/// background tasks.
pub struct Handles {
    pub store: Store,
    /// Which tools exist and what runs each (plugins' and MCP servers').
    pub tools: Arc<Tools>,
    pub plugins: Arc<PluginHost>,
    pub runs: Arc<ActiveRuns>,
    /// What `/ready` answers (`runs::ready`).
    pub ready: Arc<Readiness>,
    pub chat: Arc<ChatSettings>,
    pub models: Arc<Models>,
    /// Set in token mode.
    pub token: Option<TokenDigest>,
    /// The people and keys a `chatd_` bearer is checked against (token mode).
    pub people: Arc<crate::people::Directory>,
    /// CHATD_ALLOWED_HOSTS: in open mode, the Host names served besides loopback ones.
    pub allowed_hosts: Arc<[String]>,
    /// CHATD_ALLOWED_ORIGINS, serialized: browser origins besides the server's own that may
    /// change state, and get CORS answers.
    pub allowed_origins: Arc<[String]>,
    /// Whether `/metrics` is served, and whether it needs the token.
    pub metrics: MetricsAccess,
    /// CHATD_PUBLIC_URL: where browsers reach chatd (MCP logins' redirect URI).
    pub public_url: Option<url::Url>,
    /// Signing in with the identity provider of `[auth.oidc]`.
    pub signin: Arc<crate::signin::SignIn>,
    /// Each person's documents (`http/files.rs`).
    pub library: Arc<crate::library::Library>,
}

impl AppState {
    /// The state of a server with these parts.
    pub fn new(handles: Handles) -> Self {
        Self(Arc::new(handles))
    }

    /// The configuration file's `[auth.oidc]`, if it has one.
    pub fn oidc(&self) -> Option<Arc<crate::config::oidc::Oidc>> {
        self.plugins
            .config_file()
            .borrow()
            .as_ref()
            .and_then(|file| file.oidc.clone())
    }

    /// The configuration file's prices (none without a file).
    pub fn pricing(&self) -> Arc<crate::config::pricing::Pricing> {
        self.plugins
            .config_file()
            .borrow()
            .as_ref()
            .map(|file| file.pricing.clone())
            .unwrap_or_default()
    }

    /// Admits `caller`'s request for a model before anything is sent (`usage::admit`): the
    /// account its calls are recorded in, or the 429 of a spent budget, or the 403 of a USD
    /// budget and a model without a price.
    pub async fn admit(
        &self,
        caller: &crate::people::Caller,
        ask: &crate::usage::Ask<'_>,
    ) -> error::ApiResult<Option<Arc<crate::usage::Spender>>> {
        let spender =
            crate::usage::admit(&self.store, &self.people, self.pricing(), caller, ask).await?;
        Ok(spender.map(Arc::new))
    }

    /// Where a route's runs run: this server's store and registry.
    pub fn run_context(&self) -> crate::runs::RunContext {
        crate::runs::RunContext {
            store: self.store.clone(),
            runs: self.runs.clone(),
        }
    }
}

#[derive(OpenApi)]
#[openapi(
    info(title = "chatd", description = "Backend for chat and web search with LLMs. Every path is served at the root and, identically, under /api. In token mode every /v1 route needs `Authorization: Bearer <ADMIN_TOKEN>`; errors are `{ \"message\": … }`."),
    servers((url = "/"), (url = "/api")),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags((name = "meta"), (name = "chats"), (name = "searches"), (name = "keys"), (name = "users"), (name = "sessions"), (name = "files")),
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        openapi
            .components
            .get_or_insert_with(Default::default)
            .add_security_scheme(
                "bearer",
                SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
            );
    }
}

fn v1_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(meta::session))
        .routes(routes!(sessions::use_link))
        .routes(routes!(sessions::logout))
        .routes(routes!(sessions::list_sessions))
        .routes(routes!(sessions::end_session))
        .routes(routes!(oidc::methods))
        .routes(routes!(oidc::start))
        .routes(routes!(oidc::callback))
        .routes(routes!(meta::active_runs))
        .routes(routes!(meta::chat_tools))
        .routes(routes!(meta::models))
        .routes(routes!(completions::complete))
        .routes(routes!(completions::stream))
        .routes(routes!(completions::attach))
        .routes(routes!(stop::stop_chat_stream))
        .routes(routes!(title::suggest_title))
        .routes(routes!(meta::workspace_items))
        .routes(routes!(chats::list_chats, chats::create_chat))
        .routes(routes!(
            chats::get_chat,
            chats::patch_chat,
            chats::delete_chat
        ))
        .routes(routes!(chats::star_chat))
        .routes(routes!(chats::add_message))
        .routes(routes!(chat_files::chat_file))
        .routes(routes!(files::list_files, files::upload_file))
        .routes(routes!(files::get_file, files::delete_file))
        .routes(routes!(files::file_content))
        .routes(routes!(message_search::search_messages))
        .routes(routes!(searches::list_searches, searches::create_search))
        .routes(routes!(searches::get_search, searches::delete_search))
        .routes(routes!(searches::star_search))
        .routes(routes!(search_runs::run_search))
        .routes(routes!(search_runs::stream_search))
        .routes(routes!(search_runs::attach_search))
        .routes(routes!(search_runs::chat_from_search))
        .routes(routes!(mcp_servers::list_servers))
        .routes(routes!(mcp_servers::connect))
        .routes(routes!(mcp_servers::disconnect))
        .routes(routes!(mcp_servers::login, mcp_servers::logout))
        .routes(routes!(mcp_servers::callback))
        .routes(routes!(mcp_servers::server_callback_route))
        .routes(routes!(keys::list_keys, keys::create_key))
        .routes(routes!(keys::delete_key))
        .routes(routes!(users::list_users, users::create_user))
        .routes(routes!(users::patch_user))
        .routes(routes!(usage::usage))
}

/// The routes and the OpenAPI document generated from them (as JSON, refined by
/// [`openapi::refine`]).
pub fn api() -> (Router<AppState>, serde_json::Value) {
    let (router, mut openapi) = OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(meta::health))
        .routes(routes!(meta::ready))
        .nest("/v1", v1_routes())
        .split_for_parts();
    document_body_errors(&mut openapi);
    limits::document(&mut openapi);
    let mut doc = serde_json::to_value(&openapi).expect("the OpenAPI document serializes");
    openapi::refine(&mut doc);
    (router, doc)
}

/// Adds to every operation that takes a body the errors `ApiJson` answers for any body, rather
/// than repeating them on each handler: 408 (it stopped arriving), 413 (past the cap), 415 (not
/// declared JSON); and to every operation that can change state the origin check's 403. An
/// operation's own wording of one is kept.
fn document_body_errors(openapi: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::{ContentBuilder, Ref, RefOr, Response, ResponseBuilder};
    let error = |description: String| -> RefOr<Response> {
        let body = ContentBuilder::new()
            .schema(Some(Ref::from_schema_name("ErrorBody")))
            .build();
        ResponseBuilder::new()
            .description(description)
            .content("application/json", body)
            .build()
            .into()
    };
    let errors = [
        (
            "408",
            error(format!(
                "{} (nothing for {} s), or {}",
                error::BODY_STOPPED,
                BODY_IDLE_TIMEOUT.as_secs(),
                error::body_too_slow(BODY_DEADLINE)
            )),
        ),
        ("413", error(error::body_too_large())),
        (
            "415",
            error("the request body is not declared as JSON (Content-Type)".into()),
        ),
    ];
    let cross_origin = error(
        "the request comes from another origin's web page (Origin), which CHATD_ALLOWED_ORIGINS \
         does not list"
            .into(),
    );
    for item in openapi.paths.paths.values_mut() {
        let operations = [
            &mut item.post,
            &mut item.put,
            &mut item.patch,
            &mut item.delete,
        ];
        for operation in operations.into_iter().flatten() {
            let responses = &mut operation.responses.responses;
            // Every request that can change state (`origin.rs`), with a body or not.
            responses
                .entry("403".to_string())
                .or_insert_with(|| cross_origin.clone());
            if operation.request_body.is_none() {
                continue;
            }
            for (status, response) in &errors {
                responses
                    .entry((*status).to_string())
                    .or_insert_with(|| response.clone());
            }
        }
    }
}

/// The complete application: routes, `/openapi.json`, middleware, mounted at `/` and `/api`.
pub fn router(state: AppState) -> Router {
    router_with(state, BodyTimeouts::default())
}

/// [`router`] with other body timeouts (tests).
pub fn router_with(state: AppState, body: BodyTimeouts) -> Router {
    let (routes, openapi) = api();
    let plugins = state.plugins.clone();
    let document = Arc::new(openapi);
    // OpenAI's wire, outside the OpenAPI document (`openai/mod.rs`).
    let mut routes = routes.merge(web::routes()).merge(openai::routes());
    if state.metrics != MetricsAccess::Off {
        routes = routes.route(metrics::PATH, get(metrics::scrape));
    }
    // MCP's own protocol, not part of the OpenAPI document (docs/mcp-server.md).
    routes = routes.route_service(
        mcp::PATH,
        tower::Layer::layer(
            &axum::middleware::map_response(mcp::bound_errors),
            mcp::service(state.clone()),
        ),
    );
    // After routing and inside the token check (a route layer runs inside the layers below):
    // every route with a path parameter, the ones above included.
    routes = routes.route_layer(axum::middleware::from_fn_with_state(
        state.clone(),
        owner::check_owner,
    ));
    let app = routes
        .route(
            "/openapi.json",
            get(move || {
                let (document, plugins) = (document.clone(), plugins.clone());
                async move {
                    // The providers a request may name are the ones serving now.
                    let snapshot = plugins.snapshot();
                    let ids: Vec<&str> = snapshot.providers().map(|p| p.id.as_str()).collect();
                    let mut document = (*document).clone();
                    openapi::for_server(&mut document, &ids);
                    (
                        [(header::CONTENT_TYPE, "application/json")],
                        serde_json::to_string_pretty(&document)
                            .expect("OpenAPI document serializes"),
                    )
                }
            }),
        )
        .fallback(no_route)
        .method_not_allowed_fallback(method_not_allowed)
        // Outermost last: log → OpenAI's error shape (`/openai/v1` only) → catch panics → body
        // limit and idle timeout → CORS (preflights answered here, before the token; an allowed
        // page can read every refusal below) → Host check → origin check → token check →
        // handler.
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            middleware::require_token,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            origin::refuse_cross_origin,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            host::check_host,
        ))
        .layer(tower::util::option_layer(origin::cors(
            state.allowed_origins.clone(),
        )))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        // Boxed again: the router's routes take axum's body type. (`TimeoutBody` passes on no
        // size hint; nothing here reads one: the body cap counts what arrives.) The deadline
        // for the whole body goes with the request, for `ApiJson`, which reads it.
        .layer(tower::util::MapRequestLayer::new(
            move |mut req: axum::extract::Request| {
                req.extensions_mut()
                    .insert(error::BodyDeadline::after(body.total));
                req.map(|b| {
                    axum::body::Body::new(tower_http::timeout::TimeoutBody::new(body.idle, b))
                })
            },
        ))
        .layer(CatchPanicLayer::custom(middleware::panic_response))
        // Every refusal above, on an `/openai/v1` path, in OpenAI's error shape.
        .layer(axum::middleware::from_fn(openai::errors::reshape))
        .layer(axum::middleware::from_fn(middleware::log_request));
    Router::new()
        .merge(app.clone())
        .nest("/api", app)
        .with_state(state)
}

async fn no_route(uri: OriginalUri) -> ApiError {
    ApiError::not_found(format!("no route for {}", uri.path()))
}

async fn method_not_allowed(uri: OriginalUri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("method not allowed on {}", uri.path()),
    )
}
