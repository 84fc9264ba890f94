//! The command line the devbox actually runs around a plugin's command: into the working
//! directory (created when missing), then the command under the remote `timeout`, so a command
//! that outlives its limit is ended on the devbox itself. Closing the SSH channel would not end
//! it: without a terminal, the remote process gets no hangup and runs on.
//!
//! The script is POSIX `sh`, interpreted by the remote user's login shell, which must therefore
//! be a POSIX shell (`sh`, `bash`, `dash`, `ksh`, `zsh`; not `fish` or `csh`); the plugin's
//! command runs under `sh -c`.

use std::time::Duration;

/// Seconds between the remote `timeout`'s TERM and its KILL.
const KILL_AFTER_SECS: u32 = 5;

/// Exit status of the script when the working directory cannot be created or entered.
pub const WORKDIR_FAILED: i32 = 125;
/// Exit status of the remote `timeout` when the time limit ended the command.
pub const TIMED_OUT: i32 = 124;
/// The longest script sent: the devbox's shell gets it as one argument, and Linux refuses an
/// argument over 128 KiB (MAX_ARG_STRLEN) with an error that would say nothing of why.
pub const MAX_SCRIPT_BYTES: usize = 120 * 1024;

/// Exit status of the script when the devbox has no `timeout` command.
pub const NO_TIMEOUT_STATUS: i32 = 126;
/// What the script says then.
pub const NO_TIMEOUT: &str = "chatd: the devbox has no `timeout` command (coreutils or busybox); \
     commands are not run without a time limit";

/// The script for `command` in `workdir` (none: the login directory) with `limit`.
pub fn script(command: &str, workdir: Option<&str>, limit: Duration) -> String {
    let mut script = String::new();
    if let Some(dir) = workdir {
        let dir = directory(dir);
        script.push_str(&format!(
            "mkdir -p -- {dir} && cd -- {dir} || exit {WORKDIR_FAILED}\n"
        ));
    }
    let command = quote(command);
    // `timeout` is coreutils' (and busybox's). Without it nothing on the devbox could end the
    // command (closing the session does not: there is no terminal to hang up), so the script
    // refuses to run it rather than run it without a limit.
    script.push_str(&format!(
        "if command -v timeout >/dev/null 2>&1; then exec timeout -k {KILL_AFTER_SECS} {secs} sh -c {command}; \
         else echo {NO_TIMEOUT} >&2; exit {NO_TIMEOUT_STATUS}; fi",
        secs = seconds(limit),
        NO_TIMEOUT = quote(NO_TIMEOUT),
    ));
    script
}

/// `timeout`'s duration argument: seconds with millisecond precision.
fn seconds(limit: Duration) -> String {
    format!("{}.{:03}s", limit.as_secs(), limit.subsec_millis())
}

/// A directory as a shell word; a leading `~/` (or `~` alone) stays the remote user's home.
fn directory(dir: &str) -> String {
    match dir.strip_prefix('~') {
        Some("") => "\"$HOME\"".to_string(),
        Some(rest) if rest.starts_with('/') => format!("\"$HOME\"{}", quote(rest)),
        _ => quote(dir),
    }
}

/// One shell word, single-quoted (a `'` inside becomes `'\''`).
pub fn quote(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_in_the_workdir_under_the_remote_timeout() {
        let s = script(
            "echo 'hi' $HOME",
            Some("/srv/work dir"),
            Duration::from_millis(1500),
        );
        assert_eq!(
            s,
            "mkdir -p -- '/srv/work dir' && cd -- '/srv/work dir' || exit 125\n\
             if command -v timeout >/dev/null 2>&1; then exec timeout -k 5 1.500s sh -c 'echo '\\''hi'\\'' $HOME'; \
             else echo 'chatd: the devbox has no `timeout` command (coreutils or busybox); commands are not run without a time limit' >&2; exit 126; fi"
        );
    }

    #[test]
    fn without_a_workdir_it_starts_in_the_login_directory() {
        let s = script("pwd", None, Duration::from_secs(120));
        assert!(s.starts_with("if command -v timeout"), "{s}");
        assert!(s.contains("timeout -k 5 120.000s sh -c 'pwd'"), "{s}");
    }

    #[test]
    fn a_home_relative_workdir_stays_relative_to_the_remote_home() {
        assert_eq!(directory("~/work"), "\"$HOME\"'/work'");
        assert_eq!(directory("~"), "\"$HOME\"");
        assert_eq!(directory("~other/x"), "'~other/x'");
        assert_eq!(directory("/abs"), "'/abs'");
    }

    #[test]
    fn quoting_survives_every_shell_character() {
        assert_eq!(quote(""), "''");
        assert_eq!(quote("a'b"), r"'a'\''b'");
        assert_eq!(quote("$(x) `y` \"z\"\n"), "'$(x) `y` \"z\"\n'");
    }
}
