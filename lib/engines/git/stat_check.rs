//! Which paths of a work tree can differ from its index, told the way `git status` tells it before
//! reading any file: each tracked file's `lstat` against the stat data the index keeps, and one
//! listing of each directory that holds tracked files for the names the index does not know.
//! Beside the names it does not know, a directory (other than the root) is named by one tracked
//! path under it, its witness, so that libgit2 still takes it for tracked (`Listing::witness`).
//!
//! Only a narrowing: every path it names still goes to libgit2's status, which decides. A path
//! it does not name is one whose stat data matches the index exactly and is not racily clean,
//! which git itself reports as unchanged without reading it. A tracked directory that is gone (or
//! is a file now) is named once. Whenever the walk meets something it cannot tell this way (a
//! conflict, a root it cannot list, a tracked directory that is there but cannot be opened,
//! `core.ignorecase`, more suspects than `MOST_SUSPECTS`), it answers why
//! ([`Whole`]) and the whole work tree goes to libgit2.
//! Stats are made relative to an open directory, one path component each, where libgit2 stats
//! every file by its absolute path (docs/maintainers/performance.md).

use std::ffi::CString;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self as fs, AtFlags, Dir, FileType, Mode, OFlags, Stat};

use super::INTENT_TO_ADD;

/// The index's own modification time, read before the index: a file changed in the same second
/// the index was written may look unchanged by its stat data (git's "racily clean" files).
#[derive(Debug, Clone, Copy)]
pub(super) struct IndexWritten(i64);

/// The repository's index, with its modification time read first: an index rewritten in between
/// only makes its entries look racier, never cleaner.
pub(super) fn read_index(repo: &git2::Repository) -> Result<(git2::Index, Option<IndexWritten>), git2::Error> {
    let written = fs::lstat(repo.path().join("index")).ok().map(|st| IndexWritten(st.st_mtime));
    Ok((repo.index()?, written))
}

/// Past this many, a status of the whole work tree costs no more than one narrowed to them.
const MOST_SUSPECTS: usize = 512;

/// Why the stat data do not narrow the status: the whole work tree goes to libgit2. The status
/// does not tell the reasons apart; the tests do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Whole {
    /// A bare repository.
    NoWorkTree,
    /// `core.ignorecase`, or a configuration that cannot be read to tell.
    CaseFolding,
    /// The work tree's root cannot be opened or listed.
    RootUnlisted,
    /// An entry at a stage other than 0.
    Conflict,
    /// More than `MOST_SUSPECTS`.
    TooManySuspects,
    /// Index paths the walk cannot follow: not met, git keeps them sorted and well formed.
    Unwalkable,
    /// A tracked directory that is there but cannot be opened (not permitted, say).
    Unopenable,
}

const STAGE_MASK: u16 = 0x3000;
const ASSUME_UNCHANGED: u16 = 0x8000;
const SKIP_WORKTREE: u16 = 1 << 14;
const GITLINK: u32 = 0o160000;
const SYMLINK: u32 = 0o120000;
const EXECUTABLE: u32 = 0o100755;

/// The paths, relative to the work tree, that may differ from the index: tracked files whose
/// stat data does not match it and untracked or ignored entries of tracked directories (a
/// directory the index does not know is named once, not walked). An error: ask about everything.
pub(super) fn suspects(
    repo: &git2::Repository,
    index: &git2::Index,
    written: IndexWritten,
) -> Result<Vec<Vec<u8>>, Whole> {
    let workdir = repo.workdir().ok_or(Whole::NoWorkTree)?;
    let config = repo.config().map_err(|_| Whole::CaseFolding)?;
    if config.get_bool("core.ignorecase").unwrap_or(false) {
        // The index's names and the directory's need not match byte for byte.
        return Err(Whole::CaseFolding);
    }
    let root = Listing::open_root(workdir).ok_or(Whole::RootUnlisted)?;
    let mut walk = Walk { stack: vec![root], suspects: Vec::new(), gone: None, written };
    for entry in index.iter() {
        walk.visit(&entry)?;
        if walk.suspects.len() > MOST_SUSPECTS {
            return Err(Whole::TooManySuspects);
        }
    }
    while let Some(listing) = walk.stack.pop() {
        listing.unknown_names(&mut walk.suspects);
    }
    if walk.suspects.len() > MOST_SUSPECTS {
        return Err(Whole::TooManySuspects);
    }
    Ok(walk.suspects)
}

struct Walk {
    /// The directories from the work tree's root down to the current entry's, each open.
    stack: Vec<Listing>,
    suspects: Vec<Vec<u8>>,
    /// A tracked directory that cannot be opened (deleted, or now a file or a symlink), with its
    /// trailing `/`: named once as a suspect, its entries are not visited one by one.
    gone: Option<Vec<u8>>,
    written: IndexWritten,
}

impl Walk {
    /// The index is sorted by path, so each directory's entries come in one run, its
    /// subdirectories' runs nested inside it: a stack of open directories follows it.
    fn visit(&mut self, entry: &git2::IndexEntry) -> Result<(), Whole> {
        if entry.flags & STAGE_MASK != 0 {
            return Err(Whole::Conflict);
        }
        let path = entry.path.as_slice();
        if self.gone.as_ref().is_some_and(|gone| path.starts_with(gone)) {
            return Ok(());
        }
        let (dir, name) = match path.iter().rposition(|&b| b == b'/') {
            Some(slash) => (&path[..=slash], &path[slash + 1..]),
            None => (&path[..0], path),
        };
        while !dir.starts_with(&self.top().prefix) {
            let done = self.stack.pop().ok_or(Whole::Unwalkable)?;
            done.unknown_names(&mut self.suspects);
        }
        while self.top().prefix.len() < dir.len() {
            let rest = &dir[self.top().prefix.len()..];
            let component = &rest[..rest.iter().position(|&b| b == b'/').ok_or(Whole::Unwalkable)?];
            match self.top_mut().enter(component) {
                Ok(child) => self.stack.push(child),
                // A tracked directory that is there and cannot be opened may hold work: not
                // a deletion, and the walk of the whole tree names it (`walk_guard`).
                Err(e) if !super::walk_guard::gone(e) => return Err(Whole::Unopenable),
                Err(_) => {
                    let gone = [self.top().prefix.as_slice(), component].concat();
                    self.suspects.push(gone.clone());
                    self.gone = Some([gone.as_slice(), b"/"].concat());
                    return Ok(());
                }
            }
        }
        for listing in self.stack.iter_mut().rev() {
            if listing.witness.is_some() {
                break;
            }
            listing.witness = Some(path.to_vec());
        }
        let written = self.written;
        let listing = self.top_mut();
        listing.mark_known(name);
        if (entry.flags & ASSUME_UNCHANGED != 0 || entry.flags_extended & SKIP_WORKTREE != 0)
            && !super::walk_guard::is_rule_file(name)
        {
            // git never looks at these files: whatever is on disk, they are reported unchanged.
            // A rule file is read for its rules all the same, so it stays a suspect: the guard
            // judges what it is now (`walk_guard`).
            return Ok(());
        }
        let unchanged = entry.mode != GITLINK
            && entry.flags_extended & INTENT_TO_ADD == 0
            && fs::statat(listing.fd(), name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| matches_index(&st, entry, written));
        if !unchanged {
            self.suspects.push(path.to_vec());
        }
        Ok(())
    }

    fn top(&self) -> &Listing {
        self.stack.last().expect("the root stays until the end")
    }

    fn top_mut(&mut self) -> &mut Listing {
        self.stack.last_mut().expect("the root stays until the end")
    }
}

/// git's own test (`ie_match_stat`), made stricter where that is cheaper than being exact: any
/// difference sends the file to libgit2, which reads it.
fn matches_index(st: &Stat, entry: &git2::IndexEntry, written: IndexWritten) -> bool {
    let kind_matches = match FileType::from_raw_mode(st.st_mode) {
        FileType::Symlink => entry.mode == SYMLINK,
        FileType::RegularFile => entry.mode == if st.st_mode & 0o100 != 0 { EXECUTABLE } else { 0o100644 },
        _ => false,
    };
    let racily_clean = i64::from(entry.mtime.seconds()) >= written.0;
    kind_matches
        && !racily_clean
        && st.st_mtime as i32 == entry.mtime.seconds()
        && st.st_mtime_nsec as u32 == entry.mtime.nanoseconds()
        && st.st_ctime as i32 == entry.ctime.seconds()
        && st.st_ctime_nsec as u32 == entry.ctime.nanoseconds()
        && st.st_ino as u32 == entry.ino
        && st.st_uid == entry.uid
        && st.st_gid == entry.gid
        && st.st_size as u32 == entry.file_size
}

/// One open directory of the work tree and the names in it, each marked once the index names it.
struct Listing {
    /// The directory's path in the work tree with its trailing `/`; empty for the root.
    prefix: Vec<u8>,
    dir: Dir,
    names: Vec<(CString, bool)>,
    /// A tracked path under this directory. Narrowed to untracked names alone, libgit2 sees no
    /// tracked file in a directory, and when a rule ignores the directory (its tracked files
    /// added with `git add -f`) it skips it whole, and the ignored entries under it with it:
    /// named beside them, this one keeps the directory tracked in libgit2's eyes.
    witness: Option<Vec<u8>>,
}

impl Listing {
    fn open_root(workdir: &Path) -> Option<Listing> {
        // Read-only is the open's default (`O_RDONLY` is 0); closed on exec, so a program the
        // tools start meanwhile is not handed the work tree.
        let fd = fs::open(workdir, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()?;
        let mut root = Listing::read(Vec::new(), fd).ok()?;
        // The work tree's own `.git` (a directory, or the file of a worktree) is never its content.
        root.mark_known(b".git");
        Some(root)
    }

    fn enter(&mut self, name: &[u8]) -> rustix::io::Result<Listing> {
        self.mark_known(name);
        let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = fs::openat(self.fd(), name, flags, Mode::empty())?;
        Listing::read([self.prefix.as_slice(), name, b"/"].concat(), fd)
    }

    fn read(prefix: Vec<u8>, fd: OwnedFd) -> rustix::io::Result<Listing> {
        let mut dir = Dir::new(fd)?;
        let mut names = Vec::new();
        while let Some(entry) = dir.read() {
            let name = entry?.file_name().to_owned();
            if !matches!(name.as_bytes(), b"." | b"..") {
                names.push((name, false));
            }
        }
        names.sort_unstable();
        Ok(Listing { prefix, dir, names, witness: None })
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.dir.fd().expect("a Dir always has its descriptor")
    }

    fn mark_known(&mut self, name: &[u8]) {
        if let Ok(at) = self.names.binary_search_by(|(known, _)| known.as_bytes().cmp(name)) {
            self.names[at].1 = true;
        }
    }

    /// Names on disk that the index does not hold: untracked or ignored, for libgit2 to tell.
    /// With them, the directory's witness (the root needs none: libgit2 always walks it).
    fn unknown_names(self, suspects: &mut Vec<Vec<u8>>) {
        let before = suspects.len();
        for (name, known) in self.names {
            if !known {
                let mut path = self.prefix.clone();
                path.extend_from_slice(name.as_bytes());
                suspects.push(path);
            }
        }
        if suspects.len() > before && !self.prefix.is_empty() {
            suspects.extend(self.witness);
        }
    }
}

#[cfg(test)]
mod tests;
