//! A program the tools start and will not wait on for ever: its exit, or nothing once it was
//! killed at the deadline. The wait is wait-timeout's (woken by the child's exit, not polled).

use std::process::{Child, ExitStatus};
use std::time::Duration;

use wait_timeout::ChildExt;

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
    if let Ok(Some(status)) = child.wait_timeout(timeout) {
        return Some(status);
    }
    match kill {
        Kill::Child => drop(child.kill()),
        // The process group the child leads, not yet reaped: its id is still its own.
        Kill::Group => {
            if let Some(pid) = i32::try_from(child.id()).ok().and_then(rustix::process::Pid::from_raw) {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
        }
    }
    let _ = child.wait();
    None
}
