//! What the operating system's calls take, by one name each, through rustix (the tools' one crate
//! of system calls; fs2 is flock's): the flags of an `open`, the error a link refused gives, and the
//! longest path. The room where what differs between systems is kept.

use rustix::fs::OFlags;

/// `O_NOFOLLOW`: a link at the end of the path is refused (`ELOOP`), never followed.
pub(crate) const NOFOLLOW: i32 = OFlags::NOFOLLOW.bits() as i32;
/// `O_NONBLOCK`: a FIFO opens at once instead of waiting for a writer.
pub(crate) const NONBLOCK: i32 = OFlags::NONBLOCK.bits() as i32;
/// `O_CLOEXEC`: no program the tools start inherits the descriptor.
pub(crate) const CLOEXEC: i32 = OFlags::CLOEXEC.bits() as i32;
/// What `open` with [`NOFOLLOW`] gives for a link.
pub(crate) const ELOOP: i32 = rustix::io::Errno::LOOP.raw_os_error();

/// The longest path the system's calls take, with its NUL (PATH_MAX; rustix leaves it to the
/// system, so it is written here, per system).
#[cfg(target_os = "linux")]
pub(crate) const PATH_MAX: usize = 4096;
#[cfg(not(target_os = "linux"))]
pub(crate) const PATH_MAX: usize = 1024;

// What differs between systems, behind one name each: Linux's own calls here, the portable ones
// every other system (macOS) takes in `portable.rs`. The cargo feature `portable` makes a Linux
// build take the portable ones, so that the tests run the code a Mac runs; no Linux-only call is
// made outside this room (tests/architecture.rs checks it).
#[cfg(all(target_os = "linux", not(feature = "portable")))]
mod linux;
#[cfg(all(target_os = "linux", not(feature = "portable")))]
use linux as system;
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
mod portable;
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
use portable as system;

/// Whether this build names who holds a lock (the pid and program of a `flock`); elsewhere a
/// holder is "another process".
pub const NAMES_LOCK_HOLDERS: bool = system::NAMES_LOCK_HOLDERS;

/// Whether this build knows when the host booted (one sign of a host-level kill).
pub const KNOWS_BOOT_TIME: bool = system::KNOWS_BOOT_TIME;

/// Where Linux says who holds a `flock` (the man pages name it, for Linux).
pub(crate) const LINUX_LOCK_TABLE: &str = "/proc/locks";
/// Where Linux says when it booted (`btime`).
pub(crate) const LINUX_BOOT_RECORD: &str = "/proc/stat";

/// Everything written under `dir` (files and directories, not following links) on the disk
/// before this returns: Linux syncs the filesystem `dir` is on once (one call, however many
/// files); elsewhere each file and directory is synced on its own (on macOS with `F_FULLFSYNC`,
/// as `fsync` there does not reach the disk's own cache).
pub(crate) fn sync_written(dir: &Path) -> std::io::Result<()> {
    system::sync_written(dir)
}

/// When this host booted, where the system says so (Linux: `btime` of `/proc/stat`). Elsewhere
/// `None`: on macOS the engine runs in a VM (OrbStack, Docker Desktop) whose restarts the Mac's
/// own boot time says nothing of; the engine's start time is the sign there.
pub fn host_boot_time() -> Option<std::time::SystemTime> {
    system::host_boot_time()
}

/// The pid of the process whose exclusive `flock` is on the inode `ino` of the device `dev`,
/// and its program name, where the system says (Linux: `/proc/locks`, `/proc/<pid>/comm`).
pub(crate) fn flock_holder(dev: u64, ino: u64) -> Option<(u32, Option<String>)> {
    system::flock_holder(dev, ino)
}

/// A device number as every system's `stat` gives it (`dev_t` is `u64` on Linux, `i32` on
/// macOS), as the one type the tools compare.
#[allow(clippy::unnecessary_cast)] // a cast on Linux, a conversion on macOS
pub(crate) fn device(dev: rustix::fs::Dev) -> u64 {
    dev as u64
}

use std::path::Path;
