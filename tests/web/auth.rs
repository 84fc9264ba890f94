//! Token mode in the browser: the page asks for the token, refuses a wrong one with a clear
//! message, works with the right one, and keeps it for the tab's session.

use crate::open_app;

#[tokio::test]
async fn token_mode_refuses_a_wrong_token_and_works_with_the_right_one() {
    let Some((_upstreams, chatd, browser)) =
        open_app([], &[("ADMIN_TOKEN", "correct horse")]).await
    else {
        return;
    };
    chatd
        .api(
            reqwest::Method::POST,
            "/v1/chats",
            Some(serde_json::json!({"title": "Behind the token"})),
            Some("correct horse"),
        )
        .await;
    let field = browser.find("#token").await;
    assert_eq!(
        field.attr("type").await.unwrap().as_deref(),
        Some("password")
    );
    let behind = "return document.querySelector('.app').inert";
    assert_eq!(
        browser.eval(behind, vec![]).await,
        true,
        "the page behind is out of reach"
    );
    browser.type_and_enter("#token", "wrong horse").await;
    browser
        .until(
            "the refusal",
            "return document.getElementById('signin-message').textContent.includes('refused (401)')",
        )
        .await;
    assert_eq!(
        browser.count(".item").await,
        0,
        "nothing listed without the token"
    );

    browser
        .eval("document.getElementById('token').value = ''", vec![])
        .await;
    browser.type_and_enter("#token", "correct horse").await;
    browser.ready().await;
    assert_eq!(browser.count("#token").await, 0);
    assert_eq!(browser.text("#mode").await, "Signed in with a token");
    assert_eq!(browser.eval(behind, vec![]).await, false);
    browser
        .until(
            "the chat made with the token",
            "return [...document.querySelectorAll('.item-title')].some((e) => e.textContent === 'Behind the token')",
        )
        .await;

    // Kept for the tab's session: a reload does not ask again.
    browser.client.refresh().await.unwrap();
    browser.ready().await;
    assert_eq!(browser.count("#token").await, 0);

    // A token the server no longer takes sends the page back to the prompt.
    browser
        .eval("sessionStorage.setItem('chatd.token', 'stale')", vec![])
        .await;
    browser.client.refresh().await.unwrap();
    browser.find("#token").await;
    assert!(
        browser
            .text("#signin-message")
            .await
            .contains("saved token was refused")
    );
}
