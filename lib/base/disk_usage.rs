//! The bytes files take under a directory: regular files' sizes (`st_size`, as `du -b` and a
//! purge's `freed_bytes` count them), symlinks never followed, never leaving one filesystem, each
//! hard-linked file counted once however many names it has.

use std::collections::HashSet;
use std::fs::Metadata;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::Mutex;

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
        // WalkDir follows a root that is a link: a link or a file is counted here, never entered.
        match std::fs::symlink_metadata(root) {
            Ok(meta) if meta.dev() == self.dev && meta.is_dir() => {}
            Ok(meta) if meta.dev() == self.dev => return self.count(&meta),
            _ => return 0,
        }
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
}
