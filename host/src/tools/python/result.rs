//! What the model sees of a run: a JSON object with what the code printed (each stream capped
//! by the interpreter, the characters dropped counted), the repr of its last expression, the
//! files it wrote, its duration and its memory peak. An exception is the call's failure, its
//! traceback first; a run stopped by a limit says which limit and that the session restarted.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::config::python::PythonSettings;
use crate::plugins::capabilities::files::tree::FileCopy;
use crate::plugins::failure::describe_plugin_error;
use crate::plugins::runtime::CallError;
use crate::plugins::worlds::tool::{PluginError, ToolOutput};

/// A run that ended: the model's text, the call's summary line, the files written.
#[derive(Debug)]
pub struct Ran {
    pub content: String,
    pub summary: Option<String>,
    pub files: Vec<Written>,
}

/// A file the run wrote (or replaced).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Written {
    /// Its path in the session's folder.
    pub name: String,
    pub mime_type: &'static str,
    pub bytes: Vec<u8>,
}

/// What the interpreter returns (`plugins/python/app.py`): its streams, the characters each
/// dropped, the last value, the exception.
struct Guest {
    stdout: String,
    stdout_dropped: u64,
    stderr: String,
    stderr_dropped: u64,
    value: Option<String>,
    error: Option<String>,
}

impl Guest {
    fn parse(text: &str) -> Result<Self, String> {
        let json: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let text = |key: &str| json[key].as_str().map(str::to_string);
        let count = |key: &str| json[key].as_u64().unwrap_or(0);
        Ok(Self {
            stdout: text("stdout").ok_or("no stdout")?,
            stdout_dropped: count("stdoutDropped"),
            stderr: text("stderr").ok_or("no stderr")?,
            stderr_dropped: count("stderrDropped"),
            value: text("value"),
            error: text("error"),
        })
    }
}

/// The call's outcome as the tool loop takes it.
pub fn ran(
    outcome: Result<Result<ToolOutput, PluginError>, CallError>,
    written: Vec<FileCopy>,
    took: Duration,
    peak: usize,
    settings: &PythonSettings,
) -> Result<Ran, String> {
    let files: Vec<Written> = written
        .into_iter()
        .map(|f| Written {
            mime_type: mime_type(&f.path),
            name: f.path,
            bytes: f.data,
        })
        .collect();
    let output = match outcome {
        Ok(Ok(output)) => output,
        Ok(Err(PluginError::InvalidInput(m))) => return Err(format!("invalid arguments: {m}")),
        Ok(Err(other)) => return Err(describe_plugin_error(&other)),
        Err(e) => return Err(stopped(&e, settings, &files)),
    };
    let guest = Guest::parse(&output.content)
        .map_err(|e| format!("the interpreter answered something unreadable: {e}"))?;
    let mut body = Map::new();
    for (name, text, dropped) in [
        ("stdout", &guest.stdout, guest.stdout_dropped),
        ("stderr", &guest.stderr, guest.stderr_dropped),
    ] {
        if !text.is_empty() {
            body.insert(name.into(), json!(text));
        }
        if dropped > 0 {
            body.insert(format!("{name}Truncated"), json!(true));
            body.insert(format!("{name}DroppedChars"), json!(dropped));
        }
    }
    if let Some(error) = &guest.error {
        let mut text = error.clone();
        if !body.is_empty() {
            text.push_str("\n\nBefore the error: ");
            text.push_str(&Value::Object(body).to_string());
        }
        if !files.is_empty() {
            text.push_str(&format!("\nFiles written: {}", names(&files)));
        }
        return Err(text);
    }
    if let Some(value) = &guest.value {
        body.insert("value".into(), json!(value));
    }
    body.insert(
        "files".into(),
        Value::Array(files.iter().map(listed).collect()),
    );
    body.insert("durationMs".into(), json!(took.as_millis() as u64));
    body.insert(
        "memoryPeakMib".into(),
        json!((peak as f64 / 1048576.0 * 10.0).round() / 10.0),
    );
    let summary = (!files.is_empty()).then(|| format!("python: wrote {}", names(&files)));
    Ok(Ran {
        content: Value::Object(body).to_string(),
        summary,
        files,
    })
}

fn names(files: &[Written]) -> String {
    files
        .iter()
        .map(|f| f.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

fn listed(file: &Written) -> Value {
    json!({"name": file.name, "mimeType": file.mime_type, "sizeBytes": file.bytes.len()})
}

/// A run the sandbox stopped: which limit, and what became of the session.
fn stopped(error: &CallError, settings: &PythonSettings, files: &[Written]) -> String {
    let restarted = "The session was restarted: its variables and imports are gone; its files \
                     are kept.";
    let why = match error {
        CallError::Timeout { .. } => format!(
            "the code did not finish within the {} s limit and was stopped.",
            settings.timeout.as_secs_f64()
        ),
        CallError::Trap { reason, .. } if reason.contains("growing memory") => format!(
            "the code ran out of memory (the limit is {} MiB) and was stopped.",
            settings.memory_mib
        ),
        CallError::Trap { reason, .. } => format!("the interpreter stopped: {reason}."),
    };
    let mut text = format!("{why} {restarted}");
    if !files.is_empty() {
        text.push_str(&format!(
            " Files written before it stopped: {}",
            names(files)
        ));
    }
    text
}

/// A file's type by its extension, for the download route and the web client.
pub fn mime_type(name: &str) -> &'static str {
    let ext = name
        .rsplit_once('.')
        .map(|(_, e)| e.to_ascii_lowercase())
        .unwrap_or_default();
    match ext.as_str() {
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "webp" => "image/webp",
        "svg" => "image/svg+xml",
        "csv" => "text/csv",
        "tsv" => "text/tab-separated-values",
        "txt" | "log" | "py" | "md" => "text/plain",
        "json" => "application/json",
        "html" | "htm" => "text/html",
        "xml" => "application/xml",
        "pdf" => "application/pdf",
        "zip" => "application/zip",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn output(json: Value) -> Result<Result<ToolOutput, PluginError>, CallError> {
        Ok(Ok(ToolOutput {
            content: json.to_string(),
            summary: None,
        }))
    }

    fn guest(value: Option<&str>, error: Option<&str>) -> Value {
        json!({"stdout": "hi\n", "stdoutDropped": 5, "stderr": "", "stderrDropped": 0,
               "value": value, "error": error})
    }

    #[test]
    fn a_run_shows_its_output_value_files_and_costs() {
        let settings = PythonSettings::default();
        let file = FileCopy {
            path: "chart.svg".into(),
            data: b"<svg/>".to_vec(),
        };
        let ran = ran(
            output(guest(Some("2"), None)),
            vec![file],
            Duration::from_millis(12),
            3 << 20,
            &settings,
        )
        .unwrap();
        let body: Value = serde_json::from_str(&ran.content).unwrap();
        assert_eq!(body["stdout"], "hi\n");
        assert_eq!(body["stdoutTruncated"], true);
        assert_eq!(body["stdoutDroppedChars"], 5);
        assert!(body.get("stderr").is_none());
        assert_eq!(body["value"], "2");
        assert_eq!(
            body["files"],
            json!([{"name": "chart.svg", "mimeType": "image/svg+xml", "sizeBytes": 6}])
        );
        assert_eq!(body["durationMs"], 12);
        assert_eq!(body["memoryPeakMib"], 3.0);
        assert_eq!(ran.summary.as_deref(), Some("python: wrote chart.svg"));
    }

    #[test]
    fn an_exception_or_a_limit_fails_the_call_and_says_why() {
        let settings = PythonSettings::default();
        let traceback = "Traceback (most recent call last):\nZeroDivisionError: division by zero";
        let error = ran(
            output(guest(None, Some(traceback))),
            vec![],
            Duration::ZERO,
            0,
            &settings,
        )
        .unwrap_err();
        assert!(error.starts_with(traceback), "{error}");
        assert!(error.contains("\"stdout\":\"hi\\n\""), "{error}");
        let timeout = CallError::Timeout {
            id: crate::plugins::builtin::INTERPRETER.into(),
            after: Duration::from_secs(30),
        };
        let error = ran(Err(timeout), vec![], Duration::ZERO, 0, &settings).unwrap_err();
        assert!(
            error.starts_with("the code did not finish within the 30 s limit"),
            "{error}"
        );
        assert!(error.contains("The session was restarted"), "{error}");
        let oom = CallError::Trap {
            id: crate::plugins::builtin::INTERPRETER.into(),
            reason: "forcing trap when growing memory to 300 bytes".into(),
        };
        let error = ran(Err(oom), vec![], Duration::ZERO, 0, &settings).unwrap_err();
        assert!(
            error.contains("ran out of memory (the limit is 256 MiB)"),
            "{error}"
        );
        let bad = Ok(Err(PluginError::InvalidInput(
            "code: must be a string".into(),
        )));
        assert_eq!(
            ran(bad, vec![], Duration::ZERO, 0, &settings).unwrap_err(),
            "invalid arguments: code: must be a string"
        );
    }
}
