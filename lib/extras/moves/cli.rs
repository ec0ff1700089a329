//! jackin-move's command line: `export` and `import`, a verb each (they were `jackin-keep
//! --export` and `jackin-restore --import`, which stay as hidden aliases for one release).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::base::tool::Tool;
use crate::face::cli::{exit_status_help, instance, CommonArgs, DockerArgs, ToolArgs};

/// Move a kept session to another host: export it to one file, import it there.
#[derive(Debug, Clone, Parser)]
#[command(
    name = Tool::Move.name(),
    version,
    about = "Move a kept jackin session to another host: export it to one file, import it there",
    long_about = "Moves a kept session between hosts as one archive: `export` writes it on the host \
that kept it (the session stays kept there), `import` makes it a kept session of this host, which \
jackin-restore then resumes. An archive is checked whole before anything is written.",
    after_help = exit_status_help(Tool::Move.name()),
)]
pub struct MoveArgs {
    #[command(subcommand)]
    pub verb: Verb,

    #[command(flatten)]
    pub common: CommonArgs,
}

#[derive(Debug, Clone, Subcommand)]
pub enum Verb {
    /// Write the kept session INSTANCE to one archive FILE: its manifest, isolation records and
    /// launch recipe, agent home and state, and per mount the commits only it holds, its base
    /// commit and remote URLs, and its changed and untracked files. Never the agents' auth slots
    /// or a secret's value (without --with-auth). The session stays kept here; a live one is
    /// refused (exit 5)
    Export(ExportArgs),
    /// Bring in a session exported on another host: each mount's commits into the repository of
    /// this host's jackin config with the same remote URL (or --repo), its worktree or clone where
    /// jackin puts it, its files on top, and its manifest, records and recipe in this home, as a
    /// kept session that jackin-restore INSTANCE resumes. An archive that is truncated, altered or
    /// of a newer format, or an instance of the same name here, is refused with nothing written
    /// (exit 3)
    Import(ImportArgs),
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    /// The archive to write (a gzip-compressed tar)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The session to export: container name, instance id or a unique id prefix of 4+ characters
    #[arg(value_name = "INSTANCE", value_parser = instance)]
    pub instance: String,

    /// Carry the agents' auth slots (claude/, codex/, …) and the agent home's credentials
    /// (.codex/auth.json, .config/gh, …) too; the record says so
    #[arg(long)]
    pub with_auth: bool,

    /// Say what the archive would hold; write nothing
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub docker: DockerArgs,
}

#[derive(Debug, Clone, Args)]
pub struct ImportArgs {
    /// The archive to read (written by `jackin-move export`)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,

    /// The host repository for the mount at DST (its container path), instead of the one found by
    /// its remote URL; repeat for each mount
    #[arg(long, value_name = "DST=PATH", value_parser = crate::face::cli::repo_for_mount)]
    pub repo: Vec<(String, PathBuf)>,

    /// Check the archive and say what would be made; write nothing
    #[arg(long, alias = "plan")]
    pub dry_run: bool,
}

impl ToolArgs for MoveArgs {
    fn common(&self) -> &CommonArgs {
        &self.common
    }

    fn dry_run(&self) -> bool {
        match &self.verb {
            Verb::Export(args) => args.dry_run,
            Verb::Import(args) => args.dry_run,
        }
    }
}
