//! How any file of the home is written and read: atomically, as jackin's JSON, never through a
//! symbolic link; and what an atomic write's temp file is called, and whose it is.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::base::exit::{Exit, OrExit};

/// An error when `dir` is a symbolic link (see `Store::refuse_linked`).
pub(crate) fn refuse_link(dir: &Path) -> Result<()> {
    if fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        anyhow::bail!("{} is a symbolic link; the tools do not write through it", dir.display());
    }
    Ok(())
}

/// `dir`, created mode 0700 when missing, must be a real directory: a symbolic link there would
/// send what the tools write or delete through it outside the home.
pub(crate) fn ensure_private_dir(dir: &Path) -> Result<()> {
    // Bounded: each round that does not end it is another process making or removing `dir` at
    // that very moment.
    for _ in 0..100 {
        match fs::symlink_metadata(dir) {
            Ok(meta) if meta.is_dir() => return Ok(()),
            Ok(_) => anyhow::bail!("{} is not a directory; the tools do not work through it", dir.display()),
            Err(e) if e.kind() == ErrorKind::NotFound => match fs::DirBuilder::new().mode(0o700).create(dir) {
                // Checked again: whatever is there now is what the caller will use.
                Ok(()) => continue,
                Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e).with_context(|| format!("cannot create {}", dir.display())),
            },
            Err(e) => return Err(e).with_context(|| format!("cannot reach {}", dir.display())),
        }
    }
    anyhow::bail!("{} keeps changing while it is made", dir.display())
}

/// Reads a JSON file; `None` when it does not exist. A file that does not parse is an error that
/// names it: it is never silently replaced.
pub(crate) fn read_json<T: DeserializeOwned>(path: &Path) -> Result<Option<T>> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .with_context(|| format!("{} is corrupt", path.display()))
        .or_exit(Exit::Unavailable)
}

/// jackin's file encoding: two-space pretty JSON, UTF-8, no trailing newline.
pub(crate) fn to_jackin_json<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    Ok(serde_json::to_vec_pretty(value)?)
}

pub(crate) fn write_json_atomic<T: Serialize>(path: &Path, value: &T) -> Result<()> {
    write_atomic(path, &to_jackin_json(value)?)
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Temp file `<name>.tmp.<pid>.<n>` beside the target (created exclusively, mode 0600), fsync,
/// rename over the target, fsync the directory: readers see the old file or the new one.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let dir = dir_of(path);
    let file_name =
        path.file_name().with_context(|| format!("{} names no file", path.display()))?.to_string_lossy().into_owned();
    // Bounded: a name taken is a temp file a killed writer of this pid left behind, and a
    // thousand of them in a row is no home jackin made.
    let mut created = None;
    for _ in 0..1000 {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let candidate = dir.join(temp_name(&file_name, std::process::id(), n));
        match OpenOptions::new().write(true).create_new(true).mode(0o600).open(&candidate) {
            Ok(file) => {
                created = Some((candidate, file));
                break;
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).with_context(|| format!("cannot create {}", candidate.display())),
        }
    }
    let Some((temp_path, mut temp)) = created else {
        anyhow::bail!("cannot write {}: every temp name beside it is taken", path.display())
    };
    let result = (|| -> Result<()> {
        temp.write_all(bytes)?;
        temp.sync_all()?;
        fs::rename(&temp_path, path)?;
        File::open(dir)?.sync_all()?;
        Ok(())
    })();
    if result.is_err() {
        let _ = fs::remove_file(&temp_path);
    }
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// The directory a file is written in: its parent, `.` for a bare name (a temp file goes beside
/// its target, so that the rename over it stays on one filesystem).
fn dir_of(path: &Path) -> &Path {
    path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// The temp file of an atomic write of `file` by process `pid` (its `n`th): `<file>.tmp.<pid>.<n>`
/// (state.md, "Writing files"). [`temp_writer`] is its parse.
pub(crate) fn temp_name(file: &str, pid: u32, n: u64) -> String {
    format!("{file}.tmp.{pid}.{n}")
}

/// The writer's pid when `file` is the name of an atomic write's temp file ([`temp_name`]).
pub(crate) fn temp_writer(file: &str) -> Option<u32> {
    let (rest, n) = file.rsplit_once('.')?;
    let (rest, pid) = rest.rsplit_once('.')?;
    let (target, tmp) = rest.rsplit_once('.')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if tmp != "tmp" || target.is_empty() || target.contains('/') || !digits(n) || !digits(pid) {
        return None;
    }
    pid.parse().ok()
}

/// Whether the writer of a temp file may still be at work: a process with this pid exists (a
/// signal 0 reaches it, or it is someone else's).
pub(crate) fn writer_alive(pid: u32) -> bool {
    let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) else { return false };
    // Signal 0 sends nothing; it only checks that the process exists.
    match rustix::process::test_kill_process(pid) {
        Ok(()) => true,
        Err(e) => e == rustix::io::Errno::PERM,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_parse_back_to_their_writer() {
        assert_eq!(temp_writer(&temp_name("instances.json", 4242, 0)), Some(4242));
        assert_eq!(temp_writer("instance.json.tmp.7.12"), Some(7));
        // Each but the first two breaks one rule only: the word `tmp`, a target, no `/`, a
        // counter of digits, a pid of digits (`+5` would parse).
        for not_temp in [
            "instances.json.lock",
            "x.tmp.1.2.3",
            "x.tpm.1.2",
            ".tmp.1.2",
            "a/b.tmp.1.2",
            "x.tmp.1.a",
            "x.tmp.1.",
            "x.tmp.+5.2",
            "x.tmp..2",
            "x.tmp.a.2",
        ] {
            assert_eq!(temp_writer(not_temp), None, "{not_temp}");
        }
    }

    #[test]
    fn a_writer_is_alive_while_its_process_exists() {
        assert!(writer_alive(std::process::id()));
        let mut ended = std::process::Command::new("true").spawn().unwrap();
        let pid = ended.id();
        ended.wait().unwrap();
        assert!(!writer_alive(pid), "a process that ended is no writer");
        assert!(!writer_alive(0));
        assert!(!writer_alive(u32::MAX), "not a pid");
    }

    #[test]
    fn an_atomic_write_steps_past_stale_temp_files_and_fails_where_it_cannot_create_one() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("x.json");
        // Temp files a killed writer of this pid left at the next counter values.
        let next = TEMP_COUNTER.load(Ordering::Relaxed);
        for n in next..next + 64 {
            fs::write(dir.path().join(temp_name("x.json", std::process::id(), n)), "stale").unwrap();
        }
        write_atomic(&target, b"new").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        let err = write_atomic(&dir.path().join("missing").join("x.json"), b"new").unwrap_err();
        assert!(format!("{err:#}").contains("cannot create"), "{err:#}");
    }

    #[test]
    fn a_temp_file_goes_beside_its_target() {
        assert_eq!(dir_of(Path::new("/home/x/data/instances.json")), Path::new("/home/x/data"));
        assert_eq!(dir_of(Path::new("instances.json")), Path::new("."));
        assert_eq!(dir_of(Path::new("/")), Path::new("."));
    }

    #[test]
    fn a_private_dir_that_cannot_be_reached_or_made_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = ensure_private_dir(&dir.path().join("missing").join("dir")).unwrap_err();
        assert!(err.to_string().contains("cannot create"), "{err:#}");
        fs::write(dir.path().join("file"), "").unwrap();
        let err = ensure_private_dir(&dir.path().join("file").join("dir")).unwrap_err();
        assert!(err.to_string().contains("cannot reach"), "below a file: {err:#}");
    }

    /// Two tools starting at once (a hook's pipeline and cron's reconcile) both make the home's
    /// directories: the one whose `mkdir` loses the race finds the other's directory and goes on.
    #[test]
    fn a_private_dir_made_by_another_process_at_the_same_moment_is_used() {
        let root = tempfile::tempdir().unwrap();
        for round in 0..50 {
            let dir = root.path().join(round.to_string());
            for made in super::super::at_once(4, || ensure_private_dir(&dir)) {
                made.unwrap_or_else(|e| panic!("round {round}: {e:#}"));
            }
        }
    }

    #[test]
    fn a_json_file_that_cannot_be_read_is_an_error_not_none() {
        let dir = tempfile::tempdir().unwrap();
        assert!(read_json::<serde_json::Value>(&dir.path().join("missing.json")).unwrap().is_none());
        let err = read_json::<serde_json::Value>(dir.path()).unwrap_err();
        assert!(format!("{err:#}").contains("cannot read"), "a directory: {err:#}");
        fs::write(dir.path().join("x.json"), "{").unwrap();
        let err = read_json::<serde_json::Value>(&dir.path().join("x.json")).unwrap_err();
        assert_eq!(Exit::of(&err), Exit::Unavailable, "{err:#}");
    }
}
