//! `chatd plugins call FILE --tool NAME --args JSON [--grant …]`: one tool of a component run
//! once, outside the server, with the grants this configuration gives it, or only those named
//! (`call_grants.rs`): the result on stdout, the plugin's log on stderr, then its cost.

use std::fmt::Write as _;
use std::path::Path;
use std::process::ExitCode;

use crate::config::Config;

/// `chatd plugins call FILE --tool NAME --args JSON`: exit 0 when the tool answered, 1 when it
/// failed (its error, a trap, a timeout, a limit), 2 when the file or the arguments are unusable.
pub async fn run(
    config: &Config,
    file: &Path,
    tool: &str,
    args: &str,
    grants: &[String],
) -> ExitCode {
    let arguments: serde_json::Value = match serde_json::from_str(args) {
        Ok(value @ serde_json::Value::Object(_)) => value,
        _ => {
            eprintln!("chatd: plugin call: --args: must be a JSON object");
            return ExitCode::from(2);
        }
    };
    let plugin = match crate::cli::plugins::one_file::load_one(config, file, grants).await {
        Ok(plugin) => plugin,
        Err(why) => {
            eprintln!("chatd: plugin call: {why}");
            return ExitCode::from(2);
        }
    };
    let Some(instance) = plugin.as_tool() else {
        eprintln!("chatd: plugin call: {} is not a tool plugin", plugin.id());
        return ExitCode::from(2);
    };
    if !plugin.tools.iter().any(|t| t.name == tool) {
        let names: Vec<&str> = plugin.tools.iter().map(|t| t.name.as_str()).collect();
        eprintln!(
            "chatd: plugin call: --tool: {} has no tool {tool:?} (it has {})",
            plugin.id(),
            names.join(", ")
        );
        return ExitCode::from(2);
    }
    let started = std::time::Instant::now();
    let (outcome, peak) = instance.invoke_measured(tool, &arguments.to_string()).await;
    let took = started.elapsed();
    let (mut out, code) = match outcome {
        Ok(Ok(output)) => {
            let mut text = format!("ok: {}\n{}\n", tool, output.content);
            if let Some(summary) = output.summary {
                let _ = writeln!(text, "summary: {summary}");
            }
            (text, ExitCode::SUCCESS)
        }
        Ok(Err(error)) => (format!("error: {error:?}\n"), ExitCode::FAILURE),
        Err(failed) => (format!("failed: {failed}\n"), ExitCode::FAILURE),
    };
    let _ = writeln!(
        out,
        "took {:.1} ms (instantiation and call); memory peak {:.1} MiB of {} MiB",
        took.as_secs_f64() * 1000.0,
        peak as f64 / (1024.0 * 1024.0),
        plugin.manifest().limits.memory_mib
    );
    print!("{out}");
    code
}
