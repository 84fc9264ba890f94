//! Values the configuration file's tables share: a key, a base URL, extra headers.

use std::collections::BTreeMap;

use reqwest::header::{HeaderName, HeaderValue};
use url::Url;

use super::Secret;
use super::names::is_host_header;

/// An empty key counts as none, as `KEY=` does in an environment file.
pub fn api_key(raw: Option<String>) -> Option<Secret> {
    raw.filter(|k| !k.trim().is_empty()).map(Secret::new)
}

pub fn base_url(key: &str, text: &str) -> Result<Url, String> {
    match Url::parse(text.trim()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => Ok(url),
        _ => Err(format!("{key}: must be an absolute http(s) URL")),
    }
}

pub fn headers(
    key: &str,
    raw: BTreeMap<String, String>,
) -> Result<Vec<(HeaderName, HeaderValue)>, String> {
    raw.into_iter()
        .map(|(name, value)| {
            let header = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| format!("{key}.headers: {name:?} is not a header name"))?;
            if is_host_header(&header) || header == reqwest::header::AUTHORIZATION {
                return Err(format!(
                    "{key}.headers.{header}: set by the host (a key goes in api_key and auth)"
                ));
            }
            let value = HeaderValue::from_str(&value)
                .map_err(|_| format!("{key}.headers.{header}: not a valid header value"))?;
            Ok((header, value))
        })
        .collect()
}
