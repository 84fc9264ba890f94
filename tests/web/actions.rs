//! What a user does with messages: a reply's rust code block and `$$…$$` math, rendered
//! highlighted and as MathML; copy (its raw markdown reaches the clipboard, a code block its
//! text); edit the second message, and regenerate a reply, each as a new chat (the original
//! untouched), by button and by keyboard. All under the page's unchanged CSP, with no CSP or
//! Trusted Types violation in the console.

use serde_json::json;

use crate::open_app;
use crate::upstream::{COMPLETIONS, text_reply};

const REPLY: &str = "Here is **one** way:\n\n```rust\nfn main() {\n    let answer: u32 = 42;\n    println!(\"{answer}\");\n}\n```\n\nand a fraction:\n\n$$\\frac{a}{b}$$";

const DONE: &str = "return !document.querySelector('#live-run') && \
    !!document.querySelector('.message.assistant') && !document.getElementById('send').disabled";

/// The stored (role, content) rows of chat `id`.
async fn rows(chatd: &crate::harness::Chatd, id: &str) -> Vec<(String, String)> {
    crate::chat::transcript(chatd, &format!("#/chat/{id}")).await
}

/// Marks the messages shown now, so that a wait for another chat's messages ([`FRESH`]) is not
/// met by these: the hash changes before the router replaces the view.
async fn mark_shown(browser: &crate::harness::Browser) {
    browser
        .eval(
            "document.querySelectorAll('.message').forEach((m) => { m.dataset.shownBefore = '1'; })",
            vec![],
        )
        .await;
}

/// True (in a wait's script) once no message [`mark_shown`] marked is on the page.
const FRESH: &str = "!document.querySelector('.message[data-shown-before]')";

/// The page open on a chat with `questions` asked and answered, its CSP checked, a probe line in
/// the console and the clipboard readable. None when the browser is missing.
async fn opened(
    questions: &[&str],
) -> Option<(
    crate::upstream::Upstreams,
    crate::harness::Chatd,
    crate::harness::Browser,
)> {
    let pieces = [&REPLY[..30], &REPLY[30..90], &REPLY[90..]];
    let (upstreams, chatd, browser) = open_app([(COMPLETIONS, text_reply(&pieces))], &[]).await?;
    let page = reqwest::get(format!("{}/", chatd.base)).await.unwrap();
    assert_eq!(
        page.headers()["content-security-policy"].to_str().unwrap(),
        chatd::http::web::CSP,
        "the page's CSP is the one it always was"
    );
    browser.ready().await;
    // A line the console read must find: the read works, so its silence means something.
    browser
        .eval("console.warn('chatd-console-probe')", vec![])
        .await;
    browser.allow_clipboard().await;
    for (n, question) in questions.iter().enumerate() {
        browser.type_and_enter("#message", question).await;
        browser
            .until(
                "the reply",
                &format!(
                    "return document.querySelectorAll('.message.assistant').length === {} && {}",
                    n + 1,
                    &DONE["return ".len()..]
                ),
            )
            .await;
    }
    Some((upstreams, chatd, browser))
}

/// The console read: it works (the probe `opened` logged is there), and no CSP or Trusted
/// Types violation is in it.
async fn no_policy_violation(browser: &crate::harness::Browser) {
    let console = browser.console().await;
    assert!(
        console.iter().any(|m| m.contains("chatd-console-probe")),
        "the console is read: {console:?}"
    );
    let violations: Vec<&String> = console
        .iter()
        .filter(|m| {
            m.contains("Content Security Policy")
                || m.contains("Trusted Type")
                || m.contains("TrustedHTML")
        })
        .collect();
    assert!(
        violations.is_empty(),
        "CSP or Trusted Types violations: {violations:?}"
    );
}

#[tokio::test]
async fn a_reply_renders_highlighted_code_and_math_and_copies_as_markdown() {
    let Some((_upstreams, _chatd, browser)) = opened(&["first question"]).await else {
        return;
    };
    // Highlighted rust: the keyword, the type and the number are spans of their own.
    let code = browser
        .eval(
            "const code = document.querySelector('.message.assistant pre code'); return [code.dataset.lang, \
               [...code.querySelectorAll('span.hljs-keyword')].map((s) => s.textContent).slice(0, 2), \
               code.querySelectorAll('span.hljs-number').length > 0, code.textContent.includes('let answer: u32 = 42;')]",
            vec![],
        )
        .await;
    assert_eq!(
        code,
        json!(["rust", ["fn", "let"], true, true]),
        "highlighted rust"
    );
    // The math is MathML built by Temml: a display <math> with an <mfrac> of a over b.
    let math = browser
        .eval(
            "const m = document.querySelector('.message.assistant .math-display math'); \
             return m && [m.getAttribute('display'), m.querySelector('mfrac')?.textContent]",
            vec![],
        )
        .await;
    assert_eq!(
        math,
        json!(["block", "ab"]),
        "MathML for $$\\frac{{a}}{{b}}$$"
    );

    // The README's picture of code and math, the reply in view.
    browser
        .eval(
            "document.querySelector('.message.assistant').scrollIntoView({ block: 'end' })",
            vec![],
        )
        .await;
    browser.screenshot("chat-code-math", 1440, 900).await;
    // Copy puts the reply's markdown, as stored, on the clipboard.
    browser
        .click_centered(".message.assistant .action-copy")
        .await;
    browser
        .until(
            "the copy's notice",
            "return document.getElementById('announcer').textContent === 'Reply copied'",
        )
        .await;
    assert_eq!(browser.clipboard().await, REPLY);
    // A code block's own button copies its text only.
    browser
        .click_centered(".message.assistant .copy-code")
        .await;
    browser
        .until(
            "the code copied",
            "return document.getElementById('announcer').textContent === 'Code copied'",
        )
        .await;
    assert_eq!(
        browser.clipboard().await,
        "fn main() {\n    let answer: u32 = 42;\n    println!(\"{answer}\");\n}"
    );

    no_policy_violation(&browser).await;
}

#[tokio::test]
async fn edit_and_regenerate_fork_into_new_chats_the_originals_unchanged() {
    let Some((_upstreams, chatd, browser)) = opened(&["first question", "second question"]).await
    else {
        return;
    };
    // Edit the second user message: a new chat with the rows before it, the edited text and a
    // new reply; the original as it was.
    let original = browser.hash().await;
    let original_id = original.trim_start_matches("#/chat/").to_string();
    let before = rows(&chatd, &original_id).await;
    browser
        .click(".message.user[data-index='2'] .action-edit")
        .await;
    mark_shown(&browser).await;
    let field = browser.find(".edit-form textarea").await;
    field.clear().await.unwrap();
    field.send_keys("second question, edited").await.unwrap();
    browser.click_centered(".edit-form .send-edit").await;
    browser
        .until(
            "the fork to open",
            &format!(
                "return location.hash !== {} && location.hash.startsWith('#/chat/')",
                json!(original)
            ),
        )
        .await;
    browser
        .until(
            "the fork's reply",
            &format!("return {FRESH} && !document.querySelector('#live-run') && document.querySelectorAll('.message.assistant').length === 2"),
        )
        .await;
    let fork_id = browser
        .hash()
        .await
        .trim_start_matches("#/chat/")
        .to_string();
    let fork = rows(&chatd, &fork_id).await;
    let expected: Vec<(String, String)> = [
        ("user", "first question"),
        ("assistant", REPLY),
        ("user", "second question, edited"),
        ("assistant", REPLY),
    ]
    .iter()
    .map(|(r, c)| (r.to_string(), c.to_string()))
    .collect();
    assert_eq!(fork, expected, "the fork's transcript");
    assert_eq!(
        rows(&chatd, &original_id).await,
        before,
        "the original is unchanged"
    );
    let title = chatd.get(&format!("/v1/chats/{fork_id}")).await["chat"]["title"].clone();
    assert!(
        title.as_str().unwrap().ends_with(" · edited"),
        "the fork's title says so: {title}"
    );

    // The same by keyboard: Ctrl+Shift+C copies the last reply, Ctrl+Shift+G regenerates it
    // as another fork, which asks the last user message again.
    browser
        .eval("navigator.clipboard.writeText('')", vec![])
        .await;
    let field = browser.find("#message").await;
    field.click().await.unwrap();
    field.send_keys("\u{E009}\u{E008}c\u{E000}").await.unwrap();
    browser
        .until(
            "the copied reply",
            "return document.getElementById('announcer').textContent === 'Reply copied'",
        )
        .await;
    assert_eq!(browser.clipboard().await, REPLY);
    mark_shown(&browser).await;
    field.send_keys("\u{E009}\u{E008}g\u{E000}").await.unwrap();
    browser
        .until(
            "the regenerated fork",
            &format!(
                "return !['{original}', '#/chat/{fork_id}'].includes(location.hash) && {FRESH} && !document.querySelector('#live-run') \
                 && document.querySelectorAll('.message.assistant').length === 2"
            ),
        )
        .await;
    let again = browser
        .hash()
        .await
        .trim_start_matches("#/chat/")
        .to_string();
    assert_eq!(
        rows(&chatd, &again).await,
        expected,
        "the regenerated fork's transcript"
    );
    assert_eq!(
        rows(&chatd, &fork_id).await,
        expected,
        "the fork it came from is unchanged"
    );
    let title = chatd.get(&format!("/v1/chats/{again}")).await["chat"]["title"].clone();
    assert!(
        title.as_str().unwrap().ends_with(" · edited · regenerated"),
        "{title}"
    );

    no_policy_violation(&browser).await;
}
