//! chatd's bundled `coding_exec` tool: a coding task for the coding CLI (Codex CLI, `codex exec`)
//! on the operator's devbox, over the host's SSH. The host starts it in the remote working
//! directory with stdin closed, applies CHAT_CODING_EXEC_TIMEOUT_MS and caps the output; this
//! crate validates the prompt, wraps it for a run nobody watches ([`wrapped_prompt`]) and builds
//! the command line ([`command_line`]). Running it and rendering the result is the shared
//! `devbox` library's.

use chatd_plugin_sdk::host::{PluginError, ToolSpec};
use chatd_plugin_sdk::tool::{Tool, ToolOutput};

/// The tool's name.
const NAME: &str = "coding_exec";
/// The longest prompt passed on, in characters. The prompt travels inside the SSH command line,
/// which the devbox's shell receives as one argument (Linux caps one at 128 KiB, quoting included).
const MAX_PROMPT_CHARS: usize = 20_000;
/// The UI summary's label.
const LABEL: &str = "codex";

/// Put before the task: the agent would otherwise stop to ask questions or wait for approvals
/// that never come (stdin is closed and nobody watches the run), and its last message is what
/// the chat model reads back, so it should say what was done and how it was checked.
const PREAMBLE: &str = "You are running non-interactively: no one can answer questions or \
approve anything during this run, so do not ask or wait for confirmation. Where something is \
unclear, make a reasonable assumption and say which. Do the task in the current directory. When \
you are done, finish with a short summary of what you did and how you checked it.";

struct CodingExec;

impl Tool for CodingExec {
    fn describe() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: NAME.into(),
            description: "Ask the coding agent (Codex CLI) on the operator's devbox to do a \
                          coding task in the working directory: read and change code, run \
                          commands and tests. It works on its own without asking questions, so \
                          give it the whole task and any constraints in the prompt. Returns the \
                          agent's output (capped) ending with its summary of what it did; the \
                          run is ended when the operator's time limit passes."
                .into(),
            parameters_schema_json: serde_json::json!({
                "type": "object",
                "properties": {
                    "prompt": {
                        "type": "string",
                        "description": "The task for the coding agent, complete and self-contained: what to change or find out, where, and how to check it.",
                        "maxLength": MAX_PROMPT_CHARS
                    }
                },
                "required": ["prompt"],
                "additionalProperties": false
            })
            .to_string(),
        }]
    }

    fn invoke(name: String, arguments_json: String) -> Result<ToolOutput, PluginError> {
        if name != NAME {
            return Err(chatd_plugin_sdk::unsupported(&format!("the tool {name:?}")));
        }
        let prompt = devbox::text_arg(&arguments_json, "prompt", MAX_PROMPT_CHARS)?;
        devbox::execute(command_line(&prompt), LABEL)
    }
}

/// The prompt as the agent gets it: the fixed [`PREAMBLE`], a blank line, then `Task:` and the
/// model's prompt (trimmed: surrounding blank lines mean nothing to the agent).
fn wrapped_prompt(prompt: &str) -> String {
    format!("{PREAMBLE}\n\nTask:\n{}", prompt.trim())
}

/// The remote command line. `--dangerously-bypass-approvals-and-sandbox`: nobody can approve
/// anything, and the devbox is the sandbox; `--skip-git-repo-check`: the working directory need
/// not be a repository; `--`: a prompt starting with `-` is still the prompt.
fn command_line(prompt: &str) -> String {
    format!(
        "codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -- {}",
        devbox::quote::word(&wrapped_prompt(prompt))
    )
}

chatd_plugin_sdk::export_tool!(CodingExec);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_is_wrapped_after_a_blank_line() {
        let wrapped = wrapped_prompt("\n  Fix the build.\n");
        assert_eq!(wrapped, format!("{PREAMBLE}\n\nTask:\nFix the build."));
        assert!(PREAMBLE.starts_with("You are running non-interactively"));
        assert!(!PREAMBLE.contains('\n'));
    }

    #[test]
    fn the_exact_command_line() {
        assert_eq!(
            command_line("Don't touch main's `$PATH`"),
            format!(
                "codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -- '{PREAMBLE}\n\nTask:\nDon'\\''t touch main'\\''s `$PATH`'"
            )
        );
    }

    #[test]
    fn a_real_shell_passes_the_wrapped_prompt_as_one_argument() {
        if !std::path::Path::new("/bin/sh").exists() {
            return;
        }
        let prompt = "it's `id` $HOME\n-x \"q\"";
        // `codex` replaced by a function printing its arguments one per line (NUL-separated).
        let line = command_line(prompt);
        let script = format!("codex() {{ printf '%s\\0' \"$@\"; }}; {line}");
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(script)
            .output()
            .unwrap();
        let args: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(String::from)
            .collect();
        assert_eq!(
            args,
            [
                "exec",
                "--dangerously-bypass-approvals-and-sandbox",
                "--skip-git-repo-check",
                "--",
                &wrapped_prompt(prompt),
            ]
        );
    }

    #[test]
    fn arguments_are_validated() {
        let invalid = |args: &str| match CodingExec::invoke(NAME.into(), args.into()) {
            Err(PluginError::InvalidInput(why)) => why,
            other => panic!("expected InvalidInput for {args}, got {other:?}"),
        };
        assert_eq!(invalid(r#"{"command":"ls"}"#), "prompt: is required");
        assert_eq!(invalid(r#"{"prompt":""}"#), "prompt: must not be blank");
        assert_eq!(invalid(r#"{"prompt":null}"#), "prompt: must be a string");
        let long = serde_json::json!({ "prompt": "x".repeat(MAX_PROMPT_CHARS + 1) });
        assert_eq!(
            invalid(&long.to_string()),
            "prompt: must be at most 20000 characters"
        );
        assert!(matches!(
            CodingExec::invoke("shell_exec".into(), "{}".into()),
            Err(PluginError::Unsupported(_))
        ));
    }

    #[test]
    fn the_schema_is_valid_json_requiring_the_prompt() {
        let spec = &CodingExec::describe()[0];
        assert_eq!(spec.name, "coding_exec");
        let schema: serde_json::Value = serde_json::from_str(&spec.parameters_schema_json).unwrap();
        assert_eq!(schema["required"], serde_json::json!(["prompt"]));
        assert_eq!(schema["additionalProperties"], false);
    }
}
