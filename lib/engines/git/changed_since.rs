//! Whether anything of a work tree and of its repository changed since a moment, told from stat
//! data alone: the `ctime` of every entry. A write, a `chmod`, a rename, a link, a new file and a
//! removal each set the ctime of the file or of its directory to the moment it happened, and no
//! program can set a ctime back (`utimensat` sets mtime and atime, and stamps ctime now). So an
//! entry whose ctime is before the moment has not changed since, and a directory whose ctime is
//! before it has the same names.
//!
//! What jackin-keep asks before it stamps `clean_exited` on an assessment it was handed
//! (tools/keep/stands.rs): "nothing changed since the assessment started" makes a second assessment
//! needless. Walked: the whole work tree, untracked and ignored entries included (no rule is
//! read: anything that changed counts), the repository's git directory and its common directory
//! (HEAD, the index, refs, reflogs and the stash, packed-refs, config, the worktrees' own
//! directories), all but `objects/` (an object no ref or reflog names is no work; a commit
//! moves a ref). Stats are relative to an open directory, one path component each, links are
//! never followed, nothing is opened but directories.

use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use rustix::fs::{self as fs, AtFlags, Dir, FileType, Mode, OFlags, Stat};

/// What the walk found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Since {
    /// Every entry's ctime is before the moment.
    Unchanged,
    /// This entry changed at or after it (the first one met).
    Changed(PathBuf),
    /// More entries than the walk may look at: the caller assesses again instead.
    TooLarge,
    /// Something could not be looked at (gone, not permitted, not a repository): the caller
    /// assesses again instead.
    Unreadable(String),
}

/// Whether anything of the repository at `path` (its work tree at `path` when `with_work_tree`:
/// what is mounted and what a purge deletes, and its git directories) has a ctime at
/// or after `since`, looking at `most_entries` entries at most.
pub(crate) fn changed_since(path: &Path, with_work_tree: bool, since: SystemTime, most_entries: usize) -> Since {
    // Only the two directories are needed of the repository: libgit2 is not started for them
    // (its start-up, OpenSSL's included, would cost more than the walk).
    let Some((git_dir, common_dir)) = super::repo::git_dirs(path) else {
        return Since::Unreadable(format!("{}: no git directory found", path.display()));
    };
    let (git_dir, common_dir) = (canonical(git_dir), canonical(common_dir));
    let work_trees: Vec<PathBuf> = with_work_tree.then(|| path.to_path_buf()).into_iter().collect();
    let mut walk = Walk { since, left: most_entries };
    let mut roots: Vec<(PathBuf, Root)> = work_trees.into_iter().map(|w| (w, Root::WorkTree)).collect();
    if common_dir == git_dir {
        roots.push((git_dir, Root::CommonDir));
    } else {
        roots.push((git_dir, Root::OwnGitDir));
        roots.push((common_dir, Root::CommonDir));
    }
    for (root, kind) in roots {
        match walk.root(&root, kind) {
            Ok(None) => {}
            Ok(Some(found)) => return found,
            Err(e) => return Since::Unreadable(format!("{}: {e}", root.display())),
        }
    }
    Since::Unchanged
}

/// `commondir` is relative (`../..`): one spelling of each directory, so that a clone's git
/// directory and common directory are known to be one.
fn canonical(dir: PathBuf) -> PathBuf {
    std::fs::canonicalize(&dir).unwrap_or(dir)
}

/// The three kinds of directory walked; a git directory's `objects/` is left out, and so is a
/// work tree's own `.git` directory (a clone's git directory, walked as a root of its own).
///
/// A git directory's own ctime moves whenever a name comes and goes at its top, and `git status`
/// makes one come and go each time it runs (its `index.lock`, taken and let go: jackin's exit
/// check, an operator's shell prompt in the host repository). So its entries are judged, not
/// its own ctime, as far as a name gone from it can lose nothing: a worktree's own git
/// directory holds only what says where the work is (HEAD, the index, its reflogs), none of
/// which makes work that exists elsewhere exist nowhere when removed. A common directory's
/// `packed-refs` and `refs/` do (the host branch that holds the commits), so a common directory
/// whose names changed counts as changed unless both are there.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Root {
    WorkTree,
    OwnGitDir,
    CommonDir,
}

struct Walk {
    since: SystemTime,
    left: usize,
}

impl Walk {
    fn root(&mut self, root: &Path, kind: Root) -> rustix::io::Result<Option<Since>> {
        let fd = fs::open(root, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        if ctime(&fs::fstat(&fd)?) >= self.since {
            let names_kept = |name: &str| fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW).is_ok();
            let judged_by_entries = match kind {
                Root::WorkTree => false,
                Root::OwnGitDir => true,
                Root::CommonDir => names_kept("packed-refs") && names_kept("refs"),
            };
            if !judged_by_entries {
                return Ok(Some(Since::Changed(root.to_path_buf())));
            }
        }
        self.dir(root, fd, Some(kind), false)
    }

    /// One directory whose own ctime was already looked at (or is not judged): each entry's,
    /// then each subdirectory's entries. `top` is the root's kind at a root, `in_worktrees`
    /// says the directory is a common directory's `worktrees/`, whose subdirectories are the
    /// worktrees' own git directories (judged by their entries, as a root of that kind is).
    fn dir(
        &mut self,
        path: &Path,
        fd: OwnedFd,
        top: Option<Root>,
        in_worktrees: bool,
    ) -> rustix::io::Result<Option<Since>> {
        let mut dir = Dir::read_from(&fd)?;
        let mut subdirs = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if matches!(name, b"." | b"..") {
                continue;
            }
            let skipped = match top {
                Some(Root::WorkTree) => name == b".git" && entry.file_type() == FileType::Directory,
                Some(Root::OwnGitDir | Root::CommonDir) => name == b"objects",
                None => false,
            };
            if skipped {
                continue;
            }
            if self.left == 0 {
                return Ok(Some(Since::TooLarge));
            }
            self.left -= 1;
            let st = fs::statat(&fd, entry.file_name(), AtFlags::SYMLINK_NOFOLLOW)?;
            let child = path.join(std::ffi::OsStr::from_bytes(name));
            let is_dir = FileType::from_raw_mode(st.st_mode) == FileType::Directory;
            if ctime(&st) >= self.since && !(in_worktrees && is_dir) {
                return Ok(Some(Since::Changed(child)));
            }
            if is_dir {
                let worktrees = top == Some(Root::CommonDir) && name == b"worktrees";
                subdirs.push((entry.file_name().to_owned(), child, worktrees));
            }
        }
        for (name, child, worktrees) in subdirs {
            let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let sub = fs::openat(&fd, name.as_c_str(), flags, Mode::empty())?;
            if let Some(found) = self.dir(&child, sub, None, worktrees)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }
}

fn ctime(st: &Stat) -> SystemTime {
    crate::base::time::at_epoch_offset(st.st_ctime, st.st_ctime_nsec as i64)
}

#[cfg(test)]
mod tests;
