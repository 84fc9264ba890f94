//! The one call to the host's `ssh` import, and the mapping of its outcome to what a tool
//! returns: the rendered output for a command that exited 0, a typed [`PluginError`] otherwise.
//! The mapping ([`ssh_error`], [`finished`]) is pure over the WIT types, so it is tested natively.

use chatd_plugin_sdk::host::ssh::{self, ExecOutput, ExecRequest, SshError};
use chatd_plugin_sdk::host::{PluginError, UpstreamError};

use crate::render;

/// Runs `command` (a full remote command line) on the devbox; `Err` when it could not run.
pub fn run(command: String) -> Result<ExecOutput, PluginError> {
    let request = ExecRequest {
        command,
        // "As long as the operator allows": the host clamps this to the tool's configured limit
        // (CHAT_SHELL_EXEC_TIMEOUT_MS / CHAT_CODING_EXEC_TIMEOUT_MS), which is the only limit
        // that should apply; a smaller number here would silently override the operator.
        timeout_ms: u32::MAX,
    };
    ssh::exec(&request).map_err(ssh_error)
}

/// Why a command could not run, as the tool's error.
pub fn ssh_error(error: SshError) -> PluginError {
    match error {
        SshError::Denied(why) => PluginError::Denied(why),
        SshError::Unreachable(why) => {
            PluginError::Transport(format!("the devbox could not be reached: {why}"))
        }
        SshError::Authentication(why) => upstream(format!("the devbox refused the SSH key: {why}")),
        SshError::Failed(why) => upstream(format!("SSH failed: {why}")),
    }
}

/// A finished command: `Ok` with the rendered output when it exited 0; otherwise an upstream
/// error whose message says how it ended, then the rendered output (the model needs stderr to
/// understand a failure).
pub fn finished(output: &ExecOutput) -> Result<String, PluginError> {
    let rendered = render::for_model(output);
    let ms = output.duration_ms;
    // Timed out first: the host ends the process then, whatever status it may report.
    let how = if output.timed_out {
        format!("timed out after {ms} ms; the remote command was ended")
    } else {
        match output.exit_status {
            Some(0) => return Ok(rendered),
            Some(code) => format!("exit status {code} after {ms} ms"),
            None => format!("ended by a signal after {ms} ms"),
        }
    };
    Err(upstream(format!("{how}\n{rendered}")))
}

/// Status 0: there is no HTTP status; the devbox (or the command on it) is the upstream.
fn upstream(message: String) -> PluginError {
    PluginError::Upstream(UpstreamError { status: 0, message })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::render::tests::output;

    fn upstream_message(result: Result<String, PluginError>) -> String {
        match result {
            Err(PluginError::Upstream(UpstreamError { status: 0, message })) => message,
            other => panic!("expected an upstream error with status 0, got {other:?}"),
        }
    }

    #[test]
    fn ssh_errors_map_to_typed_plugin_errors() {
        assert!(matches!(
            ssh_error(SshError::Denied("no devbox is configured".into())),
            PluginError::Denied(m) if m == "no devbox is configured"
        ));
        assert!(matches!(
            ssh_error(SshError::Unreachable("connection refused".into())),
            PluginError::Transport(m) if m == "the devbox could not be reached: connection refused"
        ));
        assert!(matches!(
            ssh_error(SshError::Authentication("publickey".into())),
            PluginError::Upstream(UpstreamError { status: 0, message })
                if message == "the devbox refused the SSH key: publickey"
        ));
        assert!(matches!(
            ssh_error(SshError::Failed("channel closed".into())),
            PluginError::Upstream(UpstreamError { status: 0, message })
                if message == "SSH failed: channel closed"
        ));
    }

    #[test]
    fn exit_zero_is_the_rendered_output() {
        let out = output(Some(0), b"hi\n", b"");
        assert_eq!(finished(&out).unwrap(), render::for_model(&out));
    }

    #[test]
    fn a_non_zero_exit_is_an_error_carrying_the_output() {
        let out = output(Some(2), b"", b"ls: cannot access 'x'\n");
        assert_eq!(
            upstream_message(finished(&out)),
            format!("exit status 2 after 123 ms\n{}", render::for_model(&out))
        );
        assert!(upstream_message(finished(&out)).ends_with("stderr:\nls: cannot access 'x'"));
    }

    #[test]
    fn a_timeout_is_an_error_even_with_a_status() {
        for status in [None, Some(0), Some(143)] {
            let mut out = output(status, b"partial\n", b"");
            out.timed_out = true;
            assert_eq!(
                upstream_message(finished(&out)),
                format!(
                    "timed out after 123 ms; the remote command was ended\n{}",
                    render::for_model(&out)
                )
            );
        }
    }

    #[test]
    fn no_status_without_a_timeout_is_a_signal() {
        let out = output(None, b"", b"");
        assert_eq!(
            upstream_message(finished(&out)),
            format!(
                "ended by a signal after 123 ms\n{}",
                render::for_model(&out)
            )
        );
    }
}
