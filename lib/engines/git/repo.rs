//! An open repository as the tools hold it: libgit2's repository behind the engine's own type,
//! so that no signature a tool sees names libgit2. What the tools do with one is in the
//! modules beside this one (worktrees.rs, branches.rs, ignored.rs, bundle.rs, mod.rs).

use std::path::{Path, PathBuf};

use git2::Repository;

use super::error::WOULD_WAIT;
use super::GitError;

/// A repository, opened at `path` (a work tree, a worktree or a host repository).
pub(crate) struct Repo {
    pub(super) repo: Repository,
    /// The path it was opened at, as given: what the engine's messages name.
    pub(super) path: PathBuf,
}

impl Repo {
    /// Opens the repository at `path`, without searching the directories above it.
    /// A repository whose files libgit2 opens by name include one that is not a regular file (a
    /// FIFO the agent made, say) is not opened: libgit2 would wait on it for ever.
    pub(crate) fn open(path: impl AsRef<Path>) -> Result<Repo, GitError> {
        let path = path.as_ref();
        Ok(Repo { repo: open_checked(path)?, path: path.to_path_buf() })
    }

    /// A repository without a work tree.
    pub(crate) fn is_bare(&self) -> bool {
        self.repo.is_bare()
    }
}

/// Objects read are not re-hashed, for the whole process. Re-hashing every object read, as
/// libgit2 does by default, is a corruption check git itself leaves to `git fsck`; it costs a
/// tenth of a status over a large tree.
pub(crate) fn skip_object_hash_checks() {
    git2::opts::strict_hash_verification(false);
}

/// libgit2's `Repository::open`, after [`no_special_files`]: every open of a repository the agent
/// can write goes through here.
pub(super) fn open_checked(path: impl AsRef<Path>) -> Result<Repository, git2::Error> {
    super::counted::OPENS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    no_special_files(path.as_ref())?;
    let repo = Repository::open(path)?;
    super::config_files::rule_files_checked(&repo)?;
    Ok(repo)
}

/// libgit2's `Repository::open_bare`, after [`no_special_files`].
pub(super) fn open_bare_checked(path: impl AsRef<Path>) -> Result<Repository, git2::Error> {
    no_special_files(path.as_ref())?;
    Repository::open_bare(path)
}

/// The files libgit2 opens by name in a git directory, when it opens a repository and while it
/// reads one (its configuration, HEAD, index and refs, the ignore and attribute rules of
/// `info/`, grafts, alternates).
const READ_BY_NAME: [&str; 12] = [
    "HEAD",
    "config",
    "config.worktree",
    "commondir",
    "gitdir",
    "index",
    "packed-refs",
    "info/exclude",
    "info/attributes",
    "info/grafts",
    "shallow",
    "objects/info/alternates",
];

/// Refuses a repository at `path` where a file libgit2 opens by name is a FIFO, a socket or a
/// device (a link is judged by what it leads to): `.git` itself, the files of [`READ_BY_NAME`] in
/// its git directory and its common directory, and the work tree's own `.gitignore` and
/// `.gitattributes`, and what the configuration includes (`config_files`). Only looks (`stat`),
/// never opens one of them but a `.git` or `commondir` file and the configuration, read as the
/// bounded, non-blocking text each must be. (The rule files deeper in the work tree are judged
/// before each status: `walk_guard`.)
pub(super) fn no_special_files(path: &Path) -> Result<(), git2::Error> {
    let special = |p: &Path| git2::Error::from_str(&format!("{} {WOULD_WAIT}", p.display()));
    let not_special = |p: &Path| match std::fs::metadata(p) {
        Ok(meta) if !(meta.is_file() || meta.is_dir()) => Err(special(p)),
        _ => Ok(()),
    };
    let dot_git = path.join(".git");
    let git_dir = match std::fs::metadata(&dot_git) {
        Ok(meta) if meta.is_dir() => dot_git,
        Ok(meta) if meta.is_file() => match read_pointer(&dot_git, "gitdir: ") {
            Some(target) => path.join(target),
            None => return Ok(()),
        },
        Ok(_) => return Err(special(&dot_git)),
        Err(_) => path.to_path_buf(),
    };
    for name in [".gitignore", ".gitattributes"] {
        not_special(&path.join(name))?;
    }
    let common = read_pointer(&git_dir.join("commondir"), "").map(|c| git_dir.join(c));
    for dir in std::iter::once(&git_dir).chain(common.as_ref()) {
        for name in READ_BY_NAME {
            not_special(&dir.join(name))?;
        }
        for name in ["config", "config.worktree"] {
            super::config_files::includes_checked(&dir.join(name))?;
        }
    }
    Ok(())
}

/// The git directory and the common directory of the work tree at `path`, read from its `.git`
/// (a directory, or a worktree's `gitdir:` file) and the git directory's `commondir` file as
/// git itself reads them, without libgit2 (for a look at stat data that needs nothing else of
/// the repository). `None`: `path` has no `.git`, or one that names nothing.
pub(super) fn git_dirs(path: &Path) -> Option<(PathBuf, PathBuf)> {
    let dot_git = path.join(".git");
    let meta = std::fs::symlink_metadata(&dot_git).ok()?;
    let git_dir = if meta.is_dir() {
        dot_git
    } else if meta.is_file() {
        path.join(read_pointer(&dot_git, "gitdir: ")?)
    } else {
        return None;
    };
    let common = read_pointer(&git_dir.join("commondir"), "").map_or_else(|| git_dir.clone(), |c| git_dir.join(c));
    Some((git_dir, common))
}

/// The path a `.git` file (`gitdir: <path>`) or a `commondir` file names: read without following
/// a link or waiting on a FIFO, at most 4 KiB.
fn read_pointer(file: &Path, prefix: &str) -> Option<PathBuf> {
    let text = crate::state::store::read_agent_text(file, 4096)?;
    let line = text.lines().next()?.strip_prefix(prefix)?.trim();
    (!line.is_empty()).then(|| PathBuf::from(line))
}
