//! The account page in the browser (`#/account`): a person signed in with a login link makes
//! a key with the scopes they chose, copies it (shown once), and revokes it; sees this month's
//! usage and their budget; and an admin sets a person's budget and disables them. A member's
//! page has no people.

use reqwest::Method;
use serde_json::{Value, json};

use crate::harness::{Browser, Chatd};
use crate::open_app;

const TOKEN: &str = "account-admin-token";

/// Signs `name` in with a fresh login link, in this browser.
async fn sign_in(chatd: &Chatd, browser: &Browser, name: &str) {
    browser.open(&crate::login_link(chatd, name, TOKEN)).await;
    browser.ready().await;
}

async fn person(chatd: &Chatd, name: &str) -> Value {
    let users = chatd.api(Method::GET, "/v1/users", None, Some(TOKEN)).await;
    users["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == name)
        .unwrap()
        .clone()
}

async fn status_with(chatd: &Chatd, key: &str, path: &str) -> reqwest::StatusCode {
    reqwest::Client::new()
        .get(format!("{}{path}", chatd.base))
        .bearer_auth(key)
        .send()
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn keys_usage_and_people_on_the_account_page() {
    let Some((_upstreams, chatd, browser)) = open_app([], &[("ADMIN_TOKEN", TOKEN)]).await else {
        return;
    };
    for (name, role) in [("boss", "admin"), ("ann", "member")] {
        chatd
            .api(
                Method::POST,
                "/v1/users",
                Some(json!({"name": name, "role": role})),
                Some(TOKEN),
            )
            .await;
    }
    sign_in(&chatd, &browser, "boss").await;
    browser.click("#open-account").await;
    assert_eq!(
        browser.text("#account-who").await,
        "Signed in as boss (admin)"
    );
    browser
        .until(
            "the keys",
            "return document.getElementById('keys')?.dataset.loaded === 'true'",
        )
        .await;

    // A key for an IDE: chat and openai, not mcp (admin is never ticked for one); shown once,
    // copied, and it works.
    browser.click("#new-key input[value=mcp]").await;
    browser.type_and_enter("#key-name", "ide").await;
    browser.find("#key-value").await;
    let made = browser.text("#key-value").await;
    assert!(made.starts_with("chatd_"), "{made}");
    browser.allow_clipboard().await;
    browser.click("#copy-key").await;
    assert_eq!(browser.clipboard().await, made);
    assert_eq!(
        status_with(&chatd, &made, "/openai/v1/models").await,
        reqwest::StatusCode::OK
    );
    browser
        .until(
            "the new key listed",
            "return !!document.querySelector('.key[data-name=\"ide\"]')",
        )
        .await;
    let listed = browser.text(".key[data-name=\"ide\"]").await;
    assert!(listed.contains("chat, openai ·"), "{listed}");
    browser
        .click(".key[data-name=\"ide\"] button[data-action=\"revoke\"]")
        .await;
    browser
        .until(
            "the key gone from the list",
            "return !document.querySelector('.key[data-name=\"ide\"]')",
        )
        .await;
    assert_eq!(
        status_with(&chatd, &made, "/v1/chats").await,
        reqwest::StatusCode::UNAUTHORIZED
    );

    // This month's usage, and no budget.
    browser
        .until(
            "the usage",
            "return document.getElementById('usage')?.dataset.loaded === 'true'",
        )
        .await;
    assert_eq!(browser.text("#usage dd[data-field=calls]").await, "0");
    assert_eq!(browser.text("#usage dd[data-field=budget]").await, "none");

    // People: ann gets a budget of 5000 tokens a day, then is disabled.
    let row = ".person[data-name=\"ann\"]";
    browser.find(row).await;
    browser
        .eval(
            "const row = document.querySelector(arguments[0]); \
             row.querySelector('input[type=number]').value = '5000'; \
             row.querySelectorAll('select')[0].value = 'tokens'; \
             row.querySelectorAll('select')[1].value = 'day'; \
             row.querySelector('button[data-action=budget]').click();",
            vec![json!(row)],
        )
        .await;
    browser
        .until(
            "ann's budget shown",
            "return document.querySelector('.person[data-name=\"ann\"]')?.textContent.includes('5000 tokens a day')",
        )
        .await;
    assert_eq!(
        person(&chatd, "ann").await["budget"],
        json!({"tokens": 5000, "period": "day"})
    );
    browser
        .click(".person[data-name=\"ann\"] button[data-action=\"disable\"]")
        .await;
    browser
        .until(
            "ann disabled",
            "return document.querySelector('.person[data-name=\"ann\"]')?.dataset.disabled === 'true'",
        )
        .await;
    assert_eq!(person(&chatd, "ann").await["disabled"], true);
    assert_eq!(
        browser.count(".person[data-name=\"admin\"] button").await,
        0
    );

    // A member sees their budget and no people.
    let ann = person(&chatd, "ann").await;
    chatd
        .api(
            Method::PATCH,
            &format!("/v1/users/{}", ann["id"].as_str().unwrap()),
            Some(json!({"disabled": false})),
            Some(TOKEN),
        )
        .await;
    browser.click("#sign-out").await;
    browser.find("#token").await;
    sign_in(&chatd, &browser, "ann").await;
    browser.click("#open-account").await;
    assert_eq!(
        browser.text("#account-who").await,
        "Signed in as ann (member)"
    );
    browser
        .until(
            "the usage",
            "return document.getElementById('usage')?.dataset.loaded === 'true'",
        )
        .await;
    assert_eq!(
        browser.text("#usage dd[data-field=budget]").await,
        "5000 tokens a day"
    );
    assert_eq!(browser.count("#people").await, 0);
    assert_eq!(
        browser.count("#new-key input[value=admin]").await,
        0,
        "a member cannot give admin"
    );
}
