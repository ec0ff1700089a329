//! Linux's own calls and files: one `syncfs`, `/proc/stat`, `/proc/locks`, `/proc/<pid>/comm`.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

pub(super) const NAMES_LOCK_HOLDERS: bool = true;
pub(super) const KNOWS_BOOT_TIME: bool = true;

/// One sync of the filesystem rather than one per file (ten thousand fsyncs take seconds).
pub(super) fn sync_written(dir: &Path) -> std::io::Result<()> {
    let dir = fs::File::open(dir)?;
    rustix::fs::syncfs(&dir).map_err(Into::into)
}

pub(super) fn host_boot_time() -> Option<SystemTime> {
    let stat = fs::read_to_string(super::LINUX_BOOT_RECORD).ok()?;
    let secs: u64 = stat.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()?;
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

pub(super) fn flock_holder(dev: u64, ino: u64) -> Option<(u32, Option<String>)> {
    let locks = fs::read_to_string(super::LINUX_LOCK_TABLE).ok()?;
    let pid = holder_in(&locks, dev, ino)?;
    Some((pid, program_of(pid)))
}

/// The pid of the process whose exclusive `flock(2)` is on the inode `ino` of the device `dev`,
/// from the text of `/proc/locks` (`1: FLOCK  ADVISORY  WRITE 4242 fe:00:770592 0 EOF`; a
/// waiter's line has `->` after the number and is not a holder, and a `READ` line is a look).
fn holder_in(locks: &str, dev: u64, ino: u64) -> Option<u32> {
    let wanted = format!("{:02x}:{:02x}:{ino}", rustix::fs::major(dev), rustix::fs::minor(dev));
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, "WRITE", pid, id, ..] if *id == wanted => pid.parse().ok().filter(|&pid: &u32| pid > 0),
            _ => None,
        }
    })
}

/// The program a process runs, by the name it was started as: argv[0]'s file name when the
/// kernel's `comm` (at most 15 bytes) is the start of it, else `comm` (a script started through
/// its `#!` line has the interpreter as argv[0] and the script's name as `comm`).
fn program_of(pid: u32) -> Option<String> {
    let comm = fs::read_to_string(format!("/proc/{pid}/comm")).ok()?.trim_end_matches('\n').to_owned();
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let argv0 = cmdline.split(|&b| b == 0).next().unwrap_or_default();
    let argv0 = String::from_utf8_lossy(argv0.rsplit(|&b| b == b'/').next().unwrap_or_default()).into_owned();
    let name = if !comm.is_empty() && argv0.starts_with(&comm) { argv0 } else { comm };
    (!name.is_empty()).then(|| name.chars().take(64).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_holder_of_a_flock_is_read_from_proc_locks() {
        let locks = "1: FLOCK  ADVISORY  WRITE 29086 fe:00:770592 0 EOF\n\
                     2: -> FLOCK  ADVISORY  WRITE 3000 fe:00:42 0 EOF\n\
                     3: OFDLCK ADVISORY  READ -1 00:06:3 0 EOF\n\
                     4: FLOCK  ADVISORY  READ 5000 fe:00:42 0 EOF\n\
                     5: FLOCK  ADVISORY  WRITE 4242 fe:00:42 0 EOF\n";
        let dev = rustix::fs::makedev(0xfe, 0);
        assert_eq!(holder_in(locks, dev, 42), Some(4242), "neither the waiter nor a look is the holder");
        assert_eq!(holder_in(locks, dev, 770592), Some(29086));
        assert_eq!(holder_in(locks, dev, 3), None);
        assert_eq!(holder_in(locks, rustix::fs::makedev(8, 1), 42), None, "another device");
    }

    #[test]
    fn a_holder_is_named_by_the_program_it_was_started_as() {
        let own = program_of(std::process::id()).unwrap();
        let exe = std::env::current_exe().unwrap();
        assert_eq!(own, exe.file_name().unwrap().to_str().unwrap(), "argv[0], longer than comm's 15 bytes");
        // Started under another name than its program's: comm names it.
        let mut renamed = std::process::Command::new("sleep");
        std::os::unix::process::CommandExt::arg0(&mut renamed, "fancy-name");
        let mut child = renamed.arg("5").spawn().unwrap();
        // Read once the child has run its program: before its exec, comm is still this thread's.
        let comm = format!("/proc/{}/comm", child.id());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while fs::read_to_string(&comm).unwrap_or_default().trim() != "sleep" && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let named = program_of(child.id());
        child.kill().unwrap();
        child.wait().unwrap();
        assert_eq!(named.as_deref(), Some("sleep"));
        let dev = rustix::fs::makedev(0xfe, 0);
        assert_eq!(holder_in("1: FLOCK  ADVISORY  WRITE 0 fe:00:43 0 EOF\n", dev, 43), None, "no pid 0");
    }
}
