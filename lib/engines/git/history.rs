//! A session's own commits, for the record a purge leaves (services/session_record.rs): the
//! commits of a mount's HEAD since the commit the mount was made from, and whether a
//! remote-tracking ref holds each.

use super::{GitError, Repo};

/// One of the session's commits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SessionCommit {
    pub(crate) id: String,
    /// The first line of its message, lossy UTF-8, at most 200 characters: the agent's text.
    pub(crate) subject: String,
    /// A remote-tracking ref (`refs/remotes/…`) reaches it.
    pub(crate) pushed: bool,
}

impl Repo {
    /// The commits of HEAD not reachable from `base` (the mount's base commit; ignored when it
    /// is not a commit of this repository), newest first, at most `most`.
    pub(crate) fn session_commits(&self, base: &str, most: usize) -> Result<Vec<SessionCommit>, GitError> {
        let repo = &self.repo;
        let mut walk = repo.revwalk()?;
        walk.set_sorting(git2::Sort::TOPOLOGICAL | git2::Sort::TIME)?;
        walk.push_head()?;
        if let Some(base) = git2::Oid::from_str(base).ok().filter(|oid| repo.find_commit(*oid).is_ok()) {
            walk.hide(base)?;
        }
        let remote_tips: Vec<git2::Oid> = repo
            .references_glob("refs/remotes/*")?
            .flatten()
            .filter_map(|r| r.peel_to_commit().ok().map(|c| c.id()))
            .collect();
        let mut commits = Vec::new();
        for oid in walk.take(most) {
            let oid = oid?;
            let commit = repo.find_commit(oid)?;
            let line =
                String::from_utf8_lossy(commit.message_bytes().split(|b| *b == b'\n').next().unwrap_or_default())
                    .chars()
                    .take(200)
                    .collect();
            let pushed =
                remote_tips.iter().any(|tip| *tip == oid || repo.graph_descendant_of(*tip, oid).unwrap_or(false));
            commits.push(SessionCommit { id: oid.to_string(), subject: line, pushed });
        }
        Ok(commits)
    }
}
