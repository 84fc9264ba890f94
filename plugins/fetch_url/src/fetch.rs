//! The request, shaped like a browser's top-level navigation (some sites serve other clients an
//! error or a bot wall), and the body, read until [`MAX_BODY_BYTES`]: past that the rest is
//! left unread and the result says it was cut. Compression is the host's business (it asks for
//! and decodes gzip, deflate and brotli), so no `accept-encoding` here.

use chatd_plugin_sdk::host::{PluginError, Request, UpstreamError};

/// The most body bytes read (after decompression).
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// The whole exchange's time limit.
const TIMEOUT_MS: u32 = 20_000;

/// What a browser sends when the user types the address.
pub const NAVIGATION_HEADERS: &[(&str, &str)] = &[
    (
        "user-agent",
        "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) \
         Chrome/131.0.0.0 Safari/537.36",
    ),
    (
        "accept",
        "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,\
         image/apng,*/*;q=0.8",
    ),
    ("accept-language", "en-US,en;q=0.9"),
    ("upgrade-insecure-requests", "1"),
    ("sec-fetch-dest", "document"),
    ("sec-fetch-mode", "navigate"),
    ("sec-fetch-site", "none"),
    ("sec-fetch-user", "?1"),
];

pub struct Page {
    /// The final URL, after redirects.
    pub url: String,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
    /// True when the body was longer than [`MAX_BODY_BYTES`].
    pub truncated: bool,
}

pub fn get(url: &url::Url) -> Result<Page, PluginError> {
    let mut response = Request::get(url.as_str())
        .headers(NAVIGATION_HEADERS.iter().copied())
        .timeout_ms(TIMEOUT_MS)
        .send()
        .map_err(chatd_plugin_sdk::transport_error)?;
    let status = response.status();
    let final_url = response.url();
    if !(200..300).contains(&status) {
        return Err(PluginError::Upstream(UpstreamError {
            status,
            message: format!("{final_url} answered HTTP {status}"),
        }));
    }
    let content_type = response.header("content-type");
    let mut body = Vec::new();
    let mut truncated = false;
    while let Some(chunk) = response
        .next_chunk()
        .map_err(chatd_plugin_sdk::transport_error)?
    {
        let room = MAX_BODY_BYTES - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            truncated = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Page {
        url: final_url,
        content_type,
        body,
        truncated,
    })
}
