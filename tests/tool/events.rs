//! Events to act on: jackin-reconcile runs the operator's program once for each status change it
//! makes and once for each deletion it warns of, before the deletion; never through a shell; a
//! program that fails or hangs is said and the next event still runs.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
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

    let reconcile = |args: &[&str]| {
        let out = home.cmd("jackin-reconcile").args(["--format", "json"]).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
        out
    };
    let out = reconcile(&["--on-event", hook.to_str().unwrap()]);
    let printed: Vec<(String, Value)> = envelopes(&out.stdout).into_iter().map(|e| (e.kind.clone(), e.data)).collect();
    let lines = log_lines(&log);
    // The change: once, its record on stdin byte for byte as printed.
    assert_eq!(lines[0], format!("status_change|{gone}|active|crashed||"), "{lines:?}");
    let change: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(change["type"], "change");
    assert_eq!(printed.iter().find(|(k, _)| k == "change").unwrap().1, change["data"]);
    // The quarantine due within the default 24 hours: an `expiring` record and one event; the one
    // due in ten days: neither.
    let expiring: Vec<&Value> = printed.iter().filter(|(k, _)| k == "expiring").map(|(_, d)| d).collect();
    assert_eq!(expiring.len(), 1, "{printed:?}");
    assert_eq!(expiring[0]["path"], soon.to_str().unwrap());
    assert_eq!(expiring[0]["deleted_by"], "jackin-purge --expire-quarantine");
    let in_secs = expiring[0]["expires_in_secs"].as_i64().unwrap();
    assert!((7000..=7200).contains(&in_secs), "{in_secs}");
    assert!(lines[2].starts_with("expiring|jk-q0000000-myapp-agentsmith|||quarantine|"), "{lines:?}");
    assert_eq!(lines.len(), 4, "{lines:?}");
    assert!(later.exists());

    // Again: nothing changed and nothing new is due: no event, no record.
    let out = reconcile(&["--on-event", hook.to_str().unwrap()]);
    assert!(envelopes(&out.stdout).iter().all(|e| e.kind != "change" && e.kind != "expiring"));
    assert_eq!(log_lines(&log).len(), 4, "each event reaches the program once");
    // What was warned of, remembered in a file that cannot be read: warned of again, the run goes on.
    fs::write(home.home.join("events/warned.json"), "not json").unwrap();
    let out = reconcile(&["--warn-before", "24h"]);
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
    let out = home
        .cmd("jackin-reconcile")
        .args(["--format", "json", "--on-event", slow.to_str().unwrap(), "--event-timeout", "1s"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stderr(&out).matches("killed after 1s").count(), 2, "{}", stderr(&out));
    let failing = program(&bin, "failing", &log, 3, 0);
    let fourth = home.instance(&unique_id(), |_, _| Vec::new()).container;
    let out = home
        .cmd("jackin-reconcile")
        .args(["--format", "json", "--on-event", failing.to_str().unwrap()])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("exit status: 3"), "{}", stderr(&out));
    assert!(log_lines(&log).iter().any(|l| l.starts_with(&format!("status_change|{fourth}|"))));
    let _ = (other, third);
}
