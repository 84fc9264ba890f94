//! Documents of each format the library reads, made here byte by byte so the tests need no
//! office suite: a PDF with one text line per page, DOCX and XLSX as the zip files Office
//! writes (deflated entries), and the hostile ones: a PDF whose page expands to gigabytes, a
//! DOCX zip bomb, structures nested 10,000 deep.

use flate2::Compression;
use flate2::write::DeflateEncoder;
use std::io::Write as _;

/// A PDF of one page per text (Helvetica, one line each), with a correct cross-reference
/// table. `extra` is added to each page's dictionary (a hostile structure).
pub fn pdf_with(pages: &[Vec<u8>], extra: &str) -> Vec<u8> {
    // Objects: 1 catalog, 2 pages, 3 font, then each page and its content stream.
    let n = pages.len();
    let kids: Vec<String> = (0..n).map(|i| format!("{} 0 R", 4 + 2 * i)).collect();
    let mut objects: Vec<Vec<u8>> = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!("<< /Type /Pages /Kids [{}] /Count {n} >>", kids.join(" ")).into_bytes(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"
            .to_vec(),
    ];
    for (i, content) in pages.iter().enumerate() {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> >> /Contents {} 0 R {extra}>>",
                5 + 2 * i
            )
            .into_bytes(),
        );
        objects.push(content.clone());
    }
    let mut out = b"%PDF-1.7\n".to_vec();
    let mut offsets = Vec::new();
    for (i, object) in objects.iter().enumerate() {
        offsets.push(out.len());
        out.extend_from_slice(format!("{} 0 obj\n", i + 1).as_bytes());
        out.extend_from_slice(object);
        out.extend_from_slice(b"\nendobj\n");
    }
    let xref = out.len();
    out.extend_from_slice(
        format!("xref\n0 {}\n0000000000 65535 f \n", objects.len() + 1).as_bytes(),
    );
    for offset in offsets {
        out.extend_from_slice(format!("{offset:010} 00000 n \n").as_bytes());
    }
    out.extend_from_slice(
        format!(
            "trailer\n<< /Size {} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n",
            objects.len() + 1
        )
        .as_bytes(),
    );
    out
}

/// A content stream showing `text` (ASCII, no parentheses) on one line.
pub fn text_stream(text: &str) -> Vec<u8> {
    let ops = format!("BT /F1 12 Tf 72 720 Td ({text}) Tj ET");
    let mut out = format!("<< /Length {} >>\nstream\n", ops.len()).into_bytes();
    out.extend_from_slice(ops.as_bytes());
    out.extend_from_slice(b"\nendstream");
    out
}

/// A PDF of one page per text.
pub fn pdf(pages: &[&str]) -> Vec<u8> {
    let streams: Vec<Vec<u8>> = pages.iter().map(|t| text_stream(t)).collect();
    pdf_with(&streams, "")
}

/// Raw deflate of `mib` MiB of `byte`, made without compressing them all: one MiB compressed
/// and fully flushed (byte-aligned, no reference to what came before) is a piece of a deflate
/// stream that may be repeated; an empty final block ends it. About 1 KiB per MiB.
fn deflated_repeat(byte: u8, mib: usize) -> Vec<u8> {
    use flate2::{Compress, FlushCompress};
    let mut c = Compress::new(Compression::best(), false);
    let mut piece = Vec::with_capacity(1 << 16);
    c.compress_vec(&vec![byte; 1 << 20], &mut piece, FlushCompress::Full)
        .unwrap();
    let mut end = Vec::with_capacity(64);
    c.compress_vec(&[], &mut end, FlushCompress::Finish)
        .unwrap();
    let mut out = Vec::with_capacity(piece.len() * mib + end.len());
    for _ in 0..mib {
        out.extend_from_slice(&piece);
    }
    out.extend_from_slice(&end);
    out
}

/// The zlib stream of `mib` MiB of `byte`: [`deflated_repeat`] with zlib's header and Adler-32
/// (computed for constant data in closed form).
fn zlib_repeat(byte: u8, mib: usize) -> Vec<u8> {
    let n = (mib as u128) << 20;
    let c = byte as u128;
    let a = (1 + n * c) % 65521;
    let b = (n + c * n * (n + 1) / 2) % 65521;
    let mut out = vec![0x78, 0xda];
    out.extend_from_slice(&deflated_repeat(byte, mib));
    out.extend_from_slice(&(((b << 16) | a) as u32).to_be_bytes());
    out
}

/// A PDF whose one page's content is `mib` MiB of spaces, deflated (about 1 KiB per MiB).
pub fn pdf_bomb(mib: usize) -> Vec<u8> {
    let packed = zlib_repeat(b' ', mib);
    let mut stream = format!(
        "<< /Length {} /Filter /FlateDecode >>\nstream\n",
        packed.len()
    )
    .into_bytes();
    stream.extend_from_slice(&packed);
    stream.extend_from_slice(b"\nendstream");
    pdf_with(&[stream], "")
}

/// A PDF whose page holds an array nested `depth` deep.
pub fn pdf_nested(depth: usize) -> Vec<u8> {
    let nested = format!("/Deep {}{} ", "[".repeat(depth), "]".repeat(depth));
    pdf_with(&[text_stream("nested")], &nested)
}

/// An entry of a zip file: its name, its deflated bytes, their CRC-32 and their size.
pub struct Entry {
    name: String,
    packed: Vec<u8>,
    crc: u32,
    size: u32,
}

impl Entry {
    pub fn of(name: &str, data: &[u8]) -> Self {
        let mut crc = flate2::Crc::new();
        crc.update(data);
        let mut d = DeflateEncoder::new(Vec::new(), Compression::best());
        d.write_all(data).unwrap();
        Self {
            name: name.into(),
            packed: d.finish().unwrap(),
            crc: crc.sum(),
            size: data.len() as u32,
        }
    }
}

/// A zip file of `entries` (name, bytes), each deflated, as Office writes them.
pub fn zip(entries: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let entries: Vec<Entry> = entries.iter().map(|(n, d)| Entry::of(n, d)).collect();
    zip_entries(&entries)
}

/// A zip file of `entries`.
pub fn zip_entries(entries: &[Entry]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut central = Vec::new();
    for Entry {
        name,
        packed,
        crc,
        size,
    } in entries
    {
        let offset = out.len() as u32;
        let header = |sig: u32, central: bool| {
            let mut h = Vec::new();
            h.extend_from_slice(&sig.to_le_bytes());
            if central {
                h.extend_from_slice(&20u16.to_le_bytes()); // made by
            }
            h.extend_from_slice(&20u16.to_le_bytes()); // needed
            h.extend_from_slice(&0u16.to_le_bytes()); // flags
            h.extend_from_slice(&8u16.to_le_bytes()); // deflate
            h.extend_from_slice(&0u32.to_le_bytes()); // time, date
            h.extend_from_slice(&crc.to_le_bytes());
            h.extend_from_slice(&(packed.len() as u32).to_le_bytes());
            h.extend_from_slice(&size.to_le_bytes());
            h.extend_from_slice(&(name.len() as u16).to_le_bytes());
            h.extend_from_slice(&0u16.to_le_bytes()); // extra
            if central {
                h.extend_from_slice(&[0; 6]); // comment, disk, internal attributes
                h.extend_from_slice(&0u32.to_le_bytes()); // external attributes
                h.extend_from_slice(&offset.to_le_bytes());
            }
            h.extend_from_slice(name.as_bytes());
            h
        };
        out.extend_from_slice(&header(0x0403_4b50, false));
        out.extend_from_slice(packed);
        central.extend_from_slice(&header(0x0201_4b50, true));
    }
    let at = out.len() as u32;
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]); // disks
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&(central.len() as u32).to_le_bytes());
    out.extend_from_slice(&at.to_le_bytes());
    out.extend_from_slice(&0u16.to_le_bytes());
    out
}

const W: &str = "http://schemas.openxmlformats.org/wordprocessingml/2006/main";

const CONTENT_TYPES: &str = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>"#;

/// A DOCX of `xml` as its `word/document.xml`.
pub fn docx_of(xml: Vec<u8>) -> Vec<u8> {
    zip(&[
        ("[Content_Types].xml", CONTENT_TYPES.as_bytes().to_vec()),
        ("word/document.xml", xml),
    ])
}

/// A DOCX of one paragraph per text (XML-escaped here).
pub fn docx(paragraphs: &[&str]) -> Vec<u8> {
    let body: String = paragraphs
        .iter()
        .map(|p| {
            let p = p.replace('&', "&amp;").replace('<', "&lt;");
            format!("<w:p><w:r><w:t xml:space=\"preserve\">{p}</w:t></w:r></w:p>")
        })
        .collect();
    docx_of(
        format!(r#"<?xml version="1.0" encoding="UTF-8"?><w:document xmlns:w="{W}"><w:body>{body}</w:body></w:document>"#)
            .into_bytes(),
    )
}

/// A DOCX whose `word/document.xml` expands to `mib` MiB of `a` (about 1 KiB per MiB). Its
/// CRC-32 is left 0: no reader that stops at its limit gets to check it.
pub fn docx_bomb(mib: usize) -> Vec<u8> {
    zip_entries(&[
        Entry::of("[Content_Types].xml", CONTENT_TYPES.as_bytes()),
        Entry {
            name: "word/document.xml".into(),
            packed: deflated_repeat(b'a', mib),
            crc: 0,
            size: (mib << 20) as u32,
        },
    ])
}

/// An XLSX of one sheet named `sheet` with `rows` (inline strings).
pub fn xlsx(sheet: &str, rows: &[Vec<&str>]) -> Vec<u8> {
    const MAIN: &str = "http://schemas.openxmlformats.org/spreadsheetml/2006/main";
    const REL: &str = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";
    let types = r#"<?xml version="1.0" encoding="UTF-8"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"><Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/><Default Extension="xml" ContentType="application/xml"/><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>"#;
    let rels = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{REL}/officeDocument" Target="xl/workbook.xml"/></Relationships>"#
    );
    let workbook = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><workbook xmlns="{MAIN}" xmlns:r="{REL}"><sheets><sheet name="{sheet}" sheetId="1" r:id="rId1"/></sheets></workbook>"#
    );
    let workbook_rels = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships"><Relationship Id="rId1" Type="{REL}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>"#
    );
    let mut data = String::new();
    for (r, row) in rows.iter().enumerate() {
        data.push_str(&format!("<row r=\"{}\">", r + 1));
        for (c, cell) in row.iter().enumerate() {
            let col = (b'A' + c as u8) as char;
            data.push_str(&format!(
                "<c r=\"{col}{}\" t=\"inlineStr\"><is><t>{cell}</t></is></c>",
                r + 1
            ));
        }
        data.push_str("</row>");
    }
    let sheet_xml = format!(
        r#"<?xml version="1.0" encoding="UTF-8"?><worksheet xmlns="{MAIN}"><sheetData>{data}</sheetData></worksheet>"#
    );
    zip(&[
        ("[Content_Types].xml", types.as_bytes().to_vec()),
        ("_rels/.rels", rels.into_bytes()),
        ("xl/workbook.xml", workbook.into_bytes()),
        ("xl/_rels/workbook.xml.rels", workbook_rels.into_bytes()),
        ("xl/worksheets/sheet1.xml", sheet_xml.into_bytes()),
    ])
}
