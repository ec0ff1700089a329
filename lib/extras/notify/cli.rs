//! jackin-notify's command line: the program to run, and how long it may take.

use std::path::PathBuf;

use clap::Parser;

use crate::base::tool::Tool;
use crate::face::cli::{exit_status_help, CommonArgs, ToolArgs};

/// Run the operator's program for each event in jackin-reconcile's records.
#[derive(Debug, Clone, Parser)]
#[command(
    name = Tool::Notify.name(),
    version,
    about = "Run a program for each status change and each expiry in jackin-reconcile's records",
    long_about = "Reads records on stdin (jackin-reconcile's, e.g. `jackin-reconcile --watch \
--warn-before 24h | jackin-notify PROGRAM`) and passes each through to stdout unchanged. For each \
`change` (a status reconcile changed, not a dry run's) and each `expiring` (a deletion reconcile \
warns of once), it runs PROGRAM itself, never through a shell: the record as one JSON line on its \
stdin; JACKIN_EVENT (status_change, expiring), JACKIN_SESSION, and JACKIN_STATUS_FROM and \
JACKIN_STATUS, or JACKIN_EXPIRING, JACKIN_EXPIRES_AT and JACKIN_EXPIRES_IN_SECS, in its \
environment, each checked first (a session name, jackin's status words, a time). Its stdout is \
dropped, its stderr is this tool's. A program that fails or runs past --event-timeout is killed \
with what it started and said on stderr; the next event still runs.",
    after_help = exit_status_help(Tool::Notify.name()),
)]
pub struct NotifyArgs {
    /// The program to run for each event (a path, or a name on PATH); refused when it is missing
    /// or another user could have written it
    #[arg(value_name = "PROGRAM")]
    pub program: PathBuf,

    /// How long PROGRAM may run before it is killed (the next event still runs)
    #[arg(long, value_name = "DUR", value_parser = crate::face::cli::duration, default_value = "10s")]
    pub event_timeout: std::time::Duration,

    #[command(flatten)]
    pub common: CommonArgs,
}

impl ToolArgs for NotifyArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }

    /// It changes nothing of a session: with `--host`, a view.
    fn reach(&self) -> crate::face::cli::Reach {
        crate::face::cli::Reach::View
    }
}
