//! Deleting without following a symlink, without entering another filesystem mounted inside, and
//! without leaving the jackin home. A directory is first renamed into `<home>/trash/` (atomic on
//! one filesystem), then emptied there; a run that dies while emptying leaves a trash entry that
//! the next run finishes. When the trash is on another filesystem than the directory (`EXDEV`),
//! the directory is deleted where it is, the same way: a rerun of a purge that died half-way finds
//! the rest there and finishes it.

use std::ffi::{CStr, CString};
use std::fs;
use std::io::ErrorKind;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use rustix::fs::{self as rfs, AtFlags, Dir, FileType, Mode, OFlags, CWD};
use rustix::io::Errno;

use crate::base::disk_usage::SizeWalk;
use crate::state::store::{ensure_private_dir, Store};

static TRASH_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Where a directory went on its way out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Trashed {
    /// Nothing was there, or only a link or a file, unlinked on the spot.
    Nothing,
    /// Renamed into the trash, to be emptied there.
    Moved(PathBuf),
    /// The trash is on another filesystem: deleted where it was; the bytes freed.
    DeletedInPlace(u64),
}

/// Moves `path` into the trash. A symlink is unlinked on the spot (the link is what belongs to
/// the instance, never its target).
pub(crate) fn move_to_trash(store: &Store, path: &Path, label: &str) -> Result<Trashed> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Trashed::Nothing),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if !meta.is_dir() {
        fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
        return Ok(Trashed::Nothing);
    }
    let trash = store.trash_dir();
    ensure_private_dir(&trash)?;
    let n = TRASH_COUNTER.fetch_add(1, Ordering::Relaxed);
    let dest = trash.join(format!("{label}.{}.{n}", std::process::id()));
    match fs::rename(path, &dest) {
        Ok(()) => Ok(Trashed::Moved(dest)),
        Err(e) if e.raw_os_error() == Some(Errno::XDEV.raw_os_error()) => {
            Ok(Trashed::DeletedInPlace(remove_tree(path)?))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(Trashed::Nothing),
        Err(e) => Err(e).with_context(|| format!("cannot move {} into {}", path.display(), trash.display())),
    }
}

/// Empties the trash: whatever an earlier run moved there and did not finish deleting.
pub fn empty_trash(store: &Store) -> Result<u64> {
    let trash = store.trash_dir();
    match fs::symlink_metadata(&trash) {
        Ok(meta) if meta.is_dir() => {}
        _ => return Ok(0),
    }
    let mut bytes = 0;
    for entry in fs::read_dir(&trash).with_context(|| format!("listing {}", trash.display()))? {
        bytes += remove_tree(&entry?.path())?;
    }
    Ok(bytes)
}

/// Removes a file, a link or a directory tree and returns the bytes of the regular files
/// removed. Every directory is opened relative to its parent with `O_NOFOLLOW`, so a symlink
/// anywhere inside, even one swapped in while this runs, is unlinked as a link and never entered.
pub(crate) fn remove_tree(path: &Path) -> Result<u64> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    if !meta.is_dir() {
        fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
        return Ok(if meta.is_file() { meta.size() } else { 0 });
    }
    let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let name = path.file_name().with_context(|| format!("{} names no directory", path.display()))?;
    let name = CString::new(std::os::unix::ffi::OsStrExt::as_bytes(name))?;
    let parent_fd = rfs::openat(CWD, parent, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty())
        .with_context(|| format!("cannot open {}", parent.display()))?;
    let counted = SizeWalk::on_device(meta.dev());
    let bytes = remove_entry(parent_fd.as_fd(), &name, FileType::Directory, None, &counted)
        .with_context(|| format!("cannot remove {}", path.display()))?;
    Ok(bytes)
}

/// `filesystem`: the device of the tree being removed; a directory on another one (a mount point
/// inside the tree) is not entered, and the removal stops there with an error.
fn remove_entry(
    parent: BorrowedFd<'_>,
    name: &CStr,
    kind: FileType,
    filesystem: Option<u64>,
    counted: &SizeWalk,
) -> std::io::Result<u64> {
    let kind = match kind {
        FileType::Unknown => match rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => FileType::from_raw_mode(st.st_mode),
            Err(Errno::NOENT) => return Ok(0),
            Err(e) => return Err(e.into()),
        },
        kind => kind,
    };
    if kind == FileType::Directory {
        match rfs::openat(
            parent,
            name,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => {
                let device = crate::base::os::device(rfs::fstat(&fd)?.st_dev);
                if filesystem.is_some_and(|expected| expected != device) {
                    return Err(std::io::Error::other(format!(
                        "{} is a mount point of another filesystem: not entered",
                        name.to_string_lossy()
                    )));
                }
                let bytes = remove_contents(Dir::new(fd)?, device, counted)?;
                return match rfs::unlinkat(parent, name, AtFlags::REMOVEDIR) {
                    Ok(()) | Err(Errno::NOENT) => Ok(bytes),
                    Err(e) => Err(e.into()),
                };
            }
            Err(Errno::NOENT) => return Ok(0),
            // Replaced by a link or a file since it was listed: unlink whatever it is now.
            Err(Errno::LOOP) | Err(Errno::NOTDIR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    let bytes = if kind == FileType::RegularFile {
        #[allow(clippy::unnecessary_cast)] // st_nlink is narrower than u64 on some targets
        rfs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)
            .map(|st| {
                counted.count_removed(
                    crate::base::os::device(st.st_dev),
                    st.st_ino,
                    st.st_nlink as u64,
                    st.st_size as u64,
                )
            })
            .unwrap_or(0)
    } else {
        0
    };
    match rfs::unlinkat(parent, name, AtFlags::empty()) {
        Ok(()) | Err(Errno::NOENT) => Ok(bytes),
        Err(e) => Err(e.into()),
    }
}

fn remove_contents(mut dir: Dir, filesystem: u64, counted: &SizeWalk) -> std::io::Result<u64> {
    let mut entries: Vec<(CString, FileType)> = Vec::new();
    while let Some(entry) = dir.read() {
        let entry = entry?;
        let name = entry.file_name();
        if name.to_bytes() == b"." || name.to_bytes() == b".." {
            continue;
        }
        entries.push((name.to_owned(), entry.file_type()));
    }
    let fd = dir.fd()?;
    let mut bytes = 0;
    for (name, kind) in entries {
        bytes += remove_entry(fd, &name, kind, Some(filesystem), counted)?;
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::store::Roots;

    fn store_in(home: &Path) -> Store {
        Store::open(Roots { home: home.to_path_buf(), config_dir: home.to_path_buf() }).unwrap()
    }

    /// A tmpfs at `at` for one test, or `None` where this machine cannot mount one (then the test
    /// is skipped; with `CI=true` it fails instead, as the integration tests' prerequisites do).
    struct Tmpfs(PathBuf);

    impl Tmpfs {
        fn mount(at: &Path) -> Option<Tmpfs> {
            fs::create_dir_all(at).unwrap();
            let out =
                std::process::Command::new("mount").args(["-t", "tmpfs", "-o", "size=1m", "tmpfs"]).arg(at).output();
            if out.is_ok_and(|o| o.status.success()) {
                return Some(Tmpfs(at.to_path_buf()));
            }
            assert!(std::env::var("CI").map_or(true, |v| v != "true"), "CI=true and this machine cannot mount a tmpfs");
            eprintln!("SKIPPED: this machine cannot mount a tmpfs");
            None
        }
    }

    impl Drop for Tmpfs {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }

    /// A directory that cannot be read for another reason than its absence is an error, never
    /// "nothing there".
    #[test]
    fn a_path_that_cannot_be_read_is_an_error_not_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path());
        fs::write(tmp.path().join("a-file"), "x").unwrap();
        let below_a_file = tmp.path().join("a-file/jk-a1b2c3d4");
        assert!(move_to_trash(&store, &below_a_file, "x").is_err());
        assert_eq!(move_to_trash(&store, &tmp.path().join("absent"), "x").unwrap(), Trashed::Nothing);
    }

    /// A directory that cannot be renamed into the trash for another reason than the trash being
    /// on another filesystem (here: it is itself a mount point, EBUSY) is an error; it is never
    /// deleted in place, which would empty the filesystem mounted there.
    #[test]
    fn a_mount_point_is_not_deleted_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path());
        let dir = tmp.path().join("data/jk-a1b2c3d4");
        let Some(_mounted) = Tmpfs::mount(&dir) else { return };
        fs::write(dir.join("on-another-filesystem"), "keep").unwrap();
        assert!(move_to_trash(&store, &dir, "x").is_err());
        assert_eq!(fs::read_to_string(dir.join("on-another-filesystem")).unwrap(), "keep");
    }

    /// Removing what is not there frees nothing and is no error; a path that cannot be read
    /// (here: below a file) is an error, never "nothing there".
    #[test]
    fn removing_nothing_is_fine_and_an_unreadable_path_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(remove_tree(&tmp.path().join("absent")).unwrap(), 0);
        fs::write(tmp.path().join("a-file"), "x").unwrap();
        assert!(remove_tree(&tmp.path().join("a-file/below")).is_err());
        assert_eq!(remove_tree(&tmp.path().join("a-file")).unwrap(), 1);
    }

    /// A directory replaced by a link to a directory outside after it was listed (a race the
    /// agent can win): the link is opened with `O_NOFOLLOW`, so it is unlinked as a link and what
    /// it points at is never entered.
    #[test]
    fn a_directory_swapped_for_a_link_after_listing_is_unlinked_not_followed() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("keep.txt"), "keep").unwrap();
        let tree = tmp.path().join("tree");
        fs::create_dir_all(&tree).unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("was-a-dir")).unwrap();
        let parent = rfs::openat(CWD, &tree, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let name = CString::new("was-a-dir").unwrap();
        // Listed as a directory, found a link when opened.
        let device = crate::base::os::device(rfs::fstat(&parent).unwrap().st_dev);
        assert_eq!(
            remove_entry(parent.as_fd(), &name, FileType::Directory, Some(device), &SizeWalk::on_device(device))
                .unwrap(),
            0
        );
        assert!(fs::symlink_metadata(tree.join("was-a-dir")).is_err(), "the link is gone");
        assert_eq!(fs::read_to_string(outside.join("keep.txt")).unwrap(), "keep");
    }

    /// A directory replaced by a file after it was listed: opened with `O_DIRECTORY`, it is
    /// unlinked as the file it now is.
    #[test]
    fn a_directory_swapped_for_a_file_after_listing_is_unlinked() {
        let tmp = tempfile::tempdir().unwrap();
        let tree = tmp.path().join("tree");
        fs::create_dir_all(&tree).unwrap();
        fs::write(tree.join("was-a-dir"), "123").unwrap();
        let parent = rfs::openat(CWD, &tree, OFlags::RDONLY | OFlags::DIRECTORY, Mode::empty()).unwrap();
        let name = CString::new("was-a-dir").unwrap();
        let device = crate::base::os::device(rfs::fstat(&parent).unwrap().st_dev);
        assert_eq!(
            remove_entry(parent.as_fd(), &name, FileType::Directory, Some(device), &SizeWalk::on_device(device))
                .unwrap(),
            0
        );
        assert!(fs::symlink_metadata(tree.join("was-a-dir")).is_err(), "the file is gone");
    }

    /// What a dry run says it would free: the regular files' bytes, a link's target never
    /// counted, a file of two names once; and the removal frees what the dry run said.
    #[test]
    fn a_trees_bytes_are_its_files_bytes_without_what_links_point_at() {
        use crate::base::disk_usage::tree_bytes;
        let tmp = tempfile::tempdir().unwrap();
        fs::write(tmp.path().join("big-outside"), vec![0u8; 4096]).unwrap();
        let tree = tmp.path().join("tree");
        fs::create_dir_all(tree.join("a")).unwrap();
        fs::write(tree.join("f"), "12345").unwrap();
        fs::write(tree.join("a/g"), "678").unwrap();
        std::os::unix::fs::symlink(tmp.path().join("big-outside"), tree.join("a/link")).unwrap();
        fs::hard_link(tree.join("f"), tree.join("a/f-again")).unwrap();
        assert_eq!(tree_bytes(&tree), 8);
        assert_eq!(tree_bytes(&tmp.path().join("absent")), 0);
        assert_eq!(remove_tree(&tree).unwrap(), 8);
    }

    /// A trash that is a symbolic link (to a directory outside the home) is never emptied: what
    /// the link points at is not the trash. One that is a file is not either.
    #[test]
    fn a_trash_that_is_a_link_or_a_file_is_not_emptied() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path());
        let outside = tmp.path().join("outside");
        fs::create_dir_all(outside.join("dir")).unwrap();
        fs::write(outside.join("dir/keep.txt"), "keep").unwrap();
        std::os::unix::fs::symlink(&outside, store.trash_dir()).unwrap();
        assert_eq!(empty_trash(&store).unwrap(), 0);
        assert_eq!(fs::read_to_string(outside.join("dir/keep.txt")).unwrap(), "keep");
        fs::remove_file(store.trash_dir()).unwrap();
        fs::write(store.trash_dir(), "not a directory").unwrap();
        assert_eq!(empty_trash(&store).unwrap(), 0);
        assert_eq!(fs::read_to_string(store.trash_dir()).unwrap(), "not a directory");
        fs::remove_file(store.trash_dir()).unwrap();
        assert_eq!(empty_trash(&store).unwrap(), 0, "no trash at all");
    }

    /// What an earlier run left in the trash is deleted, and its bytes counted.
    #[test]
    fn the_trash_is_emptied_of_what_an_earlier_run_left() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path());
        fs::create_dir_all(store.trash_dir().join("jk-a1b2c3d4.data.1.0/home")).unwrap();
        fs::write(store.trash_dir().join("jk-a1b2c3d4.data.1.0/home/notes"), "1234").unwrap();
        fs::write(store.trash_dir().join("stray-file"), "56").unwrap();
        assert_eq!(empty_trash(&store).unwrap(), 6);
        assert_eq!(fs::read_dir(store.trash_dir()).unwrap().count(), 0);
    }

    /// The trash on another filesystem (EXDEV): the directory is deleted where it is, links
    /// unlinked and never followed, and the bytes freed are counted.
    #[test]
    fn across_filesystems_the_directory_is_deleted_in_place() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path());
        let Some(_trash) = Tmpfs::mount(&store.trash_dir()) else { return };
        let outside = tmp.path().join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("keep.txt"), "keep").unwrap();
        let dir = tmp.path().join("data/jk-a1b2c3d4");
        fs::create_dir_all(dir.join("sub")).unwrap();
        fs::write(dir.join("sub/f"), "12345").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("link")).unwrap();
        assert_eq!(move_to_trash(&store, &dir, "x").unwrap(), Trashed::DeletedInPlace(5));
        assert!(fs::symlink_metadata(&dir).is_err());
        assert_eq!(fs::read_to_string(outside.join("keep.txt")).unwrap(), "keep");
    }

    #[test]
    fn removes_links_never_their_targets() {
        let tmp = tempfile::tempdir().unwrap();
        let outside = tmp.path().join("outside");
        fs::create_dir_all(outside.join("deep")).unwrap();
        fs::write(outside.join("deep/keep.txt"), "keep").unwrap();
        let tree = tmp.path().join("tree");
        fs::create_dir_all(tree.join("a/b")).unwrap();
        fs::write(tree.join("a/b/f"), "12345").unwrap();
        std::os::unix::fs::symlink(&outside, tree.join("a/link")).unwrap();
        std::os::unix::fs::symlink(outside.join("deep/keep.txt"), tree.join("filelink")).unwrap();
        assert_eq!(remove_tree(&tree).unwrap(), 5);
        assert!(!tree.exists());
        assert_eq!(fs::read_to_string(outside.join("deep/keep.txt")).unwrap(), "keep");
    }
}
