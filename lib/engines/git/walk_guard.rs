//! What libgit2's walk of a work tree would skip without a word or wait on for ever, found first
//! with the tools' own walk, relative to open directories (`openat`), so that no depth is out of
//! its reach.
//!
//! libgit2 takes a directory it cannot open for one that is not there (its iterator: "any error
//! here is equivalent to the dir not existing"): an untracked directory the operator cannot read,
//! or one whose path is longer than PATH_MAX, would read as clean and be purged unsaved. And it
//! opens each directory's `.gitignore` and `.gitattributes` by name with a blocking `open`: a FIFO
//! the agent left there would stop the tool for ever. Before a status, the directories libgit2
//! will enter are walked here; any such entry refuses the status, the entry named, so the mount
//! is `unknown` (at risk, never clean).
//!
//! Which directories: every directory of the work tree that git does not ignore, and every one
//! that holds a tracked file (libgit2 enters those even when a rule ignores them), `.git`
//! directories excepted. A nested repository or a submodule is walked as part of the tree:
//! libgit2 reads a submodule's own work tree for its status, and walking more than libgit2 does
//! can only refuse more. Nothing is opened but directories; a rule file is judged by `stat`.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{self as fs, AtFlags, Dir, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::error::WOULD_WAIT;

// libgit2 reaches every file by its whole path from `/`: no longer than PATH_MAX.
use crate::base::os::PATH_MAX;

/// Where the walk starts.
pub(super) enum Start<'a> {
    /// The whole work tree: libgit2 is about to walk all of it.
    Root(&'a git2::Index),
    /// Only these paths of the work tree (the stat check's suspects, `stat_check::suspects`),
    /// which are what a narrowed status hands libgit2: each untracked directory among them is
    /// walked, each rule file among them judged. The directories above them hold tracked files
    /// whose rule files, when unchanged, are the regular files the index holds.
    Suspects(&'a [Vec<u8>]),
}

/// Refuses a status of `repo`'s work tree that libgit2 could not make whole (see the module's
/// text): `Ok` when every directory libgit2 would enter can be opened, no path in them is too
/// long for the system's calls, and no `.gitignore` or `.gitattributes` there would block.
pub(super) fn check(repo: &git2::Repository, start: Start<'_>) -> Result<(), git2::Error> {
    let Some(workdir) = repo.workdir() else { return Ok(()) };
    let root = match open_dir(fs::CWD, workdir.as_os_str().as_bytes()) {
        Ok(root) => root,
        // libgit2 fails to open it too, in its own words.
        Err(e) if gone(e) => return Ok(()),
        Err(e) => return Err(unreadable(b"", e)),
    };
    // libgit2's paths are the work tree's (with its `/`) and then the path in it.
    let base_len = workdir.as_os_str().len() + usize::from(!workdir.as_os_str().as_bytes().ends_with(b"/"));
    let mut guard = Guard { repo, workdir, base_len, tracked_dirs: HashSet::new() };
    match start {
        Start::Root(index) => {
            guard.tracked_dirs = tracked_dirs(index);
            guard.walk(root, Vec::new())
        }
        Start::Suspects(paths) => {
            // Rule files first: the ignore rules asked about below are read from them.
            for path in paths.iter().filter(|p| is_rule_file(last_name(p))) {
                guard.suspect(root.as_fd(), path, Look::RuleFile)?;
            }
            for path in paths {
                guard.suspect(root.as_fd(), path, Look::Directory)?;
            }
            Ok(())
        }
    }
}

/// The per-directory rule files libgit2 opens by name in each directory it enters.
pub(super) fn is_rule_file(name: &[u8]) -> bool {
    name == b".gitignore" || name == b".gitattributes"
}

fn last_name(path: &[u8]) -> &[u8] {
    path.rsplit(|&b| b == b'/').next().unwrap_or(path)
}

/// What of a suspect path is looked at.
#[derive(Clone, Copy, PartialEq)]
enum Look {
    RuleFile,
    Directory,
}

struct Guard<'r> {
    repo: &'r git2::Repository,
    workdir: &'r Path,
    /// The length of the work tree's path with its `/`.
    base_len: usize,
    /// Every directory that holds a tracked file, with its `/` (only for a walk from the root).
    tracked_dirs: HashSet<Vec<u8>>,
}

impl Guard<'_> {
    /// One suspect path: its directories are opened one by one from the root; a rule file is
    /// judged, an untracked directory walked unless ignored. A path gone meanwhile is left to
    /// libgit2, which finds it gone too.
    fn suspect(&self, root: BorrowedFd<'_>, path: &[u8], look: Look) -> Result<(), git2::Error> {
        let mut components = path.split(|&b| b == b'/').peekable();
        let mut held: Option<OwnedFd> = None;
        let mut prefix = Vec::new();
        while let Some(name) = components.next() {
            let parent = held.as_ref().map_or(root, |fd| fd.as_fd());
            if components.peek().is_none() {
                let Ok(st) = fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) else { return Ok(()) };
                let kind = FileType::from_raw_mode(st.st_mode);
                return match look {
                    Look::RuleFile => self.judge_rule_file(parent, &prefix, name, kind),
                    Look::Directory if kind == FileType::Directory => self.enter(parent, &prefix, name),
                    Look::Directory => self.within_path_max(&prefix, name),
                };
            }
            match open_dir(parent, name) {
                Ok(fd) => held = Some(fd),
                Err(e) if gone(e) => return Ok(()),
                Err(e) => return Err(unreadable(&[prefix.as_slice(), name, b"/"].concat(), e)),
            }
            prefix.extend_from_slice(name);
            prefix.push(b'/');
        }
        Ok(())
    }

    /// Every entry of the open directory at `prefix` (its path in the work tree, with its `/`).
    fn walk(&self, dir: OwnedFd, prefix: Vec<u8>) -> Result<(), git2::Error> {
        let mut listing = Dir::new(dir).map_err(|e| unreadable(&prefix, e))?;
        let mut entries = Vec::new();
        while let Some(entry) = listing.read() {
            let entry = entry.map_err(|e| unreadable(&prefix, e))?;
            if !matches!(entry.file_name().to_bytes(), b"." | b"..") {
                entries.push((entry.file_name().to_owned(), entry.file_type()));
            }
        }
        let dir = listing.fd().map_err(|e| unreadable(&prefix, e))?;
        for (name, kind) in &mut entries {
            if *kind == FileType::Unknown {
                *kind = fs::statat(dir, name.as_c_str(), AtFlags::SYMLINK_NOFOLLOW)
                    .map_or(FileType::Unknown, |st| FileType::from_raw_mode(st.st_mode));
            }
        }
        // A repository inside the work tree (a submodule, or one the agent made): libgit2 may
        // open it, and reads the files of its git directory by name.
        if !prefix.is_empty() && entries.iter().any(|(name, _)| name.as_bytes() == b".git") {
            super::repo::no_special_files(&self.workdir.join(OsStr::from_bytes(&prefix)))?;
        }
        // The rule files first: whether a directory beside them is ignored is read from them.
        for (name, kind) in entries.iter().filter(|(name, _)| is_rule_file(name.as_bytes())) {
            self.judge_rule_file(dir, &prefix, name.as_bytes(), *kind)?;
        }
        for (name, kind) in entries {
            let name = name.as_bytes();
            match kind {
                FileType::Directory => self.enter(dir, &prefix, name)?,
                _ => self.within_path_max(&prefix, name)?,
            }
        }
        Ok(())
    }

    /// The directory `name` of the open directory at `prefix`: walked, unless git ignores it
    /// and it holds no tracked file, or it is a `.git`.
    fn enter(&self, parent: BorrowedFd<'_>, prefix: &[u8], name: &[u8]) -> Result<(), git2::Error> {
        let path = [prefix, name, b"/"].concat();
        // A directory that holds a tracked file is entered whatever the rules say: asked first,
        // it spares the ignore rules a question.
        if name == b".git" || (!self.tracked_dirs.contains(&path) && self.ignored(&path)) {
            return Ok(());
        }
        // libgit2 opens it by its whole path: one too long for that is one it cannot read.
        self.within_path_max(prefix, name)?;
        match open_dir(parent, name) {
            Ok(fd) => self.walk(fd, path),
            Err(e) if gone(e) => Ok(()),
            Err(e) => Err(unreadable(&path, e)),
        }
    }

    /// A `.gitignore` or `.gitattributes` that libgit2's `open` would wait on (a FIFO) or act on
    /// (a device, a socket): a link is judged by what it leads to, as libgit2 follows it.
    fn judge_rule_file(
        &self,
        dir: BorrowedFd<'_>,
        prefix: &[u8],
        name: &[u8],
        kind: FileType,
    ) -> Result<(), git2::Error> {
        let kind = match kind {
            FileType::Symlink | FileType::Unknown => match fs::statat(dir, name, AtFlags::empty()) {
                Ok(st) => FileType::from_raw_mode(st.st_mode),
                Err(_) => return Ok(()),
            },
            kind => kind,
        };
        match kind {
            FileType::RegularFile | FileType::Directory => Ok(()),
            _ => Err(refusal(&[prefix, name].concat(), format_args!("{WOULD_WAIT}"))),
        }
    }

    /// An entry git does not ignore must be reachable by a whole path the system takes.
    fn within_path_max(&self, prefix: &[u8], name: &[u8]) -> Result<(), git2::Error> {
        let len = self.base_len + prefix.len() + name.len();
        if len < PATH_MAX || self.ignored(&[prefix, name].concat()) {
            return Ok(());
        }
        Err(refusal(
            &[prefix, name].concat(),
            format_args!(
                "its path is {len} bytes, longer than the system's calls take ({}): git cannot read it; not clean",
                PATH_MAX - 1
            ),
        ))
    }

    /// Whether git's rules ignore `path` (with a `/` at the end for a directory). A question
    /// libgit2 cannot answer counts as not ignored: the walk then looks at more, never at less.
    fn ignored(&self, path: &[u8]) -> bool {
        let path = path.strip_suffix(b"/").unwrap_or(path);
        self.repo.status_should_ignore(Path::new(OsStr::from_bytes(path))).unwrap_or(false)
    }
}

/// Every directory that holds a tracked file, each with its `/`.
fn tracked_dirs(index: &git2::Index) -> HashSet<Vec<u8>> {
    let mut dirs = HashSet::new();
    for entry in index.iter() {
        let path = entry.path.as_slice();
        // Deepest first: a directory already there has its parents there too. The index is
        // sorted, so most entries stop at their own directory.
        for (at, _) in path.iter().enumerate().rev().filter(|(_, &b)| b == b'/') {
            if !dirs.insert(path[..=at].to_vec()) {
                break;
            }
        }
    }
    dirs
}

/// Opens a directory for listing, never through a link, closed on exec.
fn open_dir(parent: BorrowedFd<'_>, name: impl rustix::path::Arg) -> rustix::io::Result<OwnedFd> {
    fs::openat(parent, name, OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty())
}

/// An entry that is not there any more, or not a directory now: libgit2 finds the same.
pub(super) fn gone(e: Errno) -> bool {
    matches!(e, Errno::NOENT | Errno::NOTDIR | Errno::LOOP)
}

fn unreadable(path: &[u8], e: Errno) -> git2::Error {
    refusal(path, format_args!("cannot be read ({e}): git would take it for absent; not clean"))
}

/// The error a status is refused with: the path in the work tree (shortened in the middle when
/// long), then why.
fn refusal(path: &[u8], why: std::fmt::Arguments<'_>) -> git2::Error {
    const SHOWN: usize = 120;
    let shown = match path.len() > SHOWN {
        true => format!(
            "{}…{}",
            String::from_utf8_lossy(&path[..SHOWN / 2]),
            String::from_utf8_lossy(&path[path.len() - SHOWN / 2..])
        ),
        false => String::from_utf8_lossy(path).into_owned(),
    };
    let shown = if shown.is_empty() { "." } else { &shown };
    git2::Error::from_str(&format!("{shown}: {why}"))
}

#[cfg(test)]
mod tests;
