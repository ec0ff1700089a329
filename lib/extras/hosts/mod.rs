//! `jackin-hosts`: a tool run on other hosts over ssh (ssh.rs), for one view of several machines:
//! `jackin-hosts --host DEST TOOL ARGS`. An extra of its own: the five tools never reach another
//! host, and a view's rows never reach a tool that acts but through the operator. A read-only view runs here and on every host at once; this host's rows come
//! first, then each host's in the order of their names, each with a `host` field (in text, after
//! the host's name). Each host ends with one `host` record: how many rows it gave, or why it gave
//! none (unreachable, no tools there, another protocol, no answer in time). A host that fails is
//! that row, never a failure of the view. A run that acts (keep, purge, restore without
//! `--list`/`--plan`/`--dry-run`) runs on the one host named, nowhere else: nothing crosses
//! homes. Here, the tool runs as its own program (beside this one), its output as it prints it.

pub mod cli;
pub mod manual;
mod named;
mod ssh;

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::io::Read;
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::base::exit::Exit;
use crate::face::cli::Reach;
use crate::face::driver::{Ctx, OutputFormat};
use crate::protocol::records::{HostRow, HostStatus};
use cli::HostsArgs;
use ssh::{Budget, RemoteRun};

/// Flags that belong to this host's run and are not handed on: this host's own home and config
/// (the other host uses its own), and the format (the rows are read back as JSON).
const LOCAL_FLAGS: [&str; 3] = ["--home", "--config-dir", "--format"];

/// `jackin-hosts [--host DEST]… [--all-hosts] TOOL ARGS`: a view here, then every host's rows and
/// its `host` record; a run that acts, on the one host named instead. Its exit code is the tool's
/// here (a view) or there (a run that acts; 4 when that host could not be reached).
pub fn run(args: &HostsArgs, ctx: &mut Ctx) -> Result<Exit> {
    let tool = args.tool();
    let hosts = destinations(&args.hosts, args.all_hosts, &ctx.roots()?.hosts_file())?;
    let forwarded = forwarded_args(args.tool_args().iter().cloned())?;
    let mut nowhere = Vec::new();
    let (exit, answers) = match args.reach() {
        Reach::Act => {
            let (exit, answer) = act(tool, &hosts, &forwarded, args.hosts_timeout)?;
            (exit, vec![answer])
        }
        Reach::View => {
            let remotes = start(tool, &hosts, &forwarded, args.hosts_timeout);
            // Named sessions: this host runs the ones it knows (named.rs).
            let names = named::session_names(tool, args.tool_args());
            let elsewhere = if names.is_empty() { Vec::new() } else { named::not_here(ctx, &names)? };
            let here = match names.len() > elsewhere.len() || names.is_empty() {
                true => run_here(tool, &named::without(args.tool_args(), &elsewhere))?,
                false => Exit::Ok,
            };
            let mut answers = remotes.answers();
            let exit = match names.is_empty() {
                true => here,
                false => named::settle(tool, &names, &elsewhere, here, &mut answers, &mut nowhere),
            };
            (exit, answers)
        }
    };
    for answer in answers {
        for row in &answer.rows {
            ctx.line(&row_line(&answer.host, row, ctx.format == OutputFormat::Json))?;
        }
        ctx.emit(&answer.closing)?;
    }
    // A name no host knows: as a tool says of a name that is no session's (exit 6).
    for name in &nowhere {
        let why = anyhow::anyhow!("{name:?} is no session of this host or of the hosts asked");
        ctx.fail(Some(name), crate::protocol::codes::ErrorCode::UnknownInstance, &why)?;
    }
    Ok(exit)
}

/// The tool here, as its own program installed beside this one: its output as it prints it.
fn run_here(tool: &str, args: &[OsString]) -> Result<Exit> {
    let program = crate::face::moved::installed_beside(tool);
    let status = std::process::Command::new(&program)
        .args(args)
        .status()
        .with_context(|| format!("cannot run {}", program.display()))
        .map_err(|e| Exit::Unavailable.wrap(e))?;
    // A tool killed by a signal: as a shell reports it, never a success.
    Ok(status.code().map_or(Exit::Internal, Exit::from_code))
}

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
/// skipped). Empty: this host alone. The file chooses where the operator's ssh identity is used,
/// so one that another user could have written is refused, as ssh refuses such a config.
fn destinations(named: &[String], all_hosts: bool, file: &std::path::Path) -> Result<Vec<String>> {
    let mut hosts = named.to_vec();
    if all_hosts {
        crate::base::perms::refuse_written_by_others(file, "--all-hosts: the hosts file")?;
        let mut text = String::new();
        std::fs::File::open(file)
            .and_then(|f| f.take(HOSTS_FILE_LIMIT + 1).read_to_string(&mut text))
            .map_err(|e| Exit::Usage.err(format_args!("--all-hosts: cannot read {}: {e}", file.display())))?;
        if text.len() as u64 > HOSTS_FILE_LIMIT {
            return Err(Exit::Usage.err(format_args!("--all-hosts: {} is larger than 1 MiB", file.display())));
        }
        let without_comments = text.lines().map(|l| l.split_once('#').map_or(l, |(host, _)| host).trim());
        hosts.extend(without_comments.filter(|l| !l.is_empty()).map(str::to_owned));
    }
    if let Some(bad) = hosts.iter().find(|h| h.starts_with('-') || h.trim().is_empty()) {
        return Err(Exit::Usage.err(format_args!("{bad:?} is not an ssh destination")));
    }
    Ok(hosts)
}

/// More than any list of hosts; what is past it is not read.
const HOSTS_FILE_LIMIT: u64 = 1 << 20;

/// The runs under way on the other hosts, each host once, in the order of their names.
struct Remotes {
    tool: &'static str,
    runs: Vec<(String, JoinHandle<RemoteRun>)>,
}

/// Starts `tool` on every host of `hosts` at once, with `args`; all of them together may print at
/// most [`ssh::RUN_LIMIT`] bytes.
fn start(tool: &'static str, hosts: &[String], args: &[String], timeout: Duration) -> Remotes {
    let budget = Budget::new(ssh::RUN_LIMIT);
    let unique: BTreeSet<&String> = hosts.iter().collect();
    let runs = unique
        .into_iter()
        .map(|host| {
            let (host, args, budget) = (host.clone(), args.to_vec(), budget.clone());
            let name = host.clone();
            (name, std::thread::spawn(move || ssh::run(&host, tool, &args, timeout, false, &budget)))
        })
        .collect();
    Remotes { tool, runs }
}

/// Acting on another host: the tool runs there alone, stdin handed on. Its exit code (4 when it
/// could not be reached), and what it gave.
fn act(tool: &'static str, hosts: &[String], args: &[String], timeout: Duration) -> Result<(Exit, Answer)> {
    let [host] = hosts else {
        return Err(Exit::Usage.err(format_args!(
            "{tool} acts on the sessions of one host: name one --host for it (a view such as --dry-run takes several)"
        )));
    };
    let run = ssh::run(host, tool, args, timeout, true, &Budget::new(ssh::RUN_LIMIT));
    let exit = match &run {
        RemoteRun::Ran { exit, .. } => Exit::from_code(*exit),
        _ => Exit::Unavailable,
    };
    Ok((exit, answer(tool, host, run)))
}

/// What one host gave: its rows (checked lines of the record types this view makes), then the
/// `host` record that closes them.
struct Answer {
    pub host: String,
    pub rows: Vec<String>,
    pub closing: HostRow,
}

impl Remotes {
    /// Waits for every host: what each gave, in the order of their names.
    fn answers(self) -> Vec<Answer> {
        self.runs
            .into_iter()
            .map(|(host, run)| {
                let run = run.join().unwrap_or_else(|_| RemoteRun::Unreachable("the ssh reader panicked".into()));
                answer(self.tool, &host, run)
            })
            .collect()
    }
}

/// The record types a view of `tool` makes: what it passes on from another host. Anything else
/// another host prints (a `decision` in an assess view, a `host` row of its own) is left out and
/// counted: a view's rows are for reading, never an order for a tool that acts.
fn view_types(tool: &str) -> &'static [&'static str] {
    match tool {
        "jackin-assess" => &["assessment", "error"],
        "jackin-keep" => &["decision", "error"],
        "jackin-purge" => &["purged", "error"],
        "jackin-reconcile" => &["change", "orphan", "repair", "expiring", "error"],
        "jackin-restore" => {
            &["candidate", "restored", "interrupted", "quarantine", "recovered", "session_record", "error"]
        }
        _ => &["error"],
    }
}

fn answer(tool: &str, host: &str, run: RemoteRun) -> Answer {
    let row = |status: HostStatus, reason: Option<String>, rows: usize, exit: Option<i32>| HostRow {
        host: host.to_owned(),
        status,
        reason,
        rows,
        exit,
        left_out: 0,
    };
    let mut rows = Vec::new();
    let closing = match run {
        RemoteRun::Unreachable(why) => row(HostStatus::Unreachable, Some(why), 0, None),
        RemoteRun::NoTools(why) => row(HostStatus::NoTools, Some(why), 0, None),
        RemoteRun::TooMuch(why) => row(HostStatus::TooMuch, Some(why), 0, None),
        RemoteRun::TimedOut(after) => {
            row(HostStatus::TimedOut, Some(format!("no answer within {}", humantime::format_duration(after))), 0, None)
        }
        RemoteRun::Ran { lines, exit, stderr } => {
            let mut left_out = BTreeSet::new();
            let mut count = 0;
            let mut bad = None;
            for (n, line) in lines.into_iter().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
                match crate::protocol::envelope::check_line(line, n + 1) {
                    Err(why) => {
                        bad = Some(why);
                        break;
                    }
                    Ok(record) if view_types(tool).contains(&record.kind.as_str()) => rows.push(record.line),
                    Ok(record) => {
                        count += 1;
                        left_out.insert(record.kind);
                    }
                }
            }
            match bad {
                Some(why) => {
                    rows.clear();
                    row(HostStatus::Protocol, Some(format!("its tools speak another protocol: {why:#}")), 0, Some(exit))
                }
                None => {
                    let said = (exit != 0).then(|| stderr.lines().last().unwrap_or_default().to_owned());
                    let mut closing = row(HostStatus::Ok, said.filter(|s| !s.is_empty()), rows.len(), Some(exit));
                    if count > 0 {
                        let kinds = left_out.into_iter().collect::<Vec<_>>().join(", ");
                        let note = format!("{count} record(s) left out: {kinds}, which this view does not make");
                        closing.reason = Some(closing.reason.map_or(note.clone(), |r| format!("{r}; {note}")));
                        closing.left_out = count;
                    }
                    closing
                }
            }
        }
    };
    Answer { host: host.to_owned(), rows, closing }
}

/// One row of another host as a line: in JSON its record with `host` set to the host it came
/// from (whatever it claimed); in text its text after the host's name.
fn row_line(host: &str, line: &str, json: bool) -> String {
    let Ok(record) = crate::protocol::envelope::check_line(line.to_owned(), 0) else { return String::new() };
    if json {
        crate::protocol::envelope::from_host(&record, host)
    } else {
        let text = crate::protocol::text_of(&record).unwrap_or_else(|| record.line.clone());
        format!("[{host}] {}", text.replace('\n', "\n  "))
    }
}

#[cfg(test)]
mod tests {
    use super::forwarded_args;

    #[test]
    fn this_hosts_flags_stay_here_and_the_rows_come_back_as_json() {
        let args = ["--all", "--home=/h", "--format", "text", "--config-dir", "/c", "-v"];
        let forwarded = forwarded_args(args.iter().map(Into::into)).unwrap();
        assert_eq!(forwarded, ["--all", "-v", "--format", "json"]);
    }
}
