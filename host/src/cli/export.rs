//! `chatd export`: every chat, search, star and call of DATABASE_URL's database as JSON Lines on
//! stdout, from one snapshot (`store/transfer.rs`).

use std::process::ExitCode;

use crate::config::DatabaseUrl;
use crate::store::transfer;

/// `chatd export`: JSON Lines on stdout, counts on stderr.
pub async fn run(url: &DatabaseUrl) -> ExitCode {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    match transfer::export(url, &mut out).await {
        Ok(counts) => {
            eprintln!("chatd: exported {counts}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("chatd: export failed: {e}");
            ExitCode::FAILURE
        }
    }
}
