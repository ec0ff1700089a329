//! Another host's tools, run over the system's `ssh` (as `docker -H ssh://` reaches an engine):
//! the same tool with the same arguments, its JSON Lines read back.
//!
//! Two things come from elsewhere here and neither is trusted. The remote login shell parses the
//! command line ssh hands it, and it may be any shell (sh, bash, zsh, fish, csh): so the command
//! line is base/argv.rs's, which no shell misreads. And what the host prints
//! is read within bounds: a line longer than [`LINE_LIMIT`], or more than the run's
//! [`Budget`] over all hosts, ends that host's answer (ssh is killed) instead of growing memory.

use std::io::{BufRead, BufReader, Read};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The longest line a view takes from another host (an assessment with `--diff` of a large file
/// is the longest a tool prints).
pub(crate) const LINE_LIMIT: usize = 4 << 20;
/// What one run takes from all other hosts together.
pub(crate) const RUN_LIMIT: usize = 24 << 20;
/// What holding one line costs beyond its bytes, counted against the budget.
const LINE_OVERHEAD: usize = 64;
/// What is kept of a host's stderr (its last words are the end of it).
const STDERR_LIMIT: usize = 64 << 10;

/// How a run on another host ended.
#[derive(Debug)]
pub(crate) enum RemoteRun {
    /// The tool ran: its stdout, line by line, and its exit code.
    Ran { lines: Vec<String>, exit: i32, stderr: String },
    /// ssh could not reach or log in to the host (its exit 255): its last words.
    Unreachable(String),
    /// The host's shell found no such program (exit 127).
    NoTools(String),
    /// No answer within the timeout; ssh was killed.
    TimedOut(Duration),
    /// It printed more than a view takes (a line or the run's budget); ssh was killed.
    TooMuch(String),
}

/// The bytes a run may still take from other hosts, shared by all of them.
#[derive(Debug, Clone)]
pub(crate) struct Budget(Arc<AtomicUsize>);

impl Budget {
    pub(crate) fn new(bytes: usize) -> Budget {
        Budget(Arc::new(AtomicUsize::new(bytes)))
    }

    /// Takes `bytes` from the budget; `false` (nothing taken) when that is more than is left.
    fn take(&self, bytes: usize) -> bool {
        self.0.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| left.checked_sub(bytes)).is_ok()
    }
}

/// Runs `program args…` on `destination` (anything `ssh` takes: `host`, `user@host`,
/// `ssh://user@host:port`), with no terminal and no password prompt, for at most `timeout`.
/// `stdin` is handed to the remote tool when given (acting on that host), else it reads nothing.
pub(crate) fn run(
    destination: &str,
    program: &str,
    args: &[String],
    timeout: Duration,
    stdin: bool,
    budget: &Budget,
) -> RemoteRun {
    let mut ssh = crate::engines::ssh::command(timeout, None, None, destination);
    ssh.arg(crate::base::argv::command_line(program, args))
        .stdin(if stdin { Stdio::inherit() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match ssh.spawn() {
        Ok(child) => child,
        Err(e) => return RemoteRun::Unreachable(format!("cannot run ssh: {e}")),
    };
    let (out, mut err) = (child.stdout.take().expect("piped"), child.stderr.take().expect("piped"));
    let (pid, budget) = (child.id(), budget.clone());
    let reading = std::thread::spawn(move || {
        let read = read_lines(out, &budget);
        if read.is_err() {
            // The ssh this run started and has not reaped (the wait below reaps it only once it
            // ended, and it cannot end while its output is unread): its pid is still its own.
            if let Some(pid) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
            }
        }
        read
    });
    let erring = std::thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut err).take(STDERR_LIMIT as u64).read_to_end(&mut kept);
        let _ = std::io::copy(&mut err, &mut std::io::sink());
        kept
    });
    let status = crate::base::child::wait_at_most(&mut child, timeout, crate::base::child::Kill::Child);
    let stdout = reading.join().unwrap_or_else(|_| Err("the reader panicked".into()));
    let stderr = String::from_utf8_lossy(&erring.join().unwrap_or_default()).trim().to_owned();
    let lines = match stdout {
        Ok(lines) => lines,
        Err(too_much) => return RemoteRun::TooMuch(too_much),
    };
    let Some(status) = status else { return RemoteRun::TimedOut(timeout) };
    let last_words = stderr.lines().last().unwrap_or("no reason given").to_owned();
    match status.code() {
        Some(255) => RemoteRun::Unreachable(last_words),
        Some(127) => RemoteRun::NoTools(format!("no {program} on that host's PATH ({last_words})")),
        Some(exit) => RemoteRun::Ran { lines, exit, stderr },
        None => RemoteRun::Unreachable(format!("ssh was killed by a signal ({last_words})")),
    }
}

/// The lines of `out`, each at most [`LINE_LIMIT`] and all within `budget`; else why not.
fn read_lines(out: impl Read, budget: &Budget) -> Result<Vec<String>, String> {
    let mut reader = BufReader::new(out);
    let mut lines = Vec::new();
    loop {
        let mut line = Vec::new();
        let read = (&mut reader).take(LINE_LIMIT as u64 + 1).read_until(b'\n', &mut line);
        match read {
            Ok(0) | Err(_) => return Ok(lines),
            Ok(_) if line.len() > LINE_LIMIT => {
                return Err(format!("it printed a line longer than {} MiB", LINE_LIMIT >> 20));
            }
            // A line held costs its bytes and its `String` (its header and the allocator's
            // rounding): a host printing short lines fills memory with those as much as with bytes.
            Ok(n) if !budget.take(n + LINE_OVERHEAD) => {
                return Err(format!("it printed more than this view takes from other hosts ({} MiB)", RUN_LIMIT >> 20));
            }
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                lines.push(String::from_utf8_lossy(&line).into_owned());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_or_a_run_past_its_bound_ends_the_answer() {
        let budget = Budget::new(200);
        assert_eq!(read_lines(&b"a\nb\n"[..], &budget).unwrap(), ["a", "b"]);
        assert!(read_lines(&[b'x'; 200][..], &Budget::new(10_000)).is_ok(), "a long line within bounds");
        let long = vec![b'x'; LINE_LIMIT + 1];
        assert!(read_lines(&long[..], &Budget::new(RUN_LIMIT)).unwrap_err().contains("longer than"));
        let many = b"0123456789\n".repeat(3);
        assert!(read_lines(&many[..], &budget).unwrap_err().contains("more than this view takes"));
    }
}
