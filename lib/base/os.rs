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
