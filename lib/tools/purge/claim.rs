//! The launcher's name claim `data/<c>.lock`, as purge and slim hold it (lifecycle.md, purge
//! steps 1 and 7).

use std::path::Path;

use anyhow::{Context, Result};

use crate::base::exit::Exit;
use crate::protocol::codes::ResourceKind;
use crate::protocol::path_bytes::NameBytes;
use crate::protocol::records::Removed;
use crate::state::store::{name_lock_held, remove_name_lock_unless_held};

/// The launcher's name claim `data/<c>.lock`, held by this run while it purges the instance so
/// that no launch or other purge can take the name meanwhile. Another holder means the session
/// is live: busy.
pub(crate) struct NameClaim {
    _file: Option<std::fs::File>,
}

impl NameClaim {
    /// Step 7: `data/<c>.lock`, when it is there. Held since step 1, it is ours to unlink; a lock
    /// that did not exist at step 1 may have been claimed by a launch since, so it is tested first.
    pub(super) fn remove(&self, path: &Path) -> Result<Option<Removed>> {
        let removed = if self._file.is_some() {
            match std::fs::remove_file(path) {
                Ok(()) => true,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
                Err(e) => return Err(e).with_context(|| format!("removing {}", path.display())),
            }
        } else {
            remove_name_lock_unless_held(path)?
        };
        Ok(removed.then(|| Removed::file(ResourceKind::NameLock, &NameBytes::of_path(path))))
    }

    pub(crate) fn take(path: &Path, dry_run: bool) -> Result<NameClaim> {
        if dry_run {
            if name_lock_held(path)? {
                return Err(
                    Exit::Busy.err(format_args!("the session is live: {} is held by another process", path.display()))
                );
            }
            return Ok(NameClaim { _file: None });
        }
        let file = match std::fs::OpenOptions::new().read(true).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(NameClaim { _file: None }),
            Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
        };
        match fs2::FileExt::try_lock_exclusive(&file) {
            Ok(()) => Ok(NameClaim { _file: Some(file) }),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                Err(Exit::Busy.err(format_args!("the session is live: {} is held by another process", path.display())))
            }
            Err(e) => Err(e).with_context(|| format!("cannot lock {}", path.display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Step 7 after someone else unlinked the held lock: nothing to remove, and no failure.
    #[test]
    fn a_held_lock_already_gone_is_not_removed_and_not_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("jk-a1b2c3d4.lock");
        std::fs::write(&path, "").unwrap();
        let claim = NameClaim::take(&path, false).unwrap();
        assert!(claim._file.is_some(), "held");
        std::fs::remove_file(&path).unwrap();
        assert_eq!(claim.remove(&path).unwrap(), None);
    }

    /// Step 7 when the lock cannot be unlinked (a directory stands where the file was): an
    /// error, never a silent "nothing removed".
    #[test]
    fn a_held_lock_that_cannot_be_unlinked_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("jk-a1b2c3d4.lock");
        std::fs::write(&path, "").unwrap();
        let claim = NameClaim::take(&path, false).unwrap();
        std::fs::remove_file(&path).unwrap();
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), "x").unwrap();
        assert!(claim.remove(&path).is_err());
        assert!(path.join("inside").exists());
    }

    /// Step 7 for a lock held since step 1: it is unlinked and reported.
    #[test]
    fn a_held_lock_is_removed_and_reported() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("jk-a1b2c3d4.lock");
        std::fs::write(&path, "").unwrap();
        let claim = NameClaim::take(&path, false).unwrap();
        let removed = claim.remove(&path).unwrap().expect("removed");
        assert_eq!((removed.kind, removed.name), (ResourceKind::NameLock, path.to_string_lossy().into_owned()));
        assert!(!path.exists());
    }

    /// A name lock that cannot be opened for another reason than its absence (here a symbolic
    /// link that points at itself) is an error, never read as "no lock".
    #[test]
    fn a_lock_that_cannot_be_opened_is_an_error_not_an_absent_lock() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("jk-a1b2c3d4.lock");
        std::os::unix::fs::symlink(&path, &path).unwrap();
        assert!(NameClaim::take(&path, false).is_err());
    }

    /// Another process's claim (here another open file description) makes the session busy.
    #[test]
    fn a_lock_held_elsewhere_is_busy_in_a_run_and_a_dry_run() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("jk-a1b2c3d4.lock");
        std::fs::write(&path, "").unwrap();
        let other = std::fs::File::open(&path).unwrap();
        fs2::FileExt::lock_exclusive(&other).unwrap();
        for dry_run in [false, true] {
            let err = NameClaim::take(&path, dry_run).err().expect("busy");
            assert_eq!(Exit::of(&err), Exit::Busy, "dry run {dry_run}");
        }
        drop(other);
        // A process another test forks at this moment holds a copy of `other` until its exec
        // closes it (close-on-exec), and with it the lock: wait that out.
        let mut free = NameClaim::take(&path, true);
        for _ in 0..100 {
            if free.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            free = NameClaim::take(&path, true);
        }
        assert!(free.unwrap()._file.is_none(), "a dry run holds nothing");
        assert!(NameClaim::take(&tmp.path().join("jk-none.lock"), false).unwrap()._file.is_none());
    }
}
