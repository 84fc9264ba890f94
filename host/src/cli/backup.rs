//! `chatd backup FILE`: a consistent, compacted copy of a live SQLite database.

use std::process::ExitCode;

use crate::config::DatabaseUrl;
use crate::store::transfer;

/// `chatd backup FILE`.
pub async fn run(url: &DatabaseUrl, file: &std::path::Path) -> ExitCode {
    match transfer::backup(url, file).await {
        Ok(()) => {
            eprintln!("chatd: backed up {url} to {}", file.display());
            ExitCode::SUCCESS
        }
        Err(line) => {
            eprintln!("chatd: {line}");
            ExitCode::FAILURE
        }
    }
}
