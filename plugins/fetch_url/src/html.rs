//! HTML to readable text, and the page title.
//!
//! The text comes from html2text: html5ever parses the page as a browser would (scripts and
//! styles are not text, entities are decoded, broken markup is repaired), and the renderer
//! lays out paragraphs, lists and tables as text, with links as numbered references listed at
//! the end so the model can follow them.

use chatd_plugin_sdk::host::PluginError;

/// Lines are wrapped at this width (long URLs may overflow it).
const WIDTH: usize = 100;
/// The longest title kept.
const MAX_TITLE_CHARS: usize = 300;

/// The page as text; the link references at its end are made absolute against `base` (the
/// page's final URL), so the model can fetch them.
pub fn to_text(html: &str, base: &url::Url) -> Result<String, PluginError> {
    let text = html2text::config::plain()
        .allow_width_overflow()
        .no_link_wrapping()
        .string_from_read(html.as_bytes(), WIDTH)
        .map_err(|e| {
            PluginError::MalformedResponse(format!("the page could not be read as HTML: {e}"))
        })?;
    Ok(resolve_references(&text, base))
}

/// `[3]: /about` → `[3]: https://site/about`. Only reference lines (`[n]: target`) change.
fn resolve_references(text: &str, base: &url::Url) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let resolved = line.strip_prefix('[').and_then(|rest| {
            let (n, target) = rest.split_once("]: ")?;
            if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            let (target, end) = match target.strip_suffix('\n') {
                Some(t) => (t, "\n"),
                None => (target, ""),
            };
            let absolute = base.join(target.trim()).ok()?;
            Some(format!("[{n}]: {absolute}{end}"))
        });
        out.push_str(resolved.as_deref().unwrap_or(line));
    }
    out
}

/// The first `<title>`'s text. Its content is RCDATA in HTML (no elements inside, ends at the
/// first `</title`), so finding it needs no tree; character references are decoded by the
/// same renderer as the body.
pub fn title(html: &str) -> Option<String> {
    let lower = html.to_ascii_lowercase(); // same byte offsets: only ASCII letters change
    let open = lower.find("<title")?;
    let content_start = open + lower[open..].find('>')? + 1;
    let content_end = content_start + lower[content_start..].find("</title")?;
    let raw = &html[content_start..content_end];
    // Escape what could be read as markup, keep the references: the renderer decodes them.
    let escaped = raw.replace('<', "&lt;");
    let text = html2text::config::plain_no_decorate()
        .allow_width_overflow()
        .string_from_read(format!("<p>{escaped}</p>").as_bytes(), usize::MAX / 4)
        .ok()?;
    let title = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if title.is_empty() {
        return None;
    }
    Some(title.chars().take(MAX_TITLE_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scripts_styles_and_markup_are_not_text() {
        let page = r#"<!doctype html><html><head><title>T</title><style>p{color:red}</style>
            <script>var secret = "not text";</script></head>
            <body><h1>Heading</h1><p>Fish &amp; chips, <b>bold</b> and a <a href="https://example.org/x">link</a>.</p>
            <ul><li>one</li><li>two</li></ul><noscript>enable js</noscript></body></html>"#;
        let text = to_text(page, &url::Url::parse("https://site.example/a/b").unwrap()).unwrap();
        assert!(text.contains("Heading"), "{text}");
        assert!(text.contains("Fish & chips"), "{text}");
        assert!(text.contains("https://example.org/x"), "{text}");
        assert!(text.contains("one") && text.contains("two"), "{text}");
        for absent in ["color:red", "not text", "<p>", "<b>"] {
            assert!(!text.contains(absent), "{absent:?} in {text}");
        }
    }

    #[test]
    fn broken_markup_is_repaired_not_refused() {
        let base = url::Url::parse("https://site.example/").unwrap();
        let text = to_text("<p>open <div>nested <p>again</table>", &base).unwrap();
        assert!(
            text.contains("open") && text.contains("nested") && text.contains("again"),
            "{text}"
        );
    }

    #[test]
    fn link_references_become_absolute() {
        let base = url::Url::parse("https://site.example/docs/page.html").unwrap();
        let text = to_text(
            r#"<p><a href="/">Home</a> <a href="next.html">Next</a> <a href="https://other.example/x">X</a></p>"#,
            &base,
        )
        .unwrap();
        assert!(text.ends_with(
            "[1]: https://site.example/\n[2]: https://site.example/docs/next.html\n[3]: https://other.example/x"
        ) || text.ends_with(
            "[1]: https://site.example/\n[2]: https://site.example/docs/next.html\n[3]: https://other.example/x\n"
        ), "{text}");
        assert!(text.starts_with("[Home][1] [Next][2] [X][3]"), "{text}");
        assert_eq!(
            resolve_references("[a]: /x\n[1] not a ref\n", &base),
            "[a]: /x\n[1] not a ref\n"
        );
    }

    #[test]
    fn the_title_is_found_and_decoded() {
        assert_eq!(
            title("<html><HEAD><Title lang=en>Fish &amp; Chips &#8211; A &lt;Guide&gt;</TITLE>")
                .as_deref(),
            Some("Fish & Chips – A <Guide>")
        );
        assert_eq!(title("<title>  a\n  b </title>").as_deref(), Some("a b"));
        assert_eq!(title("<title>1 < 2</title>").as_deref(), Some("1 < 2"));
        assert_eq!(title("<p>no title</p>"), None);
        assert_eq!(title("<title></title>"), None);
    }
}
