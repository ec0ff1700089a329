//! jackin-restore's command line: the list, a resume, the quarantines and records, recover, and
//! the sweep after a reboot (`--import`, hidden, runs `jackin-move import`).

use std::path::PathBuf;

use clap::{CommandFactory, Parser, ValueEnum};

use super::{exit_status_help, instance, CommonArgs, DockerArgs, Given, Reach, ToolArgs};
use crate::base::tool::Tool;
use crate::tools::restore::{Filters, Order};

/// The order of the resume list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SortArg {
    /// Newest first
    Age,
    /// Most bytes on disk first
    Size,
}

/// List resumable sessions; resume one by the cheapest faithful tier.
#[derive(Debug, Clone, Parser)]
#[command(
    name = Tool::Restore.name(),
    version,
    about = "List resumable sessions; resume one by the cheapest faithful tier",
    long_about = "Without an instance, lists the sessions that can be resumed (kept: restore_available, \
preserved_dirty, preserved_unpushed; crashed; failed_setup; and active or running ones whose container is \
there, tier 0), newest first, each with its age, its work summary, the tier a \
resume would take and whether it is ready; on a terminal that can draw (not TERM=dumb), and without \
--list, --plan or --dry-run, the list is a picker on /dev/tty instead: arrows or numbers move, w and r \
filter by workspace and role, Enter resumes a ready session and runs its attach command, q or Esc \
leaves with nothing resumed. With an instance, resumes it: the same container name, data \
directory and worktrees. Tier 0: the container is running, nothing to start. Tier 1: it is stopped; \
start the sidecar (created again from the launch recipe when it was removed), wait until it is \
healthy, start it. Tier 2: it is gone but its image is present; \
recreate network, volume, sidecar and container from the launch recipe captured when it was kept. \
Tier 3: the image is gone too; rebuild it from the role's source at exactly the recorded commit, then \
tier 2. Secrets are resolved from this process's environment or 1Password at resume time and never \
written to disk. What stops a resume (a variable that cannot be resolved, a worktree that is gone) \
is said before the preserved work is shown for acknowledgement. While it resumes a session it holds \
the session's name lock: a purge or keep of it meanwhile is refused (exit 5), and so is this resume \
(and --plan) of a session another process holds, naming the holder. A failed resume never deletes \
anything.",
    after_help = exit_status_help(Tool::Restore.name()),
)]
pub struct RestoreArgs {
    /// The session to resume: container name, instance id or a unique id prefix of 4+ characters
    #[arg(value_name = "INSTANCE", value_parser = instance)]
    pub instance: Option<String>,

    /// List resumable sessions, newest first, instead of opening the picker (the default without
    /// INSTANCE when no terminal can show the picker); change nothing
    #[arg(long, conflicts_with = "instance")]
    pub list: bool,

    /// Only sessions of this workspace
    #[arg(long, value_name = "NAME", conflicts_with = "instance")]
    pub workspace: Option<String>,

    /// Only sessions of this role
    #[arg(long, value_name = "KEY", conflicts_with = "instance")]
    pub role: Option<String>,

    /// Only sessions of this agent runtime
    #[arg(long, value_name = "SLUG", conflicts_with = "instance")]
    pub agent: Option<String>,

    /// Only sessions with this working directory
    #[arg(long, value_name = "DIR", conflicts_with = "instance")]
    pub workdir: Option<String>,

    /// The list's order: age (newest first) or size (most bytes on disk first)
    #[arg(long, value_enum, value_name = "ORDER", default_value_t = SortArg::Age, conflicts_with = "instance")]
    pub sort: SortArg,

    /// List the quarantines discards left, newest first: what each holds, until when, and
    /// whether it can be recovered now; change nothing
    #[arg(long, conflicts_with_all = ["instance", "list", "recover"])]
    pub quarantined: bool,

    /// The --older-than of your retention purge (env JACKIN_KEPT_RETENTION): --list says when
    /// each kept clean session will be deleted by it ("expires in 3d 4h")
    #[arg(long, value_name = "DUR", value_parser = super::duration, env = "JACKIN_KEPT_RETENTION")]
    pub retention: Option<std::time::Duration>,

    /// List the records purged sessions left, newest first: how each was launched, how it
    /// ended, what its work became (its commits pushed, integrated or quarantined), the copy of
    /// its agent's conversation, and when the record expires; change nothing
    #[arg(long, conflicts_with_all = ["instance", "list", "recover", "quarantined", "record"])]
    pub records: bool,

    /// Show the record of one purged session: C is its container name or a unique prefix (4+
    /// characters) of its instance id
    #[arg(long, value_name = "C", conflicts_with_all = ["instance", "list", "recover", "quarantined"])]
    pub record: Option<String>,

    /// Put a quarantine's work back: Q is its directory, or a session's container name, id or
    /// unique id prefix (its newest quarantine). The saved refs come back under
    /// refs/jackin/recovered/, not as branches, which jackin's exit check would count (a
    /// submodule's in its git directory), the files and what was staged in a
    /// new worktree beside the host repository; nothing that exists is touched
    #[arg(long, value_name = "Q", conflicts_with_all = ["instance", "list"])]
    pub recover: Option<String>,

    /// With --recover, when the host repository is gone: recover into a new repository at DIR
    #[arg(long, value_name = "DIR", requires = "recover", value_parser = absolute_dir)]
    pub into: Option<std::path::PathBuf>,

    /// Moved to `jackin-move import FILE`, which this runs (hidden, for one release)
    #[arg(long, value_name = "FILE", hide = true, conflicts_with_all = ["instance", "list", "recover", "quarantined"])]
    pub import: Option<PathBuf>,

    /// With the hidden --import (jackin-move import --repo)
    #[arg(long, value_name = "DST=PATH", requires = "import", value_parser = repo_for_mount, hide = true)]
    pub repo: Vec<(String, PathBuf)>,

    /// Resume every session the host or engine interrupted (crashed: killed by the host, its
    /// container exited or removed while the session was in use) within --since, several at a
    /// time, each by the cheapest faithful tier, one `interrupted` record each; a session jackin
    /// kept with its container running (a detach) that the host then stopped counts too, whatever
    /// its status. Sessions in use, kept on purpose or purged are not touched (one in use, or interrupted before --since, is
    /// listed as left alone); --workspace, --role, --agent and --workdir narrow it. Needs --yes
    /// (nobody is asked) or --plan. Exit 0 when every one was
    /// resumed or there was none, 6 when some were not (4 when each of those only could not be
    /// reached: retry later)
    #[arg(long, conflicts_with_all = ["instance", "list", "quarantined", "recover", "import", "exec"])]
    pub interrupted: bool,

    /// With --interrupted: only sessions interrupted within this long before now (`24h`, `3d`;
    /// default: JACKIN_INTERRUPTED_SINCE, else 24h); older ones are listed as left alone, with how
    /// to resume them one at a time
    #[arg(long, value_name = "DUR", value_parser = super::duration, requires = "interrupted")]
    pub since: Option<std::time::Duration>,

    /// With --interrupted: how many sessions are resumed at the same time [default: 4]
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=64), requires = "interrupted")]
    pub jobs: Option<u16>,

    /// Start a stopped container as it is, even when it no longer matches its launch recipe
    /// (another image, mounts, variables, network or sidecar): without it such a container is
    /// replaced from the recipe at tier 2, the new one created and checked before the old one
    /// is removed
    #[arg(long)]
    pub as_is: bool,

    /// Say which tier and steps a resume would take; change nothing (same as --dry-run)
    #[arg(long)]
    pub plan: bool,

    /// Change nothing; print the records that would be written
    #[arg(long)]
    pub dry_run: bool,

    /// Acknowledge the preserved-work summary without a terminal
    #[arg(long, short = 'y')]
    pub yes: bool,

    /// Attach once the session runs: `jackin hardline C` where jackin is installed (its finalizer
    /// settles the session when it is left), else jackin's capsule, after which the session is
    /// settled here as jackin's exit settles it (assess, keep's policy and dialog, purge)
    #[arg(long)]
    pub exec: bool,

    /// Seconds to wait for the sidecar's health command to succeed
    #[arg(long, value_name = "SECS", default_value_t = 120)]
    pub health_timeout: u64,

    /// Seconds tier 3's fetch of the role source waits for the server to say anything before it
    /// gives up (exit 4)
    #[arg(long, value_name = "SECS", default_value_t = crate::engines::git::DEFAULT_FETCH_TIMEOUT_SECS)]
    pub fetch_timeout: u64,

    #[command(flatten)]
    pub docker: DockerArgs,

    #[command(flatten)]
    pub(crate) common: CommonArgs,

    /// The flags of a picked session's resume the operator typed (`--as-is`, `--yes`, ...):
    /// without a terminal to pick on they would do nothing.
    #[arg(skip)]
    picked: Vec<String>,
}

/// The list's filters: the list, the picker and --interrupted read them.
const FILTERS: [&str; 4] = ["workspace", "role", "agent", "workdir"];
/// What a resume reads, of a named session, the picked one or each --interrupted one.
const RESUME: [&str; 5] = ["as_is", "yes", "health_timeout", "fetch_timeout", "docker_host"];

/// Where each of jackin-restore's flags counts, for the refusal of one given where it does not.
fn counts_with(id: &str) -> &'static str {
    match id {
        "list" | "sort" | "retention" => "in the list (jackin-restore --list)",
        "workspace" | "role" | "agent" | "workdir" => "in the list, the picker or --interrupted",
        "since" | "jobs" | "interrupted" => "with --interrupted",
        "into" => "with --recover Q",
        "plan" | "dry_run" => "with a session named (jackin-restore C --plan), --interrupted or --recover Q",
        "exec" => "with a session named (jackin-restore C --exec) or picked",
        "docker_host" => "where the engine is asked: the list, a resume, --interrupted",
        _ => "in a resume: a session named (jackin-restore C), picked, or --interrupted",
    }
}

impl RestoreArgs {
    /// The list's filters, as the flags give them.
    pub fn filters(&self) -> Filters {
        Filters {
            workspace: self.workspace.clone(),
            role: self.role.clone(),
            agent: self.agent.clone(),
            workdir: self.workdir.clone(),
        }
    }

    /// A flag of the resume of the session the picker gives, when one was given: without a
    /// terminal to pick on it would do nothing.
    pub fn of_a_picked_session(&self) -> Option<&str> {
        self.picked.first().map(String::as_str)
    }

    /// The mode these flags choose, and the flags it reads (besides every tool's own).
    fn mode(&self) -> (&'static str, Vec<&'static str>) {
        let with = |flags: &[&'static str]| flags.to_vec();
        if self.import.is_some() {
            ("beside the hidden --import", with(&["import", "repo", "plan", "dry_run"]))
        } else if self.recover.is_some() {
            ("beside --recover", with(&["recover", "into", "plan", "dry_run"]))
        } else if self.record.is_some() {
            ("beside --record", with(&["record"]))
        } else if self.records {
            ("beside --records", with(&["records"]))
        } else if self.quarantined {
            ("beside --quarantined", with(&["quarantined"]))
        } else if self.interrupted {
            let only = ["interrupted", "since", "jobs", "plan", "dry_run"];
            ("beside --interrupted", [&only[..], &FILTERS, &RESUME].concat())
        } else if self.instance.is_some() {
            ("with a session named", [&["instance", "plan", "dry_run", "exec"][..], &RESUME].concat())
        } else if self.list {
            ("beside --list", [&["list", "sort", "retention", "docker_host"][..], &FILTERS].concat())
        } else {
            ("in the list or the picker", [&["sort", "retention", "exec"][..], &FILTERS, &RESUME].concat())
        }
    }

    /// The list's order, as `--sort` gives it.
    pub fn order(&self) -> Order {
        match self.sort {
            SortArg::Age => Order::Newest,
            SortArg::Size => Order::Largest,
        }
    }
}

impl ToolArgs for RestoreArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }

    fn dry_run(&self) -> bool {
        self.plan || self.dry_run
    }

    /// `--plan` and `--dry-run` are of a resume or a recovery: without a session, the sweep or
    /// --recover they would only list, so they are refused rather than ignored.
    fn resolved(self) -> Result<Self, clap::Error> {
        let target = self.instance.is_some() || self.interrupted || self.recover.is_some() || self.import.is_some();
        match (self.plan, self.dry_run) {
            (true, _) | (_, true) if !target => Err(RestoreArgs::command().error(
                clap::error::ErrorKind::MissingRequiredArgument,
                format!(
                    "{} plans a resume: name the session (jackin-restore C {0}), or add --interrupted \
                     or --recover Q; --list lists without it",
                    if self.plan { "--plan" } else { "--dry-run" }
                ),
            )),
            _ => Ok(self),
        }
    }

    /// Each flag is read by the mode it is given in, or refused; a plan resumes nothing, so the
    /// flags of the resume itself are refused beside it.
    fn refuse_unread(&mut self, given: &Given) -> Result<(), clap::Error> {
        let (mode, reads) = self.mode();
        given.only(RestoreArgs::command(), mode, &reads, counts_with)?;
        let refuse = |why: String| Err(RestoreArgs::command().error(clap::error::ErrorKind::ArgumentConflict, why));
        if self.plan && self.dry_run {
            return refuse("--plan and --dry-run are one flag: give one".into());
        }
        if let Some(flag) = ["yes", "exec"].into_iter().find(|id| given.has(id)).filter(|_| self.dry_run()) {
            let planned = if self.plan { "--plan" } else { "--dry-run" };
            return refuse(format!("--{flag} is of the resume itself; {planned} resumes nothing: give one"));
        }
        if self.instance.is_none() && !self.interrupted && !self.list {
            self.picked = ["as_is", "yes", "exec", "health_timeout", "fetch_timeout"]
                .into_iter()
                .filter(|id| given.has(id))
                .map(|id| super::given::spelled(&RestoreArgs::command(), id))
                .collect();
        }
        Ok(())
    }

    fn reach(&self) -> Reach {
        let looks = self.list || self.quarantined || self.records || self.record.is_some();
        if looks || self.dry_run() {
            Reach::View
        } else {
            Reach::Act
        }
    }
}

/// A directory argument, made absolute against the working directory without resolving a link
/// (`state::store::absolute`): the records that name it go to processes that may run elsewhere.
fn absolute_dir(arg: &str) -> Result<PathBuf, String> {
    crate::state::store::absolute(std::path::Path::new(arg)).map_err(|e| format!("{e:#}"))
}

/// `DST=PATH` of `--repo`: a mount's container path and a host repository.
pub(crate) fn repo_for_mount(arg: &str) -> Result<(String, PathBuf), String> {
    match arg.split_once('=') {
        Some((dst, path)) if dst.starts_with('/') && !path.is_empty() => Ok((dst.to_owned(), absolute_dir(path)?)),
        _ => Err(format!("{arg:?} is not DST=PATH (the mount's container path, =, a host repository)")),
    }
}
