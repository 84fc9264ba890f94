//! The `chatd` binary: the process set up and the bundled plugins handed to chatd's lib, then
//! `chatd::cli` (its grammar and one file per command: serving when there is none).

use std::process::ExitCode;

fn main() -> ExitCode {
    return_large_buffers();
    chatd::cli::main(chatd_bundled::BUNDLED)
}

/// Buffers of 128 KiB and more (a request's attachments, tens of MiB) are given back to the
/// system when freed. glibc's malloc would otherwise raise its mmap threshold after the first
/// large free and serve later large buffers from its heaps, which keep them: the server's
/// resident memory grew with every large request (BENCHMARKS.md, "The largest request").
fn return_large_buffers() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator; no thread has started yet.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}
