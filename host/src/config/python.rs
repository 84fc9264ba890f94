//! The bundled `python` tool's settings: whether it is offered, and its limits. Each is a
//! variable (CHAT_PYTHON_*) and a key of the configuration file's `[python]` table; where both
//! are set the variable wins, where neither is the default holds.
//!
//! ```toml
//! [python]
//! enabled = true              # CHAT_PYTHON_TOOL_ENABLED
//! timeout_ms = 30000          # CHAT_PYTHON_TIMEOUT_MS: one call's wall clock
//! memory_mib = 256            # CHAT_PYTHON_MEMORY_MIB: one session's memory
//! max_sessions = 32           # CHAT_PYTHON_MAX_SESSIONS: sessions alive per instance
//! idle_minutes = 20           # CHAT_PYTHON_IDLE_MINUTES: a session unused this long ends
//! max_concurrent_runs = 4     # CHAT_PYTHON_MAX_CONCURRENT_RUNS: calls running at once
//! output_chars = 20000        # CHAT_PYTHON_OUTPUT_CHARS: stdout and stderr kept, each
//! max_files_per_call = 20     # CHAT_PYTHON_MAX_FILES_PER_CALL: files one call may create
//! max_file_mib = 10           # CHAT_PYTHON_MAX_FILE_MIB: the largest file
//! ```
//!
//! What each limit means, and what enforces it, is `tools::python`'s (and `docs/python.md`).

use std::ops::RangeInclusive;
use std::time::Duration;

use serde::Deserialize;

/// One setting: its variable, its file key, its range, its default.
struct Setting {
    var: &'static str,
    key: &'static str,
    range: RangeInclusive<u64>,
    default: u64,
}

const TIMEOUT_MS: Setting = Setting {
    var: "CHAT_PYTHON_TIMEOUT_MS",
    key: "timeout_ms",
    range: 100..=900_000,
    default: 30_000,
};
const MEMORY_MIB: Setting = Setting {
    var: "CHAT_PYTHON_MEMORY_MIB",
    key: "memory_mib",
    range: 128..=1024,
    default: 256,
};
const MAX_SESSIONS: Setting = Setting {
    var: "CHAT_PYTHON_MAX_SESSIONS",
    key: "max_sessions",
    range: 1..=1000,
    default: 32,
};
const IDLE_MINUTES: Setting = Setting {
    var: "CHAT_PYTHON_IDLE_MINUTES",
    key: "idle_minutes",
    range: 1..=1440,
    default: 20,
};
const MAX_CONCURRENT_RUNS: Setting = Setting {
    var: "CHAT_PYTHON_MAX_CONCURRENT_RUNS",
    key: "max_concurrent_runs",
    range: 1..=256,
    default: 4,
};
const OUTPUT_CHARS: Setting = Setting {
    var: "CHAT_PYTHON_OUTPUT_CHARS",
    key: "output_chars",
    range: 100..=1_000_000,
    default: 20_000,
};
const MAX_FILES_PER_CALL: Setting = Setting {
    var: "CHAT_PYTHON_MAX_FILES_PER_CALL",
    key: "max_files_per_call",
    range: 0..=1000,
    default: 20,
};
const MAX_FILE_MIB: Setting = Setting {
    var: "CHAT_PYTHON_MAX_FILE_MIB",
    key: "max_file_mib",
    range: 1..=64,
    default: 10,
};

const ALL: [&Setting; 8] = [
    &TIMEOUT_MS,
    &MEMORY_MIB,
    &MAX_SESSIONS,
    &IDLE_MINUTES,
    &MAX_CONCURRENT_RUNS,
    &OUTPUT_CHARS,
    &MAX_FILES_PER_CALL,
    &MAX_FILE_MIB,
];

/// The variables, flattened into [`super::Config`]; unset ones leave the file's value or the
/// default.
#[derive(clap::Args, Clone, Debug, Default)]
pub struct PythonVars {
    /// Offers the bundled `python` tool (Python run in chatd's sandbox): `true` (default) or
    /// `false`. Also `[python] enabled` in the configuration file.
    #[arg(long, env = "CHAT_PYTHON_TOOL_ENABLED", value_name = "CHAT_PYTHON_TOOL_ENABLED", value_parser = super::parse_bool, action = clap::ArgAction::Set)]
    pub chat_python_tool_enabled: Option<bool>,
    /// The longest one `python` call may run, in ms: 100 to 900000 (default 30000).
    #[arg(long, env = "CHAT_PYTHON_TIMEOUT_MS", value_name = "CHAT_PYTHON_TIMEOUT_MS", value_parser = |s: &str| check(&TIMEOUT_MS, s))]
    pub chat_python_timeout_ms: Option<u64>,
    /// The memory of one Python session, in MiB: 128 to 1024 (default 256).
    #[arg(long, env = "CHAT_PYTHON_MEMORY_MIB", value_name = "CHAT_PYTHON_MEMORY_MIB", value_parser = |s: &str| check(&MEMORY_MIB, s))]
    pub chat_python_memory_mib: Option<u64>,
    /// Python sessions alive at once per instance, the least recently used ended first: 1 to
    /// 1000 (default 32).
    #[arg(long, env = "CHAT_PYTHON_MAX_SESSIONS", value_name = "CHAT_PYTHON_MAX_SESSIONS", value_parser = |s: &str| check(&MAX_SESSIONS, s))]
    pub chat_python_max_sessions: Option<u64>,
    /// A Python session unused this long ends (its variables go; its files stay with the chat),
    /// in minutes: 1 to 1440 (default 20).
    #[arg(long, env = "CHAT_PYTHON_IDLE_MINUTES", value_name = "CHAT_PYTHON_IDLE_MINUTES", value_parser = |s: &str| check(&IDLE_MINUTES, s))]
    pub chat_python_idle_minutes: Option<u64>,
    /// `python` calls running at once; more wait their turn: 1 to 256 (default 4).
    #[arg(long, env = "CHAT_PYTHON_MAX_CONCURRENT_RUNS", value_name = "CHAT_PYTHON_MAX_CONCURRENT_RUNS", value_parser = |s: &str| check(&MAX_CONCURRENT_RUNS, s))]
    pub chat_python_max_concurrent_runs: Option<u64>,
    /// Characters of stdout, and of stderr, one call keeps (more are dropped and the result
    /// says so): 100 to 1000000 (default 20000).
    #[arg(long, env = "CHAT_PYTHON_OUTPUT_CHARS", value_name = "CHAT_PYTHON_OUTPUT_CHARS", value_parser = |s: &str| check(&OUTPUT_CHARS, s))]
    pub chat_python_output_chars: Option<u64>,
    /// Files one `python` call may create: 0 to 1000 (default 20).
    #[arg(long, env = "CHAT_PYTHON_MAX_FILES_PER_CALL", value_name = "CHAT_PYTHON_MAX_FILES_PER_CALL", value_parser = |s: &str| check(&MAX_FILES_PER_CALL, s))]
    pub chat_python_max_files_per_call: Option<u64>,
    /// The largest file Python may write, in MiB: 1 to 64 (default 10).
    #[arg(long, env = "CHAT_PYTHON_MAX_FILE_MIB", value_name = "CHAT_PYTHON_MAX_FILE_MIB", value_parser = |s: &str| check(&MAX_FILE_MIB, s))]
    pub chat_python_max_file_mib: Option<u64>,
}

impl PythonVars {
    fn value(&self, setting: &Setting) -> Option<u64> {
        match setting.var {
            "CHAT_PYTHON_TIMEOUT_MS" => self.chat_python_timeout_ms,
            "CHAT_PYTHON_MEMORY_MIB" => self.chat_python_memory_mib,
            "CHAT_PYTHON_MAX_SESSIONS" => self.chat_python_max_sessions,
            "CHAT_PYTHON_IDLE_MINUTES" => self.chat_python_idle_minutes,
            "CHAT_PYTHON_MAX_CONCURRENT_RUNS" => self.chat_python_max_concurrent_runs,
            "CHAT_PYTHON_OUTPUT_CHARS" => self.chat_python_output_chars,
            "CHAT_PYTHON_MAX_FILES_PER_CALL" => self.chat_python_max_files_per_call,
            "CHAT_PYTHON_MAX_FILE_MIB" => self.chat_python_max_file_mib,
            _ => None,
        }
    }
}

fn check(setting: &Setting, text: &str) -> Result<u64, String> {
    match text.trim().parse::<u64>() {
        Ok(n) if setting.range.contains(&n) => Ok(n),
        _ => Err(rule(setting)),
    }
}

fn rule(setting: &Setting) -> String {
    format!(
        "must be an integer from {} to {}",
        setting.range.start(),
        setting.range.end()
    )
}

/// `[python]` as written; checked by [`RawPython::check`].
/// Not `deny_unknown_fields` (serde cannot with `flatten`): every other key lands in `numbers`,
/// where [`RawPython::check`] refuses the unknown ones by name.
#[derive(Deserialize, Default, Clone, Debug)]
pub(super) struct RawPython {
    #[serde(default)]
    enabled: Option<bool>,
    #[serde(flatten)]
    numbers: std::collections::BTreeMap<String, toml::Value>,
}

/// `[python]` checked: each key given, within its range.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FilePython {
    pub enabled: Option<bool>,
    values: Vec<(&'static str, u64)>,
}

impl RawPython {
    pub(super) fn check(self) -> Result<FilePython, String> {
        let mut values = Vec::new();
        for (key, value) in self.numbers {
            let Some(setting) = ALL.iter().find(|s| s.key == key) else {
                let known: Vec<&str> = ALL.iter().map(|s| s.key).collect();
                return Err(format!(
                    "python.{key}: not a setting; known: enabled, {}",
                    known.join(", ")
                ));
            };
            let n = value
                .as_integer()
                .and_then(|n| u64::try_from(n).ok())
                .filter(|n| setting.range.contains(n))
                .ok_or_else(|| format!("python.{key}: {}", rule(setting)))?;
            values.push((setting.key, n));
        }
        Ok(FilePython {
            enabled: self.enabled,
            values,
        })
    }
}

/// The settings in force: the variable, else the file, else the default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PythonSettings {
    pub enabled: bool,
    /// Whether CHAT_PYTHON_TOOL_ENABLED=false turned it off (then it is not even compiled).
    pub disabled_by_variable: bool,
    pub timeout: Duration,
    pub memory_mib: u32,
    pub max_sessions: usize,
    pub idle: Duration,
    pub max_concurrent_runs: usize,
    pub output_chars: usize,
    pub max_files_per_call: usize,
    pub max_file_bytes: u64,
}

impl Default for PythonSettings {
    fn default() -> Self {
        Self::new(&PythonVars::default(), &FilePython::default())
    }
}

impl PythonSettings {
    pub fn new(vars: &PythonVars, file: &FilePython) -> Self {
        let get = |setting: &Setting| {
            vars.value(setting)
                .or_else(|| {
                    file.values
                        .iter()
                        .find(|(key, _)| *key == setting.key)
                        .map(|(_, n)| *n)
                })
                .unwrap_or(setting.default)
        };
        Self {
            enabled: vars
                .chat_python_tool_enabled
                .or(file.enabled)
                .unwrap_or(true),
            disabled_by_variable: vars.chat_python_tool_enabled == Some(false),
            timeout: Duration::from_millis(get(&TIMEOUT_MS)),
            memory_mib: get(&MEMORY_MIB) as u32,
            max_sessions: get(&MAX_SESSIONS) as usize,
            idle: Duration::from_secs(get(&IDLE_MINUTES) * 60),
            max_concurrent_runs: get(&MAX_CONCURRENT_RUNS) as usize,
            output_chars: get(&OUTPUT_CHARS) as usize,
            max_files_per_call: get(&MAX_FILES_PER_CALL) as usize,
            max_file_bytes: get(&MAX_FILE_MIB) << 20,
        }
    }
}

impl PythonSettings {
    /// The limits the interpreter may read (`grants.config`), to tell the model what they are.
    pub fn readable(&self) -> [(&'static str, String); 6] {
        [
            ("python_timeout_ms", self.timeout.as_millis().to_string()),
            ("python_memory_mib", self.memory_mib.to_string()),
            (
                "python_idle_minutes",
                (self.idle.as_secs() / 60).to_string(),
            ),
            ("python_output_chars", self.output_chars.to_string()),
            (
                "python_max_file_mib",
                (self.max_file_bytes >> 20).to_string(),
            ),
            (
                "python_max_files_per_call",
                self.max_files_per_call.to_string(),
            ),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(text: &str) -> Result<FilePython, String> {
        let raw: RawPython = toml::from_str(text).map_err(|e| e.to_string())?;
        raw.check()
    }

    #[test]
    fn the_variable_wins_over_the_file_which_wins_over_the_default() {
        let defaults = PythonSettings::default();
        assert!(defaults.enabled && !defaults.disabled_by_variable);
        assert_eq!(defaults.timeout, Duration::from_secs(30));
        assert_eq!(defaults.memory_mib, 256);
        assert_eq!(defaults.idle, Duration::from_secs(20 * 60));
        let from_file = file("enabled = false\ntimeout_ms = 5000\nmax_sessions = 3").unwrap();
        let vars = PythonVars {
            chat_python_timeout_ms: Some(7000),
            ..PythonVars::default()
        };
        let settings = PythonSettings::new(&vars, &from_file);
        assert!(!settings.enabled && !settings.disabled_by_variable);
        assert_eq!(settings.timeout, Duration::from_millis(7000));
        assert_eq!(settings.max_sessions, 3);
        let off = PythonVars {
            chat_python_tool_enabled: Some(false),
            ..PythonVars::default()
        };
        assert!(PythonSettings::new(&off, &FilePython::default()).disabled_by_variable);
    }

    #[test]
    fn a_bad_key_or_value_is_named_with_its_rule() {
        assert_eq!(
            file("memory_mib = 64").unwrap_err(),
            "python.memory_mib: must be an integer from 128 to 1024"
        );
        assert!(
            file("memory = 64")
                .unwrap_err()
                .starts_with("python.memory: not a setting; known: enabled, timeout_ms")
        );
        assert_eq!(
            file("timeout_ms = \"5s\"").unwrap_err(),
            "python.timeout_ms: must be an integer from 100 to 900000"
        );
        assert_eq!(
            check(&MAX_FILE_MIB, "65").unwrap_err(),
            "must be an integer from 1 to 64"
        );
    }
}
