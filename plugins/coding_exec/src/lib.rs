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

/// The coding CLI's invocation, run by the devbox user's login shell ([`devbox::login_shell`]),
/// so a CLI the user's profile puts on PATH (npm-global, nvm, pipx) is found, with the wrapped
/// prompt as `$1`. `--dangerously-bypass-approvals-and-sandbox`: nobody can approve anything, and
/// the devbox is the sandbox; `--skip-git-repo-check`: the working directory need not be a
/// repository; `--`: a prompt starting with `-` is still the prompt.
const INVOCATION: &str =
    "exec codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -- \"$1\"";

/// The remote command line (the host runs it under `sh -c`, in the working directory).
fn command_line(prompt: &str) -> String {
    devbox::login_shell(INVOCATION, &[&wrapped_prompt(prompt)])
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
                "if command -v bash >/dev/null 2>&1; then s=bash; else s=sh; fi; exec \"$s\" -lc \
                 'exec codex exec --dangerously-bypass-approvals-and-sandbox --skip-git-repo-check -- \"$1\"' \
                 \"$s\" '{PREAMBLE}\n\nTask:\nDon'\\''t touch main'\\''s `$PATH`'"
            )
        );
    }

    #[test]
    fn a_login_shell_finds_codex_on_the_profile_path_and_passes_the_prompt_as_one_argument() {
        if !std::path::Path::new("/bin/sh").exists() {
            return;
        }
        // A home whose profile puts `~/bin` on PATH, where the only `codex` is: one that prints
        // its arguments NUL-separated.
        let home = std::env::temp_dir().join(format!("coding-exec-test-{}", std::process::id()));
        let bin = home.join("bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::write(home.join(".profile"), "PATH=\"$HOME/bin:$PATH\"\n").unwrap();
        let codex = bin.join("codex");
        std::fs::write(&codex, "#!/bin/sh\nprintf '%s\\0' \"$@\"\n").unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&codex, std::fs::Permissions::from_mode(0o755)).unwrap();
        let prompt = "it's `id` $HOME $1\n-x \"q\"";
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(command_line(prompt))
            .env_clear()
            .env("HOME", &home)
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        let _ = std::fs::remove_dir_all(&home);
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
            ],
            "stderr: {}",
            String::from_utf8_lossy(&out.stderr)
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
