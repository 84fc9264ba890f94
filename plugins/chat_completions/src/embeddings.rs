//! OpenAI's embeddings wire (`POST {base}/embeddings`), which OpenAI-compatible servers (Ollama,
//! llama.cpp's server, LM Studio, vLLM) serve as well: `{model, input: [...], encoding_format:
//! "float"}` in, `{data: [{index, embedding: [...]}], usage: {prompt_tokens}}` out. [`body`] and
//! [`parse`] are pure and tested here; [`embed`] sends through the `http` import.

use chatd_plugin_sdk::codec::Embedded;
use chatd_plugin_sdk::host::{PluginError, Request};
use serde::Deserialize;

/// The largest answer read: 256 inputs of 3,072 dimensions as JSON numbers fit with room.
const MAX_ANSWER_BYTES: u64 = 48 << 20;

/// The vectors of `inputs` by `model`, from `{base_url}/embeddings`.
pub fn embed(base_url: &str, model: &str, inputs: &[String]) -> Result<Embedded, PluginError> {
    let fetched = Request::post(format!("{base_url}/embeddings"))
        .header("accept", "application/json")
        .json(&body(model, inputs))
        .fetch(MAX_ANSWER_BYTES)
        .map_err(chatd_plugin_sdk::transport_error)?;
    if !(200..300).contains(&fetched.status) {
        return Err(chatd_plugin_sdk::host::upstream_error(
            fetched.status,
            &fetched.body,
        ));
    }
    parse(&fetched.body, inputs.len())
}

/// The request's body.
pub fn body(model: &str, inputs: &[String]) -> serde_json::Value {
    serde_json::json!({"model": model, "input": inputs, "encoding_format": "float"})
}

#[derive(Deserialize)]
struct Answer {
    data: Vec<Item>,
    #[serde(default)]
    usage: Option<Usage>,
}

#[derive(Deserialize)]
struct Item {
    index: Option<usize>,
    embedding: Vec<f32>,
}

#[derive(Deserialize)]
struct Usage {
    prompt_tokens: Option<u32>,
}

/// The vectors of an answer to `expected` inputs, in the inputs' order (by each item's
/// `index`, else as listed): one per input, all of one length, none empty or holding a value
/// that is not a finite number.
pub fn parse(body: &[u8], expected: usize) -> Result<Embedded, PluginError> {
    let malformed = |why: String| PluginError::MalformedResponse(format!("embeddings: {why}"));
    let answer: Answer = serde_json::from_slice(body).map_err(|e| malformed(e.to_string()))?;
    if answer.data.len() != expected {
        return Err(malformed(format!(
            "{} vectors for {expected} inputs",
            answer.data.len()
        )));
    }
    let mut vectors: Vec<Option<Vec<f32>>> = vec![None; expected];
    for (position, item) in answer.data.into_iter().enumerate() {
        let at = item.index.unwrap_or(position);
        let slot = vectors
            .get_mut(at)
            .ok_or_else(|| malformed(format!("index {at} past the {expected} inputs")))?;
        if slot.replace(item.embedding).is_some() {
            return Err(malformed(format!("index {at} given twice")));
        }
    }
    let vectors: Vec<Vec<f32>> = vectors.into_iter().flatten().collect();
    let width = vectors.first().map_or(0, Vec::len);
    if vectors.iter().any(|v| v.is_empty() || v.len() != width) {
        return Err(malformed("vectors empty or of different lengths".into()));
    }
    if vectors.iter().flatten().any(|x| !x.is_finite()) {
        return Err(malformed("a value that is not a finite number".into()));
    }
    Ok(Embedded {
        vectors,
        input_tokens: answer.usage.and_then(|u| u.prompt_tokens),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenAI's documented answer (its API reference's example, two inputs).
    const ANSWER: &str = r#"{"object":"list","data":[
        {"object":"embedding","index":1,"embedding":[0.5,-0.25,0.0]},
        {"object":"embedding","index":0,"embedding":[0.0023064255,-0.009327292,0.015797347]}],
        "model":"text-embedding-3-small","usage":{"prompt_tokens":8,"total_tokens":8}}"#;

    #[test]
    fn vectors_come_back_in_the_inputs_order_with_the_tokens_counted() {
        let embedded = parse(ANSWER.as_bytes(), 2).unwrap();
        assert_eq!(embedded.vectors[1], vec![0.5, -0.25, 0.0]);
        assert_eq!(embedded.vectors[0][0], 0.0023064255);
        assert_eq!(embedded.input_tokens, Some(8));
        let body = body("m", &["a".into(), "b".into()]);
        assert_eq!(body["input"][1], "b");
        assert_eq!(body["encoding_format"], "float");
    }

    #[test]
    fn answers_that_do_not_fit_the_inputs_are_malformed() {
        let cases = [
            (ANSWER.to_string(), 3, "2 vectors for 3 inputs"),
            (
                ANSWER.replace(r#""index":1"#, r#""index":0"#),
                2,
                "given twice",
            ),
            (
                ANSWER.replace(r#""index":1"#, r#""index":7"#),
                2,
                "past the 2",
            ),
            (
                ANSWER.replace("[0.5,-0.25,0.0]", "[0.5]"),
                2,
                "different lengths",
            ),
            (ANSWER.replace("[0.5,-0.25,0.0]", "[]"), 2, "empty"),
            ("{\"data\": 3}".to_string(), 1, "embeddings:"),
        ];
        for (body, expected, says) in cases {
            match parse(body.as_bytes(), expected) {
                Err(PluginError::MalformedResponse(why)) => assert!(why.contains(says), "{why}"),
                other => panic!("{body}: {other:?}"),
            }
        }
    }
}
