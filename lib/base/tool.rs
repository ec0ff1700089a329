//! The programs, each by one name: what a lock holder, a history entry, a message and a command
//! line call it, and the variables its test-only crash points read (base/crash.rs). Import is a
//! run of `jackin-move` with steps of its own, so it has crash variables of its own.

/// One of the tools, or import (`jackin-move import`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Assess,
    Keep,
    Purge,
    Reconcile,
    Restore,
    /// `jackin-move`: a kept session exported to one file, or imported from one (extras/moves/).
    Move,
    /// `jackin-hosts`: a tool run here and on other hosts over ssh, one view (extras/hosts/).
    Hosts,
    /// `jackin-notify`: the operator's program run for each event of reconcile's records
    /// (extras/notify/).
    Notify,
    /// `jackin-idle`: running sessions nobody uses, found and kept (extras/idle/).
    Idle,
    /// `jackin-move import` (extras/moves/import/), for its crash points.
    Import,
}

impl Tool {
    /// The five programs.
    pub const PROGRAMS: [Tool; 5] = [Tool::Assess, Tool::Keep, Tool::Purge, Tool::Reconcile, Tool::Restore];

    /// The extras: programs of their own over the same core, which none of the five runs.
    pub const EXTRAS: [Tool; 4] = [Tool::Move, Tool::Hosts, Tool::Notify, Tool::Idle];

    /// Whether `program` (a binary's file name) is one of the tools: the five or an extra.
    pub fn is_ours(program: &str) -> bool {
        Tool::PROGRAMS.iter().chain(&Tool::EXTRAS).any(|t| t.name() == program)
    }

    /// The program's name: its binary, its lock holder's, its history entries'.
    pub const fn name(self) -> &'static str {
        match self {
            Tool::Assess => "jackin-assess",
            Tool::Keep => "jackin-keep",
            Tool::Purge => "jackin-purge",
            Tool::Reconcile => "jackin-reconcile",
            Tool::Restore => "jackin-restore",
            Tool::Move | Tool::Import => "jackin-move",
            Tool::Hosts => "jackin-hosts",
            Tool::Notify => "jackin-notify",
            Tool::Idle => "jackin-idle",
        }
    }

    /// The variable that stops a debug build at one of its crash points.
    pub const fn variable(self) -> &'static str {
        match self {
            Tool::Assess => "JACKIN_ASSESS_CRASH_AT",
            Tool::Keep => "JACKIN_KEEP_CRASH_AT",
            Tool::Purge => "JACKIN_PURGE_CRASH_AT",
            Tool::Reconcile => "JACKIN_RECONCILE_CRASH_AT",
            Tool::Restore => "JACKIN_RESTORE_CRASH_AT",
            Tool::Move => "JACKIN_MOVE_CRASH_AT",
            Tool::Hosts => "JACKIN_HOSTS_CRASH_AT",
            Tool::Notify => "JACKIN_NOTIFY_CRASH_AT",
            Tool::Idle => "JACKIN_IDLE_CRASH_AT",
            Tool::Import => "JACKIN_IMPORT_CRASH_AT",
        }
    }

    /// The variable that pauses it at one.
    pub const fn pause_variable(self) -> &'static str {
        match self {
            Tool::Assess => "JACKIN_ASSESS_PAUSE_AT",
            Tool::Keep => "JACKIN_KEEP_PAUSE_AT",
            Tool::Purge => "JACKIN_PURGE_PAUSE_AT",
            Tool::Reconcile => "JACKIN_RECONCILE_PAUSE_AT",
            Tool::Restore => "JACKIN_RESTORE_PAUSE_AT",
            Tool::Move => "JACKIN_MOVE_PAUSE_AT",
            Tool::Hosts => "JACKIN_HOSTS_PAUSE_AT",
            Tool::Notify => "JACKIN_NOTIFY_PAUSE_AT",
            Tool::Idle => "JACKIN_IDLE_PAUSE_AT",
            Tool::Import => "JACKIN_IMPORT_PAUSE_AT",
        }
    }
}
