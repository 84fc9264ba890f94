//! Running one command on the operator's devbox through the host's `ssh` import, shared by two
//! bundled tool plugins: `shell_exec` (a shell command) and `coding_exec` (the coding CLI). A
//! library, not a plugin: each plugin validates its own argument, builds its command line with
//! [`quote::word`], and hands it to [`execute`].
//!
//! Division of labour with the host: the host picks the devbox, closes stdin, `cd`s into the
//! remote working directory, applies the operator's per-tool time limit, ends the remote process
//! and caps the output. This crate owns the command line's quoting ([`quote`]), the mapping of
//! the SSH outcome to a tool result or a typed error ([`exec`]), and what the model reads
//! ([`render`]). Everything but [`exec::run`] is pure and tested natively.

pub mod exec;
pub mod quote;
pub mod render;

use chatd_plugin_sdk::host::PluginError;
use chatd_plugin_sdk::json::{parse_object, required_str};
use chatd_plugin_sdk::tool::ToolOutput;

/// Runs `command` on the devbox. A zero exit status is the tool's output (with a one-line summary
/// labelled `label`); anything else is an error whose message carries the rendered output, so
/// the model still sees what the command printed.
pub fn execute(command: String, label: &str) -> Result<ToolOutput, PluginError> {
    let output = exec::run(command)?;
    let content = exec::finished(&output)?;
    Ok(ToolOutput {
        content,
        summary: Some(render::summary(label, &output)),
    })
}

/// `script` as the devbox user's login shell runs it: bash when the devbox has it, else sh, with
/// `-l` so the user's profile sets the environment (the PATH where npm-global, nvm or pipx put
/// their commands) and `-c` for the script. `args` become `$1`, `$2`, … (`$0` stays the shell's
/// name), each quoted once, so text passed this way is quoted once whatever the script is.
/// `exec`, so no shell lingers as a parent: the host's timeout ends the command itself.
pub fn login_shell(script: &str, args: &[&str]) -> String {
    let mut line = format!(
        "if command -v bash >/dev/null 2>&1; then s=bash; else s=sh; fi; exec \"$s\" -lc {}",
        quote::word(script)
    );
    if !args.is_empty() {
        line.push_str(" \"$s\"");
    }
    for arg in args {
        line.push(' ');
        line.push_str(&quote::word(arg));
    }
    line
}

/// The one string argument `key` of a tool's JSON arguments: required, not blank, at most
/// `max_chars` characters. Returned as given (not trimmed): whitespace can matter to a shell.
pub fn text_arg(arguments_json: &str, key: &str, max_chars: usize) -> Result<String, PluginError> {
    let args = parse_object(arguments_json)?;
    let text = required_str(&args, key)?;
    if text.trim().is_empty() {
        return Err(PluginError::InvalidInput(format!(
            "{key}: must not be blank"
        )));
    }
    if text.chars().count() > max_chars {
        return Err(PluginError::InvalidInput(format!(
            "{key}: must be at most {max_chars} characters"
        )));
    }
    Ok(text.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn invalid(result: Result<String, PluginError>) -> String {
        match result {
            Err(PluginError::InvalidInput(why)) => why,
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn text_arg_is_returned_as_given() {
        assert_eq!(
            text_arg(r#"{"command":"  ls -la\n"}"#, "command", 100).unwrap(),
            "  ls -la\n"
        );
        // Exactly at the limit, counted in characters, not bytes.
        let at_limit = serde_json::json!({ "command": "é".repeat(10) }).to_string();
        assert_eq!(text_arg(&at_limit, "command", 10).unwrap(), "é".repeat(10));
    }

    #[test]
    fn text_arg_errors_name_the_field() {
        assert_eq!(
            invalid(text_arg("{}", "command", 10)),
            "command: is required"
        );
        assert_eq!(invalid(text_arg("", "command", 10)), "command: is required");
        assert_eq!(
            invalid(text_arg(r#"{"command":" \n\t"}"#, "command", 10)),
            "command: must not be blank"
        );
        assert_eq!(
            invalid(text_arg(r#"{"command":42}"#, "command", 10)),
            "command: must be a string"
        );
        assert_eq!(
            invalid(text_arg(r#"{"command":"12345678901"}"#, "command", 10)),
            "command: must be at most 10 characters"
        );
        assert!(invalid(text_arg("[1]", "command", 10)).contains("JSON object"));
        assert!(invalid(text_arg("{", "command", 10)).contains("not valid JSON"));
    }
}
