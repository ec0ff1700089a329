//! Flags whose verb moved to an extra (`jackin-keep --export` is `jackin-move export` now): for one
//! release they stay, hidden, and run the extra's program in this process's place, after saying
//! where the verb went. So the five tools link none of the extra's code (no tar, no archive), and
//! a script written for the old flag keeps working until it is changed.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::base::exit::Exit;

/// A verb that moved: the old flag (which took one value), the extra's program and its verb.
#[derive(Debug, Clone, Copy)]
pub struct Moved {
    pub flag: &'static str,
    pub program: &'static str,
    pub verb: &'static str,
}

/// `jackin-keep --export FILE …`: `jackin-move export FILE …`.
pub const EXPORT: Moved = Moved { flag: "--export", program: "jackin-move", verb: "export" };
/// `jackin-restore --import FILE …`: `jackin-move import FILE …`.
pub const IMPORT: Moved = Moved { flag: "--import", program: "jackin-move", verb: "import" };

impl Moved {
    /// The extra's command line for this run's `argv` (without the program's name): the verb, the
    /// old flag's value, then every other argument as it was.
    pub fn argv(&self, argv: &[OsString]) -> Result<Vec<OsString>> {
        let mut rest = Vec::new();
        let mut value = None;
        let mut args = argv.iter();
        let joined = format!("{}=", self.flag);
        while let Some(arg) = args.next() {
            match arg.to_str() {
                Some(a) if a == self.flag => value = args.next().cloned(),
                Some(a) if a.starts_with(&joined) => value = Some(OsString::from(&a[joined.len()..])),
                _ => rest.push(arg.clone()),
            }
        }
        let value = value.ok_or_else(|| Exit::Usage.err(format!("{} needs a value", self.flag)))?;
        Ok([OsString::from(self.verb), value].into_iter().chain(rest).collect())
    }

    /// Says where the verb went, then becomes the extra's program with this run's arguments
    /// (decoded, as the driver parsed them). Returns only when that program cannot be run.
    pub fn run_instead(&self, tool: &str) -> Result<Exit> {
        let argv = this_runs_args()?;
        let args = self.argv(argv.get(1..).unwrap_or_default())?;
        eprintln!(
            "{tool}: note: {} moved to `{} {}`; running that (the old flag goes in a later release)",
            self.flag, self.program, self.verb
        );
        exec_instead(self.program, args)
    }
}

/// A tool's hidden `--host DEST`, `--all-hosts` and `--hosts-timeout DUR`: `jackin-hosts` with
/// those flags, then the tool and the rest of its arguments, runs in this process's place.
pub fn hosts_instead(tool: &str) -> Result<Exit> {
    let argv = this_runs_args()?;
    let (hosts, rest) = hosts_argv(argv.get(1..).unwrap_or_default());
    eprintln!(
        "{tool}: note: --host and --all-hosts moved to `jackin-hosts`: `jackin-hosts --host DEST {tool} ARGS`; running \
         that (the old flags go in a later release)"
    );
    let args = hosts.into_iter().chain([OsString::from(tool)]).chain(rest);
    exec_instead("jackin-hosts", args.collect())
}

/// This run's arguments as the driver parsed them (decoded, when they came encoded from another
/// host: base/argv.rs).
fn this_runs_args() -> Result<Vec<OsString>> {
    crate::base::argv::decoded_args(std::env::args_os().collect()).map_err(|why| Exit::Usage.err(why))
}

/// Becomes `program args…` (the one installed beside this tool); returns only when it cannot.
fn exec_instead(program: &str, args: Vec<OsString>) -> Result<Exit> {
    let program = installed_beside(program);
    let e = std::process::Command::new(&program).args(args).exec();
    Err(e).with_context(|| format!("cannot run {}", program.display())).map_err(|e| Exit::Unavailable.wrap(e))
}

/// The flags of `jackin-hosts` in a tool's arguments, apart from the rest, each in its order.
fn hosts_argv(argv: &[OsString]) -> (Vec<OsString>, Vec<OsString>) {
    const WITH_VALUE: [&str; 2] = ["--host", "--hosts-timeout"];
    let (mut hosts, mut rest) = (Vec::new(), Vec::new());
    let mut args = argv.iter();
    while let Some(arg) = args.next() {
        let text = arg.to_str().unwrap_or_default();
        if WITH_VALUE.contains(&text) {
            hosts.push(arg.clone());
            hosts.extend(args.next().cloned());
        } else if text == "--all-hosts" || WITH_VALUE.iter().any(|flag| text.starts_with(&format!("{flag}="))) {
            hosts.push(arg.clone());
        } else {
            rest.push(arg.clone());
        }
    }
    (hosts, rest)
}

/// `jackin-reconcile --on-event PROGRAM`, moved to `jackin-reconcile | jackin-notify PROGRAM`: the
/// run's records fed to a `jackin-notify` it starts, whose stdout is dropped (this run's stdout is
/// its records). Not for a dry run, which runs no program.
pub struct Feed {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
}

impl Feed {
    /// Says where the flag went and starts `jackin-notify PROGRAM --event-timeout TIMEOUT`.
    pub fn start(tool: &str, program: &std::path::Path, timeout: std::time::Duration) -> Result<Feed> {
        eprintln!(
            "{tool}: note: --on-event moved to `jackin-notify`: `{tool} | jackin-notify PROGRAM`; running that (the old \
             flag goes in a later release)"
        );
        let notify = installed_beside("jackin-notify");
        let mut child = std::process::Command::new(&notify)
            .arg(program)
            .arg("--event-timeout")
            .arg(humantime::format_duration(timeout).to_string())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .with_context(|| format!("cannot run {}", notify.display()))
            .map_err(|e| Exit::Unavailable.wrap(e))?;
        let stdin = child.stdin.take();
        Ok(Feed { child, stdin })
    }

    /// Hands one record on; a notifier that is gone costs its events, never the run.
    pub fn send<R: crate::protocol::envelope::Record>(&mut self, record: &R) {
        use std::io::Write;
        let (Some(stdin), Ok(line)) = (self.stdin.as_mut(), crate::protocol::envelope::to_line(record)) else { return };
        if writeln!(stdin, "{line}").is_err() {
            self.stdin = None;
        }
    }

    /// Ends its input and waits until every event has run.
    pub fn finish(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// A program of the tools installed beside this one (as `make install` and cargo put them), else
/// the one on PATH.
pub(crate) fn installed_beside(program: &str) -> PathBuf {
    std::env::current_exe()
        .ok()
        .map(|exe| exe.with_file_name(program))
        .filter(|path| path.is_file())
        .unwrap_or_else(|| PathBuf::from(program))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    #[test]
    fn the_old_flags_value_becomes_the_verbs_first_argument() {
        let to = |args: &[&str]| EXPORT.argv(&os(args)).unwrap();
        assert_eq!(
            to(&["--export", "a.tar.gz", "C", "--format", "json"]),
            os(&["export", "a.tar.gz", "C", "--format", "json"])
        );
        assert_eq!(to(&["C", "--export=a.tar.gz", "--dry-run"]), os(&["export", "a.tar.gz", "C", "--dry-run"]));
        assert!(IMPORT.argv(&os(&["--import"])).is_err());
    }

    #[test]
    fn the_hosts_flags_go_to_jackin_hosts_and_the_rest_to_the_tool() {
        let (hosts, rest) =
            hosts_argv(&os(&["--all", "--host", "a", "--host=b", "--all-hosts", "--hosts-timeout", "5s", "-v"]));
        assert_eq!(hosts, os(&["--host", "a", "--host=b", "--all-hosts", "--hosts-timeout", "5s"]));
        assert_eq!(rest, os(&["--all", "-v"]));
    }
}
