//! Test-only failure points. With `JACKIN_<TOOL>_CRASH_AT=<step>` (`JACKIN_PURGE_CRASH_AT`,
//! `JACKIN_KEEP_CRASH_AT`, `JACKIN_RESTORE_CRASH_AT`, and `JACKIN_IMPORT_CRASH_AT` for
//! `jackin-restore --import`) a debug build aborts right after that step,
//! as a SIGKILL would stop it there, so the reliability suite can stop a tool at each of its steps
//! deterministically and check that a rerun finishes the job. With `JACKIN_<TOOL>_PAUSE_AT=<step>`
//! and `JACKIN_PAUSE_FILE=<file>` it pauses there instead: it writes its pid into the file and
//! waits while the file is there, so a test can run another tool against a run caught at that
//! step, then let it finish by removing the file. Release builds compile both away.

/// The tools with crash points, and the variable each one reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Purge,
    Keep,
    Restore,
    /// `jackin-restore --import` (tools/moves/import.rs): its steps are not a resume's.
    Import,
}

impl Tool {
    pub const fn variable(self) -> &'static str {
        match self {
            Tool::Purge => "JACKIN_PURGE_CRASH_AT",
            Tool::Keep => "JACKIN_KEEP_CRASH_AT",
            Tool::Restore => "JACKIN_RESTORE_CRASH_AT",
            Tool::Import => "JACKIN_IMPORT_CRASH_AT",
        }
    }

    /// The variable that pauses it at a step.
    pub const fn pause_variable(self) -> &'static str {
        match self {
            Tool::Purge => "JACKIN_PURGE_PAUSE_AT",
            Tool::Keep => "JACKIN_KEEP_PAUSE_AT",
            Tool::Restore => "JACKIN_RESTORE_PAUSE_AT",
            Tool::Import => "JACKIN_IMPORT_PAUSE_AT",
        }
    }

    pub const fn binary(self) -> &'static str {
        match self {
            Tool::Purge => "jackin-purge",
            Tool::Keep => "jackin-keep",
            Tool::Restore | Tool::Import => "jackin-restore",
        }
    }

    /// Its crash points, in the order a run passes them (for the tests and the docs).
    pub const fn points(self) -> &'static [&'static str] {
        match self {
            Tool::Purge => &["quarantined", "stamped", "docker", "worktrees", "trash", "dirs", "lock", "row"],
            Tool::Keep => &["stopped", "recorded", "torn_down", "stamped", "isolation"],
            Tool::Restore => &["resources", "sidecar", "created", "started", "stamped"],
            Tool::Import => &["unpacked", "moved", "mounts", "recorded"],
        }
    }
}

/// The file a paused run writes its pid into and waits on.
pub const PAUSE_FILE: &str = "JACKIN_PAUSE_FILE";

/// Aborts here when the tool's crash variable names `step`, or pauses here when its pause
/// variable does (debug builds only).
pub(crate) fn point(tool: Tool, step: &str) {
    debug_assert!(tool.points().contains(&step), "{step} is not one of {tool:?}'s crash points");
    #[cfg(debug_assertions)]
    {
        if std::env::var(tool.variable()).is_ok_and(|at| at == step) {
            eprintln!("{}: test crash after step {step}", tool.binary());
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
    eprintln!("{}: test pause after step {step}", tool.binary());
    while file.exists() {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}
