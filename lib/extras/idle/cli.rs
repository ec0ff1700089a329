//! jackin-idle's command line.

use std::time::Duration;

use clap::Parser;

use crate::base::tool::Tool;
use crate::face::cli::{exit_status_help, CommonArgs, DockerArgs, ToolArgs};

/// Find running sessions nobody uses, and keep them to resume later.
#[derive(Debug, Clone, Parser)]
#[command(
    name = Tool::Idle.name(),
    version,
    about = "Find running sessions nobody uses, and keep them to resume later",
    long_about = "Looks at every running session of this home: the clients attached to its role \
container (docker exec, jackin's hardline) and its name lock, the CPU time its role container and \
sidecar used since the last check, the newest change under its work trees and agent home, its \
start. A session is idle when nothing is attached and the newest sign of use is older than its \
window: --idle-for, else its workspace's keep_after in <config-dir>/jackin-tools-idle.toml (no \
window: never idle). The first check of a session starts its CPU watch and never finds it idle. \
Without --yes it is a view: one `idle` record a running session. With --yes each idle session \
is looked at again under its claim and, still idle, kept as `jackin-keep --keep --stop` keeps \
one (a `change` record, cause idle_kept); one that woke up meanwhile is left running (an `idle` \
record says why); in use is not said (-v says it).",
    after_help = exit_status_help(Tool::Idle.name()),
)]
pub struct IdleArgs {
    /// The window for every running session, whatever its workspace's policy says: no sign of
    /// use for this long is idle
    #[arg(long, value_name = "DUR", value_parser = crate::face::cli::duration)]
    pub idle_for: Option<Duration>,

    /// Keep each idle session (stop and remove its containers, its recipe and work kept)
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// With --yes: look at each idle session again as the run would, keep none, write nothing
    #[arg(long, requires = "yes")]
    pub dry_run: bool,

    #[command(flatten)]
    pub docker: DockerArgs,

    #[command(flatten)]
    pub common: CommonArgs,
}

impl ToolArgs for IdleArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }

    fn reach(&self) -> crate::face::cli::Reach {
        if self.yes {
            crate::face::cli::Reach::Act
        } else {
            crate::face::cli::Reach::View
        }
    }

    fn dry_run(&self) -> bool {
        self.dry_run
    }
}
