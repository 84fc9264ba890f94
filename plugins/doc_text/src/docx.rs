//! DOCX: the text of `word/document.xml`, read as a stream of XML events (nothing is built per
//! element, so deep nesting costs nothing): each paragraph (`w:p`) a paragraph of text, a tab
//! (`w:tab`) a tab, a break (`w:br`, `w:cr`) a new line. The entry is read to at most
//! [`crate::MAX_EXPANDED_BYTES`]: a zip bomb stops there. Word has no fixed pages (they are
//! laid out when shown), so the text has none.

use quick_xml::Reader;
use quick_xml::events::Event;

use crate::Bounded;

/// The document's text.
pub fn text(content: &[u8]) -> Result<String, String> {
    let mut archive = crate::zip_archive(content, "DOCX")?;
    let xml = crate::zip_entry(&mut archive, "word/document.xml", "DOCX")?;
    let mut reader = Reader::from_reader(xml.as_slice());
    let mut out = Bounded::new();
    let mut in_text = false;
    let mut buf = Vec::new();
    loop {
        let event = reader
            .read_event_into(&mut buf)
            .map_err(|e| format!("word/document.xml is not well-formed XML: {e}"))?;
        match event {
            Event::Start(e) if e.local_name().as_ref() == "t" => in_text = true,
            Event::End(e) => match e.local_name().as_ref() {
                "t" => in_text = false,
                "p" => out.push("\n\n")?,
                _ => {}
            },
            Event::Empty(e) => match e.local_name().as_ref() {
                "tab" => out.push("\t")?,
                "br" | "cr" => out.push("\n")?,
                "p" => out.push("\n\n")?,
                _ => {}
            },
            // Entities arrive apart from the text around them (`GeneralRef`).
            Event::Text(t) if in_text => out.push(&t.xml10_content())?,
            Event::GeneralRef(r) if in_text => {
                let name = r.xml10_content();
                let resolved = quick_xml::escape::resolve_predefined_entity(&name)
                    .map(str::to_string)
                    .or_else(|| char_ref(&name).map(String::from));
                if let Some(resolved) = resolved {
                    out.push(&resolved)?;
                }
            }
            Event::Eof => break,
            _ => {}
        }
        buf.clear();
    }
    Ok(out.text.trim().to_string())
}

/// A character reference's character (`#65`, `#x41`).
fn char_ref(name: &str) -> Option<char> {
    let number = name.strip_prefix('#')?;
    let code = match number.strip_prefix('x') {
        Some(hex) => u32::from_str_radix(hex, 16).ok()?,
        None => number.parse().ok()?,
    };
    char::from_u32(code)
}
