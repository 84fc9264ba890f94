//! chatd's bundled `shell_exec` tool: one non-interactive shell command on the operator's devbox,
//! over the host's SSH. The host starts it in the remote working directory with stdin closed,
//! applies CHAT_SHELL_EXEC_TIMEOUT_MS and caps the output; this crate validates the argument and
//! builds the command line ([`command_line`]). Running it and rendering the result is the shared
//! `devbox` library's.

use chatd_plugin_sdk::host::{PluginError, ToolSpec};
use chatd_plugin_sdk::tool::{Tool, ToolOutput};

/// The tool's name.
const NAME: &str = "shell_exec";
/// The longest command passed on, in characters.
const MAX_COMMAND_CHARS: usize = 20_000;
/// The longest part of the command shown in the UI's summary, in characters.
const MAX_LABEL_CHARS: usize = 60;

struct ShellExec;

impl Tool for ShellExec {
    fn describe() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: NAME.into(),
            description: "Run a non-interactive shell command on the operator's devbox (a \
                          remote machine reached over SSH, not this service's own machine), \
                          starting in the working directory. Runs under `bash -lc` (or `sh -lc` \
                          where bash is missing) with stdin closed, so nothing can prompt for \
                          input. Returns the exit status, duration, stdout and stderr; output is \
                          capped and the command is ended when the operator's time limit passes."
                .into(),
            parameters_schema_json: serde_json::json!({
                "type": "object",
                "properties": {
                    "command": {
                        "type": "string",
                        "description": "The shell command to run, e.g. `ls -la` or `cargo test 2>&1 | tail -50`. May span several lines.",
                        "maxLength": MAX_COMMAND_CHARS
                    }
                },
                "required": ["command"],
                "additionalProperties": false
            })
            .to_string(),
        }]
    }

    fn invoke(name: String, arguments_json: String) -> Result<ToolOutput, PluginError> {
        if name != NAME {
            return Err(chatd_plugin_sdk::unsupported(&format!("the tool {name:?}")));
        }
        let command = devbox::text_arg(&arguments_json, "command", MAX_COMMAND_CHARS)?;
        devbox::execute(command_line(&command), &label(&command))
    }
}

/// The remote command line (the host runs it under `sh -c`, in the working directory): the
/// command as the user's login shell's script.
fn command_line(command: &str) -> String {
    devbox::login_shell(command, &[])
}

/// The command's first non-blank line, cut to [`MAX_LABEL_CHARS`], in backticks; `…` when
/// anything was left off.
fn label(command: &str) -> String {
    let command = command.trim();
    let first = command.lines().next().unwrap_or("").trim_end();
    let mut shown: String = first.chars().take(MAX_LABEL_CHARS).collect();
    if shown.len() < command.len() {
        shown.push('…');
    }
    format!("`{shown}`")
}

chatd_plugin_sdk::export_tool!(ShellExec);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_quotes_the_command_once_per_shell() {
        assert_eq!(
            command_line(r#"echo "it's $HOME""#),
            r#"if command -v bash >/dev/null 2>&1; then s=bash; else s=sh; fi; exec "$s" -lc 'echo "it'\''s $HOME"'"#
        );
    }

    #[test]
    fn a_real_shell_runs_the_command_line_as_written() {
        // The line, run by a local sh, hands the command to bash or sh intact: `$HOME` is expanded
        // by the inner shell only, and the quotes survive.
        if !std::path::Path::new("/bin/sh").exists() {
            return;
        }
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(command_line(r#"printf '%s|' "it's" "$X" `echo a b`"#))
            .env("X", "x y")
            .output()
            .unwrap();
        assert_eq!(String::from_utf8(out.stdout).unwrap(), "it's|x y|a|b|");
    }

    #[test]
    fn labels() {
        assert_eq!(label("ls -la"), "`ls -la`");
        assert_eq!(label("\n  cd src\nmake\n"), "`cd src…`");
        assert_eq!(label(&"é".repeat(61)), format!("`{}…`", "é".repeat(60)));
        assert_eq!(label(&"é".repeat(60)), format!("`{}`", "é".repeat(60)));
    }

    #[test]
    fn arguments_are_validated() {
        let invalid = |args: &str| match ShellExec::invoke(NAME.into(), args.into()) {
            Err(PluginError::InvalidInput(why)) => why,
            other => panic!("expected InvalidInput for {args}, got {other:?}"),
        };
        assert_eq!(invalid("{}"), "command: is required");
        assert_eq!(
            invalid(r#"{"command":"  \n"}"#),
            "command: must not be blank"
        );
        assert_eq!(
            invalid(r#"{"command":["ls"]}"#),
            "command: must be a string"
        );
        let long = serde_json::json!({ "command": "x".repeat(MAX_COMMAND_CHARS + 1) });
        assert_eq!(
            invalid(&long.to_string()),
            "command: must be at most 20000 characters"
        );
        assert!(matches!(
            ShellExec::invoke("other".into(), "{}".into()),
            Err(PluginError::Unsupported(_))
        ));
    }

    #[test]
    fn the_schema_is_valid_json_requiring_the_command() {
        let spec = &ShellExec::describe()[0];
        assert_eq!(spec.name, "shell_exec");
        let schema: serde_json::Value = serde_json::from_str(&spec.parameters_schema_json).unwrap();
        assert_eq!(schema["required"], serde_json::json!(["command"]));
        assert_eq!(schema["additionalProperties"], false);
    }
}
