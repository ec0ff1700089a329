//! Whether anything of a work tree and of its repository changed since a moment, told from stat
//! data alone: the `ctime` of every entry. A write, a `chmod`, a rename, a link, a new file and a
//! removal each set the ctime of the file or of its directory to the moment it happened, and no
//! program can set a ctime back (`utimensat` sets mtime and atime, and stamps ctime now). So an
//! entry whose ctime is before the moment has not changed since, and a directory whose ctime is
//! before it has the same names.
//!
//! What jackin-keep asks before it stamps `clean_exited` on an assessment it was handed
//! (tools/keep.rs): "nothing changed since the assessment started" makes a second assessment
//! needless. Walked: the whole work tree, untracked and ignored entries included (no rule is
//! read: anything that changed counts), the repository's git directory and its common directory
//! (HEAD, the index, refs, reflogs and the stash, packed-refs, config, the worktrees' own
//! directories), all but `objects/` (an object no ref or reflog names is no work; a commit
//! moves a ref). Stats are relative to an open directory, one path component each, links are
//! never followed, nothing is opened but directories.

use std::os::fd::OwnedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::{self as fs, AtFlags, Dir, FileType, Mode, OFlags};

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

/// Whether anything of the repository at `path` (its work tree when `with_work_tree`, and its
/// git directories) has a ctime at or after `since` (seconds since the epoch), looking at
/// `most_entries` entries at most.
pub(crate) fn changed_since(path: &Path, with_work_tree: bool, since: i64, most_entries: usize) -> Since {
    let repo = match super::repo::open_checked(path) {
        Ok(repo) => repo,
        Err(e) => return Since::Unreadable(format!("{}: {}", path.display(), e.message())),
    };
    // The path asked about is the work tree walked (what is mounted, and what a purge deletes);
    // a work tree the configuration moves elsewhere (`core.worktree`) is walked too.
    let mut work_trees = Vec::new();
    if with_work_tree {
        work_trees.push(path.to_path_buf());
        work_trees.extend(repo.workdir().filter(|w| !same_dir(w, path)).map(Path::to_path_buf));
    }
    let git_dir = repo.path().to_path_buf();
    let common_dir = repo.commondir().to_path_buf();
    drop(repo);
    let mut walk = Walk { since, left: most_entries };
    let mut roots: Vec<(PathBuf, Skip)> = work_trees.into_iter().map(|w| (w, Skip::DotGitDir)).collect();
    roots.push((git_dir.clone(), Skip::Objects));
    if common_dir != git_dir {
        roots.push((common_dir, Skip::Objects));
    }
    for (root, skip) in roots {
        match walk.root(&root, skip) {
            Ok(None) => {}
            Ok(Some(found)) => return found,
            Err(e) => return Since::Unreadable(format!("{}: {e}", root.display())),
        }
    }
    Since::Unchanged
}

fn same_dir(a: &Path, b: &Path) -> bool {
    a == b || matches!((std::fs::canonicalize(a), std::fs::canonicalize(b)), (Ok(a), Ok(b)) if a == b)
}

/// What a root's walk leaves out at its top: a work tree's own `.git` directory (a clone's git
/// directory, walked as a root of its own), or a git directory's `objects/`.
#[derive(Debug, Clone, Copy)]
enum Skip {
    DotGitDir,
    Objects,
}

struct Walk {
    since: i64,
    left: usize,
}

impl Walk {
    fn root(&mut self, root: &Path, skip: Skip) -> rustix::io::Result<Option<Since>> {
        let fd = fs::open(root, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())?;
        if fs::fstat(&fd)?.st_ctime >= self.since {
            return Ok(Some(Since::Changed(root.to_path_buf())));
        }
        self.dir(root, fd, Some(skip))
    }

    /// One directory whose own ctime was already looked at: each entry's, then each
    /// subdirectory's entries.
    fn dir(&mut self, path: &Path, fd: OwnedFd, skip: Option<Skip>) -> rustix::io::Result<Option<Since>> {
        let mut dir = Dir::read_from(&fd)?;
        let mut subdirs = Vec::new();
        while let Some(entry) = dir.read() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if matches!(name, b"." | b"..") {
                continue;
            }
            let skipped = match skip {
                Some(Skip::DotGitDir) => name == b".git" && entry.file_type() == FileType::Directory,
                Some(Skip::Objects) => name == b"objects",
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
            if st.st_ctime >= self.since {
                return Ok(Some(Since::Changed(child)));
            }
            if FileType::from_raw_mode(st.st_mode) == FileType::Directory {
                subdirs.push((entry.file_name().to_owned(), child));
            }
        }
        for (name, child) in subdirs {
            let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let sub = fs::openat(&fd, name.as_c_str(), flags, Mode::empty())?;
            if let Some(found) = self.dir(&child, sub, None)? {
                return Ok(Some(found));
            }
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests;
