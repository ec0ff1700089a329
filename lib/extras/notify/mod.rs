//! `jackin-notify PROGRAM`: the operator's program run once for each event in jackin-reconcile's
//! records (`jackin-reconcile --watch --warn-before 24h | jackin-notify PROGRAM`), an extra of its
//! own: reconcile only reports, and a pipe joins the two. Every record passes through to stdout
//! unchanged, so the pipe can go on. The program is run directly, never through a shell: the
//! record goes to its stdin as one JSON line, and a few plain variables say what happened, each
//! checked before it is set (a session name, jackin's status words, a time: never free text, since
//! a record is a claim of whoever wrote the line). Its stdout is dropped (this tool's stdout is the
//! records), its stderr is the tool's. One that fails or takes longer than `--event-timeout` is
//! killed with whatever it started, said on stderr, and the next event still runs.

pub mod cli;
pub mod manual;

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Result;

use crate::base::exit::Exit;
use crate::base::time::parse_rfc3339;
use crate::face::driver::Ctx;
use crate::protocol::envelope::{self, InputRecord};
use crate::protocol::records::{Change, Expiring};
use crate::state::model::StatusWord;
use crate::state::names::InstanceName;
use cli::NotifyArgs;

/// The variables of one event, in the program's environment.
pub type Variables = Vec<(&'static str, String)>;

/// Reads the records, passes each on, runs the program for each event; exit 3 when a line is not a
/// record (the lines before it were handled) or an event's fields could not be checked.
pub fn run(args: &NotifyArgs, ctx: &mut Ctx) -> Result<Exit> {
    let program = crate::base::perms::trusted_program(&args.program, "jackin-notify")?;
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return Err(Exit::Usage.err(
            "records expected on stdin, but stdin is a terminal\n  hint: jackin-reconcile --watch | jackin-notify PROGRAM",
        ));
    }
    let mut refused = 0;
    envelope::read_each(stdin.lock(), &mut |record| {
        ctx.pass_through(&record)?;
        match event_of(&record) {
            Ok(Some(vars)) => run_program(&program, args.event_timeout, &record, &vars, &mut |line| ctx.say(line)),
            Ok(None) => {}
            Err(why) => {
                refused += 1;
                ctx.say(format_args!(
                    "warning: line {}: {} record not passed to the program: {why}",
                    record.line_no(),
                    record.kind
                ));
            }
        }
        Ok(())
    })?;
    Ok(if refused > 0 { Exit::BadInput } else { Exit::Ok })
}

/// The variables of the event a record is, checked; `None` when it is no event (another type, or
/// a dry run's change).
pub fn event_of(record: &InputRecord) -> Result<Option<Variables>, String> {
    let session = |name: &str| InstanceName::parse(name).map(|n| n.as_str().to_owned()).map_err(|e| format!("{e:#}"));
    let status = |word: &StatusWord| match word.known() {
        Some(status) => Ok(status.to_string()),
        None => Err(format!("{:?} is not one of jackin's statuses", word.as_str())),
    };
    match record.kind.as_str() {
        "change" => {
            let change: Change = record.parse().map_err(|e| format!("{e:#}"))?;
            if change.dry_run {
                return Ok(None);
            }
            Ok(Some(vec![
                ("JACKIN_EVENT", "status_change".to_owned()),
                ("JACKIN_SESSION", session(&change.identity.container_base)?),
                ("JACKIN_STATUS_FROM", status(&change.from)?),
                ("JACKIN_STATUS", status(&change.to)?),
            ]))
        }
        "expiring" => {
            let item: Expiring = record.parse().map_err(|e| format!("{e:#}"))?;
            if !["quarantine", "kept_session"].contains(&item.kind.as_str()) {
                return Err(format!("{:?} is not a kind of expiry", item.kind));
            }
            if parse_rfc3339(&item.expires_at).is_none() {
                return Err(format!("{:?} is not a time", item.expires_at));
            }
            Ok(Some(vec![
                ("JACKIN_EVENT", "expiring".to_owned()),
                ("JACKIN_SESSION", session(&item.identity.container_base)?),
                ("JACKIN_EXPIRING", item.kind.clone()),
                ("JACKIN_EXPIRES_AT", item.expires_at.clone()),
                ("JACKIN_EXPIRES_IN_SECS", item.expires_in_secs.to_string()),
            ]))
        }
        _ => Ok(None),
    }
}

/// Runs the program once: the record's line on its stdin, `vars` in its environment, at most
/// `timeout`.
fn run_program(program: &Path, timeout: Duration, record: &InputRecord, vars: &Variables, say: &mut dyn FnMut(String)) {
    let shown = program.display();
    let mut command = Command::new(program);
    command.envs(vars.iter().map(|(k, v)| (*k, v.as_str()))).stdin(Stdio::piped()).stdout(Stdio::null());
    // A group of its own: a program that hangs is killed with whatever it started, so nothing
    // it left behind keeps this tool's stderr (a cron job's mail) open.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return say(format!("warning: {shown}: cannot run it: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A program that does not read its stdin is not a failure.
        let _ = writeln!(stdin, "{}", record.line());
    }
    match crate::base::child::wait_at_most(&mut child, timeout, crate::base::child::Kill::Group) {
        None => say(format!(
            "warning: {shown}: killed after {} (the next event still runs)",
            humantime::format_duration(timeout)
        )),
        Some(status) if !status.success() => say(format!("warning: {shown}: {status} (the next event still runs)")),
        Some(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(line: &str) -> InputRecord {
        envelope::check_line(line.to_owned(), 1).unwrap()
    }

    #[test]
    fn only_checked_words_reach_the_programs_environment() {
        let change = |name: &str, to: &str| {
            format!(
                r#"{{"schema_version":1,"type":"change","data":{{"container_base":"{name}","instance_id":"k7p9m2xq","workspace_name":"my-app","workspace_label":"my-app","role_key":"agent-smith","agent_runtime":"claude","from":"active","to":"{to}","cause":"container_removed","evidence":{{"role":{{"name":"{name}","status":"gone"}},"observed_at":"2026-12-06T00:00:00Z"}}}}}}"#
            )
        };
        let good = event_of(&record(&change("jk-k7p9m2xq-myapp-agentsmith", "crashed"))).unwrap().unwrap();
        assert_eq!(good[1], ("JACKIN_SESSION", "jk-k7p9m2xq-myapp-agentsmith".to_owned()));
        assert_eq!(good[3], ("JACKIN_STATUS", "crashed".to_owned()));
        assert!(event_of(&record(&change("jk-k7p9m2xq-myapp-agentsmith", "$(reboot)"))).is_err());
        assert!(event_of(&record(&change("../../etc", "crashed"))).is_err());
        let other = record(r#"{"schema_version":1,"type":"orphan","data":{}}"#);
        assert_eq!(event_of(&other), Ok(None));
    }
}
