//! The extras: programs of their own over the core, each in a folder of its own (its command line,
//! its work, how its binary runs it). None of the five tools uses an extra (tests/architecture.rs):
//! their binaries link none of it, and an old flag of theirs that became an extra's verb runs the
//! extra's program (face/moved.rs).
//!
//! - `hosts`: `jackin-hosts --host DEST TOOL ARGS`, a view of several hosts over ssh, merged (and
//!   a run that acts, on the one host named).
//! - `moves`: `jackin-move export|import`, a kept session taken to another host as one archive.
//! - `notify`: `jackin-notify PROGRAM`, the operator's program run for each event of
//!   jackin-reconcile's records, read from a pipe.
//! - `idle`: `jackin-idle [--yes]`, running sessions nobody uses found, and kept to resume later.

pub mod hosts;
pub mod idle;
pub mod moves;
pub mod notify;

/// Every program's man page beyond its command line: the five's from face/manual.rs, each extra's
/// its own.
pub fn manual(tool: crate::base::tool::Tool) -> crate::face::manual::Manual {
    use crate::base::tool::Tool;
    match tool {
        Tool::Move | Tool::Import => moves::manual::manual(),
        Tool::Hosts => hosts::manual::manual(),
        Tool::Notify => notify::manual::manual(),
        Tool::Idle => idle::manual::manual(),
        _ => crate::face::manual::manual(tool),
    }
}

/// Every program's command line, the five and the extras, for `--help`, the man pages and the
/// completions.
pub fn commands() -> Vec<clap::Command> {
    use clap::CommandFactory;
    let mut commands = crate::face::cli::commands();
    commands.push(moves::cli::MoveArgs::command());
    commands.push(hosts::cli::HostsArgs::command());
    commands.push(notify::cli::NotifyArgs::command());
    commands.push(idle::cli::IdleArgs::command());
    commands
}

/// As [`commands`], each as its man page shows it (the exit status in its own section).
pub fn man_commands() -> Vec<clap::Command> {
    use clap::CommandFactory;
    let mut commands = crate::face::cli::man_commands();
    commands.push(moves::cli::MoveArgs::command().after_help(None::<&str>));
    commands.push(hosts::cli::HostsArgs::command().after_help(None::<&str>));
    commands.push(notify::cli::NotifyArgs::command().after_help(None::<&str>));
    commands.push(idle::cli::IdleArgs::command().after_help(None::<&str>));
    commands
}
