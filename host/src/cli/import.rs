//! `chatd import FILE`: an export read into DATABASE_URL's database in one transaction
//! (`store/transfer.rs`).

use std::process::ExitCode;

use crate::config::Config;
use crate::store::Store;

/// `chatd import FILE`: into DATABASE_URL's database, opened (and migrated) as a server opens
/// it; on SQLite the serving lock is taken, so a running server refuses it.
pub async fn run(config: &Config, file: &std::path::Path, skip_existing: bool) -> ExitCode {
    let input: Box<dyn std::io::BufRead> = if file.as_os_str() == "-" {
        Box::new(std::io::stdin().lock())
    } else {
        match std::fs::File::open(file) {
            Ok(f) => Box::new(std::io::BufReader::new(f)),
            Err(e) => {
                eprintln!("chatd: cannot read {}: {e}", file.display());
                return ExitCode::from(2);
            }
        }
    };
    let timeout = std::time::Duration::from_secs(config.database_timeout_secs);
    let store = match Store::open(
        &config.database_url,
        config.database_max_connections,
        timeout,
    )
    .await
    {
        Ok(store) => store,
        Err(e) => {
            eprintln!("chatd: import failed: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = store.import(input, skip_existing).await;
    store.close().await;
    match result {
        Ok(done) => {
            eprintln!("chatd: imported {}", done.stored);
            if done.skipped.0.iter().any(|(_, n)| *n > 0) {
                eprintln!("chatd: skipped (already there) {}", done.skipped);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chatd: import failed: {e}");
            ExitCode::FAILURE
        }
    }
}
