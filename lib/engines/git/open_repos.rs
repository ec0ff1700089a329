//! Repositories opened once for a view of many sessions and lent to one thread at a time: a
//! thousand sessions of one host repository need it opened once per thread, not once per session
//! (an open reads the repository's configuration files and checks its directory, issue 69).
//! Only for views: a repository lent again is the one opened at the start, its configuration as
//! it was then (its refs and objects are read from disk at each lookup).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use git2::Repository;

#[derive(Default)]
pub(crate) struct OpenRepos {
    idle: Mutex<HashMap<PathBuf, Vec<Repository>>>,
}

impl OpenRepos {
    /// `use_it` with the repository at `path`, opened (and checked) the first time a thread
    /// asks for it while no other opening of it is idle.
    pub(crate) fn with<T>(&self, path: &Path, use_it: impl FnOnce(&Repository) -> T) -> Result<T, git2::Error> {
        let lent = self.idle().get_mut(path).and_then(Vec::pop);
        let repo = match lent {
            Some(repo) => repo,
            None => super::repo::open_checked(path)?,
        };
        let answer = use_it(&repo);
        self.idle().entry(path.to_path_buf()).or_default().push(repo);
        Ok(answer)
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, HashMap<PathBuf, Vec<Repository>>> {
        self.idle.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl std::fmt::Debug for OpenRepos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenRepos").finish_non_exhaustive()
    }
}
