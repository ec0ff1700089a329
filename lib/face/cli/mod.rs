//! The command lines of the five tools (protocol.md, "The command lines"). They live in the
//! library so that the man pages and shell completions are rendered from the same definitions.

use std::path::PathBuf;

use clap::builder::TypedValueParser;
use clap::{Args, CommandFactory, Parser, ValueEnum};

use crate::base::exit::Exit;
use crate::base::tool::Tool;
use crate::engines::endpoint::Endpoint;
use crate::state::select::{check_arg, Unresolved};

mod given;
mod purge;
mod restore;
pub use given::Given;
pub use purge::PurgeArgs;
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

/// `ToolArgs` for a tool's arguments: their common flags, and which of their flags make a dry run.
macro_rules! tool_args {
    ($args:ty) => {
        impl ToolArgs for $args {
            fn common(&self) -> &CommonArgs {
                &self.common
            }
        }
    };
    ($args:ty, |$this:ident| $dry_run:expr) => {
        impl ToolArgs for $args {
            fn common(&self) -> &CommonArgs {
                &self.common
            }

            fn dry_run(&self) -> bool {
                let $this = self;
                $dry_run
            }
        }
    };
}

impl ToolArgs for AssessArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }

    fn reach(&self) -> Reach {
        Reach::View
    }
}
impl ToolArgs for KeepArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }

    fn dry_run(&self) -> bool {
        self.dry_run
    }

    /// Keep decides on the records piped into it: on another host it runs there alone.
    fn reach(&self) -> Reach {
        Reach::Act
    }

    /// A session named on the command line is refused with the pipe that keeps it: keep reads
    /// which sessions from its stdin, and a name beside it would be ignored (the hidden
    /// `--export` alone takes one).
    fn resolved(self) -> Result<Self, clap::Error> {
        match (&self.instance, &self.export) {
            (Some(name), None) => Err(KeepArgs::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                format!(
                    "jackin-keep takes no session name: it keeps the sessions whose assessments it \
                     reads on stdin, e.g. jackin-assess {name} | jackin-keep --keep --stop"
                ),
            )),
            _ => Ok(self),
        }
    }

    /// `--answer` answers the ask dialog, and `--discard-unfinished` is of a clean: beside a
    /// choice that asks nothing, or keeps, each would be ignored.
    fn refuse_unread(&mut self, given: &Given) -> Result<(), clap::Error> {
        use crate::state::config::Policy;
        let decided = match (self.keep, self.policy) {
            (true, _) => Some("--keep"),
            (false, Some(Policy::Keep)) => Some("--policy keep"),
            (false, Some(Policy::Clean)) => Some("--policy clean"),
            _ => None,
        };
        let keeps = self.keep
            || self.policy == Some(Policy::Keep)
            || matches!(self.answer, Some(AnswerArg::Keep | AnswerArg::Return));
        let refuse = |why: String| Err(KeepArgs::command().error(clap::error::ErrorKind::ArgumentConflict, why));
        match decided {
            Some(choice) if given.has("answer") => {
                refuse(format!("--answer answers the ask dialog, and {choice} asks nothing: give one"))
            }
            _ if keeps && given.has("discard_unfinished") => refuse(
                "--discard-unfinished is of a clean (--policy clean, --answer clean), and this run keeps or \
                 returns: give one"
                    .into(),
            ),
            _ => Ok(()),
        }
    }
}
tool_args!(ReconcileArgs, |args| args.dry_run);

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

/// The answer to the ask dialog, given instead of asking (on a terminal too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum AnswerArg {
    /// Return to the agent: change nothing
    Return,
    /// Exit and keep the session to resume later
    Keep,
    /// Exit and clean up (the unfinished work is quarantined, then deleted by jackin-purge)
    Clean,
}

impl AnswerArg {
    /// The dialog's outcome this answer stands for.
    pub fn outcome(self) -> crate::protocol::records::Outcome {
        use crate::protocol::records::Outcome;
        match self {
            AnswerArg::Return => Outcome::Return,
            AnswerArg::Keep => Outcome::Keep,
            AnswerArg::Clean => Outcome::Clean,
        }
    }
}

const EXIT_POLICY: &str = "\
The exit policy is --policy, else the workspace's dirty_exit_policy in
jackin's config, else the global one, else ask (discard means clean).
What it does to each session:

  ask, clean session: clean it, without a question (--keep: keep it)
  ask, unfinished work (dirty files, unpushed commits, stashes):
    --answer when given (on a terminal too: a script must not stop on
    a question); else on a terminal, show the work, wait for Enter,
    then ask: 1) return to agent (the default), 2) exit and keep, 3)
    exit and clean up, or Inspect (i or d: the diffs in the pager;
    `d` on the numbered text screen of TERM=dumb). With no terminal: the
    choice made in the container's exit screen during this session,
    else keep it
  ask, work that cannot be read: as unfinished work, but cleaning up
    needs --discard-unfinished
  keep, any session: keep it
  clean, clean session: clean it
  clean, unfinished work: clean it (the work is saved to a quarantine
    first)
  clean, work that cannot be read: keep it, with a warning
    (--discard-unfinished: clean it)
  --keep, any policy, any session: keep it

What each outcome does:

  keep: records how the session was launched (environment variable
    names, never their values), removes its role container,
    Docker-in-Docker sidecar, network and certs volume, and keeps its data,
    agent home, worktrees and clones. Status: restore_available
    (clean), preserved_unpushed, or preserved_dirty (also when its
    work cannot be read). jackin-restore resumes it.
  clean: marks the session clean_exited and deletes nothing;
    jackin-purge, next in the pipe, deletes it (saving unfinished work
    to a quarantine first).
  return: changes nothing; reconnect to the agent.

A session whose role container still runs is live: nothing is changed
for it (exit 5) unless --stop is given. A session whose name lock
another process holds (jackin with it attached, or jackin-purge or
jackin-restore at work on it) is left as it is, --stop or not (exit 5,
the holder named). Ctrl-C in the dialog changes nothing (exit 130).";

/// Applies the exit policy to assessed sessions: keep them to resume later, or mark them for
/// clean-up.
#[derive(Debug, Clone, Parser)]
#[command(
    name = Tool::Keep.name(),
    version,
    about = "Apply the exit policy: keep a session to resume later, or mark it for clean-up",
    long_about = "Reads assessment records (from jackin-assess) on stdin and applies the exit policy \
to each session: keep it (free Docker, keep everything resuming needs), mark it clean_exited for \
jackin-purge, or return to the agent. Writes one decision record per session; other records pass \
through unchanged. The ask dialog runs on the terminal (/dev/tty), never on stdin.",
    after_help = "Typical use: jackin-assess \"$C\" | jackin-keep | jackin-purge\n\nThe policy table and the exit status: --help.",
    after_long_help = format!("{EXIT_POLICY}\n\n{}", exit_status_help(Tool::Keep.name())),
)]
pub struct KeepArgs {
    /// Override the configured exit policy (discard means clean)
    #[arg(
        long,
        value_name = "POLICY",
        value_parser = clap::builder::PossibleValuesParser::new(["ask", "keep", "clean", "discard"])
            .map(|s: String| crate::state::config::Policy::parse(&s).expect("a listed policy")),
    )]
    pub policy: Option<crate::state::config::Policy>,

    /// Keep the session whatever the policy and the verdict: "keep this for tomorrow"
    #[arg(long)]
    pub keep: bool,

    /// The answer to the ask dialog, given instead of asking: it wins over the terminal's dialog
    /// and the container's exit screen (for scripts run from an interactive shell)
    #[arg(long, value_enum, value_name = "ANSWER")]
    pub answer: Option<AnswerArg>,

    /// Allow cleaning up a session whose work cannot be read (it cannot be saved first)
    #[arg(long)]
    pub discard_unfinished: bool,

    /// Stop a still-running session's role container first (else it is live: exit 5)
    #[arg(long)]
    pub stop: bool,

    /// Moved to `jackin-move export FILE INSTANCE`, which this runs (hidden, for one release)
    #[arg(long, value_name = "FILE", hide = true)]
    pub export: Option<PathBuf>,

    /// With the hidden --export: the session to export
    #[arg(value_name = "INSTANCE", value_parser = instance, hide = true)]
    pub instance: Option<String>,

    /// With the hidden --export (jackin-move export --with-auth)
    #[arg(long, requires = "export", hide = true)]
    pub with_auth: bool,

    /// Decide and emit the decisions with "dry_run": true; change nothing
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub docker: DockerArgs,

    #[command(flatten)]
    pub(crate) common: CommonArgs,
}

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
