//! The bundled web client: `GET /` and its files under `/assets/`, embedded in the binary at
//! build time from the workspace's `web/` folder (plain HTML, CSS and JavaScript modules: no
//! build step at run time, no Node.js, nothing fetched from elsewhere; `assets/vendor/` is built
//! ahead from pinned npm packages by `vendor/web/build`).
//!
//! The page is a client of the public API like any other; it holds no data, so it is served
//! without a token ([`is_open`], asked by the token check) and asks for the token itself.
//! Every response carries [`CSP`]: scripts and styles only from these files, connections only to
//! this origin, images only from here or `data:` (attachments), and Trusted Types required, so
//! the page cannot turn a string into markup even by mistake: model output reaches the DOM as
//! text nodes only (`web/assets/js/markdown.js`). The web app manifest is one of the files.

use axum::extract::{OriginalUri, Path};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

use super::AppState;
use super::error::ApiError;

/// The Content-Security-Policy of the page and its files.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
    img-src 'self' data:; connect-src 'self'; manifest-src 'self'; base-uri 'none'; \
    form-action 'none'; frame-ancestors 'none'; require-trusted-types-for 'script'; \
    trusted-types 'none'";

struct Asset {
    /// The path under `web/`.
    path: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! asset {
    ($path:literal, $type:expr) => {
        Asset {
            path: $path,
            content_type: $type,
            body: include_bytes!(concat!(env!("CARGO_MANIFEST_DIR"), "/../web/", $path)),
        }
    };
}

const JS: &str = "text/javascript; charset=utf-8";

/// Every file of `web/` (a test checks that the folder holds no other). A static, not a const:
/// [`etag`] finds a file by its address, and each use of a const may be a copy of its own.
static ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("assets/app.css", "text/css; charset=utf-8"),
    asset!("assets/icon.svg", "image/svg+xml"),
    asset!("assets/manifest.webmanifest", "application/manifest+json"),
    asset!("assets/js/account.js", JS),
    asset!("assets/js/files.js", JS),
    asset!("assets/js/actions.js", JS),
    asset!("assets/js/api.js", JS),
    asset!("assets/js/attachments.js", JS),
    asset!("assets/js/auth.js", JS),
    asset!("assets/js/chat.js", JS),
    asset!("assets/js/dom.js", JS),
    asset!("assets/js/main.js", JS),
    asset!("assets/js/python.js", JS),
    asset!("assets/js/markdown.js", JS),
    asset!("assets/js/mcp.js", JS),
    asset!("assets/js/search.js", JS),
    asset!("assets/js/shortcuts.js", JS),
    asset!("assets/js/sidebar.js", JS),
    asset!("assets/js/sse.js", JS),
    asset!("assets/js/toolcards.js", JS),
    asset!("assets/js/welcome.js", JS),
    asset!("assets/vendor/LICENSES.txt", "text/plain; charset=utf-8"),
    asset!("assets/vendor/highlight.js", JS),
    asset!("assets/vendor/markdown.js", JS),
    asset!("assets/vendor/math.js", JS),
];

fn find(path: &str) -> Option<&'static Asset> {
    ASSETS.iter().find(|a| a.path == path)
}

/// Whether a request path (relative to the root or to `/api`) is a file of the web client,
/// which the token check lets through. Only the files that exist: deny by default.
pub fn is_open(path: &str) -> bool {
    path == "/"
        || path == "/api/"
        || path
            .strip_prefix("/assets/")
            .is_some_and(|file| find(&format!("assets/{file}")).is_some())
}

/// The page and its files. Served at `/` and, with the rest of the app, under `/api`.
pub fn routes() -> axum::Router<AppState> {
    axum::Router::new()
        .route("/", get(index))
        // axum's `nest("/api", …)` serves its root at `/api` only; the page's home behind a
        // proxy is `/api/` (its URLs are relative), so that path is a route of its own.
        .route("/api/", get(index))
        .route("/assets/{*file}", get(file))
}

async fn index(uri: OriginalUri, headers: HeaderMap) -> Response {
    // Under `/api` without the slash the page's relative URLs would resolve against the root.
    if uri.path() == "/api" {
        return Redirect::permanent("/api/").into_response();
    }
    serve(
        find("index.html").expect("index.html is embedded"),
        &headers,
    )
}

async fn file(Path(file): Path<String>, uri: OriginalUri, headers: HeaderMap) -> Response {
    match find(&format!("assets/{file}")) {
        Some(asset) => serve(asset, &headers),
        None => ApiError::not_found(format!("no route for {}", uri.path())).into_response(),
    }
}

/// A strong ETag per file, from its bytes: a browser revalidates (`no-cache`) and gets a 304
/// until the binary serves other files.
fn etag(asset: &Asset) -> &'static str {
    static TAGS: OnceLock<Vec<String>> = OnceLock::new();
    let tags = TAGS.get_or_init(|| {
        ASSETS
            .iter()
            .map(|a| {
                let digest = Sha256::digest(a.body);
                let hex: String = digest[..12].iter().map(|b| format!("{b:02x}")).collect();
                format!("\"{hex}\"")
            })
            .collect()
    });
    let at = ASSETS
        .iter()
        .position(|a| std::ptr::eq(a, asset))
        .expect("an embedded asset");
    &tags[at]
}

fn serve(asset: &'static Asset, request: &HeaderMap) -> Response {
    let tag = etag(asset);
    let fresh = request
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == tag));
    let mut response = if fresh {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(asset.content_type),
            )],
            asset.body,
        )
            .into_response()
    };
    let headers = response.headers_mut();
    headers.insert(header::ETAG, HeaderValue::from_static(tag));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file added to `web/` and not listed here would be a 404 in the browser.
    #[test]
    fn every_file_of_the_web_folder_is_embedded() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../web");
        let mut found = Vec::new();
        let mut dirs = vec![root.clone()];
        while let Some(dir) = dirs.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                } else {
                    let rel = path.strip_prefix(&root).unwrap().to_string_lossy();
                    found.push(rel.replace('\\', "/"));
                }
            }
        }
        found.sort();
        let mut listed: Vec<String> = ASSETS.iter().map(|a| a.path.to_string()).collect();
        listed.sort();
        assert_eq!(found, listed);
    }

    #[test]
    fn only_the_page_and_its_files_skip_the_token() {
        assert!(is_open("/"));
        assert!(is_open("/api/"));
        assert!(is_open("/assets/js/main.js"));
        assert!(!is_open("/assets/js/nope.js"));
        assert!(!is_open("/assets/../v1/chats"));
        assert!(!is_open("/v1/chats"));
        assert!(!is_open("/index.html"));
    }

    #[test]
    fn tags_differ_per_file() {
        let tags: std::collections::BTreeSet<&str> = ASSETS.iter().map(etag).collect();
        assert_eq!(tags.len(), ASSETS.len());
    }
}
