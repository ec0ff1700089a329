//! The exit dialog, on the controlling terminal (`/dev/tty`), never stdin: stdin is the record
//! pipe. Plain numbered text, which every terminal can show. Screen 1 shows the unfinished work
//! and waits for the operator to acknowledge it; screen 2 asks what to do. Ctrl-C, or the
//! terminal going away, changes nothing.

use std::fs::{File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Result;

use crate::base::exit::Exit;
use crate::protocol::assessment::Assessment;
use crate::protocol::records::Outcome;

/// The controlling terminal, opened for the dialog.
pub struct Tty {
    file: File,
}

impl Tty {
    /// `None` when the process has no controlling terminal (a cron job, a CI run, a pipe from
    /// a daemon): the caller falls back to `--answer`, the exit-action file, or keep.
    pub fn open() -> Option<Tty> {
        OpenOptions::new().read(true).write(true).open("/dev/tty").ok().map(|file| Tty { file })
    }

    fn say(&mut self, text: &str) -> Result<()> {
        self.file.write_all(text.as_bytes())?;
        self.file.flush()?;
        Ok(())
    }

    /// One line typed by the operator, without its newline. Ctrl-C (SIGINT) and end of input
    /// are "interrupted": the caller changes nothing.
    fn line(&mut self) -> Result<String> {
        let mut line = Vec::new();
        let mut buf = [0u8; 256];
        loop {
            if INTERRUPTED.load(Ordering::SeqCst) {
                return Err(interrupted());
            }
            match self.file.read(&mut buf) {
                Ok(0) => return Err(interrupted()),
                Ok(n) => {
                    line.extend_from_slice(&buf[..n]);
                    if let Some(end) = line.iter().position(|&b| b == b'\n' || b == b'\r') {
                        line.truncate(end);
                        return Ok(String::from_utf8_lossy(&line).trim().to_owned());
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

fn interrupted() -> anyhow::Error {
    Exit::Interrupted.err("interrupted: nothing was changed")
}

static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// While the dialog runs: SIGINT interrupts the read instead of killing the process (so the run
/// ends with 130 and nothing written), and the terminal reads whole lines with echo, whatever
/// mode the agent's program left it in. Both are restored on drop.
struct DialogMode {
    fd: libc::c_int,
    old_action: libc::sigaction,
    old_termios: Option<libc::termios>,
}

impl DialogMode {
    fn enter(tty: &Tty) -> DialogMode {
        let fd = tty.file.as_raw_fd();
        // SAFETY: plain libc calls on a valid descriptor and zero-initialised C structs; the
        // handler only stores to an atomic, which is async-signal-safe.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_sigint as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = 0; // no SA_RESTART: the blocked read returns EINTR
            libc::sigemptyset(&mut action.sa_mask);
            let mut old_action: libc::sigaction = std::mem::zeroed();
            libc::sigaction(libc::SIGINT, &action, &mut old_action);
            let mut termios: libc::termios = std::mem::zeroed();
            let old_termios = (libc::tcgetattr(fd, &mut termios) == 0).then_some(termios);
            if let Some(mut mode) = old_termios {
                mode.c_lflag |= libc::ICANON | libc::ISIG | libc::ECHO;
                mode.c_iflag |= libc::ICRNL;
                libc::tcsetattr(fd, libc::TCSANOW, &mode);
            }
            // Keys typed at the agent before it exited must not answer a question not yet shown.
            libc::tcflush(fd, libc::TCIFLUSH);
            DialogMode { fd, old_action, old_termios }
        }
    }
}

impl Drop for DialogMode {
    fn drop(&mut self) {
        // SAFETY: restores what `enter` saved, on the same descriptor.
        unsafe {
            if let Some(termios) = &self.old_termios {
                libc::tcsetattr(self.fd, libc::TCSANOW, termios);
            }
            libc::sigaction(libc::SIGINT, &self.old_action, std::ptr::null_mut());
        }
    }
}

/// Shows the unfinished work, waits for the acknowledgement, then asks. `clean_allowed` is false
/// when the work cannot be read and `--discard-unfinished` was not given. `with_diffs`
/// re-assesses the session with each changed file's diff.
pub fn ask(
    tty: &mut Tty,
    assessment: &Assessment,
    clean_allowed: bool,
    with_diffs: &dyn Fn() -> Result<Assessment>,
) -> Result<Outcome> {
    let _mode = DialogMode::enter(tty);
    let name = &assessment.identity.container_base;
    tty.say(&format!("\r\n{name} has unfinished work:\r\n{}\r\n\r\n", crlf(&work_lines(assessment))))?;
    tty.say("Press Enter once you have read this (Ctrl-C changes nothing): ")?;
    while !tty.line()?.is_empty() {
        tty.say("Read the list above, then press Enter (Ctrl-C changes nothing): ")?;
    }
    loop {
        let clean = if clean_allowed {
            "Exit and clean up: the unfinished work is saved to a quarantine, then deleted"
        } else {
            "Exit and clean up: unavailable, the work cannot be verified (--discard-unfinished allows it)"
        };
        tty.say(&format!(
            "\r\nWhat now for {name}?\r\n  1) Return to agent (default)\r\n  2) Exit and keep: resume it later with jackin-restore\r\n  3) {clean}\r\n  d) View the full diffs\r\nChoose [1]: "
        ))?;
        match tty.line()?.to_ascii_lowercase().as_str() {
            "" | "1" => return Ok(Outcome::Return),
            "2" => return Ok(Outcome::Keep),
            "3" if clean_allowed => return Ok(Outcome::Clean),
            "3" => tty.say("Clean-up is not possible for work that cannot be verified.\r\n")?,
            "d" => match with_diffs() {
                Ok(full) => tty.say(&format!("\r\n{}\r\n", crlf(&work_lines(&full))))?,
                Err(e) => tty.say(&format!("The diffs cannot be shown: {e:#}\r\n"))?,
            },
            other => tty.say(&format!("{other:?} is not a choice: type 1, 2, 3 or d.\r\n"))?,
        }
    }
}

/// Per mount: the changed files with their status letters, each unpushed ref with "N commits
/// ahead of <upstream>" or "no upstream", stashes, and why a mount cannot be verified.
fn work_lines(assessment: &Assessment) -> String {
    let text = crate::protocol::envelope::Record::text(assessment);
    // The first line repeats the name; the summary is worth keeping.
    match text.split_once('\n') {
        Some((_, rest)) => format!("  {}\n{rest}", assessment.summary),
        None => format!("  {}", assessment.summary),
    }
}

/// A terminal in a mode the agent left behind may not turn `\n` into a new line.
fn crlf(text: &str) -> String {
    text.replace('\n', "\r\n")
}
