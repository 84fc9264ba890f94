//! A `WWW-Authenticate: Bearer …` challenge (RFC 6750 §3, RFC 9728 §5.1): where the server's
//! protected resource metadata is, the scope it asks for, and why it refused.

/// What a server's refusal says about how to be let in.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Challenge {
    /// `resource_metadata`: the protected resource metadata's URL (RFC 9728).
    pub resource_metadata: Option<String>,
    /// `scope`: the scopes the request needs, space-separated.
    pub scope: Option<String>,
    /// `error`: `invalid_token`, `insufficient_scope`, ….
    pub error: Option<String>,
}

impl Challenge {
    /// The `Bearer` challenge among `headers` (each a `WWW-Authenticate` value, which may hold
    /// several challenges); an empty one when there is none, as a bare 401 is.
    pub fn from_headers<'a>(headers: impl IntoIterator<Item = &'a str>) -> Self {
        headers.into_iter().find_map(bearer).unwrap_or_default()
    }

    /// Whether the server refused for want of scope (a 403 that asks for a step-up).
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }
}

/// The `Bearer` challenge's parameters in one header value, if it holds one.
fn bearer(value: &str) -> Option<Challenge> {
    let mut rest = value.trim_start();
    loop {
        let (scheme, after) = token(rest);
        if scheme.is_empty() {
            return None;
        }
        let (params, after) = params(after);
        if scheme.eq_ignore_ascii_case("bearer") {
            let mut challenge = Challenge::default();
            for (name, value) in params {
                let slot = match name.to_ascii_lowercase().as_str() {
                    "resource_metadata" => &mut challenge.resource_metadata,
                    "scope" => &mut challenge.scope,
                    "error" => &mut challenge.error,
                    _ => continue,
                };
                slot.get_or_insert(value);
            }
            return Some(challenge);
        }
        rest = after.trim_start_matches([' ', ',']);
    }
}

/// A token (RFC 9110 §5.6.2) at the start of `text`, and what follows it.
fn token(text: &str) -> (&str, &str) {
    let end = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)))
        .unwrap_or(text.len());
    (&text[..end], &text[end..])
}

/// The `name=value` parameters after a scheme, up to the next scheme; values quoted or not.
fn params(mut text: &str) -> (Vec<(String, String)>, &str) {
    let mut params = Vec::new();
    loop {
        let start = text.trim_start_matches([' ', ',', '\t']);
        let (name, after) = token(start);
        let after_name = after.trim_start();
        if name.is_empty() || !after_name.starts_with('=') {
            // Not a parameter: the next challenge's scheme (or the end).
            return (params, start);
        }
        let after_eq = after_name[1..].trim_start();
        let (value, after_value) = match after_eq.strip_prefix('"') {
            Some(quoted) => quoted_string(quoted),
            None => {
                let (value, after) = token(after_eq);
                (value.to_string(), after)
            }
        };
        params.push((name.to_string(), value));
        text = after_value;
    }
}

/// A quoted string's content (after its opening quote), unescaped, and what follows it.
fn quoted_string(text: &str) -> (String, &str) {
    let mut value = String::new();
    let mut chars = text.char_indices();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return (value, &text[i + 1..]),
            '\\' => {
                if let Some((_, escaped)) = chars.next() {
                    value.push(escaped);
                }
            }
            c => value.push(c),
        }
    }
    (value, "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_challenge_gives_its_metadata_scope_and_error() {
        let c = Challenge::from_headers([
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp", scope="files:read files:write", error="insufficient_scope""#,
        ]);
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert!(c.insufficient_scope());
    }

    #[test]
    fn other_schemes_unquoted_values_and_escapes_are_read() {
        let c = Challenge::from_headers([
            r#"Basic realm="x, y", Bearer error=invalid_token, scope="a \"b\"""#,
        ]);
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
        assert_eq!(c.scope.as_deref(), Some(r#"a "b""#));
        assert_eq!(c.resource_metadata, None);
        let second = Challenge::from_headers(["Basic realm=x", "bearer scope=read"]);
        assert_eq!(second.scope.as_deref(), Some("read"));
    }

    #[test]
    fn no_bearer_challenge_is_an_empty_one() {
        assert_eq!(Challenge::from_headers([]), Challenge::default());
        assert_eq!(
            Challenge::from_headers(["Basic realm=\"x\""]),
            Challenge::default()
        );
        assert_eq!(Challenge::from_headers(["Bearer"]), Challenge::default());
        assert_eq!(Challenge::from_headers(["Bearer ="]), Challenge::default());
    }
}
