//! jackin-keep's command line: the exit policy, its overrides and the answer to its dialog.

use std::path::PathBuf;

use clap::builder::TypedValueParser;
use clap::{CommandFactory, Parser, ValueEnum};

use super::{exit_status_help, instance, CommonArgs, DockerArgs, Given, Reach, ToolArgs};
use crate::base::tool::Tool;

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

pub(super) const EXIT_POLICY: &str = "\
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
