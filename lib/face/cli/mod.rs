//! The command lines of the five tools (protocol.md, "The command lines"). They live in the
//! library so that the man pages and shell completions are rendered from the same definitions.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, ValueEnum};

use crate::base::exit::Exit;
use crate::base::tool::Tool;
use crate::engines::endpoint::Endpoint;
use crate::state::select::{check_arg, Unresolved};

mod given;
mod keep;
mod purge;
mod reconcile;
mod restore;
pub use given::Given;
use keep::EXIT_POLICY;
pub use keep::{AnswerArg, KeepArgs};
pub use purge::PurgeArgs;
pub use reconcile::ReconcileArgs;
pub(crate) use restore::repo_for_mount;
pub use restore::{RestoreArgs, SortArg};

/// A code a tool can end with, and what it adds to the code's meaning for this tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitUse {
    pub exit: Exit,
    pub(crate) note: Option<&'static str>,
}

/// What some codes mean for jackin-keep, beyond what they mean for every tool.
const KEEP_NOTES: [(Exit, &str); 5] = [
    (Exit::Usage, "pipe assessment records into it"),
    (Exit::BadInput, "nothing was changed"),
    (Exit::Unavailable, "also when a config file does not parse"),
    (Exit::Busy, "a live session (its role container runs) is not touched"),
    (Exit::Interrupted, "nothing was changed"),
];

/// The codes the tool named `tool` can end with: its EXIT STATUS. Only the tools with
/// `--exit-code` (assess, reconcile) end with 1.
pub fn exit_status(tool: &str) -> Vec<ExitUse> {
    let has_exit_code = [Tool::Assess.name(), Tool::Reconcile.name()].contains(&tool);
    let note = |exit: Exit| match tool == Tool::Keep.name() {
        true => KEEP_NOTES.iter().find(|(noted, _)| *noted == exit).map(|(_, note)| *note),
        false => None,
    };
    Exit::ALL
        .into_iter()
        .filter(|&exit| exit != Exit::Findings || has_exit_code)
        .map(|exit| ExitUse { exit, note: note(exit) })
        .collect()
}

impl ExitUse {
    /// The code's meaning, with this tool's note.
    pub fn meaning(&self) -> String {
        match self.note {
            Some(note) => format!("{}; {note}", self.exit.meaning()),
            None => self.exit.meaning().to_owned(),
        }
    }
}

/// The EXIT STATUS block of `--help`: one code a line, wrapped under its meaning.
pub(crate) fn exit_status_help(tool: &str) -> String {
    const WIDTH: usize = 79;
    const INDENT: &str = "       ";
    let mut out = String::from("Exit status:");
    for usage in exit_status(tool) {
        let mut line = format!("  {:<4} ", usage.exit.code());
        for word in usage.meaning().split(' ') {
            if line.len() + word.len() > WIDTH && line.len() > INDENT.len() {
                out.push('\n');
                out.push_str(line.trim_end());
                line = INDENT.to_owned();
            }
            line.push_str(word);
            line.push(' ');
        }
        out.push('\n');
        out.push_str(line.trim_end());
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub(crate) enum Format {
    /// Text when stdout is a terminal, JSON Lines otherwise.
    #[default]
    Auto,
    /// JSON Lines records, one per line.
    Json,
    /// One readable line or block per instance.
    Text,
}

/// The flags every tool takes; global, so that a tool with verbs (jackin-move) takes them before
/// its verb or after it.
#[derive(Debug, Clone, Default, Args)]
pub struct CommonArgs {
    /// The jackin home (env JACKIN_HOME_DIR) [default: ~/.jackin]
    #[arg(global = true, long, value_name = "DIR", env = "JACKIN_HOME_DIR", hide_env_values = true)]
    pub(crate) home: Option<PathBuf>,

    /// jackin's config directory (env JACKIN_CONFIG_DIR) [default: ~/.config/jackin]
    #[arg(global = true, long, value_name = "DIR", env = "JACKIN_CONFIG_DIR", hide_env_values = true)]
    pub(crate) config_dir: Option<PathBuf>,

    /// Output format
    #[arg(global = true, long, value_enum, value_name = "FORMAT", default_value_t = Format::Auto)]
    pub(crate) format: Format,

    /// Print no warnings or progress on stderr (errors are still printed)
    #[arg(global = true, short, long, conflicts_with = "verbose")]
    pub(crate) quiet: bool,

    /// Say more on stderr about what is being done
    #[arg(global = true, short, long, action = clap::ArgAction::Count)]
    pub(crate) verbose: u8,

    /// Moved to `jackin-hosts --host DEST TOOL ARGS`, which this runs (hidden, for one release)
    #[arg(global = true, long, value_name = "DEST", hide = true)]
    pub(crate) host: Vec<String>,

    /// Moved to `jackin-hosts --all-hosts TOOL ARGS` (hidden, for one release)
    #[arg(global = true, long, hide = true)]
    pub(crate) all_hosts: bool,

    /// With the hidden --host or --all-hosts (jackin-hosts --hosts-timeout)
    #[arg(global = true, long, value_name = "DUR", value_parser = duration, default_value = "30s", hide = true)]
    pub(crate) hosts_timeout: std::time::Duration,
}

/// The flag of every tool that talks to Docker.
#[derive(Debug, Clone, Args)]
pub struct DockerArgs {
    /// The Docker engine: unix:///PATH, tcp://HOST:PORT or ssh://USER@HOST [default: as the
    /// docker CLI: DOCKER_HOST, else DOCKER_CONTEXT, else the current context of
    /// $DOCKER_CONFIG/config.json, else unix:///var/run/docker.sock]
    #[arg(long, value_name = "HOST")]
    pub(crate) docker_host: Option<String>,
}

impl DockerArgs {
    /// The engine these flags and the environment name; resolved once per run.
    pub fn endpoint(&self) -> anyhow::Result<Endpoint> {
        Endpoint::resolve(self.docker_host.as_deref())
    }
}

/// What a run across hosts (jackin-hosts) does, as the tool's flags say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Changes nothing: runs here and on every host, merged.
    View,
    /// Changes something: runs on the one host named, not here.
    Act,
}

/// Every tool's arguments expose the common flags to the driver.
pub trait ToolArgs: Parser {
    fn common(&self) -> &CommonArgs;

    /// The arguments once clap has parsed them, for what clap alone cannot read (jackin-hosts's
    /// tool arguments, read by the tool's own parser).
    fn resolved(self) -> Result<Self, clap::Error> {
        Ok(self)
    }

    /// A flag the operator typed that this run's mode would not read is refused (given.rs);
    /// a tool with modes says which reads what.
    fn refuse_unread(&mut self, _given: &Given) -> Result<(), clap::Error> {
        Ok(())
    }

    /// Whether this run changes nothing (`--dry-run`, or restore's `--plan`).
    fn dry_run(&self) -> bool {
        false
    }

    /// Across hosts (jackin-hosts): whether this run is a view (here and there, merged) or acts
    /// (there only).
    fn reach(&self) -> Reach {
        if self.dry_run() {
            Reach::View
        } else {
            Reach::Act
        }
    }
}

impl ToolArgs for AssessArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }

    fn reach(&self) -> Reach {
        Reach::View
    }
}

/// What would a purge of these sessions destroy that exists nowhere else?
#[derive(Debug, Clone, Parser)]
#[command(
    name = Tool::Assess.name(),
    version,
    about = "What would a purge of this session destroy that exists nowhere else?",
    long_about = "Assesses jackin agent sessions, offline, with git: per isolated mount (worktree \
or clone) it lists the dirty files, the commits that no surviving ref reaches, and the stashes that \
live only in a clone, and gives a verdict: clean, dirty, unpushed or unknown (cannot verify; treated \
as at risk). It never writes anything. Its assessment records feed jackin-keep and jackin-purge.",
    after_help = exit_status_help(Tool::Assess.name()),
)]
pub struct AssessArgs {
    /// Instances to assess: container name, instance id or a unique id prefix of 4+ characters;
    /// `-` reads the instances named by the records on stdin
    #[arg(value_name = "INSTANCE", value_parser = instance_or_stdin)]
    pub instances: Vec<String>,

    /// Assess every instance on the host
    #[arg(long, conflicts_with = "instances")]
    pub all: bool,

    /// Add each changed file's unified diff to the mount (the inspect view)
    #[arg(long)]
    pub diff: bool,

    /// Add the bytes on disk: the data directory outside the mounts, each mount's work, what git
    /// ignores and the rebuildable part of it (walks every file: not for the exit hook)
    #[arg(long)]
    pub disk: bool,

    /// Exit 1 when any verdict is not clean
    #[arg(long)]
    pub exit_code: bool,

    #[command(flatten)]
    pub common: CommonArgs,
}

/// An INSTANCE argument that could name an instance at all, checked before anything is looked up:
/// a path-like argument is a usage error that never touches the disk.
pub(crate) fn instance(arg: &str) -> Result<String, Unresolved> {
    check_arg(arg).map(|()| arg.to_owned())
}

/// As [`instance`], or `-` for the instances named by the records on stdin.
fn instance_or_stdin(arg: &str) -> Result<String, Unresolved> {
    if arg == "-" {
        return Ok(arg.to_owned());
    }
    instance(arg)
}

/// Every tool's command as its man page shows it: the exit status is left to its own section
/// ([`exit_status`]), so the text after the options is only keep's policy table.
pub fn man_commands() -> Vec<clap::Command> {
    commands()
        .into_iter()
        .map(|cmd| {
            let policy = (cmd.get_name() == Tool::Keep.name()).then_some(EXIT_POLICY);
            cmd.after_help(None::<&str>).after_long_help(policy)
        })
        .collect()
}

/// Every tool's command, for `--help` and the completions.
pub fn commands() -> Vec<clap::Command> {
    vec![
        AssessArgs::command(),
        KeepArgs::command(),
        PurgeArgs::command(),
        ReconcileArgs::command(),
        RestoreArgs::command(),
    ]
}

/// A duration flag's value: humantime's words (`30d`, `12h`, `90s`, `1w 2d`). A bare number is
/// refused with the units these flags are counted in, not humantime's "30sec or 30ms".
pub(crate) fn duration(text: &str) -> Result<std::time::Duration, String> {
    humantime::parse_duration(text).map_err(|e| match text.trim().parse::<u64>() {
        Ok(n) => format!("a unit is needed: {n}d (days), {n}h (hours), {n}m (minutes) or {n}s (seconds)"),
        Err(_) => format!("{e} (e.g. 30d, 12h, 90m, 45s)"),
    })
}

#[cfg(test)]
mod duration_tests {
    #[test]
    fn a_bare_number_asks_for_the_units_of_these_flags() {
        assert_eq!(super::duration("2d"), Ok(std::time::Duration::from_secs(2 * 86_400)));
        let bare = super::duration("30").unwrap_err();
        assert!(bare.contains("30d (days)") && !bare.contains("ms"), "{bare}");
        assert!(super::duration("soon").unwrap_err().contains("e.g. 30d"));
    }
}
