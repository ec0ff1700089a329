//! Test-only failure points. With `JACKIN_<TOOL>_CRASH_AT=<step>` (`JACKIN_PURGE_CRASH_AT`,
//! `JACKIN_KEEP_CRASH_AT`, `JACKIN_RESTORE_CRASH_AT`, and `JACKIN_IMPORT_CRASH_AT` for
//! `jackin-restore --import`) a debug build aborts right after that step,
//! as a SIGKILL would stop it there, so the reliability suite can stop a tool at each of its steps
//! deterministically and check that a rerun finishes the job. Each tool lists its points beside
//! the code that passes them (`CRASH_POINTS` of purge's apply, keep, restore's run, import). With `JACKIN_<TOOL>_PAUSE_AT=<step>`
//! and `JACKIN_PAUSE_FILE=<file>` it pauses there instead: it writes its pid into the file and
//! waits while the file is there, so a test can run another tool against a run caught at that
//! step, then let it finish by removing the file. Release builds compile both away.

use super::tool::Tool;

/// The file a paused run writes its pid into and waits on.
pub const PAUSE_FILE: &str = "JACKIN_PAUSE_FILE";

/// Aborts here when the tool's crash variable names `step`, or pauses here when its pause
/// variable does (debug builds only). `points`: the tool's list, kept beside the code that passes
/// them, in the order a run does.
pub(crate) fn point(tool: Tool, points: &[&str], step: &str) {
    debug_assert!(points.contains(&step), "{step} is not one of {tool:?}'s crash points");
    #[cfg(debug_assertions)]
    {
        if std::env::var(tool.variable()).is_ok_and(|at| at == step) {
            eprintln!("{}: test crash after step {step}", tool.name());
            std::process::abort();
        }
        if std::env::var(tool.pause_variable()).is_ok_and(|at| at == step) {
            pause(tool, step);
        }
    }
}

/// Writes this process's pid into the pause file, then waits while the file is there.
#[cfg(debug_assertions)]
fn pause(tool: Tool, step: &str) {
    let Some(file) = std::env::var_os(PAUSE_FILE) else { return };
    let file = std::path::PathBuf::from(file);
    let temp = file.with_extension("writing");
    if std::fs::write(&temp, std::process::id().to_string()).and_then(|()| std::fs::rename(&temp, &file)).is_err() {
        return;
    }
    eprintln!("{}: test pause after step {step}", tool.name());
    while file.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
