//! Test-only failure points. With `JACKIN_<TOOL>_CRASH_AT=<step>` (`JACKIN_PURGE_CRASH_AT`,
//! `JACKIN_KEEP_CRASH_AT`, `JACKIN_RESTORE_CRASH_AT`) a debug build aborts right after that step,
//! as a SIGKILL would stop it there, so the reliability suite can stop a tool at each of its steps
//! deterministically and check that a rerun finishes the job. Release builds compile it away.

/// The tools with crash points, and the variable each one reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Purge,
    Keep,
    Restore,
}

impl Tool {
    pub const fn variable(self) -> &'static str {
        match self {
            Tool::Purge => "JACKIN_PURGE_CRASH_AT",
            Tool::Keep => "JACKIN_KEEP_CRASH_AT",
            Tool::Restore => "JACKIN_RESTORE_CRASH_AT",
        }
    }

    pub const fn binary(self) -> &'static str {
        match self {
            Tool::Purge => "jackin-purge",
            Tool::Keep => "jackin-keep",
            Tool::Restore => "jackin-restore",
        }
    }

    /// Its crash points, in the order a run passes them (for the tests and the docs).
    pub const fn points(self) -> &'static [&'static str] {
        match self {
            Tool::Purge => &["quarantined", "stamped", "docker", "worktrees", "trash", "dirs", "lock", "row"],
            Tool::Keep => &["stopped", "recorded", "torn_down", "stamped", "isolation"],
            Tool::Restore => &["resources", "sidecar", "created", "started", "stamped"],
        }
    }
}

/// Aborts here when the tool's variable names `step` (debug builds only).
pub(crate) fn point(tool: Tool, step: &str) {
    debug_assert!(tool.points().contains(&step), "{step} is not one of {tool:?}'s crash points");
    #[cfg(debug_assertions)]
    if std::env::var(tool.variable()).is_ok_and(|at| at == step) {
        eprintln!("{}: test crash after step {step}", tool.binary());
        std::process::abort();
    }
}
