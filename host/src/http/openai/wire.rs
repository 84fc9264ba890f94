//! Which of OpenAI's two request wires a field was read from. The fields both APIs have are
//! read by one reader each (`client_tools.rs`, `options.rs`, `tuning.rs`, `chat_request.rs`),
//! which asks the [`Wire`] where its field is and what a refusal of it names, so every refusal
//! names the field as its client sent it (`text.format.name` on the Responses API,
//! `response_format.json_schema.name` on chat completions) without being renamed afterwards.

use serde_json::{Map, Value};

/// The API a request came through.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wire {
    /// `POST /openai/v1/chat/completions`.
    #[default]
    ChatCompletions,
    /// `POST /openai/v1/responses`: function tools, a named tool choice and a JSON-schema
    /// format are flat (their fields beside `type`); the format and verbosity sit under `text`,
    /// the reasoning effort under `reasoning`.
    Responses,
}

impl Wire {
    /// Where a function tool's own fields are in `tools[i]` (`at`): its `function`, or itself.
    pub fn function_at(self, at: &str) -> String {
        match self {
            Self::ChatCompletions => format!("{at}.function"),
            Self::Responses => at.to_string(),
        }
    }

    /// Where a named tool choice (`choice`, the fields of `tool_choice`) has its tool's name,
    /// and the name there, if any.
    pub fn choice_name(self, choice: &Map<String, Value>) -> (&'static str, Option<&Value>) {
        match self {
            Self::ChatCompletions => (
                "tool_choice.function.name",
                choice.get("function").and_then(|f| f.get("name")),
            ),
            Self::Responses => ("tool_choice.name", choice.get("name")),
        }
    }

    /// A named tool choice, as a refusal spells it.
    pub fn choice_shape(self) -> &'static str {
        match self {
            Self::ChatCompletions => r#"{"type": "function", "function": {"name": ...}}"#,
            Self::Responses => r#"{"type": "function", "name": ...}"#,
        }
    }

    /// The output format's field.
    pub fn response_format(self) -> &'static str {
        match self {
            Self::ChatCompletions => "response_format",
            Self::Responses => "text.format",
        }
    }

    /// Where a `json_schema` format's own fields (`name`, `schema`, ...) are: under its
    /// `json_schema`, or beside its `type`.
    pub fn json_schema_at(self) -> &'static str {
        match self {
            Self::ChatCompletions => "response_format.json_schema",
            Self::Responses => "text.format",
        }
    }

    /// How much the model should reason.
    pub fn reasoning_effort(self) -> &'static str {
        match self {
            Self::ChatCompletions => "reasoning_effort",
            Self::Responses => "reasoning.effort",
        }
    }

    /// How long an answer should be.
    pub fn verbosity(self) -> &'static str {
        match self {
            Self::ChatCompletions => "verbosity",
            Self::Responses => "text.verbosity",
        }
    }

    /// The limit on the answer's tokens (chat completions' newer name; `max_tokens` is its
    /// older one).
    pub fn max_completion_tokens(self) -> &'static str {
        match self {
            Self::ChatCompletions => "max_completion_tokens",
            Self::Responses => "max_output_tokens",
        }
    }

    /// The field holding the conversation.
    pub fn messages(self) -> &'static str {
        match self {
            Self::ChatCompletions => "messages",
            Self::Responses => "input",
        }
    }
}
