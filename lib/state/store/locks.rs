//! The locks of a home: the index lock every read-modify-write of `instances.json` holds, the
//! launcher's per-instance name locks (held by jackin while it has the session, and by purge,
//! restore and keep while they change it: services/claim.rs), who holds one, and the purge's
//! per-host-repository locks.

use std::fs::{self, File, OpenOptions};
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::base::exit::Exit;
use crate::state::names::InstanceName;

/// A lock file the tools make when it is not there (mode 0600) and never truncate: its content
/// is nobody's, only its `flock`.
fn open_lock_file(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().read(true).write(true).create(true).truncate(false).mode(0o600).open(path)
}

/// Takes the exclusive `flock(2)` on `file`, waiting up to `wait`: the file back when it is
/// locked, `None` when the wait ran out. The wait is the kernel's blocking lock, run by a helper
/// thread, not a poll: a poller sleeps between tries and loses every time to a writer that lets
/// go and locks again at once, so under a steady stream of writers it starved until its wait ran
/// out. A lock the helper gets after the wait ran out is let go at once (its file is dropped when
/// nobody is left to take it).
fn lock_within(file: File, wait: Duration) -> std::io::Result<Option<File>> {
    match fs2::FileExt::try_lock_exclusive(&file) {
        Ok(()) => return Ok(Some(file)),
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        Err(e) => return Err(e),
    }
    if wait.is_zero() {
        return Ok(None);
    }
    let (locked, taken) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let outcome = fs2::FileExt::lock_exclusive(&file).map(|()| file);
        // Nobody is waiting any more: dropping the file lets the lock go.
        let _ = locked.send(outcome);
    });
    match taken.recv_timeout(wait) {
        Ok(outcome) => outcome.map(Some),
        Err(_) => Ok(None),
    }
}

/// The exclusive `flock(2)` on a session's `.jackin/continuity.json.lock` (the tools' own file,
/// which keep, reconcile and restore may all update): waited for, as long as the one holding it
/// takes to write the file. Released on drop.
#[derive(Debug)]
pub(crate) struct ContinuityLock {
    _file: File,
}

impl ContinuityLock {
    pub(crate) fn acquire(path: &Path) -> Result<Self> {
        let file = open_lock_file(path).with_context(|| format!("opening {}", path.display()))?;
        fs2::FileExt::lock_exclusive(&file).with_context(|| format!("locking {}", path.display()))?;
        Ok(ContinuityLock { _file: file })
    }
}

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
        // Bounded, as the name lock's try is: each round past the first is the file replaced
        // while it was locked.
        for _ in 0..100 {
            let file =
                open_lock_file(path).with_context(|| format!("cannot open the index lock {}", path.display()))?;
            let file = lock_within(file, deadline.saturating_duration_since(Instant::now()))
                .with_context(|| format!("cannot lock {}", path.display()))?
                .ok_or_else(|| {
                    Exit::Busy.err(format_args!("the index lock {} is held by another process", path.display()))
                })?;
            let locked = file.metadata()?;
            match fs::metadata(path) {
                Ok(now) if now.dev() == locked.dev() && now.ino() == locked.ino() => {
                    return Ok(IndexLock { _file: file })
                }
                _ => continue,
            }
        }
        Err(Exit::Busy.err(format_args!("the index lock {} keeps being replaced while it is locked", path.display())))
    }
}

/// Exclusive `flock(2)`s on host repositories, held by a purge from its re-assessment of an
/// instance to the deletion of its scratch branches: a commit can be safe only because another
/// session's scratch branch reaches it, so two purges of sessions sharing a repository must not
/// each count the other's branch as the surviving ref. The lock is taken on the repository's
/// directory itself (known by its inode, so every spelling of the path takes the same one): no file is
/// created anywhere, so a purge that refuses leaves nothing behind, and no jackin home of its own
/// is needed for two homes' purges of one repository to see each other. A flock excludes every
/// other open of the directory, threads of one run as well as other processes.
#[derive(Debug)]
pub(crate) struct HostRepoLocks {
    _dirs: Vec<File>,
}

impl HostRepoLocks {
    /// Locks every repository in `repos` that still exists, in the order of their inodes (two
    /// purges never wait on each other in a circle, and every spelling of a path is one inode),
    /// waiting up to `wait` for each; then "busy" (exit 5). A repository that is gone has no
    /// branch left to delete. Each is opened once and known by what it opened: no path is
    /// resolved first, so nothing can vanish between a look and the open.
    pub(crate) fn acquire(repos: &[&Path], wait: Duration) -> Result<Self> {
        let mut opened = Vec::with_capacity(repos.len());
        for repo in repos {
            let dir = match File::open(repo) {
                Ok(dir) => dir,
                Err(e) if e.kind() == ErrorKind::NotFound => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot open the host repository {}", repo.display())),
            };
            let meta = dir.metadata().with_context(|| format!("cannot stat {}", repo.display()))?;
            opened.push(((meta.dev(), meta.ino()), *repo, dir));
        }
        opened.sort_by_key(|(inode, _, _)| *inode);
        opened.dedup_by_key(|(inode, _, _)| *inode);
        let mut dirs = Vec::with_capacity(opened.len());
        for (_, repo, dir) in opened {
            let dir = lock_within(dir, wait).with_context(|| format!("cannot lock {}", repo.display()))?.ok_or_else(
                || Exit::Busy.err(format_args!("the host repository {} is locked by another purge", repo.display())),
            )?;
            dirs.push(dir);
        }
        Ok(HostRepoLocks { _dirs: dirs })
    }
}

/// The name lock `data/<container>.lock`, held by this process: an exclusive `flock(2)` on the
/// file the path names, the lock jackin takes for as long as it has the session. A lock file that
/// was not there was made for the hold, and is unlinked (still held) when the hold ends, so a
/// run that holds it leaves the home as it found it.
#[derive(Debug)]
pub(crate) struct NameLock {
    file: File,
    path: PathBuf,
    created: bool,
}

/// What a try of a name lock found.
#[derive(Debug)]
pub(crate) enum NameLockTry {
    Taken(NameLock),
    /// Another open of the file holds it: another process, named when the system says who.
    Held(LockHolder),
}

impl NameLock {
    /// Takes `path` without waiting, making the file when there is none. After locking, the path
    /// must still name the inode locked: a purge unlinks the lock it holds at its step 7, and a
    /// lock on an unlinked inode excludes nobody, so then it is tried again.
    pub(crate) fn try_take(path: &Path) -> Result<NameLockTry> {
        for _ in 0..100 {
            let (file, created) = match OpenOptions::new().read(true).open(path) {
                Ok(file) => (file, false),
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    match OpenOptions::new().read(true).write(true).create_new(true).mode(0o600).open(path) {
                        Ok(file) => (file, true),
                        Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                        Err(e) => return Err(e).with_context(|| format!("cannot create {}", path.display())),
                    }
                }
                Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
            };
            if !lock_past_looks(&file).with_context(|| format!("cannot lock {}", path.display()))? {
                return Ok(NameLockTry::Held(LockHolder::of(&file)));
            }
            let lock = NameLock { file, path: path.to_path_buf(), created };
            if lock.still_named() {
                return Ok(NameLockTry::Taken(lock));
            }
            // The path names another file now: the drop lets go of the hold and, since it
            // unlinks only a file the path still names, removes nothing.
            drop(lock);
        }
        Err(Exit::Busy.err(format_args!("{} keeps being replaced while it is locked", path.display())))
    }

    /// Whether another process holds `path`, without taking it and without making a file (a dry
    /// run's look); `None` when it is free or absent.
    pub(crate) fn holder(path: &Path) -> Result<Option<LockHolder>> {
        let file = match OpenOptions::new().read(true).open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
        };
        Ok((!look(&file).with_context(|| format!("cannot test {}", path.display()))?).then(|| LockHolder::of(&file)))
    }

    /// The hold made the file (there was none).
    pub(crate) fn created(&self) -> bool {
        self.created
    }

    /// Whether the path still names the inode held.
    fn still_named(&self) -> bool {
        match (self.file.metadata(), fs::metadata(&self.path)) {
            (Ok(held), Ok(now)) => held.dev() == now.dev() && held.ino() == now.ino(),
            _ => false,
        }
    }

    /// Unlinks the lock file while it is still held (purge's step 7), so no other process can
    /// take the name until this one is done. `false` when the path no longer names the file held
    /// (someone else unlinked it): nothing removed. The hold itself lasts until it is dropped.
    pub(crate) fn unlink(&mut self) -> Result<bool> {
        if !self.still_named() {
            self.created = false;
            return Ok(false);
        }
        match fs::remove_file(&self.path) {
            Ok(()) => {
                self.created = false;
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(e).with_context(|| format!("removing {}", self.path.display())),
        }
    }
}

impl Drop for NameLock {
    /// A lock file this hold made goes before the lock is released (the flock ends with the file).
    fn drop(&mut self) {
        if self.created && self.still_named() {
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// How long a claim tries again when it finds the lock held: a look (a dry run, reconcile, the
/// orphan scan) holds it for a moment only, and must not pass for a holder.
const LOOK_GRACE: Duration = Duration::from_millis(200);

/// Takes the exclusive lock on `file`, trying again for [`LOOK_GRACE`] while it is held; `false`
/// when it is still held then.
fn lock_past_looks(file: &File) -> std::io::Result<bool> {
    let deadline = Instant::now() + LOOK_GRACE;
    loop {
        match fs2::FileExt::try_lock_exclusive(file) {
            Ok(()) => return Ok(true),
            Err(e) if e.kind() == ErrorKind::WouldBlock && Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(5))
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Ok(false),
            Err(e) => return Err(e),
        }
    }
}

/// A look at a name lock: whether it is free, by taking it shared for a moment (so two looks never
/// see each other as holders; a holder's exclusive lock refuses it), then letting it go.
fn look(file: &File) -> std::io::Result<bool> {
    match fs2::FileExt::try_lock_shared(file) {
        Ok(()) => {
            let _ = fs2::FileExt::unlock(file);
            Ok(true)
        }
        Err(e) if e.kind() == ErrorKind::WouldBlock => Ok(false),
        Err(e) => Err(e),
    }
}

/// Who holds a lock, as far as the system says (`base::os::flock_holder`): on Linux the process
/// that took the `flock(2)` and its program name; elsewhere, or when it cannot be read, nobody
/// named.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct LockHolder {
    pub(crate) pid: Option<u32>,
    /// The program's file name (argv[0] without its directories, else the kernel's `comm`).
    pub(crate) program: Option<String>,
}

impl LockHolder {
    /// The holder of the flock another open of `file` has.
    fn of(file: &File) -> LockHolder {
        let Ok(meta) = file.metadata() else { return LockHolder::default() };
        match crate::base::os::flock_holder(meta.dev(), meta.ino()) {
            Some((pid, program)) => LockHolder { pid: Some(pid), program },
            None => LockHolder::default(),
        }
    }

    /// One of these tools (jackin-purge, jackin-restore, jackin-keep, …) rather than the launcher
    /// or anything else.
    pub(crate) fn is_tool(&self) -> bool {
        self.program.as_deref().is_some_and(crate::base::tool::Tool::is_ours)
    }
}

impl std::fmt::Display for LockHolder {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match (&self.program, self.pid) {
            (Some(program), Some(pid)) => write!(f, "{program} (pid {pid})"),
            (None, Some(pid)) => write!(f, "pid {pid}"),
            _ => f.write_str("another process"),
        }
    }
}

/// Whether another process holds `data/<container>.lock` (the launcher's name claim). Taking
/// the lock for a moment (shared: see [`look`]) is the only way to ask; it is released at once.
pub(crate) fn name_lock_held(path: &Path) -> Result<bool> {
    let file = match OpenOptions::new().read(true).open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("cannot open {}", path.display())),
    };
    Ok(!look(&file).with_context(|| format!("cannot test {}", path.display()))?)
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

    /// A lock file that was not there is made for the hold and gone when it ends; one that was
    /// there stays; another open of the file is refused while it is held, and named.
    #[test]
    fn a_name_lock_hold_leaves_the_home_as_it_found_it_and_excludes_other_opens() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jk-abcd-x.lock");
        let NameLockTry::Taken(held) = NameLock::try_take(&path).unwrap() else { panic!("free") };
        assert!(held.created() && path.exists());
        match NameLock::try_take(&path).unwrap() {
            NameLockTry::Held(holder) => {
                if crate::base::os::NAMES_LOCK_HOLDERS {
                    assert_eq!(holder.pid, Some(std::process::id()), "{holder}");
                    assert!(holder.program.is_some(), "{holder:?}");
                }
            }
            NameLockTry::Taken(_) => panic!("held twice"),
        }
        assert!(NameLock::holder(&path).unwrap().is_some());
        drop(held);
        assert!(!path.exists(), "made for the hold, unlinked with it");
        fs::write(&path, "").unwrap();
        let NameLockTry::Taken(held) = NameLock::try_take(&path).unwrap() else { panic!("free") };
        assert!(!held.created());
        drop(held);
        assert!(path.exists(), "jackin's file stays");
        assert_eq!(NameLock::holder(&path).unwrap(), None);
    }

    /// Two looks at once never see each other as holders, and a claim rides out a look.
    #[test]
    fn a_look_is_not_a_holder() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jk-abcd-x.lock");
        fs::write(&path, "").unwrap();
        let looking = File::open(&path).unwrap();
        fs2::FileExt::lock_shared(&looking).unwrap();
        assert!(!name_lock_held(&path).unwrap(), "another look");
        assert_eq!(NameLock::holder(&path).unwrap(), None);
        let released = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            drop(looking);
        });
        assert!(matches!(NameLock::try_take(&path).unwrap(), NameLockTry::Taken(_)), "taken once the look is over");
        released.join().unwrap();
    }

    /// A path that loops back on itself cannot be opened: every look and every try says so,
    /// never "free" or "busy"; nor can a lock in a directory that is not there be made.
    #[test]
    fn a_name_lock_that_cannot_be_opened_or_made_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let looped = dir.path().join("jk-abcd-x.lock");
        std::os::unix::fs::symlink(&looped, &looped).unwrap();
        let err = NameLock::try_take(&looped).unwrap_err();
        assert!(err.to_string().contains("cannot open"), "{err:#}");
        assert_ne!(Exit::of(&err), Exit::Busy);
        assert!(NameLock::holder(&looped).is_err());
        assert!(name_lock_held(&looped).is_err());
        let missing = dir.path().join("missing").join("jk-abcd-x.lock");
        let err = NameLock::try_take(&missing).unwrap_err();
        assert!(err.to_string().contains("cannot create"), "{err:#}");
        assert!(!name_lock_held(&dir.path().join("absent.lock")).unwrap(), "no file: not held");
    }

    /// A hold whose path names another file now (the launcher made a new lock) neither unlinks
    /// nor, when it ends, removes that file; one still named is unlinked while held.
    #[test]
    fn a_hold_never_unlinks_a_lock_file_that_replaced_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jk-abcd-x.lock");
        let NameLockTry::Taken(mut held) = NameLock::try_take(&path).unwrap() else { panic!("free") };
        let newer = dir.path().join("newer");
        fs::write(&newer, "launcher").unwrap();
        fs::rename(&newer, &path).unwrap();
        assert!(!held.unlink().unwrap(), "not the file held: nothing removed");
        drop(held);
        assert_eq!(fs::read_to_string(&path).unwrap(), "launcher", "the newer lock stays");
        let NameLockTry::Taken(mut held) = NameLock::try_take(&path).unwrap() else { panic!("free") };
        assert!(held.unlink().unwrap());
        assert!(!path.exists());
        drop(held);
        assert!(!path.exists());
    }

    /// The index lock waits for a holder that lets go within the wait; and when the file it
    /// waited on is replaced meanwhile, it locks the file the path names now, not the old one.
    #[test]
    fn the_index_lock_waits_and_ends_on_the_file_the_path_names() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("instances.json.lock");
        let held = IndexLock::acquire(&path, Duration::ZERO).unwrap();
        let waiter = {
            let path = path.clone();
            std::thread::spawn(move || {
                let acquired = IndexLock::acquire(&path, Duration::from_secs(10)).unwrap();
                let other = File::open(&path).unwrap();
                let free = fs2::FileExt::try_lock_exclusive(&other).is_ok();
                drop(acquired);
                free
            })
        };
        // The waiter has opened the file and is waiting on it; it is replaced, then let go.
        std::thread::sleep(Duration::from_millis(200));
        let newer = dir.path().join("newer");
        fs::write(&newer, "").unwrap();
        fs::rename(&newer, &path).unwrap();
        drop(held);
        assert!(!waiter.join().unwrap(), "the lock taken is the one on the file the path names");
    }

    /// Under writers that let the index lock go and take it again at once (a status writer's
    /// loop), a waiter still gets it: the kernel wakes a blocked waiter when the lock is let go.
    /// The poll this replaced slept between tries and lost nearly every time (42 of 50 waits of
    /// 1 s ran out, measured against three such writers); a reconcile in CI starved that way.
    #[test]
    fn the_index_lock_is_had_between_writers_that_take_it_again_at_once() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("instances.json.lock");
        drop(IndexLock::acquire(&path, Duration::ZERO).unwrap());
        let done = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..3)
            .map(|_| {
                let (path, done) = (path.clone(), done.clone());
                std::thread::spawn(move || {
                    let file = File::open(&path).unwrap();
                    while !done.load(Ordering::Relaxed) {
                        fs2::FileExt::lock_exclusive(&file).unwrap();
                        std::thread::sleep(Duration::from_millis(3));
                        fs2::FileExt::unlock(&file).unwrap();
                    }
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(50));
        let waits: Vec<bool> = (0..20).map(|_| IndexLock::acquire(&path, Duration::from_secs(2)).is_ok()).collect();
        done.store(true, Ordering::Relaxed);
        writers.into_iter().for_each(|w| w.join().unwrap());
        assert!(waits.iter().all(|&had| had), "waits that ran out: {}", waits.iter().filter(|&&had| !had).count());
    }

    /// Tools that try one session's name lock at the same moment, when no lock file is there:
    /// one makes the file and takes it, the others find that file and see it held, and none of
    /// them fails for the file it did not make.
    #[test]
    fn a_name_lock_made_by_another_try_at_the_same_moment_is_seen_held() {
        let root = tempfile::tempdir().unwrap();
        // Few rounds: each holder seen is looked up in /proc. The first round already races.
        for round in 0..10 {
            let path = root.path().join(format!("{round}.lock"));
            let tries: Vec<NameLockTry> = super::super::at_once(4, || NameLock::try_take(&path))
                .into_iter()
                .map(|t| t.unwrap_or_else(|e| panic!("round {round}: {e:#}")))
                .collect();
            let taken = tries.iter().filter(|t| matches!(t, NameLockTry::Taken(_))).count();
            assert!(taken <= 1, "round {round}: one lock, taken {taken} times");
        }
    }

    /// The lock file unlinked by someone else at the moment the holder unlinks it (after the
    /// holder saw it still there): nothing was removed by the holder, and that is no error. The
    /// holder starts a little later each round (in a cycle), so some round lands in that moment.
    #[test]
    fn a_name_lock_unlinked_by_another_at_the_same_moment_is_no_error() {
        let root = tempfile::tempdir().unwrap();
        for round in 0..3000u32 {
            let path = root.path().join(format!("{round}.lock"));
            let NameLockTry::Taken(mut lock) = NameLock::try_take(&path).unwrap() else { panic!("free") };
            let start = std::sync::Barrier::new(2);
            let (by_holder, by_other) = std::thread::scope(|s| {
                let other = s.spawn(|| {
                    start.wait();
                    fs::remove_file(&path).is_ok()
                });
                start.wait();
                for _ in 0..round % 64 {
                    std::hint::spin_loop();
                }
                let by_holder = lock.unlink().unwrap_or_else(|e| panic!("round {round}: {e:#}"));
                (by_holder, other.join().unwrap())
            });
            assert!(by_holder != by_other, "round {round}: removed by the holder {by_holder}, by the other {by_other}");
        }
    }

    #[test]
    fn host_repository_locks_wait_exclude_and_skip_what_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        fs::create_dir_all(&a).unwrap();
        fs::create_dir_all(&b).unwrap();
        let a_again = dir.path().join("b/../a");
        let gone = dir.path().join("gone");
        // Two spellings of one repository are one lock (no self-deadlock); a repository gone is skipped.
        let held = HostRepoLocks::acquire(&[&a, &a_again, &b, &gone], Duration::ZERO).unwrap();
        assert_eq!(held._dirs.len(), 2);
        let err = HostRepoLocks::acquire(&[&b], Duration::from_millis(50)).unwrap_err();
        assert_eq!(Exit::of(&err), Exit::Busy, "{err:#}");
        let released = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
        });
        HostRepoLocks::acquire(&[&b], Duration::from_secs(10)).unwrap();
        released.join().unwrap();
        // A path that is there but cannot be opened is an error, never skipped unlocked.
        let socket = dir.path().join("socket");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let err = HostRepoLocks::acquire(&[&socket], Duration::ZERO).unwrap_err();
        assert!(err.to_string().contains("cannot open the host repository"), "{err:#}");
    }

    #[test]
    fn a_holder_is_named_by_its_program_and_pid_and_only_ours_are_tools() {
        assert_eq!(LockHolder { pid: Some(7), program: None }.to_string(), "pid 7");
        let holder = LockHolder { pid: Some(7), program: Some("jackin-purge".into()) };
        assert!(holder.is_tool());
        assert_eq!(holder.to_string(), "jackin-purge (pid 7)");
        assert_eq!(LockHolder::default().to_string(), "another process");
        assert!(!LockHolder { pid: Some(7), program: Some("jackin".into()) }.is_tool());
        assert!(!LockHolder { pid: Some(7), program: Some("jackin-0123abcd".into()) }.is_tool());
    }
}
