//! A program the tools start and will not wait on for ever: its exit, or nothing once it was
//! killed at the deadline.

use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

/// What is killed at the deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kill {
    /// The child alone (one that shares the terminal's process group: ssh reading the
    /// operator's stdin).
    Child,
    /// The process group the child leads (started with `process_group(0)`): what it started
    /// goes with it.
    Group,
}

/// Waits for `child` at most `timeout`; `None` when it was killed then.
pub(crate) fn wait_at_most(child: &mut Child, timeout: Duration, kill: Kill) -> Option<ExitStatus> {
    let deadline = Instant::now() + timeout;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return Some(status),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                match kill {
                    Kill::Child => drop(child.kill()),
                    // SAFETY: kill(2) on the process group the child leads; no memory is involved.
                    Kill::Group => drop(unsafe { libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL) }),
                }
                let _ = child.wait();
                return None;
            }
        }
    }
}
