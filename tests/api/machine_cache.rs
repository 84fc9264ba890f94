//! The machine's compile cache (CHATD_CACHE_DIR): every data folder on a machine shares the
//! plugins compiled once, the interpreter included (issue 59; `plugins/runtime/cache.rs`).

use std::path::Path;

use reqwest::StatusCode;

use crate::lifecycle::Process;

fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir).map(|d| d.count()).unwrap_or(0)
}

#[tokio::test]
async fn a_second_data_folder_starts_ready_from_the_machines_cache() {
    let machine = tempfile::tempdir().unwrap();
    let key = "a-key-of-at-least-thirty-two-characters!";
    let env = [
        ("PORT", "0"),
        ("CHATD_CACHE_DIR", machine.path().to_str().unwrap()),
        ("CHATD_SECRET_KEY", key),
    ];
    // The devbox tools are bundled but, not enabled here, neither compiled nor served.
    let bundled = chatd::plugins::loading::embedded::bundled().len() - 2;

    // The first data folder compiles, into its own folder and the machine's.
    let first = tempfile::tempdir().unwrap();
    let mut process = Process::start(first.path(), &env);
    let loaded = process.line_with("plugins loaded");
    assert!(loaded.contains("(0 from the compile cache)"), "{loaded}");
    process.wait_for("compiled in the background");
    process.stop();
    assert_eq!(entries(machine.path()), bundled);
    assert_eq!(entries(&first.path().join("data/plugin-cache")), bundled);

    // The second compiles nothing, the interpreter included, and is ready when it listens.
    let second = tempfile::tempdir().unwrap();
    let process = Process::start(second.path(), &env);
    let loaded = process.line_with("plugins loaded");
    assert!(
        loaded.contains(&format!("{bundled} plugins loaded in"))
            && loaded.contains(&format!("({bundled} from the compile cache)"))
            && !loaded.contains("compiling in the background"),
        "{loaded}"
    );
    let res = reqwest::get(format!("{}/ready", process.base))
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let (stdout, stderr) = process.stop();
    for said in [&stdout, &stderr] {
        assert!(
            !said.contains("compiling") && !said.contains("compiled in the background"),
            "{said}"
        );
        assert!(!said.contains("cannot write the compile cache"), "{said}");
    }
    // Its own data folder holds them too (where operators look, and a home that goes away).
    assert_eq!(entries(&second.path().join("data/plugin-cache")), bundled);
    assert_eq!(entries(machine.path()), bundled);
}
