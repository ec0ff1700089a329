//! The locks of a home: the index lock every read-modify-write of `instances.json` holds, and
//! the launcher's per-instance name locks.

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
}
