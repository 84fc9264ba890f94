//! The Files page in Chromium with the real binary: a document added through the file picker
//! is shown processing, then ready with its chunks; a file that is not what its name says ends
//! failed with the reason shown; Delete removes one. A chat whose model calls `file_search`
//! shows the file it quoted as a source, which opens the file.

use chatd::plugins::testing::Reply;

use crate::open_app;
use crate::python_call::tool_call_raw;
use crate::upstream::{COMPLETIONS, text_reply};

use crate::chat::DONE;

#[tokio::test]
async fn files_are_added_shown_searched_and_deleted() {
    let search = tool_call_raw(r#"{"query":"TRV-2291"}"#).replace("\"python\"", "\"file_search\"");
    let routes = [
        (COMPLETIONS, Reply::sse(&search)),
        (COMPLETIONS, text_reply(&["The form is TRV-2291."])),
    ];
    let Some((_upstreams, chatd, browser)) = open_app(routes, &[]).await else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("handbook.md");
    std::fs::write(&good, "# Travel\n\nThe reimbursement form is TRV-2291.").unwrap();
    let bad = dir.path().join("binary.txt");
    std::fs::write(&bad, b"PK\x03\x04\0\0\0").unwrap();
    browser.ready().await;
    browser.click("#open-files").await;
    browser
        .until(
            "the empty list",
            "return document.getElementById('files')?.dataset.loaded === 'true'",
        )
        .await;
    for path in [&good, &bad] {
        let input = browser.find("#files-input").await;
        input
            .send_keys(&path.display().to_string())
            .await
            .expect("choose the file");
        browser.click("#files-add").await;
        browser
            .until(
                "the file listed",
                &format!(
                    "return [...document.querySelectorAll('.file strong')].some((s) => s.textContent === {:?})",
                    path.file_name().unwrap().to_string_lossy()
                ),
            )
            .await;
    }
    browser
        .until(
            "one ready, one failed",
            "return !!document.querySelector('.file[data-status=ready]') && \
             !!document.querySelector('.file[data-status=failed] .file-error')",
        )
        .await;
    assert!(
        browser
            .text(".file[data-status=ready] .file-facts")
            .await
            .contains("1 chunks")
    );
    assert!(
        browser
            .text(".file[data-status=failed] .file-error")
            .await
            .contains("NUL byte")
    );
    browser
        .click(".file[data-status=failed] button[data-action=delete]")
        .await;
    browser
        .until(
            "the failed one gone",
            "return document.querySelectorAll('.file').length === 1",
        )
        .await;
    let listed = chatd.get("/v1/files").await;
    assert_eq!(listed["files"].as_array().unwrap().len(), 1, "{listed}");

    // A chat: the model searches the library, and the card names the file it quoted.
    browser.eval("location.hash = '#/'", vec![]).await;
    browser.type_and_enter("#message", "Which form?").await;
    browser.until("the reply to be done", DONE).await;
    browser
        .until(
            "the card's source",
            "return [...document.querySelectorAll('.tool-card .tool-sources button')].some((b) => b.textContent === 'handbook.md')",
        )
        .await;
    let console = browser.console().await;
    assert!(
        console.iter().all(|l| !l.contains("Uncaught")),
        "{console:?}"
    );
}
