//! Events to act on: `jackin-reconcile | jackin-notify PROGRAM` runs the operator's program once for
//! each status change reconcile makes and once for each deletion it warns of, before the deletion;
//! never through a shell; a program that fails or hangs is said and the next event still runs. The
//! hidden `--on-event` of reconcile does the same through jackin-notify.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::{Duration, SystemTime};

use common::docker::engine_available;
use common::records::envelopes;
use common::{stderr, unique_id, write_json, Home};
use serde_json::{json, Value};

/// A program that appends its variables and its stdin to `log`, then exits `code` (after
/// `sleep` seconds).
fn program(dir: &Path, name: &str, log: &Path, code: u8, sleep: u32) -> PathBuf {
    let path = dir.join(name);
    let text = format!(
        "#!/bin/sh\nsleep {sleep}\n{{ echo \"$JACKIN_EVENT|$JACKIN_SESSION|$JACKIN_STATUS_FROM|$JACKIN_STATUS|$JACKIN_EXPIRING|$JACKIN_EXPIRES_IN_SECS\"; cat; }} >> '{}'\nexit {code}\n",
        log.display()
    );
    fs::create_dir_all(dir).unwrap();
    fs::write(&path, text).unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A quarantine whose receipt says it is deleted at `expires`.
fn quarantine(home: &Home, container: &str, expires: SystemTime) -> PathBuf {
    let dir = home.home.join("quarantine").join(format!("{container}-20261205T000000Z"));
    fs::create_dir_all(&dir).unwrap();
    let receipt = json!({
        "version": 1,
        "container_base": container, "instance_id": &container[3..11], "workspace_name": "my-app",
        "workspace_label": "my-app", "role_key": "agent-smith", "agent_runtime": "claude",
        "saved_at": humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        "expires_at": humantime::format_rfc3339_seconds(expires).to_string(),
        "verdict": "dirty", "summary": "1 file dirty", "mounts": []
    });
    write_json(&dir.join("receipt.json"), &receipt);
    dir
}

/// `jackin-reconcile --format json ARGS | jackin-notify PROGRAM NOTIFY_ARGS`: each one's output.
fn piped(home: &Home, args: &[&str], program: &Path, notify_args: &[&str]) -> (Output, Output) {
    let out = home.cmd("jackin-reconcile").args(["--format", "json"]).args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let notified =
        home.cmd("jackin-notify").arg(program).args(notify_args).write_stdin(out.stdout.clone()).output().unwrap();
    assert_eq!(notified.stdout, out.stdout, "every record passes through jackin-notify unchanged");
    (out, notified)
}

fn log_lines(log: &Path) -> Vec<String> {
    fs::read_to_string(log).unwrap_or_default().lines().map(str::to_owned).collect()
}

#[test]
fn each_change_and_each_expiry_reaches_the_program_once() {
    if !engine_available("each_change_and_each_expiry_reaches_the_program_once") {
        return;
    }
    let mut home = Home::new();
    let gone = home.instance(&unique_id(), |_, _| Vec::new()).container;
    let soon = quarantine(&home, "jk-q0000000-myapp-agentsmith", SystemTime::now() + Duration::from_secs(2 * 3600));
    let later = quarantine(&home, "jk-q1111111-myapp-agentsmith", SystemTime::now() + Duration::from_secs(10 * 86400));
    let bin = home.tmp.path().join("bin");
    let log = home.tmp.path().join("events.log");
    let hook = program(&bin, "on-event", &log, 0, 0);

    let (out, _) = piped(&home, &["--warn-before", "24h"], &hook, &[]);
    let printed: Vec<(String, Value)> = envelopes(&out.stdout).into_iter().map(|e| (e.kind.clone(), e.data)).collect();
    let lines = log_lines(&log);
    // The change: once, its record on stdin byte for byte as printed.
    assert_eq!(lines[0], format!("status_change|{gone}|active|crashed||"), "{lines:?}");
    let change: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(change["type"], "change");
    assert_eq!(printed.iter().find(|(k, _)| k == "change").unwrap().1, change["data"]);
    // The quarantine due within 24 hours: an `expiring` record and one event; the one due in ten
    // days: neither.
    let expiring: Vec<&Value> = printed.iter().filter(|(k, _)| k == "expiring").map(|(_, d)| d).collect();
    assert_eq!(expiring.len(), 1, "{printed:?}");
    assert_eq!(expiring[0]["path"], soon.to_str().unwrap());
    assert_eq!(expiring[0]["deleted_by"], "jackin-purge --expire-quarantine");
    let in_secs = expiring[0]["expires_in_secs"].as_i64().unwrap();
    assert!((7000..=7200).contains(&in_secs), "{in_secs}");
    assert!(lines[2].starts_with("expiring|jk-q0000000-myapp-agentsmith|||quarantine|"), "{lines:?}");
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(later.exists());

    // Again, through the hidden --on-event (whose window is 24 hours): nothing changed and nothing
    // new is due: no event, no record.
    let out =
        home.cmd("jackin-reconcile").args(["--format", "json", "--on-event", hook.to_str().unwrap()]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("--on-event moved to `jackin-notify`"), "{}", stderr(&out));
    assert!(envelopes(&out.stdout).iter().all(|e| e.kind != "change" && e.kind != "expiring"));
    assert_eq!(log_lines(&log).len(), 4, "each event reaches the program once");
    // What was warned of, remembered in a file that cannot be read: warned of again, the run goes on.
    fs::write(home.home.join("events/warned.json"), "not json").unwrap();
    let out = home.cmd("jackin-reconcile").args(["--format", "json", "--warn-before", "24h"]).output().unwrap();
    assert_eq!(envelopes(&out.stdout).iter().filter(|e| e.kind == "expiring").count(), 1);

    // The list says when each quarantine goes.
    let listed = home.cmd("jackin-restore").args(["--quarantined", "--format", "json"]).output().unwrap();
    let listed: Vec<Value> = envelopes(&listed.stdout).into_iter().map(|e| e.data).collect();
    let soon_listed = listed.iter().find(|q| q["dir"] == soon.to_str().unwrap()).unwrap();
    assert!((7000..=7200).contains(&soon_listed["expires_in_secs"].as_i64().unwrap()), "{soon_listed}");
    let text = home.cmd("jackin-restore").args(["--quarantined", "--format", "text"]).output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("(expires in 1h 59m)"), "{text}");
    assert!(text.contains("(expires in 9d 23h)") || text.contains("(expires in 10d 0h)"), "{text}");

    // The warning came before the deletion: the quarantine is still there for another 2 hours.
    let out = home.purge(&["--expire-quarantine"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(soon.exists(), "not deleted before its time");

    // A program that fails and one that hangs are said; the other events still run.
    let other = home.instance(&unique_id(), |_, _| Vec::new()).container;
    let third = home.instance(&unique_id(), |_, _| Vec::new()).container;
    let slow_log = home.tmp.path().join("slow.log");
    let slow = program(&bin, "slow", &slow_log, 0, 30);
    let (_, out) = piped(&home, &[], &slow, &["--event-timeout", "1s"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out).matches("killed after 1s").count(), 2, "{}", stderr(&out));
    let failing = program(&bin, "failing", &log, 3, 0);
    let fourth = home.instance(&unique_id(), |_, _| Vec::new()).container;
    let (_, out) = piped(&home, &[], &failing, &[]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("exit status: 3"), "{}", stderr(&out));
    assert!(log_lines(&log).iter().any(|l| l.starts_with(&format!("status_change|{fourth}|"))));
    let _ = (other, third);
}

/// A record is a claim: jackin-notify hands the program only words it checked (a session name,
/// jackin's statuses), passes every line on, and says which it would not run the program for
/// (exit 3); a line that is not a record ends the run with exit 3, the lines before it handled.
#[test]
fn jackin_notify_hands_the_program_only_checked_words() {
    let home = Home::new();
    let bin = home.tmp.path().join("bin");
    let log = home.tmp.path().join("events.log");
    let hook = program(&bin, "on-event", &log, 0, 0);
    let change = |name: &str, to: &str| {
        format!(
            r#"{{"schema_version":1,"type":"change","data":{{"container_base":"{name}","instance_id":"k7p9m2xq","workspace_name":"my-app","workspace_label":"my-app","role_key":"agent-smith","agent_runtime":"claude","from":"active","to":"{to}","cause":"container_removed","evidence":{{"role":{{"name":"{name}","status":"gone"}},"observed_at":"2026-12-06T00:00:00Z"}}}}}}"#
        )
    };
    let good = change("jk-k7p9m2xq-myapp-agentsmith", "crashed");
    let forged = change("jk-k7p9m2xq-myapp-agentsmith", "$(touch /tmp/pwned)");
    let input = format!("{good}\n{forged}\n");
    let out = home.cmd("jackin-notify").arg(&hook).write_stdin(input.clone()).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), input, "every line passes on");
    assert!(stderr(&out).contains("line 2: change record not passed to the program"), "{}", stderr(&out));
    let lines = log_lines(&log);
    assert_eq!(lines[0], "status_change|jk-k7p9m2xq-myapp-agentsmith|active|crashed||", "{lines:?}");
    assert_eq!(lines.len(), 2, "the program ran once, for the checked record: {lines:?}");
    // Not a record: the line before it handled, then exit 3.
    let out = home.cmd("jackin-notify").arg(&hook).write_stdin(format!("{good}\nnot json\n")).output().unwrap();
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("line 2: not JSON"), "{}", stderr(&out));
    assert_eq!(log_lines(&log).len(), 4);
}

/// A warning is given once, whatever the windows of the runs in between: a run with a shorter
/// `--warn-before` does not forget what a longer one warned of (before, it pruned the list, and
/// the next run with the longer window warned again).
#[test]
fn a_shorter_window_in_between_neither_spends_nor_repeats_a_warning() {
    if !engine_available("a_shorter_window_in_between_neither_spends_nor_repeats_a_warning") {
        return;
    }
    let home = Home::new();
    let container = format!("jk-{}-my-app-agent-smith", unique_id());
    quarantine(&home, &container, SystemTime::now() + Duration::from_secs(20 * 3600));
    let expiring = |window: &str| {
        let out = home.cmd("jackin-reconcile").args(["--format", "json", "--warn-before", window]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        envelopes(&out.stdout).into_iter().filter(|e| e.kind == "expiring").count()
    };
    assert_eq!(expiring("24h"), 1, "warned once, 20 hours ahead");
    assert_eq!(expiring("1h"), 0, "not due within an hour");
    assert_eq!(expiring("24h"), 0, "already warned: not said again");
    assert_eq!(expiring("2d"), 0, "nor under a longer window");
}

/// `--retention` only says which kept sessions the warnings of `--warn-before` cover: alone it
/// would do nothing, so it is refused (exit 2, nothing read or changed; before, exit 0). Its
/// environment variable is read only when warnings are asked for, so a bad value never stops
/// the plain cron run, and is refused when it counts.
#[test]
fn retention_without_warnings_is_refused_and_its_variable_counts_only_with_them() {
    let home = Home::new();
    let before = home.snapshot();
    let out = home.cmd("jackin-reconcile").args(["--retention", "30d"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("give --warn-before DUR too"), "{}", stderr(&out));
    assert_eq!(home.snapshot(), before);
    if !engine_available("retention_without_warnings_is_refused_and_its_variable_counts_only_with_them") {
        return;
    }
    let plain = home.cmd("jackin-reconcile").env("JACKIN_KEPT_RETENTION", "30").output().unwrap();
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    let warned =
        home.cmd("jackin-reconcile").args(["--warn-before", "1d"]).env("JACKIN_KEPT_RETENTION", "30").output().unwrap();
    assert_eq!(warned.status.code(), Some(2), "{}", stderr(&warned));
    assert!(stderr(&warned).contains("JACKIN_KEPT_RETENTION=\"30\""), "{}", stderr(&warned));
}
