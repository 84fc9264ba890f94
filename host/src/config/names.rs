//! The shapes the configuration file shares with the plugin host, kept here so the file can be
//! checked without the plugin host: the one name rule, the headers only the host sets, and how a
//! service's key goes on the wire.

use reqwest::header::HeaderName;

/// Whether `text` is 1 to 64 bytes of lower-case ASCII letters, digits, `_` and the bytes of
/// `also`: the one shape of the names plugins and operators give (ids `[a-z0-9_-]`, tool and
/// setting names `[a-z0-9_]`).
pub fn is_name(text: &str, also: &[u8]) -> bool {
    (1..=64).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || also.contains(&b))
}

/// Ids of providers, services and plugins: `[a-z0-9_-]{1,64}`, as plugin ids.
pub fn check_id(key: &str, id: &str) -> Result<(), String> {
    if is_name(id, b"-") {
        Ok(())
    } else {
        Err(format!("{key}: the name must match [a-z0-9_-]{{1,64}}"))
    }
}

/// Headers a plugin may not set: the host owns the connection, the framing and the content
/// coding (it asks for compressed bodies and decodes them; a plugin asking itself would get
/// undecoded bytes past the size cap's reach).
const HOST_HEADERS: &[&str] = &[
    "host",
    "accept-encoding",
    "content-length",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
];

/// Whether the host sets `name` itself (a plugin may not, nor may an operator's service).
pub fn is_host_header(name: &HeaderName) -> bool {
    HOST_HEADERS.contains(&name.as_str())
}

/// How a service's key goes on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Auth {
    /// `Authorization: Bearer <key>`.
    Bearer,
    /// The bare key as the value of this header (`x-api-key`, Azure's `api-key`).
    Header(HeaderName),
    /// The key as this query parameter (`?key=…`), for upstreams that take it there.
    Query(String),
    /// No credential, even when a key is set.
    None,
}

impl Auth {
    /// `bearer`, `header:NAME`, `query:NAME` or `none`, as the configuration file writes it.
    pub fn parse(text: &str) -> Result<Self, String> {
        match text.trim() {
            "bearer" => Ok(Auth::Bearer),
            "none" => Ok(Auth::None),
            other => {
                // The value is not echoed: `${VAR}` may have put a key here by mistake.
                if let Some(name) = other.strip_prefix("query:") {
                    let name = name.trim();
                    let valid = !name.is_empty()
                        && name.len() <= 64
                        && name
                            .bytes()
                            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                    if !valid {
                        return Err(
                            "query:NAME must name a parameter ([A-Za-z0-9_-], 1 to 64)".into()
                        );
                    }
                    return Ok(Auth::Query(name.to_string()));
                }
                let name = other
                    .strip_prefix("header:")
                    .ok_or("must be bearer, header:NAME, query:NAME or none")?;
                let header = HeaderName::from_bytes(name.trim().as_bytes())
                    .map_err(|_| "header:NAME must name a valid header".to_string())?;
                if is_host_header(&header) {
                    return Err(format!("{header} is a header the host sets itself"));
                }
                Ok(Auth::Header(header))
            }
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Auth::Bearer => "bearer".into(),
            Auth::Header(name) => format!("header {name}"),
            Auth::Query(name) => format!("query parameter {name}"),
            Auth::None => "none".into(),
        }
    }
}
