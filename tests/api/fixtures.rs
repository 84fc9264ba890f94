//! The recorded upstream formats the tests replay live in `tests/fixtures/upstream/`, a copy of
//! `../shared/fixtures/upstream/` kept in the repository so a clone is self-contained. Where the
//! shared folder is present, the copy must be identical to it.

use std::path::{Path, PathBuf};

fn files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(path.strip_prefix(root).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn the_vendored_recordings_match_the_shared_ones() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let vendored = root.join("tests/fixtures/upstream");
    let ours = files(&vendored);
    assert!(
        ours.len() >= 60,
        "the recordings are in the repository: {}",
        ours.len()
    );
    let shared = root.join("../shared/fixtures/upstream");
    if !shared.is_dir() {
        return; // a clone without the shared folder: the copy is all there is
    }
    assert_eq!(ours, files(&shared), "the same files");
    for file in &ours {
        assert_eq!(
            std::fs::read(vendored.join(file)).unwrap(),
            std::fs::read(shared.join(file)).unwrap(),
            "{} differs from the shared recording",
            file.display()
        );
    }
}

#[test]
fn every_recording_is_replayed_by_some_test() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    // The tests that replay recordings: black-box, provider suite, and the plugins' unit tests.
    let mut sources = String::new();
    for dir in ["tests", "plugins"] {
        for file in files(&root.join(dir)) {
            let path = root.join(dir).join(&file);
            if path.extension().is_some_and(|e| e == "rs") {
                sources.push_str(&std::fs::read_to_string(path).unwrap());
            }
        }
    }
    let unused: Vec<String> = files(&root.join("tests/fixtures/upstream"))
        .into_iter()
        .filter(|f| f.extension().is_some_and(|e| e != "md"))
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| !sources.contains(name.as_str()))
        .collect();
    assert!(unused.is_empty(), "recordings no test replays: {unused:?}");
}
