//! jackin-purge's command line: the one program that deletes.

use clap::{CommandFactory, Parser};

use super::{exit_status_help, instance, CommonArgs, DockerArgs, Given, ToolArgs};
use crate::base::exit::Exit;
use crate::base::tool::Tool;
use crate::services::session_record::RecordOptions;
use crate::tools::purge::PurgeOptions;

/// The one program that deletes a finished session, in a crash-safe order.
#[derive(Debug, Clone, Parser)]
#[command(
    name = Tool::Purge.name(),
    version,
    about = "Delete finished jackin sessions, crash-safe, never deleting work at risk by default",
    long_about = "The only program that deletes. Per instance: refuses a live session, re-assesses \
its work (anything at risk stops it unless --discard-unfinished, and is then saved to a quarantine \
first), stamps a terminal status, removes the Docker resources, the worktree registrations and \
scratch branches, the data and socket directories, the name lock and the index row. A rerun after a \
crash at any step finishes the job. Without INSTANCE or a selection flag it reads records on stdin: \
each decision with outcome clean and each orphan is acted on, every other record passes through. \
With --slim (or --slim-older-than) it deletes no session: it takes back from kept sessions what git \
ignores in their mounts (by the repository's .gitignore files, its info/exclude and \
core.excludesFile), keeping ignored dotfiles outside ignored directories such as .env.local; a file \
you want kept must not be ignored.",
    after_help = exit_status_help(Tool::Purge.name()),
)]
pub struct PurgeArgs {
    /// Instances to purge: container name, instance id or a unique id prefix of 4+ characters
    #[arg(value_name = "INSTANCE", value_parser = instance)]
    pub instances: Vec<String>,

    /// Purge every instance whose status is terminal (clean_exited, superseded, purged; failed_setup
    /// only when its work is verified clean)
    #[arg(long, conflicts_with = "instances")]
    pub terminal: bool,

    /// Retention: purge kept instances last updated longer ago than DUR (e.g. 30d, 12h)
    #[arg(long, value_name = "DUR", value_parser = super::duration, conflicts_with = "instances")]
    pub older_than: Option<std::time::Duration>,

    /// Retention: keep the N newest kept instances per (workspace, role, agent), purge the rest
    #[arg(long, value_name = "N", conflicts_with = "instances")]
    pub keep_last: Option<usize>,

    /// Allow deleting work at risk; it is saved to the quarantine first
    #[arg(long)]
    pub discard_unfinished: bool,

    /// Do not save work at risk before deleting it (only with --discard-unfinished): the one
    /// exception to "discarded work is saved first"; what is deleted cannot be got back
    #[arg(long, requires = "discard_unfinished")]
    pub no_quarantine: bool,

    /// Days the quarantine of a discard is kept before --expire-quarantine deletes it
    /// [default: 14], recorded in the quarantine when the work is saved: give it to the purge
    /// that discards. With --expire-quarantine it counts only for the leftover of a save that
    /// died half-way (no receipt), from its last change
    #[arg(long, value_name = "DAYS")]
    pub quarantine_days: Option<u64>,

    /// Delete expired quarantines and expired session records (alone: only that; reads no stdin)
    #[arg(long)]
    pub expire_quarantine: bool,

    /// Days the record each purge leaves of a session (launch, outcome, what its work became,
    /// its agent's conversation) is kept before --expire-quarantine deletes it [default: 90]
    #[arg(long, value_name = "DAYS")]
    pub record_days: Option<u64>,

    /// Where the agent keeps its conversation, relative to its home (data/<c>/home/), copied into
    /// the session's record; repeat for each; replaces the known agents' paths
    #[arg(long, value_name = "PATH")]
    pub conversation_path: Vec<String>,

    /// The most bytes of conversation a record copies (files past it are named, not copied)
    /// [default: 67108864, 64 MiB]
    #[arg(long, value_name = "BYTES")]
    pub conversation_cap: Option<u64>,

    /// Stop a still-running session's containers first (else it is live: exit 5)
    #[arg(long)]
    pub stop: bool,

    /// Slim kept sessions instead of purging them: remove from their mounts only what git ignores
    /// (as git clean -dX would: build outputs, caches), except ignored dotfiles outside ignored
    /// directories (.env.local); the session, its work and its verdict stay. A live session is
    /// refused (exit 5). With INSTANCE, or --kept for every kept session
    #[arg(long, conflicts_with_all = ["terminal", "older_than", "keep_last", "discard_unfinished", "expire_quarantine", "stop"])]
    pub slim: bool,

    /// With --slim: every kept session (restore_available, preserved_dirty, preserved_unpushed)
    #[arg(long, requires = "slim", conflicts_with = "instances")]
    pub kept: bool,

    /// Retention: slim the kept sessions last updated longer ago than DUR (e.g. 7d) and not slimmed
    /// since; implies --slim
    #[arg(long, value_name = "DUR", value_parser = super::duration,
          conflicts_with_all = ["instances", "kept", "terminal", "older_than", "keep_last", "discard_unfinished", "expire_quarantine", "stop"])]
    pub slim_older_than: Option<std::time::Duration>,

    /// Change nothing; emit the purged records that would be written, with "dry_run": true
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub docker: DockerArgs,

    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

/// What every purge (by name, by selection or of records on stdin) reads.
const PURGE: [&str; 13] = [
    "instances",
    "terminal",
    "older_than",
    "keep_last",
    "discard_unfinished",
    "no_quarantine",
    "quarantine_days",
    "expire_quarantine",
    "record_days",
    "conversation_path",
    "conversation_cap",
    "stop",
    "docker_host",
];

/// Where each of jackin-purge's flags counts, for the refusal of one given where it does not.
fn counts_with(id: &str) -> &'static str {
    match id {
        "kept" | "slim" | "slim_older_than" => "with --slim",
        "quarantine_days" => "in a purge that discards (it is recorded in the quarantine) and with --expire-quarantine",
        _ => "in a purge: of sessions named, a selection (--terminal, --older-than, --keep-last) or records on stdin",
    }
}

impl ToolArgs for PurgeArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }

    fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// A slim deletes no session, and --expire-quarantine alone purges none: the flags of a
    /// purge are refused beside them rather than ignored.
    fn refuse_unread(&mut self, given: &Given) -> Result<(), clap::Error> {
        let selects =
            !self.instances.is_empty() || self.terminal || self.older_than.is_some() || self.keep_last.is_some();
        let (mode, reads): (&str, Vec<&str>) = if self.slims() {
            ("beside --slim", vec!["slim", "kept", "slim_older_than", "instances", "dry_run", "docker_host"])
        } else if self.expire_quarantine && !selects {
            ("beside --expire-quarantine alone", vec!["expire_quarantine", "quarantine_days", "dry_run"])
        } else {
            ("here", [&PURGE[..], &["dry_run"]].concat())
        };
        given.only(PurgeArgs::command(), mode, &reads, counts_with)
    }
}

impl PurgeArgs {
    /// `--slim`, or `--slim-older-than`: only what git ignores goes, from kept sessions.
    pub fn slims(&self) -> bool {
        self.slim || self.slim_older_than.is_some()
    }

    /// What the flags cannot say to clap: a slim needs something to slim.
    pub fn check(&self) -> anyhow::Result<()> {
        if self.slims() && self.instances.is_empty() && !self.kept && self.slim_older_than.is_none() {
            return Err(Exit::Usage.err("--slim needs instances, --kept or --slim-older-than DUR"));
        }
        Ok(())
    }

    /// The options of the deleting side, as the flags give them.
    pub fn options(&self) -> PurgeOptions {
        PurgeOptions {
            stop: self.stop,
            dry_run: self.dry_run,
            discard_unfinished: self.discard_unfinished,
            no_quarantine: self.no_quarantine,
            quarantine_days: self.quarantine_days.unwrap_or(crate::services::saved_work::DEFAULT_QUARANTINE_DAYS),
            slim: self.slims(),
        }
    }

    /// How this run's session records are written.
    pub fn records(&self) -> RecordOptions {
        let defaults = RecordOptions::default();
        RecordOptions {
            days: self.record_days.unwrap_or(defaults.days),
            conversation_paths: if self.conversation_path.is_empty() {
                defaults.conversation_paths
            } else {
                self.conversation_path.clone()
            },
            conversation_cap: self.conversation_cap.unwrap_or(defaults.conversation_cap),
        }
    }
}
