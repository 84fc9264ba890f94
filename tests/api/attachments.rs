//! Attachment limits on POST /v1/chats and POST /v1/chats/:id/messages, the 32 MiB body cap,
//! and that nothing is stored after a rejection.

use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{TestServer, data_url, jpeg_bytes, png_bytes};

const MIB: usize = 1024 * 1024;

fn image(mime: &str, bytes: &[u8]) -> Value {
    json!({ "kind": "image", "filename": "pic", "mimeType": mime, "sizeBytes": 1, "dataUrl": data_url(mime, bytes) })
}

fn text(text: String) -> Value {
    json!({ "kind": "text", "filename": "notes.md", "mimeType": "text/markdown", "text": text, "truncated": true })
}

#[tokio::test]
async fn valid_attachments_are_stored_in_metadata() {
    let server = TestServer::start().await;
    let chat = server.new_chat(json!({})).await;
    let png = png_bytes(1000);
    let (status, body) = server
        .post(
            &format!("/v1/chats/{chat}/messages"),
            json!({
                "role": "user",
                "content": "look",
                "metadata": { "client": "web", "attachments": [image("image/jpeg", &jpeg_bytes(10))] },
                "attachments": [image("image/png", &png), text("# hi".into())],
            }),
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let metadata = &body["message"]["metadata"];
    assert_eq!(metadata["client"], "web", "other metadata is kept");
    let stored = metadata["attachments"].as_array().unwrap();
    assert_eq!(
        stored.len(),
        3,
        "metadata.attachments and attachments are merged"
    );
    assert_eq!(stored[0]["mimeType"], "image/jpeg");
    assert_eq!(stored[1]["kind"], "image");
    assert_eq!(stored[1]["mimeType"], "image/png");
    // sizeBytes is the decoded size, whatever the client claimed.
    assert_eq!(stored[1]["sizeBytes"], 1000);
    assert_eq!(stored[1]["dataUrl"], data_url("image/png", &png));
    assert!(stored[1]["id"].is_string());
    assert_eq!(
        stored[2],
        json!({
            "kind": "text", "id": stored[2]["id"], "filename": "notes.md", "mimeType": "text/markdown",
            "sizeBytes": 4, "text": "# hi", "truncated": true,
        })
    );
    let (_, detail) = server.get(&format!("/v1/chats/{chat}")).await;
    assert_eq!(detail["chat"]["messages"][0]["metadata"], *metadata);

    // The same shapes are accepted in a new chat's transcript.
    let (status, body) = server
        .post("/v1/chats", json!({ "messages": [{ "role": "user", "content": "x", "attachments": [image("image/jpeg", &jpeg_bytes(50))] }] }))
        .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let id = body["chat"]["id"].as_str().unwrap();
    let (_, detail) = server.get(&format!("/v1/chats/{id}")).await;
    assert_eq!(
        detail["chat"]["messages"][0]["metadata"]["attachments"][0]["sizeBytes"],
        50
    );
}

#[tokio::test]
async fn each_limit_rejects_and_stores_nothing() {
    let server = TestServer::start().await;
    let chat = server.new_chat(json!({})).await;
    let before = server.row_counts().await;
    let big_png = png_bytes(6 * MIB + 1);
    let gif = b"GIF89a\x01\x00\x01\x00".to_vec();
    let nine: Vec<Value> = (0..9).map(|_| text("x".into())).collect();
    let cases: Vec<(Value, &str)> = vec![
        (
            json!({ "role": "user", "content": "", "attachments": nine }),
            "attachments: at most 8 attachments per message",
        ),
        (
            json!({ "role": "user", "content": "", "attachments": [image("image/png", &big_png)] }),
            "attachments[0].dataUrl: an image is at most 6 MiB",
        ),
        (
            json!({ "role": "user", "content": "", "attachments": [image("image/png", &gif)] }),
            "attachments[0].dataUrl: image data must be PNG or JPEG",
        ),
        (
            json!({ "role": "user", "content": "", "attachments": [image("image/gif", &gif)] }),
            "attachments[0].dataUrl: image data must be PNG or JPEG",
        ),
        (
            json!({ "role": "user", "content": "", "attachments": [{ "kind": "image", "mimeType": "image/png", "dataUrl": data_url("image/jpeg", &jpeg_bytes(20)) }] }),
            "attachments[0].mimeType: claims image/png but the data is image/jpeg",
        ),
        (
            json!({ "role": "user", "content": "", "attachments": [{ "kind": "image", "dataUrl": "data:image/png;base64,!!!" }] }),
            "attachments[0].dataUrl: data is not valid base64",
        ),
        (
            json!({ "role": "user", "content": "", "attachments": [{ "kind": "image", "dataUrl": "https://example.com/a.png" }] }),
            "attachments[0].dataUrl: must be a base64 data URL",
        ),
        (
            json!({ "role": "user", "content": "", "attachments": [text("y".repeat(200_001))] }),
            "attachments[0].text: at most 200000 characters",
        ),
        (
            json!({ "role": "user", "content": "", "attachments": [{ "kind": "text", "text": "x", "sizeBytes": 8 * MIB + 1 }] }),
            "attachments[0].sizeBytes",
        ),
        (
            json!({ "role": "user", "content": "", "attachments": [{ "kind": "pdf" }] }),
            "attachments[0].kind: unknown variant `pdf`, expected `image` or `text`",
        ),
        (
            json!({ "role": "tool", "content": "", "attachments": [text("x".into())] }),
            "attachments: tool messages must not carry attachments",
        ),
        (
            json!({ "role": "tool", "content": "", "metadata": { "attachments": [text("x".into())] } }),
            "attachments: tool messages must not carry attachments",
        ),
    ];
    for (body, expected) in cases {
        let (status, err) = server
            .post(&format!("/v1/chats/{chat}/messages"), body.clone())
            .await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{expected}");
        let message = err["message"].as_str().unwrap();
        assert!(message.starts_with(expected), "{expected} → {message}");
    }
    // Exactly at the limits is fine: 8 attachments, a 6 MiB image, 200,000 characters.
    let eight: Vec<Value> = (0..8).map(|_| text("x".into())).collect();
    let ok = server
        .post(
            &format!("/v1/chats/{chat}/messages"),
            json!({ "role": "user", "content": "", "attachments": eight }),
        )
        .await;
    assert_eq!(ok.0, StatusCode::OK, "{}", ok.1);
    let ok = server
        .post(
            &format!("/v1/chats/{chat}/messages"),
            json!({ "role": "user", "content": "", "attachments": [image("image/png", &png_bytes(6 * MIB)), text("z".repeat(200_000))] }),
        )
        .await;
    assert_eq!(ok.0, StatusCode::OK, "{}", ok.1);
    let after = server.row_counts().await;
    let messages =
        |counts: &[(String, i64)]| counts.iter().find(|(t, _)| t == "messages").unwrap().1;
    assert_eq!(
        messages(&after),
        messages(&before) + 2,
        "only the two valid messages were stored"
    );
}

#[tokio::test]
async fn metadata_attachments_share_the_count_and_keep_their_own_paths() {
    let server = TestServer::start().await;
    let chat = server.new_chat(json!({})).await;
    let before = server.row_counts().await;
    let path = format!("/v1/chats/{chat}/messages");
    let four: Vec<Value> = (0..4).map(|_| text("x".into())).collect();
    let five: Vec<Value> = (0..5).map(|_| text("y".into())).collect();
    let cases = [
        (
            json!({ "role": "user", "content": "", "metadata": { "attachments": four }, "attachments": five }),
            "attachments: at most 8 attachments per message (got 9)",
        ),
        (
            json!({ "role": "user", "content": "", "metadata": { "attachments": [text("a".into()), image("image/png", b"nope")] }, "attachments": [text("b".into())] }),
            "metadata.attachments[1].dataUrl: image data must be PNG or JPEG",
        ),
        (
            json!({ "role": "user", "content": "", "metadata": { "attachments": [text("a".into())] }, "attachments": [text("b".into()), image("image/png", b"nope")] }),
            "attachments[1].dataUrl: image data must be PNG or JPEG",
        ),
        (
            json!({ "role": "user", "content": "", "metadata": { "attachments": [text("a".into()), { "kind": "image" }] } }),
            "metadata.attachments[1]: missing field `dataUrl`",
        ),
        (
            json!({ "role": "user", "content": "", "metadata": { "attachments": "none" } }),
            "metadata.attachments: invalid type: string",
        ),
    ];
    for (body, expected) in cases {
        let (status, err) = server.post(&path, body).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{expected}");
        let message = err["message"].as_str().unwrap();
        assert!(message.starts_with(expected), "{expected} → {message}");
    }
    assert_eq!(server.row_counts().await, before);
}

#[tokio::test]
async fn a_bad_attachment_in_a_new_transcript_creates_no_chat() {
    let server = TestServer::start().await;
    let (status, err) = server
        .post(
            "/v1/chats",
            json!({ "title": "t", "messages": [
                { "role": "user", "content": "fine" },
                { "role": "user", "content": "bad", "attachments": [image("image/png", b"not an image")] },
            ]}),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        err["message"]
            .as_str()
            .unwrap()
            .starts_with("messages[1].attachments[0].dataUrl"),
        "{err}"
    );
    assert!(server.row_counts().await.iter().all(|(_, n)| *n == 0));
}

#[tokio::test]
async fn bodies_over_32_mib_are_413() {
    let server = TestServer::start().await;
    let chat = server.new_chat(json!({})).await;
    let before = server.row_counts().await;
    // A syntactically valid message whose content alone passes the cap.
    let mut body = String::from(r#"{"role":"user","content":""#);
    body.push_str(&"a".repeat(32 * MIB));
    body.push_str(r#""}"#);
    let (status, err) = server
        .post_raw(&format!("/v1/chats/{chat}/messages"), body)
        .await;
    assert_eq!(status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        err["message"],
        "request body is larger than the 32 MiB limit"
    );
    assert_eq!(server.row_counts().await, before);
    // Just under the cap is read and judged on its content.
    let mut body = String::from(r#"{"role":"user","content":""#);
    body.push_str(&"a".repeat(32 * MIB - 100));
    body.push_str(r#""}"#);
    let (status, _) = server
        .post_raw(&format!("/v1/chats/{chat}/messages"), body)
        .await;
    assert_eq!(status, StatusCode::OK);
}
