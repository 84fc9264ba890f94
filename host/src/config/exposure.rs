//! Who may reach the server, and from where: the `Host` names open mode serves
//! (CHATD_ALLOWED_HOSTS), the browser origins besides the server's own that may change state
//! and use CORS (CHATD_ALLOWED_ORIGINS), and whether open mode may listen on a network address
//! (CHATD_OPEN_ON_NETWORK; [`Exposure::decide`], the one rule on HOST). What a request must
//! show is decided in `http/host.rs` and `http/origin.rs`.

use url::Url;

/// The settings of this file, flattened into [`super::Config`].
#[derive(clap::Args, Clone, Debug, Default)]
pub struct Exposure {
    /// Open mode (no ADMIN_TOKEN) answers only requests whose Host is a loopback name (localhost,
    /// 127.0.0.0/8, [::1]) or one of these names (comma-separated, e.g. chat.lan,192.168.1.5), so
    /// a web page cannot reach it through DNS rebinding. Token mode serves any Host.
    #[arg(long, env = "CHATD_ALLOWED_HOSTS", value_name = "CHATD_ALLOWED_HOSTS", value_delimiter = ',', value_parser = parse_host_name)]
    pub chatd_allowed_hosts: Vec<String>,
    /// Browser origins (`scheme://host[:port]`, comma-separated) that may make state-changing
    /// requests besides the server's own, and that get CORS answers (a frontend hosted
    /// elsewhere). Any other origin is refused with 403, in open and token mode alike.
    #[arg(long, env = "CHATD_ALLOWED_ORIGINS", value_name = "CHATD_ALLOWED_ORIGINS", value_delimiter = ',', value_parser = parse_origin)]
    pub chatd_allowed_origins: Vec<String>,
    /// Serve open mode (no ADMIN_TOKEN) on a non-loopback HOST: `true` or `false`. Without it
    /// such a start is refused; with it every start logs a warning.
    #[arg(long, env = "CHATD_OPEN_ON_NETWORK", value_name = "CHATD_OPEN_ON_NETWORK", default_value = "false", value_parser = super::parse_bool, action = clap::ArgAction::Set)]
    pub chatd_open_on_network: bool,
    /// The URL browsers reach chatd at, behind a proxy or under a path (e.g.
    /// https://chat.example.com/api): MCP logins' redirect URI and login links are made from it,
    /// and the session cookie is Secure when it is https. Unset: from the Host of the request
    /// that begins the login, and links from HOST and PORT.
    #[arg(long, env = "CHATD_PUBLIC_URL", value_name = "CHATD_PUBLIC_URL", value_parser = parse_public_url)]
    pub chatd_public_url: Option<Url>,
}

/// An absolute http(s) URL without user information, query or fragment.
fn parse_public_url(s: &str) -> Result<Url, String> {
    let url = Url::parse(s.trim()).map_err(|e| format!("must be an absolute http(s) URL ({e})"))?;
    let plain = matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none();
    if !plain {
        return Err("must be an http(s) URL without user, query or fragment".into());
    }
    Ok(url)
}

impl Exposure {
    /// Whether the server may listen on `host` in the mode it is in: `Err` is the one line
    /// startup stops with; `Ok(Some(_))` the warning every start logs (open on a network by the
    /// operator's choice). Open mode on a network address serves every route, `/mcp` and the
    /// provider keys' spending included, to whoever reaches the port; the `Host` check is no
    /// defence there (any client may send `Host: 127.0.0.1`).
    pub fn decide(&self, host: &str, token_mode: bool) -> Result<Option<String>, String> {
        if token_mode || is_loopback(host) {
            return Ok(None);
        }
        if self.chatd_open_on_network {
            return Ok(Some(format!(
                "open mode on a network address (HOST={host}, CHATD_OPEN_ON_NETWORK=true): \
                 anyone who reaches this port can use chatd, its provider keys and its tools \
                 without a token"
            )));
        }
        Err(format!(
            "HOST: {host} is not a loopback address and ADMIN_TOKEN is not set: anyone who \
             reaches the port could use chatd, its provider keys and its tools. Set \
             ADMIN_TOKEN, or listen on 127.0.0.1, or set CHATD_OPEN_ON_NETWORK=true to serve \
             open on the network anyway"
        ))
    }
}

/// Whether `host` (HOST: a name or an address, IPv6 maybe in brackets) is loopback only:
/// `localhost` or a loopback address. `0.0.0.0`, `::` and any other name are not.
pub fn is_loopback(host: &str) -> bool {
    let host = host.trim();
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    bare.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn parse_host_name(s: &str) -> Result<String, String> {
    let name = s.trim().to_ascii_lowercase();
    let valid = !name.is_empty()
        && name.len() <= 253
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b':' | b'[' | b']'));
    if valid {
        Ok(name)
    } else {
        Err("each must be a host name or an address, without a scheme, path or port".into())
    }
}

/// An origin as browsers send it in `Origin` (the URL standard's serialisation: lower case, no
/// default port, no trailing slash), or `None` when `text` is not an http(s) origin.
pub fn serialized_origin(text: &str) -> Option<String> {
    let url = Url::parse(text.trim()).ok()?;
    let plain = matches!(url.scheme(), "http" | "https")
        && url.host().is_some()
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && url.query().is_none()
        && url.fragment().is_none();
    plain.then(|| url.origin().ascii_serialization())
}

fn parse_origin(s: &str) -> Result<String, String> {
    let text = s.trim();
    if text == "*" || text.eq_ignore_ascii_case("null") {
        return Err(format!(
            "{text} is not allowed: each must be one origin, scheme://host[:port]"
        ));
    }
    serialized_origin(text)
        .ok_or_else(|| "each must be an origin, http(s)://host[:port], with no path".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exposure(open_on_network: bool) -> Exposure {
        Exposure {
            chatd_open_on_network: open_on_network,
            ..Exposure::default()
        }
    }

    #[test]
    fn open_mode_on_a_network_address_needs_the_opt_in() {
        for loopback in [
            "127.0.0.1",
            "127.0.0.2",
            "::1",
            "[::1]",
            "localhost",
            "LOCALHOST",
        ] {
            assert_eq!(
                exposure(false).decide(loopback, false),
                Ok(None),
                "{loopback}"
            );
        }
        for network in [
            "0.0.0.0",
            "::",
            "[::]",
            "192.168.1.5",
            "chat.lan",
            "localhost.evil",
        ] {
            let refused = exposure(false).decide(network, false).unwrap_err();
            assert!(
                refused.starts_with(&format!("HOST: {network} is not a loopback"))
                    && refused.contains("ADMIN_TOKEN")
                    && refused.contains("CHATD_OPEN_ON_NETWORK=true")
                    && !refused.contains('\n'),
                "{refused}"
            );
            assert_eq!(
                exposure(false).decide(network, true),
                Ok(None),
                "token mode"
            );
            let warning = exposure(true).decide(network, false).unwrap().unwrap();
            assert!(warning.contains("without a token"), "{warning}");
        }
    }

    #[test]
    fn allowed_origins_are_serialized_as_browsers_send_them() {
        assert_eq!(
            parse_origin("HTTPS://App.Example:443/"),
            Ok("https://app.example".into())
        );
        assert_eq!(
            parse_origin(" http://localhost:5173 "),
            Ok("http://localhost:5173".into())
        );
        assert_eq!(
            parse_origin("http://[::1]:8080"),
            Ok("http://[::1]:8080".into())
        );
        for bad in [
            "*",
            "null",
            "app.example",
            "https://app.example/path",
            "ftp://app.example",
            "https://user@app.example",
            "https://app.example/?q",
        ] {
            assert!(parse_origin(bad).is_err(), "{bad}");
        }
    }
}
