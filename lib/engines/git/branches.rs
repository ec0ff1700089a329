//! A session's scratch branch in its host repository: whether it is there (a dry run's report)
//! and deleting it (a purge's step 5). Which branch is the session's own, and that no other is
//! deleted, is decided in tools/purge.

use git2::BranchType;

use super::error::unavailable;
use super::Repo;

impl Repo {
    /// Whether the local branch `branch` (a short name, as `jk/<name>`) exists.
    pub(crate) fn has_branch(&self, branch: &str) -> bool {
        self.repo.find_branch(branch, BranchType::Local).is_ok()
    }

    /// Deletes the local branch `branch` and checks that it is gone: a purge reports only what it
    /// saw removed. `false` when there was no such branch.
    pub(crate) fn delete_branch(&self, branch: &str) -> anyhow::Result<bool> {
        let Ok(mut found) = self.repo.find_branch(branch, BranchType::Local) else { return Ok(false) };
        found
            .delete()
            .map_err(|e| unavailable(e).context(format!("deleting branch {branch} in {}", self.path.display())))?;
        if self.has_branch(branch) {
            anyhow::bail!("branch {branch} is still in {}", self.path.display());
        }
        Ok(true)
    }
}
