//! `--host DEST`: the same tool run on other hosts over ssh (engines/remote.rs), for one view of
//! several machines. A read-only view runs here and on every host at once; this host's rows come
//! first, then each host's in the order of their names, each with a `host` field (in text, after
//! the host's name). Each host ends with one `host` record: how many rows it gave, or why it gave
//! none (unreachable, no tools there, another protocol, no answer in time). A host that fails is
//! that row, never a failure of the view. A run that acts (keep, purge, restore without
//! `--list`/`--plan`/`--dry-run`) runs on the one host named, nowhere else: nothing crosses
//! homes.

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Result;
use serde_json::Value;

use crate::base::exit::Exit;
use crate::engines::remote::{self, RemoteRun};
use crate::protocol::envelope::InputRecord;
use crate::protocol::records::HostRow;

/// Flags that belong to this host's run and are not handed on: where the hosts are, and this
/// host's own home and config (the other host uses its own).
const LOCAL_FLAGS: [&str; 6] = ["--host", "--all-hosts", "--hosts-timeout", "--home", "--config-dir", "--format"];

/// The arguments handed to the other hosts: this run's, less [`LOCAL_FLAGS`], with
/// `--format json` (the rows are read back as records).
pub(crate) fn forwarded_args(args: impl Iterator<Item = OsString>) -> Result<Vec<String>> {
    let mut forwarded = Vec::new();
    let mut skip_value = false;
    for arg in args {
        let arg = arg
            .into_string()
            .map_err(|a| Exit::Usage.err(format_args!("{a:?} is not UTF-8: not handed to another host")))?;
        if std::mem::take(&mut skip_value) {
            continue;
        }
        if let Some(flag) = LOCAL_FLAGS.iter().find(|f| arg == **f || arg.starts_with(&format!("{f}="))) {
            skip_value = arg == *flag && *flag != "--all-hosts";
            continue;
        }
        forwarded.push(arg);
    }
    forwarded.extend(["--format".to_owned(), "json".to_owned()]);
    Ok(forwarded)
}

/// The hosts a run names: its `--host`s, and with `--all-hosts` those of
/// `<config-dir>/jackin-tools-hosts` (one destination a line; blank lines and `#` comments
/// skipped). Empty: this host alone.
pub fn destinations(common: &crate::face::cli::CommonArgs, config_dir: &std::path::Path) -> Result<Vec<String>> {
    let mut hosts = common.host.clone();
    if common.all_hosts {
        let file = config_dir.join("jackin-tools-hosts");
        let text = std::fs::read_to_string(&file)
            .map_err(|e| Exit::Usage.err(format_args!("--all-hosts: cannot read {}: {e}", file.display())))?;
        hosts.extend(text.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned));
    }
    if let Some(bad) = hosts.iter().find(|h| h.starts_with('-') || h.trim().is_empty()) {
        return Err(Exit::Usage.err(format_args!("{bad:?} is not an ssh destination")));
    }
    Ok(hosts)
}

/// The runs under way on the other hosts, each host once, in the order of their names.
pub struct Remotes {
    runs: Vec<(String, JoinHandle<RemoteRun>)>,
}

/// Starts `tool` on every host of `hosts` at once, with this run's arguments.
pub fn start(tool: &'static str, hosts: &[String], timeout: Duration) -> Result<Remotes> {
    let args = forwarded_args(std::env::args_os().skip(1))?;
    let unique: BTreeSet<&String> = hosts.iter().collect();
    let runs = unique
        .into_iter()
        .map(|host| {
            let (host, args) = (host.clone(), args.clone());
            let name = host.clone();
            (name, std::thread::spawn(move || remote::run(&host, tool, &args, timeout, false)))
        })
        .collect();
    Ok(Remotes { runs })
}

/// Acting on another host: the tool runs there alone, stdin handed on. Its exit code (4 when it
/// could not be reached), and what it gave.
pub fn act(tool: &'static str, hosts: &[String], timeout: Duration) -> Result<(Exit, Answer)> {
    let [host] = hosts else {
        return Err(Exit::Usage.err(format_args!(
            "{tool} acts here on sessions of one host: name one --host for it (a view such as --dry-run takes several)"
        )));
    };
    let args = forwarded_args(std::env::args_os().skip(1))?;
    let run = remote::run(host, tool, &args, timeout, true);
    let exit = match &run {
        RemoteRun::Ran { exit, .. } => Exit::from_code(*exit),
        _ => Exit::Unavailable,
    };
    Ok((exit, answer(host, run)))
}

/// What one host gave: its rows, then the `host` record that closes them.
pub struct Answer {
    pub host: String,
    pub rows: Vec<InputRecord>,
    pub closing: HostRow,
}

impl Remotes {
    /// Waits for every host: what each gave, in the order of their names.
    pub fn answers(self) -> Vec<Answer> {
        self.runs
            .into_iter()
            .map(|(host, run)| {
                let run = run.join().unwrap_or_else(|_| RemoteRun::Unreachable("the ssh reader panicked".into()));
                answer(&host, run)
            })
            .collect()
    }
}

fn answer(host: &str, run: RemoteRun) -> Answer {
    let row = |status: &str, reason: Option<String>, rows: usize, exit: Option<i32>| HostRow {
        host: host.to_owned(),
        status: status.to_owned(),
        reason,
        rows,
        exit,
    };
    let mut records = Vec::new();
    let closing = match run {
        RemoteRun::Unreachable(why) => row("unreachable", Some(why), 0, None),
        RemoteRun::NoTools(why) => row("no_tools", Some(why), 0, None),
        RemoteRun::TimedOut(after) => {
            row("timed_out", Some(format!("no answer within {}", humantime::format_duration(after))), 0, None)
        }
        RemoteRun::Ran { lines, exit, stderr } => {
            let checked: Result<Vec<InputRecord>> = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(n, line)| crate::protocol::envelope::check_line(line.clone(), n + 1))
                .collect();
            match checked {
                Err(why) => row("protocol", Some(format!("its tools speak another protocol: {why:#}")), 0, Some(exit)),
                Ok(checked) => {
                    records = checked;
                    let said = (exit != 0).then(|| stderr.lines().last().unwrap_or_default().to_owned());
                    row("ok", said.filter(|s| !s.is_empty()), records.len(), Some(exit))
                }
            }
        }
    };
    Answer { host: host.to_owned(), rows: records, closing }
}

/// One row of another host as a line: in JSON its record with `host` added to `data`; in text
/// its text after the host's name.
pub fn row_line(host: &str, record: &InputRecord, json: bool) -> String {
    if json {
        let mut data = record.data.clone();
        if let Value::Object(fields) = &mut data {
            fields.insert("host".into(), Value::String(host.to_owned()));
        }
        serde_json::json!({"schema_version": 1, "type": record.kind, "data": data}).to_string()
    } else {
        let text = crate::protocol::text_of(record).unwrap_or_else(|| record.line.clone());
        format!("[{host}] {}", text.replace('\n', "\n  "))
    }
}

#[cfg(test)]
mod tests {
    use super::forwarded_args;

    #[test]
    fn this_hosts_flags_stay_here_and_the_rows_come_back_as_json() {
        let args = ["--all", "--host", "a", "--home=/h", "--format", "text", "--host=b", "--config-dir", "/c", "-v"];
        let forwarded = forwarded_args(args.iter().map(Into::into)).unwrap();
        assert_eq!(forwarded, ["--all", "-v", "--format", "json"]);
    }
}
