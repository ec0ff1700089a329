//! Events to act on (issue 52): after a reconciliation, the operator's program (`--on-event`)
//! is run once for each status change it made, and once for each quarantine or kept session
//! that will be deleted within `--warn-before` (an `expiring` record, printed too). The program is
//! run directly, never through a shell: the record goes to its stdin as one JSON line, and a few
//! plain variables say what happened (a session name, statuses, a time: words and names the tools
//! checked, never agent text). Its stdout is dropped (this tool's stdout is its records), its
//! stderr is the tool's. One that fails or takes longer than `--event-timeout` is killed, said
//! on stderr, and the next event still runs.
//!
//! An expiry is warned about once: `<home>/events/warned.json` remembers what was warned about
//! and until when; a deadline that moves (a quarantine saved again) is a new warning.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use anyhow::Result;

use crate::base::time::{rfc3339, seconds_until};
use crate::protocol::envelope::{self, Record};
use crate::protocol::identity::Identity;
use crate::protocol::records::{Change, Expiring};
use crate::state::store::Store;

#[derive(Debug, Clone, Default)]
pub struct EventOptions {
    /// The operator's program, run for each event.
    pub program: Option<PathBuf>,
    pub timeout: Duration,
    /// Warn about deletions due within this long; `None`: no expiry warnings.
    pub warn_before: Option<Duration>,
    /// The `--older-than` of the operator's retention purge: a kept clean session
    /// (`restore_available`) last updated longer ago is purged by it.
    pub retention: Option<Duration>,
    /// A dry run: warns, runs no program, remembers nothing.
    pub dry_run: bool,
}

/// Runs the program for each change (made, not a dry run's).
pub fn changes(options: &EventOptions, changes: &[Change], say: &mut dyn FnMut(String)) {
    let Some(program) = options.program.as_ref().filter(|_| !options.dry_run) else { return };
    for change in changes.iter().filter(|c| !c.dry_run) {
        let vars = [
            ("JACKIN_EVENT", "status_change".to_owned()),
            ("JACKIN_SESSION", change.identity.container_base.clone()),
            ("JACKIN_STATUS_FROM", change.from.clone()),
            ("JACKIN_STATUS", change.to.clone()),
        ];
        run(program, options.timeout, change, &vars, say);
    }
}

/// What will be deleted within the window and was not warned about yet; remembered as warned
/// (unless `dry_run`), and the program run for each.
pub fn expiring(store: &Store, options: &EventOptions, say: &mut dyn FnMut(String)) -> Result<Vec<Expiring>> {
    let dry_run = options.dry_run;
    let Some(window) = options.warn_before else { return Ok(Vec::new()) };
    let now = SystemTime::now();
    let due = due(store, options.retention)?;
    let warned_path = store.roots.home.join("events").join("warned.json");
    // A file that cannot be read costs warnings said again, never the run.
    let warned: BTreeMap<String, String> =
        crate::state::store::read_json(&warned_path).ok().flatten().unwrap_or_default();
    let mut still = BTreeMap::new();
    let mut fresh = Vec::new();
    for item in due {
        let Some(secs) = seconds_until(&item.expires_at, now) else { continue };
        if secs > window.as_secs() as i64 {
            continue;
        }
        let key = format!("{}:{}", item.kind, item.path);
        if warned.get(&key) != Some(&item.expires_at) {
            fresh.push(Expiring { expires_in_secs: secs, ..item.clone() });
        }
        still.insert(key, item.expires_at);
    }
    if !dry_run && (still != warned || !fresh.is_empty()) {
        std::fs::create_dir_all(warned_path.parent().expect("a file in a directory"))?;
        crate::state::store::write_json_atomic(&warned_path, &still)?;
    }
    if let Some(program) = options.program.as_ref().filter(|_| !dry_run) {
        for item in &fresh {
            let vars = [
                ("JACKIN_EVENT", "expiring".to_owned()),
                ("JACKIN_SESSION", item.identity.container_base.clone()),
                ("JACKIN_EXPIRING", item.kind.clone()),
                ("JACKIN_EXPIRES_AT", item.expires_at.clone()),
                ("JACKIN_EXPIRES_IN_SECS", item.expires_in_secs.to_string()),
            ];
            run(program, options.timeout, item, &vars, say);
        }
    }
    Ok(fresh)
}

/// Every quarantine with a receipt, and (with a retention) every kept clean session, with when
/// it will be deleted.
fn due(store: &Store, retention: Option<Duration>) -> Result<Vec<Expiring>> {
    let mut due = Vec::new();
    for (dir, receipt) in crate::services::saved_work::receipts(store)? {
        due.push(Expiring {
            identity: receipt.identity,
            kind: "quarantine".into(),
            path: dir.to_string_lossy().into_owned(),
            expires_at: receipt.expires_at,
            expires_in_secs: 0,
            deleted_by: "jackin-purge --expire-quarantine".into(),
        });
    }
    if let Some(retention) = retention {
        let index = store.read_index()?;
        for row in index.instances.iter().filter(|r| r.status == "restore_available") {
            let Some(updated) = crate::base::time::parse_rfc3339(&row.updated_at) else { continue };
            let Ok(name) = crate::state::names::InstanceName::parse(&row.container_base) else { continue };
            due.push(Expiring {
                identity: Identity::from_row(row),
                kind: "kept_session".into(),
                path: store.instance_dir(&name).to_string_lossy().into_owned(),
                expires_at: rfc3339(updated + retention),
                expires_in_secs: 0,
                deleted_by: format!("jackin-purge --older-than {}", humantime::format_duration(retention)),
            });
        }
    }
    Ok(due)
}

/// Runs the program once: `record` on its stdin, `vars` in its environment, at most `timeout`.
fn run<R: Record>(
    program: &PathBuf,
    timeout: Duration,
    record: &R,
    vars: &[(&str, String)],
    say: &mut dyn FnMut(String),
) {
    let shown = program.display();
    let line = match envelope::to_line(record) {
        Ok(line) => line,
        Err(e) => return say(format!("warning: --on-event {shown}: cannot write the record: {e:#}")),
    };
    let mut command = Command::new(program);
    command.envs(vars.iter().map(|(k, v)| (*k, v.as_str()))).stdin(Stdio::piped()).stdout(Stdio::null());
    // A group of its own: a program that hangs is killed with whatever it started, so nothing
    // it left behind keeps this tool's stderr (a cron job's mail) open.
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) => return say(format!("warning: --on-event {shown}: cannot run it: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        // A program that does not read its stdin is not a failure.
        let _ = writeln!(stdin, "{line}");
    }
    let status = crate::base::child::wait_at_most(&mut child, timeout, crate::base::child::Kill::Group);
    match status {
        None => say(format!(
            "warning: --on-event {shown}: killed after {} (the next event still runs)",
            humantime::format_duration(timeout)
        )),
        Some(status) if !status.success() => {
            say(format!("warning: --on-event {shown}: {status} (the next event still runs)"))
        }
        Some(_) => {}
    }
}
