//! `chatd users add|list|disable|enable|login-link`: people, from the command line, on DATABASE_URL's
//! database; safe beside a running server (on SQLite it does not take the process lock: its
//! writes are a row or two, ordered by SQLite's own lock; and it migrates only a database no
//! server holds: `sqlite::migrate_beside`). A key made here works on a running server at
//! once; a person disabled here is refused within a second (`people/directory.rs`). Token mode
//! only: in open mode every caller is the admin, and people would be a promise chatd cannot keep.
//! Each command prints JSON lines on stdout; a refusal is one line on stderr and exit 2.

use std::process::ExitCode;

use serde_json::json;

use crate::config::Config;
use crate::people::manage::{self, Refusal};
use crate::people::sessions;
use crate::store::Store;
use crate::store::people::PersonRecord;
use crate::vocabulary::to_millis;

use super::grammar::UsersCommand;

pub async fn run(config: &Config, command: &UsersCommand) -> ExitCode {
    if !config.token_mode() {
        eprintln!(
            "chatd: users need token mode: set ADMIN_TOKEN (in open mode every caller is the \
             admin, so people could not be kept apart)"
        );
        return ExitCode::from(2);
    }
    let timeout = std::time::Duration::from_secs(config.database_timeout_secs);
    let store = match Store::open_beside(&config.database_url, timeout).await {
        Ok(store) => store,
        Err(e) => {
            eprintln!("chatd: {e}");
            return ExitCode::FAILURE;
        }
    };
    let done = execute(&store, command, &site(config)).await;
    store.close().await;
    match done {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(Refusal::Store(e)) => {
            eprintln!("chatd: {e}");
            ExitCode::FAILURE
        }
        Err(refusal) => {
            eprintln!("chatd: {refusal}");
            ExitCode::from(2)
        }
    }
}

async fn execute(
    store: &Store,
    command: &UsersCommand,
    site: &str,
) -> Result<Vec<String>, Refusal> {
    match command {
        UsersCommand::Add { name, role } => {
            let (person, key) = manage::add_person(store, name, *role).await?;
            let line = json!({
                "id": person.id, "name": person.name, "role": person.role, "key": key.secret,
            });
            Ok(vec![line.to_string()])
        }
        UsersCommand::List => {
            let people = store.people().await?;
            Ok(people.iter().map(shown).collect())
        }
        UsersCommand::Disable { name } | UsersCommand::Enable { name } => {
            let disabled = matches!(command, UsersCommand::Disable { .. });
            let Some(person) = store.person_named(name).await? else {
                return Err(Refusal::NotFound(format!("no user is named {name:?}")));
            };
            let person = manage::set_disabled(store, None, &person.id, disabled).await?;
            Ok(vec![shown(&person)])
        }
        UsersCommand::LoginLink { name } => {
            let (person, secret, expires_at) = sessions::make_link(store, name).await?;
            // After `#`, which browsers never send: the secret stays out of every server's
            // and proxy's log, and the web client posts it (`POST /v1/auth/link`).
            let line = json!({
                "name": person.name,
                "link": format!("{site}/#login={secret}"),
                "expiresAt": to_millis(&expires_at),
            });
            Ok(vec![line.to_string()])
        }
    }
}

/// Where browsers reach the web client: CHATD_PUBLIC_URL, else HOST and PORT (a wildcard HOST
/// as loopback).
fn site(config: &Config) -> String {
    if let Some(url) = &config.exposure.chatd_public_url {
        return url.as_str().trim_end_matches('/').to_string();
    }
    let host = match config.host.as_str() {
        "0.0.0.0" | "::" | "[::]" => "127.0.0.1",
        host => host,
    };
    match host.parse::<std::net::Ipv6Addr>() {
        Ok(_) => format!("http://[{host}]:{}", config.port),
        Err(_) => format!("http://{host}:{}", config.port),
    }
}

fn shown(person: &PersonRecord) -> String {
    json!({
        "id": person.id,
        "name": person.name,
        "role": person.role,
        "disabled": person.disabled,
        "createdAt": to_millis(&person.created_at),
    })
    .to_string()
}
