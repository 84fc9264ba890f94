//! The bundled web client as HTTP: the page and its files are served at `/` and `/api/` without
//! the token (they hold no data) and with the Content-Security-Policy, a file that is not one of
//! them stays behind the token, and a browser revalidates them with their ETag.

use reqwest::StatusCode;
use reqwest::header::{CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LOCATION};

use crate::support::{Options, TestServer};

#[tokio::test]
async fn the_page_and_its_files_are_open_with_their_policy() {
    let server = TestServer::start_with(Options {
        token: Some("s3cret".into()),
        ..Options::default()
    })
    .await;
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let get = |path: &str| no_redirects.get(format!("{}{path}", server.base)).send();
    for (path, content_type) in [
        ("/", "text/html; charset=utf-8"),
        ("/api/", "text/html; charset=utf-8"),
        ("/assets/js/main.js", "text/javascript; charset=utf-8"),
        ("/api/assets/app.css", "text/css; charset=utf-8"),
        ("/assets/icon.svg", "image/svg+xml"),
    ] {
        let res = get(path).await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{path}");
        assert_eq!(res.headers()[CONTENT_TYPE], content_type, "{path}");
        let csp = res.headers()[CONTENT_SECURITY_POLICY].to_str().unwrap();
        assert!(
            csp.starts_with("default-src 'none'; script-src 'self';"),
            "{path}: {csp}"
        );
        assert_eq!(res.headers()["x-content-type-options"], "nosniff");
        assert!(!res.bytes().await.unwrap().is_empty());
    }
    // Under the proxy prefix without its slash the page's relative URLs would miss: redirected.
    let res = get("/api").await.unwrap();
    assert_eq!(res.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(res.headers()[LOCATION], "/api/");

    // Only the files that exist are open; anything else under /assets is behind the token.
    for path in ["/assets/js/nope.js", "/assets/../v1/chats", "/index.html"] {
        let res = get(path).await.unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "{path}");
    }
    let (status, body) = server.get("/assets/js/nope.js").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body["message"], "no route for /assets/js/nope.js");

    // Revalidation: the same file answers 304 to its own tag.
    let first = get("/assets/js/chat.js").await.unwrap();
    let tag = first.headers()[ETAG].clone();
    assert_eq!(first.headers()["cache-control"], "no-cache");
    let again = no_redirects
        .get(format!("{}/assets/js/chat.js", server.base))
        .header(IF_NONE_MATCH, tag.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), StatusCode::NOT_MODIFIED);
    assert_eq!(again.headers()[ETAG], tag);
    assert!(again.bytes().await.unwrap().is_empty());
}
