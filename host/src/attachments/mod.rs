//! Attachments on user messages: the policy that turns the accepted shape into the stored one
//! (the contract's Limits table; both shapes are in [`wire`]). Images are judged by their decoded
//! bytes (magic numbers), not by the mimeType a client claims.
//!
//! "MB" in the contract is taken as MiB (1,048,576 bytes) throughout.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

mod wire;
pub use wire::{Attachment, AttachmentInput};

pub const MIB: usize = 1024 * 1024;
pub const MAX_ATTACHMENTS_PER_MESSAGE: usize = 8;
pub const MAX_IMAGE_BYTES: usize = 6 * MIB;
pub const MAX_TEXT_SOURCE_BYTES: u64 = 8 * MIB as u64;
pub const MAX_TEXT_CHARS: usize = 200_000;

/// A rejected attachment list: the field (`messages[2].attachments[0].dataUrl`) and its rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {rule}")]
pub struct AttachmentError {
    pub field: String,
    pub rule: String,
}

impl AttachmentError {
    fn new(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Self {
            field: field.into(),
            rule: rule.into(),
        }
    }
}

/// Checks a message's attachment count (all sources together). `field` names the list.
pub fn check_count(count: usize, field: &str) -> Result<(), AttachmentError> {
    if count > MAX_ATTACHMENTS_PER_MESSAGE {
        return Err(AttachmentError::new(
            field,
            format!("at most {MAX_ATTACHMENTS_PER_MESSAGE} attachments per message (got {count})"),
        ));
    }
    Ok(())
}

/// Checks each attachment against the contract's limits. `field` is the JSON path of the list
/// (for example `messages[2].attachments`), used in error messages.
pub fn validate_each(
    inputs: Vec<AttachmentInput>,
    field: &str,
) -> Result<Vec<Attachment>, AttachmentError> {
    inputs
        .into_iter()
        .enumerate()
        .map(|(i, input)| validate_one(input, &format!("{field}[{i}]")))
        .collect()
}

/// One list: count, then each item.
pub fn validate(
    inputs: Vec<AttachmentInput>,
    field: &str,
) -> Result<Vec<Attachment>, AttachmentError> {
    check_count(inputs.len(), field)?;
    validate_each(inputs, field)
}

fn validate_one(input: AttachmentInput, field: &str) -> Result<Attachment, AttachmentError> {
    match input {
        AttachmentInput::Image {
            id,
            filename,
            mime_type,
            data_url,
            ..
        } => image(id, filename, mime_type, &data_url, field),
        AttachmentInput::Text {
            id,
            filename,
            mime_type,
            size_bytes,
            text,
            truncated,
        } => {
            let chars = text.chars().count();
            if chars > MAX_TEXT_CHARS {
                return Err(AttachmentError::new(
                    format!("{field}.text"),
                    format!(
                        "at most {MAX_TEXT_CHARS} characters (got {chars}); truncate it and set truncated"
                    ),
                ));
            }
            let size_bytes = size_bytes.unwrap_or(text.len() as u64);
            if size_bytes > MAX_TEXT_SOURCE_BYTES {
                return Err(AttachmentError::new(
                    format!("{field}.sizeBytes"),
                    format!(
                        "a text attachment's source is at most 8 MiB ({MAX_TEXT_SOURCE_BYTES} bytes)"
                    ),
                ));
            }
            Ok(Attachment::Text {
                id: id_or_new(id),
                filename: non_blank(filename).unwrap_or_else(|| "attachment.txt".into()),
                mime_type: non_blank(mime_type).unwrap_or_else(|| "text/plain".into()),
                size_bytes,
                text,
                truncated: truncated.unwrap_or(false),
            })
        }
    }
}

/// An image attachment: its data decoded and sniffed, every claim about its type checked
/// against what the bytes are.
fn image(
    id: Option<String>,
    filename: Option<String>,
    mime_type: Option<String>,
    data_url: &str,
    field: &str,
) -> Result<Attachment, AttachmentError> {
    let (header_mime, payload) = split_data_url(data_url).ok_or_else(|| {
        AttachmentError::new(
            format!("{field}.dataUrl"),
            "must be a base64 data URL (data:<mime>;base64,<data>)",
        )
    })?;
    // Reject by length before decoding so a huge string costs no allocation.
    if payload.len() / 4 * 3 > MAX_IMAGE_BYTES + 3 {
        return Err(too_large_image(field));
    }
    let bytes = STANDARD.decode(payload).map_err(|_| {
        AttachmentError::new(format!("{field}.dataUrl"), "data is not valid base64")
    })?;
    if bytes.len() > MAX_IMAGE_BYTES {
        return Err(too_large_image(field));
    }
    let detected = sniff_image(&bytes).ok_or_else(|| {
        AttachmentError::new(format!("{field}.dataUrl"), "image data must be PNG or JPEG")
    })?;
    for (claimed, what) in [
        (mime_type.as_deref(), "mimeType"),
        (Some(header_mime), "dataUrl"),
    ] {
        if let Some(claimed) = claimed {
            let normalized = normalize_image_mime(claimed).ok_or_else(|| {
                AttachmentError::new(
                    format!("{field}.{what}"),
                    format!("images must be image/png or image/jpeg (got {claimed:?})"),
                )
            })?;
            if normalized != detected {
                return Err(AttachmentError::new(
                    format!("{field}.{what}"),
                    format!("claims {normalized} but the data is {detected}"),
                ));
            }
        }
    }
    let extension = if detected == "image/png" {
        "png"
    } else {
        "jpg"
    };
    Ok(Attachment::Image {
        id: id_or_new(id),
        filename: non_blank(filename).unwrap_or_else(|| format!("image.{extension}")),
        mime_type: detected.to_string(),
        size_bytes: bytes.len() as u64,
        data_url: format!("data:{detected};base64,{payload}"),
    })
}

/// The client's id, or a new one when it gave none (or a blank one).
fn id_or_new(id: Option<String>) -> String {
    id.filter(|s| !s.trim().is_empty())
        .unwrap_or_else(crate::vocabulary::new_id)
}

/// `value` trimmed, unless that leaves nothing.
fn non_blank(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

fn too_large_image(field: &str) -> AttachmentError {
    AttachmentError::new(
        format!("{field}.dataUrl"),
        format!("an image is at most 6 MiB ({MAX_IMAGE_BYTES} bytes) decoded"),
    )
}

/// `data:<mime>;base64,<payload>` → (mime, payload).
fn split_data_url(url: &str) -> Option<(&str, &str)> {
    let rest = url.strip_prefix("data:")?;
    let (header, payload) = rest.split_once(',')?;
    let mime = header.strip_suffix(";base64")?;
    Some((mime.trim(), payload.trim()))
}

fn normalize_image_mime(mime: &str) -> Option<&'static str> {
    match mime.trim().to_ascii_lowercase().as_str() {
        "image/png" => Some("image/png"),
        "image/jpeg" | "image/jpg" => Some("image/jpeg"),
        _ => None,
    }
}

fn sniff_image(bytes: &[u8]) -> Option<&'static str> {
    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n";
    const JPEG: &[u8] = b"\xff\xd8\xff";
    if bytes.starts_with(PNG) {
        Some("image/png")
    } else if bytes.starts_with(JPEG) {
        Some("image/jpeg")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(mime: Option<&str>, header: &str, bytes: &[u8]) -> AttachmentInput {
        AttachmentInput::Image {
            id: None,
            filename: None,
            mime_type: mime.map(str::to_string),
            size_bytes: None,
            data_url: format!("data:{header};base64,{}", STANDARD.encode(bytes)),
        }
    }

    const PNG: &[u8] = b"\x89PNG\r\n\x1a\n0000";
    const JPEG: &[u8] = b"\xff\xd8\xff\xe0JFIF";

    #[test]
    fn accepts_png_and_jpeg_by_their_bytes() {
        let out = validate(
            vec![
                image(Some("image/png"), "image/png", PNG),
                image(None, "image/jpg", JPEG),
            ],
            "a",
        )
        .unwrap();
        match &out[1] {
            Attachment::Image {
                mime_type,
                size_bytes,
                filename,
                ..
            } => {
                assert_eq!(mime_type, "image/jpeg");
                assert_eq!(*size_bytes, JPEG.len() as u64);
                assert_eq!(filename, "image.jpg");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn rejects_lies_about_the_bytes() {
        let gif = b"GIF89a....";
        assert!(
            validate(vec![image(Some("image/png"), "image/png", gif)], "a")
                .unwrap_err()
                .to_string()
                .contains("PNG or JPEG")
        );
        assert!(
            validate(vec![image(Some("image/png"), "image/png", JPEG)], "a")
                .unwrap_err()
                .to_string()
                .contains("a[0].mimeType")
        );
        assert!(
            validate(vec![image(None, "image/gif", PNG)], "a")
                .unwrap_err()
                .to_string()
                .contains("a[0].dataUrl")
        );
        let bad = AttachmentInput::Image {
            id: None,
            filename: None,
            mime_type: None,
            size_bytes: None,
            data_url: "http://x/y.png".into(),
        };
        assert!(
            validate(vec![bad], "a")
                .unwrap_err()
                .to_string()
                .contains("data URL")
        );
    }

    #[test]
    fn enforces_image_size_and_count() {
        let mut big = PNG.to_vec();
        big.resize(MAX_IMAGE_BYTES + 1, 0);
        assert!(
            validate(vec![image(None, "image/png", &big)], "a")
                .unwrap_err()
                .to_string()
                .contains("6 MiB")
        );
        big.truncate(MAX_IMAGE_BYTES);
        assert!(validate(vec![image(None, "image/png", &big)], "a").is_ok());
        let nine = (0..9).map(|_| image(None, "image/png", PNG)).collect();
        assert!(
            validate(nine, "a")
                .unwrap_err()
                .to_string()
                .contains("at most 8")
        );
    }

    #[test]
    fn enforces_text_limits() {
        let text = |t: String, size: Option<u64>| AttachmentInput::Text {
            id: None,
            filename: None,
            mime_type: None,
            size_bytes: size,
            text: t,
            truncated: None,
        };
        // Characters, not bytes: 200,000 two-byte characters are accepted.
        assert!(validate(vec![text("é".repeat(MAX_TEXT_CHARS), None)], "a").is_ok());
        assert!(
            validate(vec![text("x".repeat(MAX_TEXT_CHARS + 1), None)], "a")
                .unwrap_err()
                .to_string()
                .contains("200000")
        );
        assert!(
            validate(vec![text("x".into(), Some(MAX_TEXT_SOURCE_BYTES + 1))], "a")
                .unwrap_err()
                .to_string()
                .contains("sizeBytes")
        );
    }
}
