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
use crate::face::driver::{Ctx, OutputFormat};
use crate::protocol::records::HostRow;

/// What a run with `--host` does, as the tool's flags say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Changes nothing: runs here and on every host, merged.
    View,
    /// Changes something: runs on the one host named, not here.
    Act,
}

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
pub fn destinations(common: &crate::face::cli::CommonArgs, ctx: &Ctx) -> Result<Vec<String>> {
    let mut hosts = common.host.clone();
    if common.all_hosts {
        let file = ctx.roots()?.config_dir.join("jackin-tools-hosts");
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

/// Acting on another host: the tool runs there alone, stdin handed on, its rows relayed.
pub fn act(tool: &'static str, hosts: &[String], timeout: Duration, ctx: &mut Ctx) -> Result<Exit> {
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
    relay_one(ctx, host, run)?;
    Ok(exit)
}

impl Remotes {
    /// Waits for every host and writes its rows, then its `host` record.
    pub fn relay(self, ctx: &mut Ctx) -> Result<()> {
        for (host, run) in self.runs {
            let run = run.join().unwrap_or_else(|_| RemoteRun::Unreachable("the ssh reader panicked".into()));
            relay_one(ctx, &host, run)?;
        }
        Ok(())
    }
}

fn relay_one(ctx: &mut Ctx, host: &str, run: RemoteRun) -> Result<()> {
    let row = |status: &str, reason: Option<String>, rows: usize, exit: Option<i32>| HostRow {
        host: host.to_owned(),
        status: status.to_owned(),
        reason,
        rows,
        exit,
    };
    let closing = match run {
        RemoteRun::Unreachable(why) => row("unreachable", Some(why), 0, None),
        RemoteRun::NoTools(why) => row("no_tools", Some(why), 0, None),
        RemoteRun::TimedOut(after) => {
            row("timed_out", Some(format!("no answer within {}", humantime::format_duration(after))), 0, None)
        }
        RemoteRun::Ran { lines, exit, stderr } => {
            let mut records = Vec::new();
            let mut refused = None;
            for (n, line) in lines.iter().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                match crate::protocol::envelope::check_line(line.clone(), n + 1) {
                    Ok(record) => records.push(record),
                    Err(why) => {
                        refused = Some(format!("its tools speak another protocol: {why:#}"));
                        break;
                    }
                }
            }
            match refused {
                Some(why) => row("protocol", Some(why), 0, Some(exit)),
                None => {
                    for record in &records {
                        write_row(ctx, host, record)?;
                    }
                    let said = (exit != 0).then(|| stderr.lines().last().unwrap_or_default().to_owned());
                    row("ok", said.filter(|s| !s.is_empty()), records.len(), Some(exit))
                }
            }
        }
    };
    ctx.emit(&closing)
}

/// One row of another host: in JSON its record with `host` added to `data`; in text its text
/// after the host's name.
fn write_row(ctx: &mut Ctx, host: &str, record: &crate::protocol::envelope::InputRecord) -> Result<()> {
    match ctx.format {
        OutputFormat::Json => {
            let mut data = record.data.clone();
            if let Value::Object(fields) = &mut data {
                fields.insert("host".into(), Value::String(host.to_owned()));
            }
            let line = serde_json::json!({"schema_version": 1, "type": record.kind, "data": data});
            ctx.line(&line.to_string())
        }
        OutputFormat::Text => {
            let text = crate::protocol::text_of(record).unwrap_or_else(|| record.line.clone());
            let indented = text.replace('\n', "\n  ");
            ctx.line(&format!("[{host}] {indented}"))
        }
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
