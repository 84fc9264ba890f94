//! chatd's bundled `fetch_url` tool: fetches a page the way a browser navigates to it and gives
//! the model readable text.
//!
//! - [`fetch`]: the request (browser navigation headers) and the body, read up to a cap.
//! - [`content`]: what the body is (HTML, text, or binary, which is refused) and its charset.
//! - [`html`]: HTML to text with a real parser (html5ever, through html2text), and the title.
//!
//! The host decides what may be fetched: this plugin is granted the public web, so loopback,
//! private, link-local and metadata addresses are refused by the host (on every redirect too)
//! unless the operator set CHATD_ALLOW_PRIVATE_NETWORKS.

mod content;
mod fetch;
mod html;

use chatd_plugin_sdk::host::{PluginError, ToolSpec};
use chatd_plugin_sdk::json::{optional_u64, parse_object, required_str};
use chatd_plugin_sdk::tool::{Tool, ToolOutput};

use content::Kind;

/// Characters of text returned when the model does not say.
const DEFAULT_MAX_CHARS: u64 = 20_000;
/// The most characters one call may ask for.
const MAX_CHARS: u64 = 100_000;
/// The fewest characters one call may ask for.
const MIN_CHARS: u64 = 500;

struct FetchUrl;

impl Tool for FetchUrl {
    fn describe() -> Vec<ToolSpec> {
        vec![ToolSpec {
            name: "fetch_url".into(),
            description: "Fetch a web page or text file by URL and return its readable text \
                          (HTML is converted to plain text; links are listed as numbered \
                          references). Binary files such as images and PDFs are refused."
                .into(),
            parameters_schema_json: serde_json::json!({
                "type": "object",
                "properties": {
                    "url": {
                        "type": "string",
                        "description": "The http or https URL to fetch."
                    },
                    "maxChars": {
                        "type": "integer",
                        "minimum": MIN_CHARS,
                        "maximum": MAX_CHARS,
                        "description": format!("The most characters of text to return (default {DEFAULT_MAX_CHARS}).")
                    }
                },
                "required": ["url"],
                "additionalProperties": false
            })
            .to_string(),
        }]
    }

    fn invoke(name: String, arguments_json: String) -> Result<ToolOutput, PluginError> {
        if name != "fetch_url" {
            return Err(chatd_plugin_sdk::unsupported(&format!("the tool {name:?}")));
        }
        let args = parse_object(&arguments_json)?;
        let url = parse_url(required_str(&args, "url")?)?;
        let max_chars = match optional_u64(&args, "maxChars")? {
            None => DEFAULT_MAX_CHARS,
            Some(n) if (MIN_CHARS..=MAX_CHARS).contains(&n) => n,
            Some(_) => {
                return Err(PluginError::InvalidInput(format!(
                    "maxChars: must be from {MIN_CHARS} to {MAX_CHARS}"
                )));
            }
        } as usize;

        let page = fetch::get(&url)?;
        let kind = content::classify(page.content_type.as_deref(), &page.body);
        let (title, text) = match kind {
            Kind::Binary(what) => {
                return Err(PluginError::InvalidInput(format!(
                    "{} is {what}, not a web page or text; fetch_url reads HTML and text only",
                    page.url
                )));
            }
            Kind::Html => {
                let decoded = content::decode(page.content_type.as_deref(), &page.body, true);
                let base = url::Url::parse(&page.url).unwrap_or(url);
                (html::title(&decoded), html::to_text(&decoded, &base)?)
            }
            Kind::Text => (
                None,
                content::decode(page.content_type.as_deref(), &page.body, false),
            ),
        };
        Ok(render(&page, title, &text, max_chars))
    }
}

fn parse_url(raw: &str) -> Result<url::Url, PluginError> {
    let url = url::Url::parse(raw.trim())
        .map_err(|e| PluginError::InvalidInput(format!("url: {raw:?} is not a URL ({e})")))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(PluginError::InvalidInput(format!(
            "url: only http and https URLs can be fetched, not {}:",
            url.scheme()
        )));
    }
    Ok(url)
}

fn render(page: &fetch::Page, title: Option<String>, text: &str, max_chars: usize) -> ToolOutput {
    let text = tidy(text);
    let total = text.chars().count();
    let mut out = String::new();
    if let Some(title) = &title {
        out.push_str(&format!("Title: {title}\n"));
    }
    out.push_str(&format!("URL: {}\n\n", page.url));
    if total > max_chars {
        out.extend(text.chars().take(max_chars));
        out.push_str(&format!(
            "\n\n[cut at {max_chars} of {total} characters; call again with a larger maxChars \
             (at most {MAX_CHARS}) for more]"
        ));
    } else {
        out.push_str(&text);
    }
    if page.truncated {
        out.push_str(&format!(
            "\n\n[the page is larger than {} KiB; only its beginning was read]",
            fetch::MAX_BODY_BYTES / 1024
        ));
    }
    let summary = match &title {
        Some(title) => format!("Fetched \"{title}\" ({total} characters)"),
        None => format!("Fetched {} ({total} characters)", page.url),
    };
    ToolOutput {
        content: out,
        summary: Some(summary),
    }
}

/// Trailing spaces off every line, no more than one blank line in a row.
fn tidy(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank_run = 0;
    for line in text.trim().lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank_run += 1;
            if blank_run > 1 {
                continue;
            }
        } else {
            blank_run = 0;
        }
        out.push_str(line);
        out.push('\n');
    }
    out.trim_end().to_string()
}

chatd_plugin_sdk::export_tool!(FetchUrl);

#[cfg(test)]
mod tests {
    use super::*;

    fn page(truncated: bool) -> fetch::Page {
        fetch::Page {
            url: "https://example.org/a".into(),
            content_type: None,
            body: Vec::new(),
            truncated,
        }
    }

    #[test]
    fn output_is_titled_tidied_and_cut_with_a_marker() {
        let out = render(&page(false), Some("T".into()), "a  \n\n\n\nb\n", 1000);
        assert_eq!(
            out.content,
            "Title: T\nURL: https://example.org/a\n\na\n\nb"
        );
        assert_eq!(out.summary.as_deref(), Some("Fetched \"T\" (4 characters)"));

        let long = "é".repeat(600);
        let out = render(&page(true), None, &long, 500);
        assert!(out.content.starts_with(&format!(
            "URL: https://example.org/a\n\n{}\n\n[cut at 500 of 600 characters",
            "é".repeat(500)
        )));
        assert!(out.content.ends_with("only its beginning was read]"));
    }

    #[test]
    fn only_web_urls() {
        assert!(parse_url("https://example.org/x?y=1").is_ok());
        for bad in [
            "file:///etc/passwd",
            "ftp://example.org/",
            "not a url",
            "javascript:alert(1)",
        ] {
            assert!(
                matches!(parse_url(bad), Err(PluginError::InvalidInput(_))),
                "{bad}"
            );
        }
    }
}
