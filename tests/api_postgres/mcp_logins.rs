//! A login shared by two instances on one PostgreSQL database (`store/logins.rs`): made by
//! Connect on one, used by the other; when the access token stops working under 20 concurrent
//! calls spread over both, exactly one token request refreshes it (the login's row lock), and
//! every call passes. The server's refresh tokens rotate and a reused one revokes the grant, so
//! a second refresh would show as failed calls too.

use std::sync::Arc;

use chatd::plugins::testing::ScriptedUpstream;
use chatd::store::people::BUILTIN_ADMIN;
use reqwest::StatusCode;

use crate::live_replies::A;
use crate::mcp::McpServer;
use crate::mcp_oauth::{TOOL, calls, connect, listed, serve, stats};

#[tokio::test]
async fn twenty_calls_on_two_instances_at_expiry_make_one_token_request() {
    let Some(mcp) = McpServer::start_oauth() else {
        return;
    };
    let upstream = ScriptedUpstream::start(calls(A, 0)).await;
    // One folder: one database (`support::test_database`), two instances on it.
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let a = serve(&upstream, &mcp, &dir).await;
    assert_eq!(connect(&a).await.status(), StatusCode::SEE_OTHER);
    listed(&a, true).await;
    let b = serve(&upstream, &mcp, &dir).await;
    listed(&b, true).await;
    assert_eq!(stats(&mcp).await["authorization_code"], 1);

    mcp.expire().await;
    let mut calls = Vec::new();
    for i in 0..20 {
        let server = if i % 2 == 0 { &a } else { &b };
        let tool = server
            .state
            .tools
            .mcp()
            .reachable_now(BUILTIN_ADMIN)
            .tool(TOOL)
            .expect("offered");
        calls.push(tokio::spawn(
            async move { tool.call(r#"{"a":2,"b":3}"#).await },
        ));
    }
    for call in calls {
        let outcome = call.await.unwrap().expect("the call passes");
        assert_eq!(outcome.text, "5");
    }
    let counts = stats(&mcp).await;
    assert_eq!(counts["refresh_token"], 1, "{counts}");
    assert_eq!(counts["authorization_code"], 1, "{counts}");
    a.stop().await;
    b.stop().await;
}
