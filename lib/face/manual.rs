//! What each tool's man page says beyond its command line (cli/): its EXAMPLES, the ENVIRONMENT
//! it reads, its FILES, SEE ALSO (man-pages(7)), and where its shell completion finds session
//! names. tests/docs/generated_docs.rs renders them into `man/` and `completions/`;
//! tests/docs/man_examples.rs runs every example against a home of two sessions and checks its
//! exit code and output, so an example that stops being true fails there.

use crate::base::exit::Exit;
use crate::base::tool::Tool;

/// One example: a command as an operator types it, `$C` naming a session with unfinished work and
/// a stopped container, `$D` another whose work is discarded and recovered.
#[derive(Debug, Clone, Copy)]
pub struct Example {
    /// What it does, in the page's words.
    pub about: &'static str,
    /// The command line, run by `bash -e -o pipefail -c`.
    pub command: &'static str,
    /// The code it ends with on the test's home; the page names it when it is not 0.
    pub exit: Exit,
    /// A piece of what it prints there (stdout or stderr); empty: it prints nothing on stdout.
    pub shows: &'static str,
}

/// A variable of the environment the tool reads, and what it changes.
#[derive(Debug, Clone, Copy)]
pub struct Variable {
    /// Its name; `env:NAME` stands for the variables a session's launch recipe names.
    pub name: &'static str,
    pub about: &'static str,
}

/// A file or directory the tool reads or writes.
#[derive(Debug, Clone, Copy)]
pub struct File {
    /// Its path at the defaults (~/.jackin, ~/.config/jackin, ~/.docker); `<c>` a container name.
    pub path: &'static str,
    pub about: &'static str,
}

/// A SEE ALSO entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reference {
    /// A man page: its name and section.
    Page(&'static str, u8),
    /// A document of the sources, by its path from their root, and what it holds.
    Document(&'static str, &'static str),
}

/// Where a shell completes the tool's INSTANCE argument from: a listing that only reads, run
/// with `--format json --quiet`, whose records of type `record` name a session each in
/// `container_base`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionListing {
    pub command: &'static [&'static str],
    pub record: &'static str,
    /// The flag without which the tool takes no INSTANCE.
    pub only_after: Option<&'static str>,
}

/// One tool's page beyond its command line.
#[derive(Debug, Clone)]
pub struct Manual {
    pub examples: &'static [Example],
    pub environment: Vec<Variable>,
    pub files: Vec<File>,
    pub see_also: Vec<Reference>,
    /// Where its completion finds session names; `None`: it completes none (keep reads its
    /// sessions from stdin; jackin-move's INSTANCE follows a verb and a file).
    pub sessions: Option<SessionListing>,
}

/// The paragraph before the examples.
pub const EXAMPLES_INTRO: &str = "$C and $D name sessions: a container name (jk-k7p9m2xq-myapp-agentsmith), an \
instance id (k7p9m2xq), or a unique prefix of 4+ characters of one.";

/// The paragraph before the files.
pub const FILES_INTRO: &str = "~/.jackin is the jackin home (--home, JACKIN_HOME_DIR), ~/.config/jackin jackin's \
config directory (--config-dir, JACKIN_CONFIG_DIR); <c> is a session's container name.";

/// The man page's sections beyond the command line of `tool`, one of [`Tool::PROGRAMS`] (an
/// extra's page is its own: `extras::manual`).
pub fn manual(tool: Tool) -> Manual {
    let (examples, sessions) = match tool {
        Tool::Assess => (&ASSESS_EXAMPLES[..], Some(EVERY_SESSION)),
        Tool::Keep => (&KEEP_EXAMPLES[..], None),
        Tool::Purge => (&PURGE_EXAMPLES[..], Some(EVERY_SESSION)),
        Tool::Reconcile => (&RECONCILE_EXAMPLES[..], Some(EVERY_SESSION)),
        Tool::Restore => (&RESTORE_EXAMPLES[..], Some(RESUMABLE)),
        Tool::Move | Tool::Import | Tool::Hosts | Tool::Notify | Tool::Idle => {
            panic!("{}: an extra's page is its own (extras::manual)", tool.name())
        }
    };
    Manual { examples, environment: environment(tool), files: files(tool), see_also: see_also(tool), sessions }
}

// --- examples ------------------------------------------------------------------------------
// tests/docs/man_examples.rs runs the tools' examples in the order assess, reconcile, keep,
// purge, restore, on one home: each list is in the order it runs in.

pub(crate) const fn example(about: &'static str, command: &'static str, exit: Exit, shows: &'static str) -> Example {
    Example { about, command, exit, shows }
}

const ASSESS_EXAMPLES: [Example; 5] = [
    example(
        "Every session on the host, for people: its verdict, changed files and unpushed commits",
        "jackin-assess --all --format text",
        Exit::Ok,
        "1 branch unpushed",
    ),
    example(
        "For a script: whether the session holds work at risk (dirty, unpushed or unknown)",
        "jackin-assess --exit-code --format text \"$C\"",
        Exit::Findings,
        "1 file dirty",
    ),
    example(
        "Each changed file's diff too (the inspect view)",
        "jackin-assess --diff --format text \"$C\"",
        Exit::Ok,
        "+half done",
    ),
    example(
        "What the session holds on disk, and how much of it is rebuildable",
        "jackin-assess --disk --format text \"$C\"",
        Exit::Ok,
        "KiB",
    ),
    example(
        "The sessions named by the records on stdin (here, every resumable one)",
        "jackin-restore --list | jackin-assess --format text -",
        Exit::Ok,
        "no upstream",
    ),
];

const RECONCILE_EXAMPLES: [Example; 5] = [
    example(
        "What it would change, changing nothing",
        "jackin-reconcile --dry-run --format text",
        Exit::Ok,
        "→ crashed",
    ),
    example(
        "For a script: whether anything would change",
        "jackin-reconcile --dry-run --exit-code --format text",
        Exit::Findings,
        "container removed",
    ),
    example(
        "From cron: mark the sessions whose containers died or vanished, print only what changed",
        "jackin-reconcile --quiet --format text",
        Exit::Ok,
        "active → crashed",
    ),
    example(
        "Only one session; -v says on stderr how many engine calls it took",
        "jackin-reconcile -v \"$C\"",
        Exit::Ok,
        "engine API calls",
    ),
    example(
        "Remove the orphans it reports (here there are none)",
        "jackin-reconcile | jackin-purge --format text",
        Exit::Ok,
        "",
    ),
];

const KEEP_EXAMPLES: [Example; 4] = [
    example(
        "What the exit policy would decide, changing nothing (ask, with no terminal and no answer, keeps)",
        "jackin-assess \"$C\" | jackin-keep --dry-run --format text",
        Exit::Ok,
        "keep",
    ),
    example(
        "What cleaning it up would decide, whatever the config says",
        "jackin-assess \"$C\" | jackin-keep --policy clean --dry-run --format text",
        Exit::Ok,
        "clean",
    ),
    example(
        "The exit hook: the policy from jackin's config; jackin-purge acts on a clean-up and passes the rest on",
        "jackin-assess \"$C\" | jackin-keep | jackin-purge --format text",
        Exit::Ok,
        "keep",
    ),
    example(
        "Keep it for tomorrow whatever it holds, stopping its container first",
        "jackin-assess \"$C\" | jackin-keep --keep --stop --format text",
        Exit::Ok,
        "operator keep",
    ),
];

const PURGE_EXAMPLES: [Example; 5] = [
    example(
        "A session holding work at risk is refused, nothing deleted",
        "jackin-purge --dry-run --format text \"$C\"",
        Exit::Partial,
        "work at risk",
    ),
    example(
        "What slimming every kept session would take back (what git ignores in its mounts)",
        "jackin-purge --slim --kept --dry-run --format text",
        Exit::Ok,
        "would slim",
    ),
    example(
        "Retention: what would go of the kept sessions beyond the 3 newest, older than 30 days",
        "jackin-purge --keep-last 3 --older-than 30d --dry-run --format text",
        Exit::Ok,
        "",
    ),
    example(
        "Delete the quarantines whose time is up (14 days after the discard, by default); nothing is printed when none is due",
        "jackin-purge --expire-quarantine --format text",
        Exit::Ok,
        "",
    ),
    example(
        "Delete a session and its work at risk, saved to the quarantine first",
        "jackin-purge --discard-unfinished --format text \"$D\"",
        Exit::Ok,
        "unfinished work saved in",
    ),
];

const RESTORE_EXAMPLES: [Example; 6] = [
    example(
        "The resumable sessions, newest first, each ready or what it lacks",
        "jackin-restore --list --format text",
        Exit::Ok,
        "ready",
    ),
    example(
        "Which tier and steps a resume would take, changing nothing",
        "jackin-restore \"$C\" --plan --format text",
        Exit::Ok,
        "would resume",
    ),
    example(
        "Resume it by the cheapest tier, without asking (--exec: then attach)",
        "jackin-restore \"$C\" --yes --format text",
        Exit::Ok,
        "resumed",
    ),
    example(
        "After a reboot: what every interrupted session would come back as (--yes: bring them back)",
        "jackin-restore --interrupted --plan --format text",
        Exit::Ok,
        "interrupted:",
    ),
    example(
        "The quarantines discards left, newest first",
        "jackin-restore --quarantined --format text",
        Exit::Ok,
        "recoverable",
    ),
    example(
        "Discarded work back: its commits under jackin/recovered/, its files in a new worktree",
        "jackin-restore --recover \"$D\" --format text",
        Exit::Ok,
        "jackin/recovered/",
    ),
];

// --- completion ----------------------------------------------------------------------------

/// Every session of the index, from git alone: no engine, no walk of the files.
const EVERY_SESSION: SessionListing =
    SessionListing { command: &["jackin-assess", "--all"], record: "assessment", only_after: None };

/// The sessions that can be resumed (kept, crashed, failed setup): what restore takes. It asks the
/// engine and measures each session's disk.
const RESUMABLE: SessionListing =
    SessionListing { command: &["jackin-restore", "--list"], record: "candidate", only_after: None };

// --- environment ---------------------------------------------------------------------------

pub(crate) const fn variable(name: &'static str, about: &'static str) -> Variable {
    Variable { name, about }
}

pub(crate) const HOME_VARIABLES: [Variable; 2] = [
    variable(
        "JACKIN_HOME_DIR",
        "The jackin home, when --home is not given. It must exist: the tools never create one.",
    ),
    variable("HOME", "Where the defaults live: ~/.jackin, ~/.config/jackin, ~/.docker."),
];

pub(crate) const CONFIG_VARIABLE: Variable =
    variable("JACKIN_CONFIG_DIR", "jackin's config directory, when --config-dir is not given.");

pub(crate) const DOCKER_VARIABLES: [Variable; 5] = [
    variable(
        "DOCKER_HOST",
        "The Docker engine, when --docker-host is not given: unix://, tcp://, or ssh:// (through the ssh on \
         PATH, with its config, known hosts and agent).",
    ),
    variable("DOCKER_CONTEXT", "Without DOCKER_HOST: the docker CLI context whose engine to use."),
    variable(
        "DOCKER_CONFIG",
        "The docker CLI's directory (default ~/.docker): its config.json names the current context, \
         contexts/ holds them.",
    ),
    variable("DOCKER_TLS_VERIFY", "Set: a tcp:// engine of DOCKER_HOST is reached over TLS, its certificate verified."),
    variable(
        "DOCKER_CERT_PATH",
        "With DOCKER_TLS_VERIFY: the directory of ca.pem, cert.pem and key.pem (default: the docker CLI's \
         directory).",
    ),
];

const NO_COLOR: Variable = variable("NO_COLOR", "Set and not empty: the screens draw with no bold or reverse.");

const KEEP_VARIABLES: [Variable; 5] = [
    variable("TERM", "Unset, empty or dumb: the dialog asks in numbered lines of text instead of a screen."),
    NO_COLOR,
    variable("JACKIN_PAGER", "The pager of the dialog's full diffs (d), run by sh; else PAGER."),
    variable("PAGER", "The pager when JACKIN_PAGER is not set; else less -R."),
    variable("USER", "Who kept the session (user@host in its history; LOGNAME when USER is not set)."),
];

const RESTORE_VARIABLES: [Variable; 5] = [
    variable("TERM", "Unset, empty or dumb: no picker; the list is printed instead."),
    NO_COLOR,
    variable(
        "env:NAME",
        "Each variable NAME a session's launch recipe takes from the environment is read at resume and never \
         written to disk; one that is not set is named and nothing is started.",
    ),
    variable("SSH_AUTH_SOCK", "The ssh-agent whose keys tier 3 offers when it fetches the role's source over ssh."),
    variable("JACKIN_INTERRUPTED_SINCE", "--since of --interrupted, when it is not given (the boot unit sets it)."),
];

/// The variables `tool` reads. assess and purge read nothing of jackin's config.
fn environment(tool: Tool) -> Vec<Variable> {
    let mut read = HOME_VARIABLES.to_vec();
    if tool != Tool::Assess && tool != Tool::Purge {
        read.insert(1, CONFIG_VARIABLE);
    }
    if tool != Tool::Assess {
        read.extend(DOCKER_VARIABLES);
    }
    match tool {
        Tool::Keep => read.extend(KEEP_VARIABLES),
        Tool::Restore => read.extend(RESTORE_VARIABLES),
        _ => {}
    }
    read
}

// --- files ---------------------------------------------------------------------------------

pub(crate) const fn file(path: &'static str, about: &'static str) -> File {
    File { path, about }
}

pub(crate) const INDEX: File = file(
    "~/.jackin/data/instances.json",
    "The index: one row per session (jackin's file; instances.json.lock beside it while it is written).",
);
pub(crate) const MANIFEST: File =
    file("~/.jackin/data/<c>/.jackin/instance.json", "A session's manifest: its identity, status and Docker names.");
pub(crate) const ISOLATION: File =
    file("~/.jackin/data/<c>/.jackin/isolation.json", "Its isolated mounts and the host repository of each.");
pub(crate) const MOUNTS: File = file(
    "~/.jackin/data/<c>/git/",
    "Its mounts' work: worktree/repo/<dst>/<c> (a worktree of the host repository) or clone/repo/<dst>/<c>.",
);
pub(crate) const CONTINUITY: File = file(
    "~/.jackin/data/<c>/.jackin/continuity.json",
    "The tools' own file of a session: its launch recipe, the cause of a crash and its evidence, one history \
     entry per change.",
);
pub(crate) const NAME_LOCK: File = file(
    "~/.jackin/data/<c>.lock",
    "The session's name lock: jackin holds it while attached; keep, purge and restore hold it while they \
     change the session.",
);
const AGENT_TOML: File = file("~/.jackin/sockets/<c>/agent.toml", "The agent's settings, kept in the launch recipe.");
const QUARANTINE: File = file(
    "~/.jackin/quarantine/<c>-<time>/",
    "Work at risk saved before a discard: a git bundle of the commits, the changed files, RECEIPT.txt.",
);
pub(crate) const CONFIG: File = file(
    "~/.config/jackin/config.toml",
    "jackin's config; workspaces/<name>.toml of the same directory for one workspace.",
);
pub(crate) const DOCKER_CONTEXTS: File = file(
    "~/.docker/config.json",
    "The docker CLI's current context; contexts/ beside it holds each context's engine and TLS files.",
);
pub(crate) const LOCK_HOLDERS: File =
    file(crate::base::os::LINUX_LOCK_TABLE, "Who holds a lock, named when a session is busy (Linux).");
const TTY: File = file("/dev/tty", "The terminal of the screens; never stdin, which carries records.");

/// The files `tool` reads or writes.
fn files(tool: Tool) -> Vec<File> {
    match tool {
        Tool::Assess => vec![INDEX, MANIFEST, ISOLATION, MOUNTS],
        Tool::Keep => vec![
            INDEX,
            MANIFEST,
            ISOLATION,
            CONTINUITY,
            NAME_LOCK,
            file(
                "~/.jackin/data/<c>/state/exit-action.json",
                "The answer given in the container's exit screen during this session.",
            ),
            AGENT_TOML,
            CONFIG,
            DOCKER_CONTEXTS,
            LOCK_HOLDERS,
            TTY,
        ],
        Tool::Purge => vec![
            INDEX,
            MANIFEST,
            ISOLATION,
            MOUNTS,
            CONTINUITY,
            NAME_LOCK,
            file(
                "~/.jackin/data/<c>/.jackin/purge.json",
                "The mark that the session passed the at-risk check, for a rerun after a crash.",
            ),
            QUARANTINE,
            file("~/.jackin/trash/", "Where a session's directories are renamed to, then deleted."),
            DOCKER_CONTEXTS,
            LOCK_HOLDERS,
        ],
        Tool::Reconcile => vec![
            INDEX,
            file(
                "~/.jackin/data/instances.json.corrupt-<time>",
                "An index that did not parse, moved aside before it is rebuilt from the manifests.",
            ),
            MANIFEST,
            CONTINUITY,
            NAME_LOCK,
            AGENT_TOML,
            CONFIG,
            DOCKER_CONTEXTS,
            file(crate::base::os::LINUX_BOOT_RECORD, "When this host booted: one sign of a host-level kill (Linux)."),
        ],
        Tool::Restore => vec![
            INDEX,
            MANIFEST,
            ISOLATION,
            CONTINUITY,
            NAME_LOCK,
            AGENT_TOML,
            QUARANTINE,
            file("~/.jackin/cache/role-sources/", "Tier 3's clones of the roles' sources."),
            CONFIG,
            DOCKER_CONTEXTS,
            file("~/.netrc", "Credentials for an https role source."),
            file("~/.ssh/known_hosts", "The host keys an ssh role source must match."),
            LOCK_HOLDERS,
            TTY,
        ],
        _ => Vec::new(),
    }
}

// --- see also ------------------------------------------------------------------------------

/// The other tools, git and docker, and the documents of the sources.
pub(crate) fn see_also(tool: Tool) -> Vec<Reference> {
    let mut references: Vec<Reference> = Tool::PROGRAMS
        .into_iter()
        .chain(Tool::EXTRAS)
        .filter(|&other| other.name() != tool.name())
        .map(|other| Reference::Page(other.name(), 1))
        .collect();
    references.extend([Reference::Page("git", 1), Reference::Page("docker", 1)]);
    references.push(Reference::Document("docs/reference.md", "every flag, record, exit code and file"));
    references.push(Reference::Document("docs/operator-guide.md", "running sessions day to day"));
    if tool == Tool::Keep {
        references.push(Reference::Document("docs/exit-policy.md", "the exit policy and the dialog"));
    }
    references
}
