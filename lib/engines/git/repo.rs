//! An open repository as the tools hold it: libgit2's repository behind the engine's own type,
//! so that no signature a tool sees names libgit2. What the tools do with one is in the
//! modules beside this one (worktrees.rs, branches.rs, ignored.rs, bundle.rs, mod.rs).

use std::path::{Path, PathBuf};

use git2::Repository;

use super::GitError;

/// A repository, opened at `path` (a work tree, a worktree or a host repository).
pub(crate) struct Repo {
    pub(super) repo: Repository,
    /// The path it was opened at, as given: what the engine's messages name.
    pub(super) path: PathBuf,
}

impl Repo {
    /// Opens the repository at `path`, without searching the directories above it.
    pub(crate) fn open(path: impl AsRef<Path>) -> Result<Repo, GitError> {
        let path = path.as_ref();
        Ok(Repo { repo: Repository::open(path)?, path: path.to_path_buf() })
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
