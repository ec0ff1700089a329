//! The bytes files take under a directory: regular files' sizes (`st_size`, as `du -b` and a
//! purge's `freed_bytes` count them), symlinks never followed, never leaving one filesystem, each
//! hard-linked file counted once however many names it has.

use std::collections::HashSet;
use std::ffi::CStr;
use std::fs::Metadata;
use std::io;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use rustix::fs::{self as fs, AtFlags, Dir, FileType, Mode, OFlags};

/// How deep a walk holds directories open, one per level, before it goes on by path: a tree as
/// deep as the agent likes must not run the process out of descriptors.
const OPEN_AT_MOST: usize = 48;

/// One measurement: every [`SizeWalk::bytes`] of it shares the filesystem and the hard links
/// already counted, so the parts of an instance add up to what it holds.
#[derive(Debug)]
pub(crate) struct SizeWalk {
    dev: u64,
    linked: Mutex<HashSet<(u64, u64)>>,
    /// Whether a removal has met a file with more names than one (`count_removed`).
    met_linked: std::sync::atomic::AtomicBool,
}

impl SizeWalk {
    /// A walk that stays on the filesystem `anchor` is on (the jackin home).
    pub(crate) fn on_filesystem_of(anchor: &Path) -> io::Result<Self> {
        Ok(SizeWalk::on_device(std::fs::symlink_metadata(anchor)?.dev()))
    }

    /// A walk of the filesystem with device number `dev`.
    pub(crate) fn on_device(dev: u64) -> Self {
        SizeWalk { dev, linked: Mutex::default(), met_linked: Default::default() }
    }

    /// The bytes under `root` (a file counts itself), leaving out every entry `skip` names and
    /// what is under it. The first level under `root` is walked in parallel.
    pub(crate) fn bytes(&self, root: &Path, skip: &(dyn Fn(&Path) -> bool + Sync)) -> u64 {
        let Ok(meta) = std::fs::symlink_metadata(root) else { return 0 };
        if meta.dev() != self.dev {
            return 0;
        }
        if !meta.is_dir() {
            return self.count(&meta);
        }
        let Ok(entries) = std::fs::read_dir(root) else { return 0 };
        let children: Vec<_> = entries.filter_map(Result::ok).map(|e| e.path()).filter(|p| !skip(p)).collect();
        crate::base::parallel::map(&children, |child| self.subtree(child, skip)).into_iter().sum()
    }

    fn subtree(&self, root: &Path, skip: &(dyn Fn(&Path) -> bool + Sync)) -> u64 {
        // A link or a file is counted here, never entered.
        match std::fs::symlink_metadata(root) {
            Ok(meta) if meta.dev() == self.dev && meta.is_dir() => {}
            Ok(meta) if meta.dev() == self.dev => return self.count(&meta),
            _ => return 0,
        }
        let Ok(fd) = fs::open(root, OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC, Mode::empty()) else {
            return 0;
        };
        self.directory(fd, &mut root.to_path_buf(), 0, skip)
    }

    /// The bytes under the open directory `fd` (at `path`, for `skip`), each entry looked at
    /// relative to it: one name for the kernel to find, where a stat by path looks up every
    /// directory above it again (most of a fleet's list was that, issue 69). Deeper than
    /// [`OPEN_AT_MOST`], the rest is walked by path, so that the directories held open stay few.
    fn directory(&self, fd: OwnedFd, path: &mut PathBuf, depth: usize, skip: &(dyn Fn(&Path) -> bool + Sync)) -> u64 {
        if depth >= OPEN_AT_MOST {
            return self.walk_by_path(path, skip);
        }
        let Ok(mut dir) = Dir::new(fd) else { return 0 };
        let mut names = Vec::new();
        while let Some(Ok(entry)) = dir.read() {
            let name = entry.file_name();
            if !matches!(name.to_bytes(), b"." | b"..") && entry.file_type() != FileType::Symlink {
                names.push(name.to_owned());
            }
        }
        let Ok(at) = dir.fd() else { return 0 };
        let mut total = 0;
        for name in names {
            path.push(std::ffi::OsStr::from_bytes(name.to_bytes()));
            if !skip(path) {
                total += self.entry(at, &name, path, depth, skip);
            }
            path.pop();
        }
        total
    }

    fn entry(
        &self,
        at: BorrowedFd<'_>,
        name: &CStr,
        path: &mut PathBuf,
        depth: usize,
        skip: &(dyn Fn(&Path) -> bool + Sync),
    ) -> u64 {
        let Ok(st) = fs::statat(at, name, AtFlags::SYMLINK_NOFOLLOW) else { return 0 };
        match FileType::from_raw_mode(st.st_mode) {
            #[allow(clippy::unnecessary_cast)] // u64 on Linux, narrower elsewhere
            FileType::RegularFile => self.count_file(
                crate::base::os::device(st.st_dev),
                st.st_ino as u64,
                st.st_nlink as u64,
                st.st_size as u64,
            ),
            FileType::Directory if crate::base::os::device(st.st_dev) == self.dev => {
                let flags = OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
                fs::openat(at, name, flags, Mode::empty()).map_or(0, |fd| self.directory(fd, path, depth + 1, skip))
            }
            _ => 0,
        }
    }

    /// The bytes under the directory `root` by walkdir, which reopens what it closed (a tree of
    /// any depth, with a few directories open at a time).
    fn walk_by_path(&self, root: &Path, skip: &(dyn Fn(&Path) -> bool + Sync)) -> u64 {
        let mut total = 0;
        let mut walk = walkdir::WalkDir::new(root).follow_links(false).same_file_system(true).into_iter();
        while let Some(entry) = walk.next() {
            let Ok(entry) = entry else { continue };
            if entry.depth() > 0 && skip(entry.path()) {
                if entry.file_type().is_dir() {
                    walk.skip_current_dir();
                }
                continue;
            }
            if entry.file_type().is_file() {
                if let Ok(meta) = entry.metadata() {
                    total += self.count(&meta);
                }
            }
        }
        total
    }

    fn count(&self, meta: &Metadata) -> u64 {
        if !meta.is_file() {
            return 0;
        }
        self.count_file(meta.dev(), meta.ino(), meta.nlink(), meta.size())
    }

    /// One regular file's bytes, as this walk counts them: a file with more names than one is
    /// counted the first time any of them is met.
    fn count_file(&self, dev: u64, ino: u64, nlink: u64, size: u64) -> u64 {
        if nlink > 1 {
            let first = self.linked.lock().unwrap_or_else(|e| e.into_inner()).insert((dev, ino));
            if !first {
                return 0;
            }
        }
        size
    }

    /// A regular file's bytes as a removal frees them, counted as [`SizeWalk::bytes`] counts
    /// them, so what a dry run reports and what a purge frees agree. Its link count falls as
    /// its names go, so the last name of a file met before with more is known by its inode.
    pub(crate) fn count_removed(&self, dev: u64, ino: u64, nlink: u64, size: u64) -> u64 {
        if nlink > 1 || self.met_linked.load(std::sync::atomic::Ordering::Relaxed) {
            self.met_linked.store(true, std::sync::atomic::Ordering::Relaxed);
            let first = self.linked.lock().unwrap_or_else(|e| e.into_inner()).insert((dev, ino));
            if !first {
                return 0;
            }
        }
        size
    }
}

/// The bytes under `path` as one walk counts them: what a dry run reports a removal of `path`
/// would free. Nothing when it is not there.
pub(crate) fn tree_bytes(path: &Path) -> u64 {
    SizeWalk::on_filesystem_of(path).map_or(0, |walk| walk.bytes(path, &|_| false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_hard_links_once_and_never_follows_links() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("big"), vec![0u8; 10_000]).unwrap();
        let tree = tmp.path().join("tree");
        std::fs::create_dir_all(tree.join("a/b")).unwrap();
        std::fs::write(tree.join("a/b/f"), vec![0u8; 300]).unwrap();
        std::fs::hard_link(tree.join("a/b/f"), tree.join("a/g")).unwrap();
        std::fs::write(tree.join("skipped"), vec![0u8; 50]).unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("a/link")).unwrap();
        let walk = SizeWalk::on_filesystem_of(tmp.path()).unwrap();
        assert_eq!(walk.bytes(&tree, &|p| p.ends_with("skipped")), 300);
        // The same walk has counted the linked file: another name for it adds nothing.
        assert_eq!(walk.bytes(&tree.join("a/g"), &|_| false), 0);
        assert_eq!(walk.bytes(&tree.join("skipped"), &|_| false), 50);
    }

    /// Deeper than the directories a walk holds open, the walk by path goes on: the same bytes,
    /// counted once, with a skip and a link at every depth.
    #[test]
    fn a_tree_deeper_than_the_descriptors_held_open_is_counted_whole() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("deep");
        let mut dir = root.clone();
        let mut expected = 0;
        for level in 0..(OPEN_AT_MOST * 2 + 3) {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("f"), vec![0u8; level + 1]).unwrap();
            expected += level as u64 + 1;
            std::fs::write(dir.join("skipped"), vec![0u8; 1000]).unwrap();
            std::os::unix::fs::symlink(&root, dir.join("loop")).unwrap();
            if level % 10 == 0 {
                // Another name of the file above: counted once.
                std::fs::hard_link(dir.join("f"), dir.join("g")).unwrap();
            }
            dir.push("d");
        }
        let skip = |p: &Path| p.file_name().is_some_and(|n| n == "skipped");
        let by_descriptor = SizeWalk::on_filesystem_of(tmp.path()).unwrap().bytes(&root, &skip);
        let by_path = SizeWalk::on_filesystem_of(tmp.path()).unwrap().walk_by_path(&root, &skip);
        assert_eq!(by_descriptor, expected);
        assert_eq!(by_path, expected);
    }
}
