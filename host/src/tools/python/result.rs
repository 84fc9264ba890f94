//! What the model sees of a run: a JSON object with what the code printed (each stream kept by
//! the host up to `output_chars`, the characters dropped counted: `plugins/runtime/capture.rs`),
//! the repr of its last expression, the files it wrote, its duration and its memory peak. An
//! exception is the call's failure, its traceback first; a run stopped by a limit says which
//! limit and that the session restarted.
//!
//! Every part is bounded here, whatever the interpreter answers: the streams by their capture,
//! the value and the error at [`VALUE_CHARS`] characters each, the interpreter's whole answer at
//! [`MAX_ANSWER_BYTES`], the files by the folder's limits; so the tool message is too.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::config::python::PythonSettings;
use crate::plugins::capabilities::files::tree::FileCopy;
use crate::plugins::failure::describe_plugin_error;
use crate::plugins::runtime::CallError;
use crate::plugins::runtime::capture::Captured;
use crate::plugins::worlds::tool::{PluginError, ToolOutput};

/// The most characters of the last expression's repr, and of a traceback, the model gets.
pub const VALUE_CHARS: usize = 20_000;

/// The largest answer the interpreter may give (its value and error, as JSON; what it prints
/// does not pass through it): far above what [`VALUE_CHARS`] lets through, far below memory.
const MAX_ANSWER_BYTES: usize = 1 << 20;

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

/// What the interpreter returns (`plugins/python/app.py`): the last value's repr, the
/// exception's traceback; each cut here to [`VALUE_CHARS`].
struct Guest {
    value: Option<String>,
    error: Option<String>,
}

impl Guest {
    fn parse(text: &str) -> Result<Self, String> {
        if text.len() > MAX_ANSWER_BYTES {
            return Err(format!(
                "its answer is {} bytes, more than the {MAX_ANSWER_BYTES} it may be",
                text.len()
            ));
        }
        let json: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let text = |key: &str| json[key].as_str().map(|t| cut(t, VALUE_CHARS));
        Ok(Self {
            value: text("value"),
            error: text("error"),
        })
    }
}

/// `text` up to `limit` characters, and how many more there were.
fn cut(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        None => text.to_string(),
        Some((end, _)) => {
            let more = text[end..].chars().count();
            format!("{}… ({more} more characters)", &text[..end])
        }
    }
}

/// The call's outcome as the tool loop takes it; `printed` its stdout and stderr.
pub fn ran(
    outcome: Result<Result<ToolOutput, PluginError>, CallError>,
    printed: (Captured, Captured),
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
    // The interpreter's own errors are its text too: bounded like its answer.
    let output = match outcome {
        Ok(Ok(output)) => output,
        Ok(Err(PluginError::InvalidInput(m))) => {
            return Err(format!("invalid arguments: {}", cut(&m, VALUE_CHARS)));
        }
        Ok(Err(other)) => return Err(cut(&describe_plugin_error(&other), VALUE_CHARS)),
        Err(e) => return Err(stopped(&e, printed, settings, &files)),
    };
    let guest = Guest::parse(&output.content)
        .map_err(|e| format!("the interpreter answered something unreadable: {e}"))?;
    let mut body = Map::new();
    let (stdout, stderr) = printed;
    print_into(&mut body, [("stdout", stdout), ("stderr", stderr)]);
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

/// Each stream's text, and how many characters were dropped past the cap.
fn print_into<const N: usize>(body: &mut Map<String, Value>, streams: [(&str, Captured); N]) {
    for (name, stream) in streams {
        if !stream.text.is_empty() {
            body.insert(name.into(), json!(stream.text));
        }
        if stream.dropped_chars > 0 {
            body.insert(format!("{name}Truncated"), json!(true));
            body.insert(format!("{name}DroppedChars"), json!(stream.dropped_chars));
        }
    }
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

/// A run the sandbox stopped: which limit, what it printed before, and what became of the
/// session.
fn stopped(
    error: &CallError,
    (stdout, stderr): (Captured, Captured),
    settings: &PythonSettings,
    files: &[Written],
) -> String {
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
        CallError::Trap { reason, .. } => {
            format!("the interpreter stopped: {}.", cut(reason, VALUE_CHARS))
        }
    };
    let mut text = format!("{why} {restarted}");
    // A trap's reason quotes stderr already.
    let mut printed = Map::new();
    match error {
        CallError::Trap { .. } => print_into(&mut printed, [("stdout", stdout)]),
        _ => print_into(&mut printed, [("stdout", stdout), ("stderr", stderr)]),
    }
    if !printed.is_empty() {
        text.push_str(&format!(
            " Printed before it stopped: {}",
            Value::Object(printed)
        ));
    }
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
        json!({"value": value, "error": error})
    }

    /// "hi\n" printed with 5 more characters dropped; nothing on stderr.
    fn printed() -> (Captured, Captured) {
        let stdout = Captured {
            text: "hi\n".into(),
            dropped_chars: 5,
        };
        (stdout, Captured::default())
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
            printed(),
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
            printed(),
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
        let error = ran(
            Err(timeout),
            printed(),
            vec![],
            Duration::ZERO,
            0,
            &settings,
        )
        .unwrap_err();
        assert!(
            error.starts_with("the code did not finish within the 30 s limit"),
            "{error}"
        );
        assert!(error.contains("The session was restarted"), "{error}");
        let (_, before) = error.split_once("Printed before it stopped: ").unwrap();
        let before: Value = serde_json::from_str(before).unwrap();
        assert_eq!(before["stdout"], "hi\n");
        assert_eq!(before["stdoutDroppedChars"], 5);
        let oom = CallError::Trap {
            id: crate::plugins::builtin::INTERPRETER.into(),
            reason: "forcing trap when growing memory to 300 bytes".into(),
        };
        let error = ran(Err(oom), printed(), vec![], Duration::ZERO, 0, &settings).unwrap_err();
        assert!(
            error.contains("ran out of memory (the limit is 256 MiB)"),
            "{error}"
        );
        let bad = Ok(Err(PluginError::InvalidInput(
            "code: must be a string".into(),
        )));
        assert_eq!(
            ran(bad, printed(), vec![], Duration::ZERO, 0, &settings).unwrap_err(),
            "invalid arguments: code: must be a string"
        );
        // The interpreter's own errors are bounded too, however it was made to answer.
        let huge = Ok(Err(PluginError::InvalidInput("x".repeat(VALUE_CHARS * 3))));
        let error = ran(huge, printed(), vec![], Duration::ZERO, 0, &settings).unwrap_err();
        assert!(error.ends_with(&format!("… ({} more characters)", VALUE_CHARS * 2)));
    }

    #[test]
    fn the_value_the_error_and_the_answer_are_bounded_whatever_the_interpreter_says() {
        let settings = PythonSettings::default();
        let huge = "é".repeat(VALUE_CHARS + 7);
        let ran_value = ran(
            output(guest(Some(&huge), None)),
            Default::default(),
            vec![],
            Duration::ZERO,
            0,
            &settings,
        )
        .unwrap();
        let body: Value = serde_json::from_str(&ran_value.content).unwrap();
        let value = body["value"].as_str().unwrap();
        assert!(
            value.ends_with("… (7 more characters)"),
            "{}",
            &value[value.len() - 40..]
        );
        assert_eq!(value.chars().filter(|c| *c == 'é').count(), VALUE_CHARS);
        let error = ran(
            output(guest(None, Some(&huge))),
            Default::default(),
            vec![],
            Duration::ZERO,
            0,
            &settings,
        )
        .unwrap_err();
        assert!(
            error.ends_with("… (7 more characters)"),
            "the traceback is cut too"
        );
        let answer = json!({"value": "x".repeat(MAX_ANSWER_BYTES)});
        let refused = ran(
            output(answer),
            Default::default(),
            vec![],
            Duration::ZERO,
            0,
            &settings,
        )
        .unwrap_err();
        assert!(
            refused.contains(&format!("more than the {MAX_ANSWER_BYTES} it may be")),
            "{refused}"
        );
    }
}
