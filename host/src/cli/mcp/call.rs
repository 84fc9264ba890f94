//! `chatd mcp call URL [TOOL [ARGS_JSON]]`: reaches the MCP server at URL with the client code
//! the server uses (its session, its HTTP under the sandbox's rules, its login), lists its
//! tools, and calls TOOL when given. A server that asks for a login gets one: approved at once
//! when its authorization server does so, else by a person at the printed URL. The tokens live
//! as long as the command, unless URL is a configured server's (`auth = "oauth"`): then its
//! kept login is used, and a login made here is kept for it.

use std::process::ExitCode;
use std::sync::Arc;

use crate::config::mcp::OAuthClient;
use crate::config::{Config, Secret};
use crate::egress::Clients;
use crate::tools::mcp::OneServer;
use crate::tools::mcp::oauth::Authorizer;

use super::loopback::Loopback;

/// What `chatd mcp call` was asked.
pub struct Call<'a> {
    pub url: &'a str,
    pub tool: Option<&'a str>,
    pub args: Option<&'a str>,
    pub client: OAuthClient,
}

pub async fn run(config: &Config, call: Call<'_>) -> ExitCode {
    match reach(config, call).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(line) => {
            let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
            eprintln!("chatd: {line}");
            ExitCode::FAILURE
        }
    }
}

async fn reach(config: &Config, call: Call<'_>) -> Result<(), String> {
    let url = crate::config::values::base_url("URL", call.url)?;
    let args = call.args.unwrap_or("{}");
    if !matches!(serde_json::from_str(args), Ok(serde_json::Value::Object(_))) {
        return Err("ARGS_JSON: a JSON object is required".into());
    }
    let clients = Clients::new();
    let consent = Loopback::bind()
        .await
        .map_err(|e| format!("cannot listen on loopback for the login's redirect: {e}"))?;
    let consent = Arc::new(consent);
    // A configured server's login is the server's: used, and kept when made here.
    let auth = match configured_server(config, &url) {
        Some((name, client)) => {
            let keeper = super::login::keeper(config, &name).await?;
            Authorizer::logging_in(clients.clone(), url.clone(), client, consent, keeper, false)
        }
        None => Authorizer::new(clients.clone(), url.clone(), call.client, consent),
    };
    let server = OneServer::new(&clients, url, Some(Arc::new(auth)));
    let tools = server.tools().await?;
    for (name, about) in &tools {
        let about = about.lines().next().unwrap_or_default();
        println!("{name}\t{about}");
    }
    let Some(tool) = call.tool else {
        return Ok(());
    };
    let outcome = server.call(tool, args).await?;
    println!("{}", outcome.text);
    if outcome.is_error {
        let first = outcome.text.lines().next().unwrap_or_default();
        return Err(format!("tool {tool} failed: {first}"));
    }
    Ok(())
}

/// The configured server whose URL is `url` and that needs a login: its name and client.
fn configured_server(config: &Config, url: &url::Url) -> Option<(String, OAuthClient)> {
    let path = config.config.as_deref()?;
    let file = crate::config::file::FileConfig::load(path).ok()?;
    file.mcp
        .into_iter()
        // A `per_user` server's logins are each person's: one made here is kept in memory.
        .find(|(_, server)| server.url == *url && !server.per_user)
        .and_then(|(name, server)| Some((name, server.oauth?)))
}

/// The client given on the command line.
pub fn configured(
    client_id: Option<&str>,
    client_secret: Option<&str>,
    client_metadata_url: Option<&str>,
    scopes: Option<&str>,
) -> OAuthClient {
    OAuthClient {
        client_id: client_id.map(str::to_string),
        client_secret: client_secret.map(|s| Secret::new(s.to_string())),
        scopes: scopes.map(str::to_string),
        client_metadata_url: client_metadata_url.map(str::to_string),
    }
}
