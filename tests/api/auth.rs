//! Token mode. The route table is walked from /openapi.json, which `utoipa_axum` generates from
//! the same registrations the router serves, so a route added later is walked here too.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::support::{Options, TestServer};

const TOKEN: &str = "correct horse battery staple";

/// Every (method, path) the router serves, with path parameters filled in.
async fn route_table(server: &TestServer) -> Vec<(Method, String)> {
    let doc: Value = server
        .client
        .get(format!("{}/openapi.json", server.base))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let mut routes = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            let Ok(method) = method.to_uppercase().parse::<Method>() else {
                continue;
            };
            let concrete = path
                .split('/')
                .map(|seg| if seg.starts_with('{') { "some-id" } else { seg })
                .collect::<Vec<_>>()
                .join("/");
            routes.push((method, concrete));
        }
    }
    routes
}

#[tokio::test]
async fn every_v1_route_needs_the_token() {
    let server = TestServer::start_with(Options {
        token: Some(TOKEN.into()),
        dir: None,
        ..Options::default()
    })
    .await;
    let routes = route_table(&server).await;
    assert!(
        routes.len() >= 15,
        "the route table is the real one: {routes:?}"
    );
    let mut checked = 0;
    for (method, path) in &routes {
        for prefix in ["", "/api"] {
            let url = format!("{}{prefix}{path}", server.base);
            // A login's redirect carries no token: its `state` and cookie decide it
            // (`tests/api/mcp_oauth.rs::the_callback_refuses_what_it_did_not_begin`).
            // A login link is its own proof (`tests/api/sessions.rs`).
            let open = path == "/health"
                || path == "/ready"
                || path == "/v1/auth/link"
                || path.starts_with("/v1/auth/oidc/")
                || path == "/v1/auth/methods"
                || (path.starts_with("/v1/mcp-servers/") && path.ends_with("/callback"));
            let attempts: [(&str, Option<String>); 5] = [
                ("no header", None),
                ("wrong token", Some(format!("Bearer {TOKEN}x"))),
                (
                    "prefix of the token",
                    Some(format!("Bearer {}", &TOKEN[..5])),
                ),
                ("other scheme", Some(format!("Basic {TOKEN}"))),
                ("bare token", Some(TOKEN.to_string())),
            ];
            for (what, header) in attempts {
                let mut req = server.client.request(method.clone(), &url).json(&json!({}));
                if let Some(h) = header {
                    req = req.header("authorization", h);
                }
                let res = req.send().await.unwrap();
                let status = res.status();
                if open {
                    assert_ne!(
                        status,
                        StatusCode::UNAUTHORIZED,
                        "{method} {prefix}{path} is open"
                    );
                } else {
                    assert_eq!(
                        status,
                        StatusCode::UNAUTHORIZED,
                        "{method} {prefix}{path} with {what}"
                    );
                    assert_eq!(res.headers()["www-authenticate"], "Bearer");
                    let body: Value = res.json().await.unwrap();
                    assert!(
                        body["message"]
                            .as_str()
                            .unwrap()
                            .contains("Authorization: Bearer"),
                        "{body}"
                    );
                }
            }
            // With the token (scheme case-insensitive) the request reaches its handler.
            let res = server
                .client
                .request(method.clone(), &url)
                .header("authorization", format!("bearer {TOKEN}"))
                .json(&json!({}))
                .send()
                .await
                .unwrap();
            assert_ne!(
                res.status(),
                StatusCode::UNAUTHORIZED,
                "{method} {prefix}{path}"
            );
            let body: Value = res.json().await.unwrap();
            assert!(
                !body["message"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("no route for"),
                "{method} {prefix}{path} is in the document but not served"
            );
            checked += 1;
        }
    }
    assert_eq!(checked, routes.len() * 2);
}

#[tokio::test]
async fn open_paths_and_unknown_paths() {
    let server = TestServer::start_with(Options {
        token: Some(TOKEN.into()),
        dir: None,
        ..Options::default()
    })
    .await;
    for path in [
        "/health",
        "/api/health",
        "/ready",
        "/api/ready",
        "/openapi.json",
        "/api/openapi.json",
    ] {
        let res = server
            .client
            .get(format!("{}{path}", server.base))
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{path}");
    }
    // Deny by default: a path no route serves is still behind the token.
    let res = server
        .client
        .get(format!("{}/v1/not-a-route", server.base))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
    // The session reports token mode to a client that has the token.
    assert_eq!(
        server.request(Method::GET, "/v1/auth/session", None).await,
        (
            StatusCode::OK,
            json!({ "authenticated": true, "mode": "token" })
        )
    );
}
