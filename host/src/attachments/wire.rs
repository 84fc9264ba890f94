//! The two shapes of an attachment on the wire: as a client sends it, and as it is stored in
//! `metadata.attachments` and returned (the same JSON both ways).

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// An attachment as a client sends it. Only `kind` and the payload (`dataUrl` or `text`) are
/// required; the rest is filled in or recomputed.
#[derive(Clone, Debug, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum AttachmentInput {
    #[serde(rename_all = "camelCase")]
    Image {
        id: Option<String>,
        filename: Option<String>,
        /// `image/png` or `image/jpeg`; must match the decoded bytes.
        mime_type: Option<String>,
        /// Ignored: the stored value is the decoded size.
        #[serde(default, deserialize_with = "crate::vocabulary::whole::option_u64")]
        size_bytes: Option<u64>,
        /// `data:image/png;base64,…` or `data:image/jpeg;base64,…`, at most 6 MiB decoded.
        data_url: String,
    },
    #[serde(rename_all = "camelCase")]
    Text {
        id: Option<String>,
        filename: Option<String>,
        mime_type: Option<String>,
        /// Size of the source file; at most 8 MiB. Defaults to the UTF-8 length of `text`.
        #[serde(default, deserialize_with = "crate::vocabulary::whole::option_u64")]
        size_bytes: Option<u64>,
        /// Inlined content, at most 200,000 characters.
        text: String,
        truncated: Option<bool>,
    },
}

/// An attachment as stored in `metadata.attachments` and returned to clients.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Attachment {
    #[serde(rename_all = "camelCase")]
    Image {
        id: String,
        filename: String,
        mime_type: String,
        size_bytes: u64,
        data_url: String,
    },
    #[serde(rename_all = "camelCase")]
    Text {
        id: String,
        filename: String,
        mime_type: String,
        size_bytes: u64,
        text: String,
        truncated: bool,
    },
}
