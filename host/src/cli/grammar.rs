//! The binary's grammar: the settings ([`Config`], flags and variables) and the operator
//! commands, each handled by a file of its own beside this one.

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser};

use crate::config::{Config, ConfigError};

/// `chatd [SETTINGS] [COMMAND]`: without a command, chatd serves.
#[derive(Parser, Debug)]
#[command(
    name = "chatd",
    version,
    about = "Self-hosted backend for chat and web search with LLMs"
)]
pub struct Cli {
    #[command(flatten)]
    pub config: Config,
    #[command(subcommand)]
    pub command: Option<Command>,
}

impl Cli {
    /// The process's command line and environment, parsed and checked. `Err` holds the one
    /// line to print before exiting; help and version requests are `Err(ConfigError::Exit)`.
    pub fn load() -> Result<Self, ConfigError> {
        Self::from_args(std::env::args_os())
    }

    pub fn from_args<I, T>(args: I) -> Result<Self, ConfigError>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = Self::command()
            .try_get_matches_from(args)
            .map_err(ConfigError::from_clap)?;
        let Cli { config, command } =
            Self::from_arg_matches(&matches).map_err(ConfigError::from_clap)?;
        let config = config.finish(&matches)?;
        // Serving, or saying whether startup would: the other commands listen on nothing.
        if matches!(command, None | Some(Command::Config(ConfigCommand::Check))) {
            config
                .exposure
                .decide(&config.host, config.token_mode())
                .map_err(ConfigError::Invalid)?;
        }
        Ok(Self { config, command })
    }
}

/// Operator commands; without one, chatd serves.
#[derive(clap::Subcommand, Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Inspect plugins without starting the server.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// Check the configuration without starting the server.
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Reach MCP servers from the command line.
    #[command(subcommand)]
    Mcp(McpCommand),
    /// Manage people and their first keys (token mode only; docs/teams.md).
    #[command(subcommand)]
    Users(UsersCommand),
    /// Write every chat (messages and attachments), search, star, call, person and key (its
    /// hash) of DATABASE_URL's database to stdout as JSON Lines, from one snapshot; safe beside
    /// a running server.
    Export,
    /// Read an export into DATABASE_URL's database (migrated first), in one transaction: a row
    /// whose id exists there stops it, and nothing is stored.
    Import {
        /// The export (`-`: stdin).
        file: PathBuf,
        /// Skip rows whose id exists instead of stopping.
        #[arg(long)]
        skip_existing: bool,
    },
    /// Copy a live SQLite database to FILE (consistent and compacted; FILE must not exist).
    Backup {
        /// The copy to write.
        file: PathBuf,
    },
}

#[derive(clap::Subcommand, Clone, Debug, PartialEq, Eq)]
pub enum UsersCommand {
    /// Adds a person and prints one JSON line `{id, name, role, key}`: the key (every scope the
    /// role allows) is shown this once. Exit 2 when the name is taken or not a plain word.
    Add {
        /// 1 to 64 letters, digits, `.`, `_`, `-` or `@`.
        name: String,
        /// `admin` (manages people and budgets) or `member`.
        #[arg(long, default_value = "member", value_parser = parse_role)]
        role: crate::vocabulary::PersonRole,
    },
    /// Prints every person, one JSON line each (the built-in admin first).
    List,
    /// Refuses every key of the person NAME (on a running server within a second).
    Disable { name: String },
    /// Lets the person NAME's keys work again.
    Enable { name: String },
    /// Prints one JSON line `{name, link, expiresAt}`: a link that signs NAME in to the web
    /// client, once, within 15 minutes (made from CHATD_PUBLIC_URL, else HOST and PORT).
    LoginLink { name: String },
}

#[derive(clap::Subcommand, Clone, Debug, PartialEq, Eq)]
pub enum ConfigCommand {
    /// Validate the environment and the configuration file as startup would, then print the
    /// effective settings, providers, services, MCP servers and plugins, keys redacted. Exit 0
    /// when startup would accept them, 2 when not.
    Check,
}

#[derive(clap::Subcommand, Clone, Debug, PartialEq, Eq)]
pub enum McpCommand {
    /// Connects to the MCP server at URL as chatd's server does (its HTTP under the sandbox's
    /// rules, a login when it asks for one), prints its tools (name, tab, description), and
    /// calls TOOL with ARGS_JSON when given, printing its result. Exit 0 on success, 1 with one
    /// line on stderr on failure. A login is approved at once when the authorization server
    /// does so; otherwise its URL is printed and chatd waits for the browser's redirect on
    /// loopback. Its tokens are kept for this command only, unless URL is a configured server's
    /// with `auth = "oauth"`: then that server's kept login is used, and one made here kept.
    Call {
        /// The server's streamable HTTP endpoint.
        url: String,
        /// A tool to call.
        tool: Option<String>,
        /// Its arguments, a JSON object.
        args: Option<String>,
        /// A client registered with the authorization server beforehand.
        #[arg(long)]
        client_id: Option<String>,
        /// The pre-registered client's secret.
        #[arg(long, requires = "client_id")]
        client_secret: Option<String>,
        /// An https URL serving this client's metadata document (the client id, where the
        /// authorization server takes such documents).
        #[arg(long)]
        client_metadata_url: Option<String>,
        /// Scopes to ask for when the server names none (space-separated).
        #[arg(long)]
        scopes: Option<String>,
    },
    /// Logs in to the configured MCP server [mcp.NAME] (`auth = "oauth"`) and keeps the login
    /// in the database, sealed, for every instance: prints the authorization URL and waits for
    /// the browser's redirect on loopback. On SQLite, with the server running, use the web
    /// client's MCP servers page instead.
    Login {
        /// The server's name in the configuration file.
        name: String,
    },
}

/// What `chatd plugins new` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum NewKind {
    Tool,
    Provider,
}

/// The language of a `chatd plugins new` project.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum PluginLang {
    Rust,
    Python,
    Js,
}

#[derive(clap::Subcommand, Clone, Debug, PartialEq, Eq)]
pub enum PluginsCommand {
    /// The plugins this configuration loads: id, kind, version, grants, source.
    List,
    /// Validates a component and its manifest (`FILE.wasm` and `FILE.json`).
    Check {
        /// The component (`.wasm`) or its manifest (`.json`); the other is beside it.
        file: PathBuf,
    },
    /// Runs one tool of a component once, outside the server, with the grants this
    /// configuration gives it: the result on stdout, the plugin's log on stderr, then the
    /// call's duration and memory.
    Call {
        /// The component (`.wasm`); its manifest beside it or inside it.
        file: PathBuf,
        /// The tool to run (one of those the component describes).
        #[arg(long)]
        tool: String,
        /// Its arguments, a JSON object.
        #[arg(long, default_value = "{}")]
        args: String,
        /// Run it with only these of the grants its manifest asks for (repeatable):
        /// `http:ORIGIN`, `service:NAME`, `config:KEY`, `public-web`, `ssh`, or `none`. Without
        /// it, all of them (as the configuration decides).
        #[arg(long = "grant", value_name = "GRANT")]
        grants: Vec<String>,
    },
    /// Installs a one-file plugin into PLUGINS_DIR from a path or an https:// URL, recording
    /// its SHA-256 in the lock file (CHATD_DATA_DIR/plugins.lock); an update that asks for a
    /// grant its installed version lacks is held (exit 3) until `chatd plugins accept ID`.
    Install {
        /// The component (`.wasm`, its manifest inside): a path or an https:// URL (http:// on
        /// loopback only). Its signature is SOURCE.minisig when there is one.
        source: String,
    },
    /// Accepts a held update: its new grants, shown by `chatd plugins list`.
    Accept {
        /// The plugin's id.
        id: String,
    },
    /// Writes a plugin project to start from: its code, its manifest, a test, a README.
    New {
        /// A tool or a provider.
        #[arg(value_enum)]
        kind: NewKind,
        /// Its id, tool name and folder name ([a-z][a-z0-9_]*).
        name: String,
        /// Its language (providers: rust).
        #[arg(long, value_enum, default_value_t = PluginLang::Rust)]
        lang: PluginLang,
        /// Where the project's folder is made.
        #[arg(long, default_value = ".")]
        dir: PathBuf,
        /// A checkout of chatd's plugin SDK (`plugin-sdk/`) for a Rust project to depend on by
        /// path; by version otherwise.
        #[arg(long)]
        sdk_path: Option<PathBuf>,
    },
    /// Makes a plugin one file: the manifest, checked, appended to the component as its
    /// `chatd-manifest` section (for toolchains that cannot embed it: Python, JavaScript).
    Pack {
        /// The component (`.wasm`) as its toolchain built it.
        component: PathBuf,
        /// The manifest (JSON).
        #[arg(long)]
        manifest: PathBuf,
        /// Where to write the one-file plugin (replaced whole if it exists).
        #[arg(long, short)]
        out: PathBuf,
    },
}

/// `chatd users add --role`'s words.
fn parse_role(value: &str) -> Result<crate::vocabulary::PersonRole, String> {
    value
        .parse()
        .map_err(|_| format!("must be admin or member (got {value:?})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Option<Command> {
        Cli::from_args(std::iter::once("chatd").chain(args.iter().copied()))
            .unwrap()
            .command
    }

    #[test]
    fn the_operator_commands_parse() {
        assert_eq!(
            parse(&["plugins", "check", "x.wasm"]),
            Some(Command::Plugins(PluginsCommand::Check {
                file: PathBuf::from("x.wasm")
            }))
        );
        assert!(parse(&[]).is_none());
        assert_eq!(
            parse(&["config", "check", "--config", "x.toml"]),
            Some(Command::Config(ConfigCommand::Check))
        );
        assert_eq!(
            parse(&["import", "--skip-existing", "-"]),
            Some(Command::Import {
                file: PathBuf::from("-"),
                skip_existing: true
            })
        );
        assert_eq!(parse(&["export"]), Some(Command::Export));
    }

    #[test]
    fn open_mode_on_a_network_address_is_refused_only_where_chatd_would_listen() {
        let refused = |args: &[&str]| {
            Cli::from_args(
                ["chatd", "--host", "0.0.0.0"]
                    .iter()
                    .chain(args.iter())
                    .copied(),
            )
            .is_err()
        };
        assert!(refused(&[]));
        assert!(refused(&["config", "check"]));
        assert!(!refused(&["export"]));
        assert!(!refused(&["plugins", "list"]));
    }
}
