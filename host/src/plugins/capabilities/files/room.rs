//! Where an entry may be placed in a session's folder: within [`MAX_DEPTH`] folders and
//! [`MAX_PATH`] bytes of path. Every operation of [`super::tree`] that places an entry (creating
//! a file or folder, renaming one with all it holds) checks both for everything it places (the
//! tree measures where it goes and what it holds; [`fits`] decides), so whatever the folder
//! holds can be put back by [`super::tree::Folder::put`] under the same limits in a new session
//! (after a restart, on another instance).

use super::error::{FsError, FsResult};

/// The deepest folder nesting: a folder's depth is its count of folders above it, the root's 0.
pub const MAX_DEPTH: usize = 32;
/// The longest path of an entry from the folder's root, in bytes (as Linux's PATH_MAX).
pub const MAX_PATH: usize = 4096;

/// Whether an entry named with `name` bytes fits in a folder at `place` (its depth and path
/// length): a folder (`folder` 1, a file 0) `below` folders deep inside, `longest` the longest
/// path under it, within [`MAX_DEPTH`] and [`MAX_PATH`].
pub fn fits(
    (depth, length): (usize, usize),
    name: usize,
    folder: usize,
    below: usize,
    longest: usize,
) -> FsResult<()> {
    let path = if length == 0 { name } else { length + 1 + name };
    let path = if longest == 0 {
        path
    } else {
        path + 1 + longest
    };
    if depth + folder + below > MAX_DEPTH || path > MAX_PATH {
        return Err(FsError::NameTooLong);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_fits_up_to_each_limit_and_not_past_it() {
        // A folder at the root, 31 deep inside: 32 in all.
        assert!(fits((0, 0), 1, 1, MAX_DEPTH - 1, 0).is_ok());
        assert_eq!(fits((0, 0), 1, 1, MAX_DEPTH, 0), Err(FsError::NameTooLong));
        // A file anywhere at depth 32 adds no depth.
        assert!(fits((MAX_DEPTH, 100), 1, 0, 0, 0).is_ok());
        // "a/" + name + "/" + longest: 2 + 10 + 1 + 4083 = 4096.
        assert!(fits((1, 1), 10, 1, 0, MAX_PATH - 13).is_ok());
        assert_eq!(
            fits((1, 1), 10, 1, 0, MAX_PATH - 12),
            Err(FsError::NameTooLong)
        );
    }
}
