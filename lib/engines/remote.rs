//! Another host's tools, run over the system's `ssh` (as `docker -H ssh://` reaches an engine):
//! the same tool with the same arguments, its JSON Lines read back. ssh hands the remote side one
//! command line for its shell, so every argument is quoted here; the arguments are the
//! operator's own (never a name read from a session), and nothing runs through a local shell.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

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
}

/// A word for the remote shell: single-quoted, a `'` inside closed, escaped and reopened.
pub(crate) fn shell_word(word: &str) -> String {
    format!("'{}'", word.replace('\'', r"'\''"))
}

/// Runs `program args…` on `destination` (anything `ssh` takes: `host`, `user@host`,
/// `ssh://user@host:port`), with no terminal and no password prompt, for at most `timeout`.
/// `stdin` is handed to the remote tool when given (acting on that host), else it reads nothing.
pub(crate) fn run(destination: &str, program: &str, args: &[String], timeout: Duration, stdin: bool) -> RemoteRun {
    let command = std::iter::once(program.to_owned()).chain(args.iter().map(|a| shell_word(a))).collect::<Vec<_>>();
    let connect = timeout.as_secs().clamp(1, 30).to_string();
    let mut ssh = Command::new("ssh");
    ssh.args(["-o", "BatchMode=yes", "-o", &format!("ConnectTimeout={connect}"), "-T", "--", destination])
        .arg(command.join(" "))
        .stdin(if stdin { Stdio::inherit() } else { Stdio::null() })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = match ssh.spawn() {
        Ok(child) => child,
        Err(e) => return RemoteRun::Unreachable(format!("cannot run ssh: {e}")),
    };
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let reading = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = out.read_to_end(&mut bytes);
        bytes
    });
    let erring = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = err.read_to_end(&mut bytes);
        bytes
    });
    let status = crate::base::child::wait_at_most(&mut child, timeout, crate::base::child::Kill::Child);
    let stdout = reading.join().unwrap_or_default();
    let stderr = String::from_utf8_lossy(&erring.join().unwrap_or_default()).trim().to_owned();
    let Some(status) = status else { return RemoteRun::TimedOut(timeout) };
    let last_words = stderr.lines().last().unwrap_or("no reason given").to_owned();
    match status.code() {
        Some(255) => RemoteRun::Unreachable(last_words),
        Some(127) => RemoteRun::NoTools(format!("no {program} on that host's PATH ({last_words})")),
        Some(exit) => RemoteRun::Ran {
            lines: String::from_utf8_lossy(&stdout).lines().map(str::to_owned).collect(),
            exit,
            stderr,
        },
        None => RemoteRun::Unreachable(format!("ssh was killed by a signal ({last_words})")),
    }
}

#[cfg(test)]
mod tests {
    use super::shell_word;

    #[test]
    fn a_word_survives_the_remote_shell_whatever_it_holds() {
        for word in ["plain", "with space", "it's", "$(rm -rf ~)", "`x`", "a\"b", "'", "", "semi;colon"] {
            let out =
                std::process::Command::new("sh").arg("-c").arg(format!("printf %s {}", shell_word(word))).output();
            assert_eq!(String::from_utf8(out.unwrap().stdout).unwrap(), word);
        }
    }
}
