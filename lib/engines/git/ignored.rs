//! What git ignores in a work tree: the one rule for what counts as rebuildable on disk and what
//! `jackin-purge --slim` takes back. The entries are those `git clean -dX` would remove, by git's
//! own exclude rules (the repository's `.gitignore` files, `info/exclude` of the repository,
//! shared by its worktrees, and `core.excludesFile`): an ignored directory is one entry, a file
//! tracked despite a rule (`git add -f`) is tracked, not ignored.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use git2::{Repository, StatusOptions};

use super::{GitError, Repo};

/// One ignored entry of a work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ignored {
    /// Relative to the work tree.
    pub(crate) path: PathBuf,
    pub(crate) is_dir: bool,
}

impl Ignored {
    /// Whether taking it back loses nothing that a build cannot make again. An ignored file whose
    /// name starts with a dot outside any ignored directory (`.env.local`, `.envrc`) is local
    /// configuration, often written by hand: ignored, but kept.
    pub(crate) fn rebuildable(&self) -> bool {
        self.is_dir || !self.path.file_name().is_some_and(|name| name.as_encoded_bytes().starts_with(b"."))
    }
}

impl Repo {
    /// The ignored entries of the work tree (see [`ignored`]).
    pub(crate) fn ignored(&self) -> Result<Vec<Ignored>, GitError> {
        Ok(ignored(&self.repo)?)
    }
}

/// The ignored entries of `repo`'s work tree, each ignored directory once
/// (what is under it is not listed). Entries under an untracked directory are found too, as
/// `git clean -dX` finds them.
pub(super) fn ignored(repo: &Repository) -> Result<Vec<Ignored>, git2::Error> {
    if repo.workdir().is_none() {
        return Ok(Vec::new());
    }
    let mut options = StatusOptions::new();
    options
        .show(git2::StatusShow::Workdir)
        .include_untracked(true)
        .recurse_untracked_dirs(true)
        .include_ignored(true)
        .recurse_ignored_dirs(false)
        .exclude_submodules(true);
    let (index, written) = super::stat_check::read_index(repo)?;
    // Every ignored entry is a name the index does not hold, which the stat check names.
    if !super::narrow_by_stat_data(repo, &index, written, &mut options)? {
        return Ok(Vec::new());
    }
    let statuses = repo.statuses(Some(&mut options))?;
    Ok(from_statuses(&statuses, &index))
}

/// The ignored entries of a status that included them (`include_ignored`, not recursing into
/// ignored directories): the one reading of them, for [`ignored`] and for an assessment's status,
/// whose ignored entries a disk measurement then reads without a status of its own.
pub(super) fn from_statuses(statuses: &git2::Statuses<'_>, index: &git2::Index) -> Vec<Ignored> {
    let mut tracked: Option<Vec<Vec<u8>>> = None;
    let mut entries = Vec::new();
    for entry in statuses.iter().filter(|e| e.status().is_ignored()) {
        // The name's own bytes: one that is not UTF-8 is still the file it names.
        let bytes = entry.path_bytes();
        let is_dir = bytes.ends_with(b"/");
        let relative = bytes.strip_suffix(b"/").unwrap_or(bytes);
        // A tracked file inside a directory would make the directory not wholly ignored; libgit2
        // then lists the wholly ignored entries under it instead (and not the ignored files
        // beside the tracked one, which git clean -dX would remove: they are kept), and this
        // keeps that promise checked.
        if is_dir && holds_tracked(tracked.get_or_insert_with(|| tracked_paths(index)), relative) {
            continue;
        }
        entries.push(Ignored { path: PathBuf::from(OsStr::from_bytes(relative)), is_dir });
    }
    entries
}

/// The index's paths, sorted.
fn tracked_paths(index: &git2::Index) -> Vec<Vec<u8>> {
    let mut paths: Vec<Vec<u8>> = index.iter().map(|e| e.path).collect();
    paths.sort();
    paths
}

fn holds_tracked(tracked: &[Vec<u8>], dir: &[u8]) -> bool {
    let prefix = [dir, b"/"].concat();
    let at = tracked.partition_point(|p| p.as_slice() < prefix.as_slice());
    tracked.get(at).is_some_and(|p| p.starts_with(&prefix))
}

/// Where an entry is under the (resolved) work tree `root`, when it stays inside it: a relative
/// path without `..`, whose directories resolve to somewhere under `root` (an entry's own name is
/// never followed).
pub(crate) fn inside(root: &Path, entry: &Ignored) -> Option<PathBuf> {
    use std::path::Component;
    if !entry.path.components().all(|c| matches!(c, Component::Normal(_))) {
        return None;
    }
    let path = root.join(&entry.path);
    let name = path.file_name()?;
    let parent = path.parent()?.canonicalize().ok()?;
    parent.starts_with(root).then(|| parent.join(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignored_dotfiles_are_kept_and_ignored_dot_directories_are_not() {
        let entry = |path: &str, is_dir| Ignored { path: PathBuf::from(path), is_dir };
        assert!(!entry(".env.local", false).rebuildable());
        assert!(!entry("web/.envrc", false).rebuildable());
        assert!(entry(".venv", true).rebuildable());
        assert!(entry("build.log", false).rebuildable());
    }

    #[test]
    fn a_directory_holding_a_tracked_file_is_not_wholly_ignored() {
        let tracked: Vec<Vec<u8>> = vec![b"src/main.rs".to_vec(), b"target/NOTES".to_vec(), b"targets.txt".to_vec()];
        assert!(holds_tracked(&tracked, b"target"));
        assert!(!holds_tracked(&tracked, b"targ"));
        assert!(!holds_tracked(&tracked, b"node_modules"));
        // A sparse index names a directory outside its cone as one entry, `dir/`: all of it is
        // tracked content.
        assert!(holds_tracked(&[b"vendor/".to_vec()], b"vendor"));
    }

    #[test]
    fn the_tracked_paths_are_the_indexs_sorted() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = Repository::init(tmp.path()).unwrap();
        for name in ["zeta", "alpha", "mid/dle"] {
            let path = tmp.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, name).unwrap();
        }
        let mut index = repo.index().unwrap();
        for name in ["zeta", "mid/dle", "alpha"] {
            index.add_path(Path::new(name)).unwrap();
        }
        assert_eq!(tracked_paths(&index), [b"alpha".to_vec(), b"mid/dle".to_vec(), b"zeta".to_vec()]);
    }

    #[test]
    fn an_entry_never_leads_out_of_its_work_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().canonicalize().unwrap();
        std::fs::create_dir(root.join("a")).unwrap();
        std::os::unix::fs::symlink("/", root.join("up")).unwrap();
        assert_eq!(inside(&root, &Ignored { path: "a/x".into(), is_dir: false }), Some(root.join("a/x")));
        assert_eq!(inside(&root, &Ignored { path: "up".into(), is_dir: false }), Some(root.join("up")));
        assert_eq!(inside(&root, &Ignored { path: "up/etc".into(), is_dir: true }), None);
        assert_eq!(inside(&root, &Ignored { path: "../x".into(), is_dir: false }), None);
    }
}
