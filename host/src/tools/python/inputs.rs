//! What a new session's folder starts with: the conversation's attachments, text files under
//! their own names and images as their bytes (`image-1.png`, …, in the order they came).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;

use crate::plugins::worlds::provider::{ContentPart, Message};

/// One file put in the folder before the first call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputFile {
    pub name: String,
    pub bytes: Vec<u8>,
}

/// The attachments of `messages`, in order; a later file with a name already taken replaces
/// the earlier one (a newer version of the same file). `resolve` gives a value back where the
/// transcript holds a reference to it (`plugins/worlds/provider/references.rs`).
pub fn from_messages(messages: &[Message], resolve: &dyn Fn(&str) -> String) -> Vec<InputFile> {
    let mut files: Vec<InputFile> = Vec::new();
    let mut images = 0;
    for part in messages.iter().flat_map(|m| &m.content) {
        let file = match part {
            ContentPart::TextFile(f) => InputFile {
                name: safe_name(&f.filename),
                bytes: resolve(&f.text).into_bytes(),
            },
            ContentPart::Image(image) => {
                let Ok(bytes) = STANDARD.decode(resolve(&image.data_base64)) else {
                    continue;
                };
                images += 1;
                let ext = match image.mime_type.as_str() {
                    "image/jpeg" => "jpg",
                    "image/gif" => "gif",
                    "image/webp" => "webp",
                    _ => "png",
                };
                InputFile {
                    name: format!("image-{images}.{ext}"),
                    bytes,
                }
            }
            ContentPart::Text(_) => continue,
        };
        files.retain(|f| f.name != file.name);
        files.push(file);
    }
    files
}

/// A file name the folder takes: the last path part, without control characters, at most 255
/// bytes; `file` if nothing is left.
pub fn safe_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let mut clean: String = last.chars().filter(|c| !c.is_control()).collect();
    while clean.len() > 255 {
        clean.pop();
    }
    match clean.trim() {
        "" | "." | ".." => "file".into(),
        _ => clean,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_one_clean_part() {
        assert_eq!(safe_name("data.csv"), "data.csv");
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("C:\\x\\report.txt"), "report.txt");
        assert_eq!(safe_name("a\u{0}b\nc"), "abc");
        assert_eq!(safe_name(".."), "file");
        assert_eq!(safe_name(&"é".repeat(200)).len(), 254);
    }
}
