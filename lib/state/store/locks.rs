//! The locks of a home: the index lock every read-modify-write of `instances.json` holds, the
//! launcher's per-instance name locks, and the purge's per-host-repository locks.

use std::fs::{self, File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::base::exit::Exit;
use crate::state::names::InstanceName;

/// The exclusive `flock(2)` on `data/instances.json.lock` that every index read-modify-write
/// holds. Released on drop.
#[derive(Debug)]
pub(crate) struct IndexLock {
    _file: File,
}

impl IndexLock {
    /// Waits up to `wait` for the lock; then "busy" (exit 5). After locking, the path must still
    /// name the inode we locked: another program may have unlinked or replaced the file while we
    /// waited, and a lock on an unlinked inode excludes nobody.
    pub(crate) fn acquire(path: &Path, wait: Duration) -> Result<Self> {
        let deadline = Instant::now() + wait;
        loop {
            let file = OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .mode(0o600)
                .open(path)
                .with_context(|| format!("cannot open the index lock {}", path.display()))?;
            loop {
                match fs2::FileExt::try_lock_exclusive(&file) {
                    Ok(()) => break,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        if Instant::now() >= deadline {
                            return Err(Exit::Busy
                                .err(format_args!("the index lock {} is held by another process", path.display())));
                        }
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => return Err(e).with_context(|| format!("cannot lock {}", path.display())),
                }
            }
            let locked = file.metadata()?;
            match fs::metadata(path) {
                Ok(now) if now.dev() == locked.dev() && now.ino() == locked.ino() => {
                    return Ok(IndexLock { _file: file })
                }
                _ => continue,
            }
        }
    }
}

/// Exclusive `flock(2)`s on host repositories, held by a purge from its re-assessment of an
/// instance to the deletion of its scratch branches: a commit can be safe only because another
/// session's scratch branch reaches it, so two purges of sessions sharing a repository must not
/// each count the other's branch as the surviving ref. The lock is taken on the repository's
/// directory itself (resolved, so every spelling of the path takes the same one): no file is
/// created anywhere, so a purge that refuses leaves nothing behind, and no jackin home of its own
/// is needed for two homes' purges of one repository to see each other. A flock excludes every
/// other open of the directory, threads of one run as well as other processes.
#[derive(Debug)]
pub(crate) struct HostRepoLocks {
    _dirs: Vec<File>,
}

impl HostRepoLocks {
    /// Locks every repository in `repos` that still exists, in sorted order (two purges never
    /// wait on each other in a circle), waiting up to `wait` for each; then "busy" (exit 5). A
    /// repository that is gone has no branch left to delete.
    pub(crate) fn acquire(repos: &[&Path], wait: Duration) -> Result<Self> {
        let mut resolved: Vec<std::path::PathBuf> = repos.iter().filter_map(|r| fs::canonicalize(r).ok()).collect();
        resolved.sort();
        resolved.dedup();
        let mut dirs = Vec::with_capacity(resolved.len());
        for repo in &resolved {
            let dir = match File::open(repo) {
                Ok(dir) => dir,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot open the host repository {}", repo.display())),
            };
            let deadline = Instant::now() + wait;
            loop {
                match fs2::FileExt::try_lock_exclusive(&dir) {
                    Ok(()) => break,
                    Err(e) if e.kind() == ErrorKind::WouldBlock => {
                        if Instant::now() >= deadline {
                            return Err(Exit::Busy.err(format_args!(
                                "the host repository {} is locked by another purge",
                                repo.display()
                            )));
                        }
                        std::thread::sleep(Duration::from_millis(10));
                    }
                    Err(e) => return Err(e).with_context(|| format!("cannot lock {}", repo.display())),
                }
            }
            dirs.push(dir);
        }
        Ok(HostRepoLocks { _dirs: dirs })
    }
}

/// Whether another process holds `data/<container>.lock` (the launcher's name claim). Taking
/// the lock for a moment is the only way to ask; it is released at once.
pub(crate) fn name_lock_held(path: &Path) -> Result<bool> {
    let file = match OpenOptions::new().read(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
    };
    match fs2::FileExt::try_lock_exclusive(&file) {
        Ok(()) => {
            let _ = fs2::FileExt::unlock(&file);
            Ok(false)
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(true),
        Err(e) => Err(e).with_context(|| format!("cannot test {}", path.display())),
    }
}

/// Unlinks the name lock `path` unless another process holds it, testing it by taking it and
/// unlinking it while held, so a launcher that claimed the name since is never robbed of its
/// claim. Returns whether it was removed. For a caller that does not hold the lock itself (a
/// holder's own test would see its own lock as another's).
pub(crate) fn remove_name_lock_unless_held(path: &Path) -> Result<bool> {
    let file = match OpenOptions::new().read(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
    };
    match fs2::FileExt::try_lock_exclusive(&file) {
        Ok(()) => {}
        Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("cannot test {}", path.display())),
    }
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("removing {}", path.display())),
    }
}

/// The instance whose name lock is the file `<container>.lock` ([`Store::name_lock_path`]).
/// jackin's other locks (`instances.json.lock`, `*.repo.lock`, `caffeinate.lock`, …) never have
/// an instance name as their stem.
pub(crate) fn name_lock_owner(file: &str) -> Option<InstanceName> {
    file.strip_suffix(".lock").and_then(|stem| InstanceName::parse(stem).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_locks_name_their_instance() {
        assert_eq!(name_lock_owner("jk-abcd-x.lock").unwrap().as_str(), "jk-abcd-x");
        assert_eq!(name_lock_owner("instances.json.lock"), None);
        assert_eq!(name_lock_owner("jk-abc.repo.lock"), None);
        assert_eq!(name_lock_owner("jk-abcd-x"), None);
    }

    #[test]
    fn a_name_lock_another_holds_is_not_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jk-abcd-x.lock");
        fs::write(&path, "").unwrap();
        let holder = File::open(&path).unwrap();
        fs2::FileExt::lock_exclusive(&holder).unwrap();
        assert!(!remove_name_lock_unless_held(&path).unwrap());
        assert!(path.exists(), "held by another open of the file, as a launcher holds it");
        drop(holder);
        assert!(remove_name_lock_unless_held(&path).unwrap());
        assert!(!path.exists());
        assert!(!remove_name_lock_unless_held(&path).unwrap(), "gone already");
    }
}
