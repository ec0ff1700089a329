//! What every other system (macOS) gets, and what a Linux build with the `portable` feature runs
//! so that the tests run it: each file synced on its own, no boot time, no lock holder named.

use std::fs;
use std::path::Path;
use std::time::SystemTime;

pub(super) const NAMES_LOCK_HOLDERS: bool = false;
pub(super) const KNOWS_BOOT_TIME: bool = false;

/// Each regular file and directory under `dir`, deepest first, then `dir`: a directory's entry
/// for a file is durable once the directory is synced after it.
pub(super) fn sync_written(dir: &Path) -> std::io::Result<()> {
    let walk = walkdir::WalkDir::new(dir).follow_links(false).follow_root_links(false).contents_first(true);
    for entry in walk {
        let entry = entry.map_err(std::io::Error::other)?;
        let kind = entry.file_type();
        if kind.is_file() || kind.is_dir() {
            sync_one(&fs::File::open(entry.path())?)?;
        }
    }
    Ok(())
}

#[cfg(target_vendor = "apple")]
fn sync_one(file: &fs::File) -> std::io::Result<()> {
    // Not every filesystem takes F_FULLFSYNC (a network share): then as fsync, as SQLite does.
    rustix::fs::fcntl_fullfsync(file).or_else(|_| rustix::fs::fsync(file)).map_err(Into::into)
}

#[cfg(not(target_vendor = "apple"))]
fn sync_one(file: &fs::File) -> std::io::Result<()> {
    rustix::fs::fsync(file).map_err(Into::into)
}

pub(super) fn host_boot_time() -> Option<SystemTime> {
    None
}

pub(super) fn flock_holder(_dev: u64, _ino: u64) -> Option<(u32, Option<String>)> {
    None
}
