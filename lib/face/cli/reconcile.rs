//! jackin-reconcile's command line: the one run, the watch, and the warnings of expiries.

use std::path::PathBuf;

use clap::Parser;

use super::{duration, exit_status_help, instance, CommonArgs, DockerArgs, ToolArgs};
use crate::base::exit::Exit;
use crate::base::tool::Tool;

/// Make the index tell the truth about Docker.
#[derive(Debug, Clone, Parser)]
#[command(
    name = Tool::Reconcile.name(),
    version,
    about = "Make the jackin index tell the truth about Docker; label host-level kills honestly",
    long_about = "Compares every jackin instance (or the ones named) with what the Docker engine \
says, from one list call: a live session whose container is gone or exited becomes crashed, with \
the cause (killed_by_host, container_exited, container_removed) and its evidence kept in the tools' \
own file; a kept or crashed session whose container runs again becomes running. It also mends the \
index (rows restored from manifests, rows of vanished instances dropped, an unparsable index moved \
aside and rebuilt), reports orphans for jackin-purge, and captures the launch recipe of every \
running session that has none yet. Only jackin's own ten status strings are ever written. With \
the Docker engine unreachable it changes nothing and exits 4.",
    after_help = exit_status_help(Tool::Reconcile.name()),
)]
pub struct ReconcileArgs {
    /// Instances to reconcile: container name, instance id or a unique id prefix of 4+
    /// characters [default: every instance, and the orphan scan]
    #[arg(value_name = "INSTANCE", value_parser = instance)]
    pub instances: Vec<String>,

    /// Keep running: reconcile again on the engine's die, destroy, start and oom events, until
    /// SIGTERM or SIGINT; reconnect with backoff when the engine restarts
    #[arg(long)]
    pub watch: bool,

    /// Exit 1 when anything changed (or would have, with --dry-run); not with --watch, which
    /// ends only on a signal (exit 0 or 130)
    #[arg(long, conflicts_with = "watch")]
    pub exit_code: bool,

    /// Change nothing; emit the records a real run would emit, each with "dry_run": true
    #[arg(long)]
    pub dry_run: bool,

    /// Moved to `jackin-reconcile | jackin-notify PROGRAM`, which this runs (hidden, for one
    /// release): PROGRAM run for each status change and each expiry warned of
    #[arg(long, value_name = "PROGRAM", hide = true)]
    pub on_event: Option<PathBuf>,

    /// With the hidden --on-event (jackin-notify --event-timeout)
    #[arg(long, value_name = "DUR", value_parser = duration, default_value = "10s", hide = true)]
    pub event_timeout: std::time::Duration,

    /// Warn once (an `expiring` record, for jackin-notify) of each quarantine, and each kept clean
    /// session under --retention, that jackin-purge will delete within DUR
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub warn_before: Option<std::time::Duration>,

    /// With --warn-before: the --older-than of your retention purge (default: env
    /// JACKIN_KEPT_RETENTION), so that a kept clean session last updated longer ago is warned of
    #[arg(long, value_name = "DUR", value_parser = duration)]
    pub retention: Option<std::time::Duration>,

    #[command(flatten)]
    pub docker: DockerArgs,

    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

impl ReconcileArgs {
    /// The flags' values that the parser cannot check: the hidden `--on-event`'s program is there
    /// and no other user could have written it (base/perms.rs). A usage error otherwise, before
    /// anything.
    /// `--retention` counts only for the expiries warned of: without `--warn-before` (or the
    /// hidden `--on-event`, which warns within 24h) it would do nothing, so it is refused. Its
    /// environment variable is read here, not by clap, which would count it as the flag given.
    pub fn check(&mut self) -> anyhow::Result<()> {
        if self.retention.is_some() && self.warn_before.is_none() && self.on_event.is_none() {
            return Err(Exit::Usage.err(
                "--retention says which kept sessions the warnings of --warn-before cover: give --warn-before DUR too",
            ));
        }
        let warns = self.warn_before.is_some() || self.on_event.is_some();
        if self.retention.is_none() && warns {
            self.retention = match std::env::var("JACKIN_KEPT_RETENTION") {
                Ok(text) if !text.is_empty() => Some(duration(&text).map_err(|why| {
                    Exit::Usage.err(format_args!("JACKIN_KEPT_RETENTION={text:?} is not a duration: {why}"))
                })?),
                _ => None,
            };
        }
        match &self.on_event {
            Some(program) => crate::base::perms::trusted_program(program, "--on-event").map(drop),
            None => Ok(()),
        }
    }

    /// The events this run acts on, as the flags give them.
    pub fn events(&self) -> crate::tools::reconcile::events::EventOptions {
        let default_window = self.on_event.as_ref().map(|_| std::time::Duration::from_secs(24 * 3600));
        crate::tools::reconcile::events::EventOptions {
            warn_before: self.warn_before.or(default_window),
            retention: self.retention,
            dry_run: self.dry_run,
        }
    }
}

impl ToolArgs for ReconcileArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }

    fn dry_run(&self) -> bool {
        self.dry_run
    }
}
