//! The session's claim: jackin's name lock `data/<c>.lock` (state.md), which the launcher holds for
//! as long as it has the session attached, and which jackin-purge, jackin-restore and jackin-keep
//! hold for the part of their run that changes the session. One holder at a time: a purge never
//! tears down what a restore is recreating, a keep never keeps what a purge is deleting. Another
//! holder refuses the session at once (busy, exit 5), naming who holds it; nothing of the session
//! has changed then, and a retry once the holder is done succeeds. A dry run (`--dry-run`,
//! `--plan`) holds nothing but refuses as the run would.

use anyhow::Result;

use crate::base::exit::Exit;
use crate::protocol::codes::ResourceKind;
use crate::protocol::path_bytes::NameBytes;
use crate::protocol::records::Removed;
use crate::state::names::InstanceName;
use crate::state::store::{LockHolder, NameLock, NameLockTry, Store};

/// The claim of one session, held until dropped (`lock` is `None` in a dry run).
#[derive(Debug)]
pub(crate) struct SessionClaim {
    lock: Option<NameLock>,
}

impl SessionClaim {
    /// Takes the claim of `name` for this run, making the lock file when there is none (and
    /// unlinking it again when the claim ends); in a dry run, only looks. Busy (exit 5) when
    /// another process holds it, the holder named.
    pub(crate) fn take(store: &Store, name: &InstanceName, dry_run: bool) -> Result<SessionClaim> {
        let path = store.name_lock_path(name);
        if dry_run {
            return match NameLock::holder(&path)? {
                Some(holder) => Err(refusal(&path, &holder)),
                None => Ok(SessionClaim { lock: None }),
            };
        }
        match NameLock::try_take(&path)? {
            NameLockTry::Taken(lock) => Ok(SessionClaim { lock: Some(lock) }),
            NameLockTry::Held(holder) => Err(refusal(&path, &holder)),
        }
    }

    /// Who holds the claim of `name` now, in the words of a list (`busy: jackin-purge (pid 12)
    /// is at work on it`), or `None` when nobody does. Only looks: the resume list says a
    /// session it could not take now is not ready, as the resume itself would refuse it.
    pub(crate) fn held_by(store: &Store, name: &InstanceName) -> Result<Option<String>> {
        Ok(NameLock::holder(&store.name_lock_path(name))?.map(|holder| {
            if holder.is_tool() {
                format!("busy: {holder} is at work on it")
            } else {
                format!("the session is live: {holder} holds its lock")
            }
        }))
    }

    /// The claim made the lock file (there was none), and unlinks it when it ends: it is not the
    /// session's file.
    pub(crate) fn made_lock(&self) -> bool {
        self.lock.as_ref().is_some_and(NameLock::created)
    }

    /// Purge's step 7: `data/<c>.lock` unlinked while still held, so no launch can take the name
    /// before the purge is done. `None` when nothing was removed (a dry run holds nothing; someone
    /// else unlinked it).
    pub(crate) fn remove(&mut self, store: &Store, name: &InstanceName) -> Result<Option<Removed>> {
        let Some(lock) = self.lock.as_mut() else { return Ok(None) };
        let path = store.name_lock_path(name);
        Ok(lock.unlink()?.then(|| Removed::file(ResourceKind::NameLock, &NameBytes::of_path(&path))))
    }
}

/// The refusal of a session whose claim another process holds: one of these tools at work on it
/// (retry when it is done), or the launcher, or whatever else holds jackin's lock (the session is
/// live).
fn refusal(path: &std::path::Path, holder: &LockHolder) -> anyhow::Error {
    let path = path.display();
    if holder.is_tool() {
        Exit::Busy.err(format_args!(
            "busy: {holder} is at work on this session (it holds {path}); nothing was changed, retry when it is done"
        ))
    } else if holder.pid.is_some() {
        Exit::Busy.err(format_args!("the session is live: {path} is held by another process, {holder}"))
    } else {
        Exit::Busy.err(format_args!("the session is live: {path} is held by another process"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::store::Roots;

    fn home() -> (tempfile::TempDir, Store, InstanceName) {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tmp.path().join("data")).unwrap();
        let store = Store::open(Roots { home: tmp.path().to_path_buf(), config_dir: tmp.path().join("c") }).unwrap();
        (tmp, store, InstanceName::parse("jk-a1b2c3d4").unwrap())
    }

    /// Step 7 after someone else unlinked the held lock: nothing to remove, and no failure.
    #[test]
    fn a_held_lock_already_gone_is_not_removed_and_not_an_error() {
        let (_tmp, store, name) = home();
        let path = store.name_lock_path(&name);
        std::fs::write(&path, "").unwrap();
        let mut claim = SessionClaim::take(&store, &name, false).unwrap();
        assert!(!claim.made_lock());
        std::fs::remove_file(&path).unwrap();
        assert_eq!(claim.remove(&store, &name).unwrap(), None);
    }

    /// Step 7 when the lock cannot be unlinked (a directory stands where the file was): an
    /// error, never a silent "nothing removed".
    #[test]
    fn a_held_lock_that_cannot_be_unlinked_is_an_error() {
        let (_tmp, store, name) = home();
        let path = store.name_lock_path(&name);
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("inside"), "x").unwrap();
        let mut claim = SessionClaim::take(&store, &name, false).unwrap();
        assert!(claim.remove(&store, &name).is_err());
        assert!(path.join("inside").exists());
    }

    /// Step 7 for a lock held since step 1: it is unlinked and reported.
    #[test]
    fn a_held_lock_is_removed_and_reported() {
        let (_tmp, store, name) = home();
        let path = store.name_lock_path(&name);
        std::fs::write(&path, "").unwrap();
        let mut claim = SessionClaim::take(&store, &name, false).unwrap();
        let removed = claim.remove(&store, &name).unwrap().expect("removed");
        assert_eq!((removed.kind, removed.name), (ResourceKind::NameLock, path.to_string_lossy().into_owned()));
        assert!(!path.exists());
    }

    /// A name lock that cannot be opened for another reason than its absence (here a symbolic
    /// link that points at itself) is an error, never read as "no lock".
    #[test]
    fn a_lock_that_cannot_be_opened_is_an_error_not_an_absent_lock() {
        let (_tmp, store, name) = home();
        let path = store.name_lock_path(&name);
        std::os::unix::fs::symlink(&path, &path).unwrap();
        assert!(SessionClaim::take(&store, &name, false).is_err());
        assert!(SessionClaim::take(&store, &name, true).is_err());
    }

    /// No lock file: the claim makes one and unlinks it when it ends; a dry run makes none.
    #[test]
    fn a_claim_without_a_lock_file_leaves_none_behind() {
        let (_tmp, store, name) = home();
        let path = store.name_lock_path(&name);
        let claim = SessionClaim::take(&store, &name, true).unwrap();
        assert!(claim.lock.is_none() && !path.exists(), "a dry run holds nothing");
        let claim = SessionClaim::take(&store, &name, false).unwrap();
        assert!(claim.made_lock() && path.exists());
        let second = SessionClaim::take(&store, &name, false).expect_err("busy");
        assert_eq!(Exit::of(&second), Exit::Busy);
        drop(claim);
        assert!(!path.exists());
    }

    /// Another process's claim (here another open file description) makes the session busy, in a
    /// run and a dry run alike, the holder named where the system says who it is.
    #[test]
    fn a_lock_held_elsewhere_is_busy_in_a_run_and_a_dry_run() {
        let (_tmp, store, name) = home();
        let path = store.name_lock_path(&name);
        std::fs::write(&path, "").unwrap();
        let other = std::fs::File::open(&path).unwrap();
        fs2::FileExt::lock_exclusive(&other).unwrap();
        for dry_run in [false, true] {
            let err = SessionClaim::take(&store, &name, dry_run).expect_err("busy");
            assert_eq!(Exit::of(&err), Exit::Busy, "dry run {dry_run}");
            let message = err.to_string();
            assert!(message.contains("held by another process"), "{message}");
            if crate::base::os::NAMES_LOCK_HOLDERS {
                assert!(message.contains(&format!("(pid {})", std::process::id())), "{message}");
            }
        }
        drop(other);
        // A process another test forks at this moment holds a copy of `other` until its exec
        // closes it (close-on-exec), and with it the lock: wait that out.
        let mut free = SessionClaim::take(&store, &name, true);
        for _ in 0..100 {
            if free.is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
            free = SessionClaim::take(&store, &name, true);
        }
        assert!(free.unwrap().lock.is_none(), "a dry run holds nothing");
    }

    #[test]
    fn a_tool_holding_the_claim_is_named_as_at_work_and_the_launcher_as_live() {
        let path = std::path::Path::new("/h/data/jk-a1b2c3d4.lock");
        let tool = LockHolder { pid: Some(42), program: Some("jackin-restore".into()) };
        let message = refusal(path, &tool).to_string();
        assert!(message.starts_with("busy: jackin-restore (pid 42) is at work on this session"), "{message}");
        let jackin = LockHolder { pid: Some(7), program: Some("jackin".into()) };
        let message = refusal(path, &jackin).to_string();
        assert_eq!(message, "the session is live: /h/data/jk-a1b2c3d4.lock is held by another process, jackin (pid 7)");
    }
}
