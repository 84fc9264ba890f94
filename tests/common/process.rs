//! A chatd binary's standard output as the black-box tests read it: on a thread of its own,
//! drained to the end (so the process never blocks on a full pipe, even once the test stops
//! listening), and the address it announces. Shared by the test binaries that start the real
//! binary (`api`'s lifecycle, `api_postgres`'s instances, `web`).

use std::io::{BufRead, BufReader};
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;

/// The child's stdout lines, as they come (the child must have been spawned with a piped
/// stdout).
pub fn stdout_lines(child: &mut Child) -> mpsc::Receiver<String> {
    let (tx, lines) = mpsc::channel();
    let stdout = child.stdout.take().expect("a piped stdout");
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    lines
}

/// Waits for the "listening on http://…" line and returns that address.
#[allow(dead_code)] // lifecycle waits for its lines itself
pub fn listening_on(lines: &mpsc::Receiver<String>) -> String {
    listening_after(lines).0
}

/// [`listening_on`], and the lines before it (startup's log).
#[allow(dead_code)]
pub fn listening_after(lines: &mpsc::Receiver<String>) -> (String, Vec<String>) {
    let mut before = Vec::new();
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(120))
            .expect("chatd says where it listens");
        if let Some(at) = line.find("listening on http://") {
            let url = &line[at + "listening on ".len()..];
            return (url.split_whitespace().next().unwrap().to_string(), before);
        }
        before.push(line);
    }
}

/// The first line containing `needle`: among `before` (the lines already read, startup's), else
/// the next ones, waited for up to two minutes each. (A line logged by a task may come before
/// or after the one saying where the server listens.)
#[allow(dead_code)]
pub fn line_containing(before: &[String], lines: &mpsc::Receiver<String>, needle: &str) -> String {
    if let Some(line) = before.iter().find(|l| l.contains(needle)) {
        return line.clone();
    }
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(120))
            .unwrap_or_else(|_| panic!("chatd logs a line with {needle:?}"));
        if line.contains(needle) {
            return line;
        }
    }
}
