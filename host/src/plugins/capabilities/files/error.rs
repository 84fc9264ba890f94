//! Why a folder operation failed: [`FsError`].

/// Why an operation failed, in WASI's words (`error-code`), before it is mapped to the WIT
/// enum in `host.rs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FsError {
    #[error("no such file or directory")]
    NoEntry,
    #[error("already exists")]
    Exists,
    #[error("not a directory")]
    NotDirectory,
    #[error("is a directory")]
    IsDirectory,
    #[error("directory not empty")]
    NotEmpty,
    #[error("not permitted")]
    NotPermitted,
    #[error("invalid argument")]
    Invalid,
    #[error("bad descriptor")]
    BadDescriptor,
    #[error("file too large")]
    FileTooLarge,
    #[error("no space left in the session's folder")]
    NoSpace,
    #[error("too many files created by one call")]
    Quota,
    #[error("not supported")]
    Unsupported,
    #[error("name too long")]
    NameTooLong,
}

pub type FsResult<T> = Result<T, FsError>;
