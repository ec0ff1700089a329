//! The command lines of the five tools (protocol.md, "The command lines"). They live in the
//! library so that the man pages and shell completions are rendered from the same definitions.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, ValueEnum};

const EXIT_CODES: &str = "\
Exit codes:
  0    done (also: nothing to do)
  1    findings, only with --exit-code
  2    usage: bad flags or arguments, or records expected on stdin but stdin is a terminal
  3    bad input: a line that is not JSON, a record without the envelope, a too-new schema_version
  4    unavailable: the Docker engine, a git repository or the state directory cannot be reached,
       or a state file is corrupt; nothing was changed
  5    busy: a lock is held or the session is live; safe to retry later
  6    partial: the run finished, but some instances failed or were refused (see the error records)
  7    internal error (a bug)
  130  interrupted";

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Text when stdout is a terminal, JSON Lines otherwise.
    Auto,
    /// JSON Lines records, one per line.
    Json,
    /// One readable line or block per instance.
    Text,
}

/// The flags every tool takes.
#[derive(Debug, Clone, Args)]
pub struct CommonArgs {
    /// The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]
    #[arg(long, value_name = "DIR", env = "JACKIN_HOME_DIR", hide_env_values = true)]
    pub home: Option<PathBuf>,

    /// jackin's config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]
    #[arg(long, value_name = "DIR", env = "JACKIN_CONFIG_DIR", hide_env_values = true)]
    pub config_dir: Option<PathBuf>,

    /// Output format
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Auto)]
    pub format: Format,

    /// Print no warnings or progress on stderr (errors are still printed)
    #[arg(short, long, conflicts_with = "verbose")]
    pub quiet: bool,

    /// Say more on stderr about what is being done
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

/// Every tool's arguments expose the common flags to the driver.
pub trait ToolArgs: Parser {
    fn common(&self) -> &CommonArgs;
}

/// What would a purge of these sessions destroy that exists nowhere else?
#[derive(Debug, Clone, Parser)]
#[command(
    name = "jackin-assess",
    version,
    about = "What would a purge of this session destroy that exists nowhere else?",
    long_about = "Assesses jackin agent sessions, offline, with git: per isolated mount (worktree \
or clone) it lists the dirty files, the commits that no surviving ref reaches, and the stashes that \
live only in a clone, and gives a verdict: clean, dirty, unpushed or unknown (cannot verify; treated \
as at risk). It never writes anything. Its assessment records feed jackin-keep and jackin-purge.",
    after_help = EXIT_CODES,
)]
pub struct AssessArgs {
    /// Instances to assess: container name, instance id or a unique id prefix of 4+ characters;
    /// `-` reads the instances named by the records on stdin
    #[arg(value_name = "INSTANCE")]
    pub instances: Vec<String>,

    /// Assess every instance on the host
    #[arg(long, conflicts_with = "instances")]
    pub all: bool,

    /// Add each changed file's unified diff to the mount (the inspect view)
    #[arg(long)]
    pub diff: bool,

    /// Exit 1 when any verdict is not clean
    #[arg(long)]
    pub exit_code: bool,

    #[command(flatten)]
    pub common: CommonArgs,
}

impl ToolArgs for AssessArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }
}

/// The one program that deletes a finished session, in a crash-safe order.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "jackin-purge",
    version,
    about = "Delete finished jackin sessions, crash-safe, never deleting work at risk by default",
    long_about = "The only program that deletes. Per instance: refuses a live session, re-assesses \
its work (anything at risk stops it unless --discard-unfinished, and is then saved to a quarantine \
first), stamps a terminal status, removes the Docker resources, the worktree registrations and \
scratch branches, the data and socket directories, the name lock and the index row. A rerun after a \
crash at any step finishes the job. Without INSTANCE or a selection flag it reads records on stdin: \
each decision with outcome clean and each orphan is acted on, every other record passes through.",
    after_help = EXIT_CODES,
)]
pub struct PurgeArgs {
    /// Instances to purge: container name, instance id or a unique id prefix of 4+ characters
    #[arg(value_name = "INSTANCE")]
    pub instances: Vec<String>,

    /// Purge every instance whose status is terminal (clean_exited, superseded, purged; failed_setup
    /// only when its work is verified clean)
    #[arg(long, conflicts_with = "instances")]
    pub terminal: bool,

    /// Retention: purge kept instances last updated longer ago than DUR (e.g. 30d, 12h)
    #[arg(long, value_name = "DUR", value_parser = humantime::parse_duration, conflicts_with = "instances")]
    pub older_than: Option<std::time::Duration>,

    /// Retention: keep the N newest kept instances per (workspace, role, agent), purge the rest
    #[arg(long, value_name = "N", conflicts_with = "instances")]
    pub keep_last: Option<usize>,

    /// Allow deleting work at risk; it is saved to the quarantine first
    #[arg(long)]
    pub discard_unfinished: bool,

    /// Do not save work at risk before deleting it (only with --discard-unfinished)
    #[arg(long, requires = "discard_unfinished")]
    pub no_quarantine: bool,

    /// Days a quarantine is kept before --expire-quarantine deletes it
    #[arg(long, value_name = "DAYS", default_value_t = 14)]
    pub quarantine_days: u64,

    /// Delete expired quarantines (alone: only that; reads no stdin)
    #[arg(long)]
    pub expire_quarantine: bool,

    /// Stop a still-running session's containers first (else it is live: exit 5)
    #[arg(long)]
    pub stop: bool,

    /// Change nothing; emit the purged records that would be written, with "dry_run": true
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub common: CommonArgs,
}

impl ToolArgs for PurgeArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }
}

/// Every tool's command, for the man pages and completions.
pub fn commands() -> Vec<clap::Command> {
    vec![AssessArgs::command(), PurgeArgs::command()]
}
