//! `chatd mcp login NAME`: logs in to the configured server `[mcp.NAME]` (`auth = "oauth"`)
//! from the command line and keeps the login in the store, sealed, as Connect does: the
//! authorization URL is printed and the browser's redirect comes back to a listener on
//! loopback. Every instance on the database uses the login from then on. On SQLite the
//! database belongs to one process: with the server running, use the web client's Connect.

use std::process::ExitCode;
use std::sync::Arc;

use crate::config::Config;
use crate::egress::Clients;
use crate::store::Store;
use crate::store::logins::LoginKey;
use crate::tools::mcp::oauth::Authorizer;
use crate::tools::mcp::oauth::saved::Keeper;
use crate::tools::mcp::oauth::sealed::SealKey;
use crate::tools::mcp::{KeySource, OneServer};

use super::loopback::Loopback;

/// Where the login of `[mcp.NAME]` is kept: the database, under the sealing key.
pub async fn keeper(config: &Config, name: &str) -> Result<Keeper, String> {
    let key = match crate::server::login_key(config) {
        KeySource::Secret(secret) => SealKey::from_secret(&secret),
        KeySource::Folder(dir) => std::fs::create_dir_all(&dir)
            .and_then(|()| SealKey::from_folder(&dir))
            .map_err(|e| format!("the login's key cannot be kept in {}: {e}", dir.display()))?,
        KeySource::Missing(why) => return Err(format!("mcp.{name}: {why}")),
    };
    let store = Store::open(
        &config.database_url,
        config.database_max_connections,
        std::time::Duration::from_secs(config.database_timeout_secs),
    )
    .await
    .map_err(|e| {
        format!(
            "{e} (with the server running on SQLite, log in from the web client's MCP servers page)"
        )
    })?;
    Ok(Keeper {
        store,
        key: Arc::new(key),
        login: LoginKey::operator(name),
    })
}

pub async fn run(config: &Config, name: &str) -> ExitCode {
    match login(config, name).await {
        Ok(tools) => {
            println!("chatd: logged in to mcp.{name}; it offers {tools} tools");
            ExitCode::SUCCESS
        }
        Err(line) => {
            eprintln!(
                "chatd: {}",
                line.split_whitespace().collect::<Vec<_>>().join(" ")
            );
            ExitCode::FAILURE
        }
    }
}

async fn login(config: &Config, name: &str) -> Result<usize, String> {
    let path = config
        .config
        .as_deref()
        .ok_or("no configuration file (--config, CHATD_CONFIG) declares MCP servers")?;
    let file = crate::config::file::FileConfig::load(path).map_err(|e| e.to_string())?;
    let declared = file
        .mcp
        .get(name)
        .ok_or_else(|| format!("{} declares no [mcp.{name}]", path.display()))?;
    let client = declared
        .oauth
        .clone()
        .ok_or_else(|| format!("mcp.{name} needs no login (it does not say auth = \"oauth\")"))?;
    if declared.per_user {
        return Err(format!(
            "mcp.{name} says per_user = true: each person connects it with their own account \
             from the web client's MCP servers page; the operator holds no login to it"
        ));
    }
    let keeper = keeper(config, name).await?;
    let consent = Loopback::bind()
        .await
        .map_err(|e| format!("cannot listen on loopback for the login's redirect: {e}"))?;
    let clients = Clients::new();
    let url = declared.url.clone();
    let auth = Authorizer::logging_in(
        clients.clone(),
        url.clone(),
        client,
        Arc::new(consent),
        keeper,
        true,
    );
    let auth = Arc::new(auth);
    let server = OneServer::new(&clients, url, Some(auth.clone()));
    let tools = server.tools().await?;
    if auth.current().is_none() {
        return Err(format!(
            "mcp.{name} asked for no login; its tools are reached without one"
        ));
    }
    Ok(tools.len())
}
