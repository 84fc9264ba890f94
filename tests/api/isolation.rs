//! Nothing leaks between people. Two members each make one of everything; then every route with
//! a path parameter, walked from /openapi.json (so a route added later is walked too), is called
//! by the other with the first's ids and must answer exactly as for ids that exist nowhere; every
//! list and search the other reads must hold none of the first's ids or words; and the first's
//! things must be as she left them.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::people::{add_person, call, second_instance, token_server};
use crate::support::TestServer;

/// What one person made, and the words only they wrote.
struct Made {
    key: String,
    user_id: String,
    chat: String,
    search: String,
    key_id: String,
    /// A file of their library.
    file: String,
    words: Vec<String>,
}

async fn make_everything(server: &TestServer, name: &str) -> Made {
    let (user_id, key) = add_person(server, name, "member").await;
    let word = format!("{name}secretword");
    let title = format!("{name} private title");
    let query = format!("{name} private query");
    let as_me = |method: Method, path: &str, body: Option<Value>| {
        let (key, path) = (key.clone(), path.to_string());
        async move { call(server, &key, method, &path, body).await }
    };
    let (status, chat) = as_me(
        Method::POST,
        "/v1/chats",
        Some(json!({"title": title, "messages": [{"role": "user", "content": word}]})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{chat}");
    let chat = chat["chat"]["id"].as_str().unwrap().to_string();
    let (status, _) = as_me(
        Method::POST,
        &format!("/v1/chats/{chat}/messages"),
        Some(json!({"role": "assistant", "content": format!("{word} answered")})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = as_me(
        Method::PATCH,
        &format!("/v1/chats/{chat}/star"),
        Some(json!({"starred": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, search) = as_me(
        Method::POST,
        "/v1/searches",
        Some(json!({"query": query, "title": title})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{search}");
    let search = search["search"]["id"].as_str().unwrap().to_string();
    let (status, _) = as_me(
        Method::PATCH,
        &format!("/v1/searches/{search}/star"),
        Some(json!({"starred": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let (status, made_key) = as_me(
        Method::POST,
        "/v1/keys",
        Some(json!({"name": format!("{name} key")})),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    let library_word = format!("{name}libraryword");
    let (status, file) = crate::library::upload(
        server,
        &key,
        &format!("{name}-private.txt"),
        None,
        format!("{library_word} in a private file").into_bytes(),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::CREATED, "{file}");
    let file = file["id"].as_str().unwrap().to_string();
    crate::library::settled(server, &key, &file).await;
    Made {
        file,
        key,
        key_id: made_key["id"].as_str().unwrap().to_string(),
        user_id,
        chat,
        search,
        words: vec![word, title, query, library_word],
    }
}

impl Made {
    /// Everything of this person's that another must never see.
    fn secrets(&self) -> Vec<&str> {
        let mut all = vec![
            self.chat.as_str(),
            self.search.as_str(),
            self.key_id.as_str(),
            self.user_id.as_str(),
            self.file.as_str(),
        ];
        all.extend(self.words.iter().map(String::as_str));
        all
    }
}

/// The routes of the OpenAPI document, as (method, path template).
async fn documented(server: &TestServer) -> Vec<(Method, String)> {
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
            if let Ok(method) = method.to_uppercase().parse::<Method>() {
                routes.push((method, path.clone()));
            }
        }
    }
    routes
}

/// `template` with each parameter filled from `ids` (by name), or a plain word.
fn filled(template: &str, ids: &[(&str, &str)]) -> String {
    template
        .split('/')
        .map(
            |seg| match seg.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => ids
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map_or("some-name", |(_, v)| *v)
                    .to_string(),
                None => seg.to_string(),
            },
        )
        .collect::<Vec<_>>()
        .join("/")
}

/// A body that gets past validation to the lookup, for the routes that take one.
fn body_for(method: &Method, template: &str) -> Option<Value> {
    if *method == Method::GET || *method == Method::DELETE {
        return None;
    }
    Some(match template {
        t if t.ends_with("/messages") => json!({"role": "user", "content": "stolen"}),
        t if t.ends_with("/star") => json!({"starred": false}),
        "/v1/chats/{chatId}" => json!({"title": "stolen"}),
        "/v1/users/{userId}" => json!({"disabled": true}),
        t if t.contains("/run") => json!({"query": "stolen"}),
        _ => json!({}),
    })
}

/// Status and text, for comparing two answers whole (event streams included).
async fn answer(
    server: &TestServer,
    key: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (StatusCode, String) {
    let mut req = server
        .client
        .request(method, format!("{}{path}", server.base))
        .bearer_auth(key);
    if let Some(body) = body {
        req = req.json(&body);
    }
    let res = req.send().await.unwrap();
    (res.status(), res.text().await.unwrap())
}

#[tokio::test]
async fn another_persons_ids_are_unknown_and_their_things_unseen() {
    // On PostgreSQL Bob uses a second instance on Ann's database.
    let first = token_server().await;
    let second = second_instance(&first).await;
    let server = second.as_ref().unwrap_or(&first);
    let ann = make_everything(&first, "ann").await;
    let bob = make_everything(server, "bob").await;
    let nowhere = "01a2a2a2-0000-7000-8000-00000000dead";

    // Every route with a path parameter: Bob with Ann's ids answers as with ids that exist
    // nowhere, and never with a 5xx (a parameter without an owner rule is one).
    let routes = documented(server).await;
    let mut walked = 0;
    for (method, template) in &routes {
        if !template.contains('{') {
            continue;
        }
        let anns = filled(
            template,
            &[
                ("chatId", &ann.chat),
                ("searchId", &ann.search),
                ("keyId", &ann.key_id),
                ("userId", &ann.user_id),
                ("fileId", &ann.file),
            ],
        );
        let unknown = filled(
            template,
            &[
                ("chatId", nowhere),
                ("searchId", nowhere),
                ("keyId", nowhere),
                ("userId", nowhere),
                ("fileId", nowhere),
            ],
        );
        let body = body_for(method, template);
        let got = answer(server, &bob.key, method.clone(), &anns, body.clone()).await;
        let expected = answer(server, &bob.key, method.clone(), &unknown, body).await;
        assert!(
            !got.0.is_server_error(),
            "{method} {template}: {} {}",
            got.0,
            got.1
        );
        assert_eq!(
            got, expected,
            "{method} {template}: another's id answers otherwise than an unknown one"
        );
        walked += 1;
    }
    assert!(walked >= 15, "only {walked} routes with parameters");
    // The routes outside the document that take a parameter: none is a 5xx for a person.
    for path in [
        "/assets/js/nope.js",
        "/openai/v1/models/provider_a/m",
        "/openai/v1/files/cfile_00000000000000000000000000000000",
        "/openai/v1/files/cfile_00000000000000000000000000000000/content",
    ] {
        let (status, text) = answer(server, &bob.key, Method::GET, path, None).await;
        assert!(!status.is_server_error(), "{path}: {status} {text}");
    }

    // Ids in request bodies.
    for (path, body) in [
        (
            "/v1/chat-completions",
            json!({"provider": "provider_a", "model": "m", "chatId": "ID",
                   "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "/v1/chat-completions/stream",
            json!({"provider": "provider_a", "model": "m", "chatId": "ID",
                   "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "/v1/chats/title/suggest",
            json!({"chatId": "ID", "content": "hi"}),
        ),
    ] {
        let with = |id: &str| {
            serde_json::from_str::<Value>(&body.to_string().replace("\"ID\"", &format!("\"{id}\"")))
                .unwrap()
        };
        let got = answer(server, &bob.key, Method::POST, path, Some(with(&ann.chat))).await;
        let expected = answer(server, &bob.key, Method::POST, path, Some(with(nowhere))).await;
        assert_eq!(got, expected, "{path}");
        assert_eq!(got.0, StatusCode::NOT_FOUND, "{path}: {}", got.1);
    }

    // Every list and search Bob reads: none of Ann's ids or words.
    let mut reads: Vec<String> = routes
        .iter()
        .filter(|(m, t)| *m == Method::GET && !t.contains('{') && t.starts_with("/v1/"))
        .map(|(_, t)| t.clone())
        .collect();
    for word in &ann.words {
        let q: String = word.split(' ').next().unwrap().to_string();
        reads.push(format!("/v1/message-search?q={q}"));
        reads.push(format!("/v1/chats?title={q}"));
        reads.push(format!("/v1/searches?title={q}"));
    }
    reads.push("/v1/chats?limit=100".into());
    reads.push("/v1/searches?limit=100".into());
    for path in &reads {
        let (status, text) = answer(server, &bob.key, Method::GET, path, None).await;
        assert!(!status.is_server_error(), "{path}: {status} {text}");
        for secret in ann.secrets() {
            assert!(
                !text.contains(secret),
                "{path} shows Ann's {secret:?}: {text}"
            );
        }
    }
    // Bob's own things are there (the lists are not simply empty).
    let (_, text) = answer(server, &bob.key, Method::GET, "/v1/workspace-items", None).await;
    assert!(
        text.contains(&bob.chat) && text.contains(&bob.search),
        "{text}"
    );
    let (_, text) = answer(
        server,
        &bob.key,
        Method::GET,
        &format!("/v1/message-search?q={}", bob.words[0]),
        None,
    )
    .await;
    assert!(text.contains(&bob.chat), "{text}");

    // Reuse by query finds only Bob's own searches (last: Bob's lists hold it then).
    let (status, reused) = call(
        server,
        &bob.key,
        Method::POST,
        "/v1/searches",
        Some(json!({"query": ann.words[2], "reuseByQuery": true})),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{reused}");
    assert_ne!(reused["search"]["id"], ann.search.as_str());

    // Ann's things are as she left them.
    let (status, chat) = call(
        server,
        &ann.key,
        Method::GET,
        &format!("/v1/chats/{}", ann.chat),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(chat["chat"]["title"], ann.words[1].as_str());
    assert_eq!(chat["chat"]["starred"], true);
    assert_eq!(
        chat["chat"]["messages"].as_array().unwrap().len(),
        2,
        "{chat}"
    );
    let (status, search) = call(
        server,
        &ann.key,
        Method::GET,
        &format!("/v1/searches/{}", ann.search),
        None,
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(search["search"]["starred"], true, "{search}");
    let (status, keys) = call(server, &ann.key, Method::GET, "/v1/keys", None).await;
    assert_eq!(status, StatusCode::OK);
    assert!(keys.to_string().contains(&ann.key_id));
    let (status, _) = call(server, &ann.key, Method::GET, "/v1/chats", None).await;
    assert_eq!(status, StatusCode::OK, "Ann's key still works");
    // Ann's file is hers still, and only she finds its words.
    let path = format!("/v1/files/{}", ann.file);
    let (status, file) = call(server, &ann.key, Method::GET, &path, None).await;
    assert_eq!((status, &file["status"]), (StatusCode::OK, &json!("ready")));
    let query = json!({"query": ann.words[3], "fileIds": [ann.file]});
    let bobs = crate::library::file_search(server, &bob.key, query.clone()).await;
    assert_eq!(bobs, Ok(Vec::new()));
    let anns = crate::library::file_search(server, &ann.key, query)
        .await
        .unwrap();
    assert_eq!(anns.len(), 1, "{anns:?}");
    if let Some(second) = second {
        second.stop().await;
    }
    first.stop().await;
}
