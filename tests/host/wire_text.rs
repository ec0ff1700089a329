//! Text says what JSON says: every record of the wire recording (tests/fixtures/wire-run.jsonl),
//! and a sample of each record type the recording does not hold, rendered as the tools print it
//! with `--format text` (and as a view across hosts prints another host's rows), carries every
//! field that tells the operator why something happened: a reason, a drift, what is missing,
//! the next command, a summary, a cause, an error's message, a note. At any depth: a skipped
//! file's reason counts as much as a session's.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

use serde_json::{json, Value};

/// The keys whose values say why: each string under one of them, wherever it is in a record,
/// must be in the record's text.
const WHY: [&str; 9] = ["reason", "drift", "missing", "message", "summary", "next", "cause", "notes", "unreadable"];

/// Every record type the tools write. A `candidate`'s text is its `label`, made when it was listed
/// (the recording holds a placeholder for it, as it says how long ago): its label is checked
/// where it is made (`lib/tools/restore/list.rs`, `a_candidates_label_says_why`).
const TYPES: [&str; 16] = [
    "assessment",
    "decision",
    "purged",
    "change",
    "orphan",
    "repair",
    "expiring",
    "restored",
    "interrupted",
    "quarantine",
    "recovered",
    "session_record",
    "exported",
    "imported",
    "error",
    "host",
];

fn identity() -> Value {
    json!({"container_base": "jk-k7p9m2xq-myapp-agentsmith", "instance_id": "k7p9m2xq", "workspace_name": "my-app",
           "workspace_label": "my-app", "role_key": "agent-smith", "agent_runtime": "claude"})
}

/// `data` of `kind` with the identity's keys first.
fn with_identity(kind: &str, data: Value) -> String {
    let mut all = identity();
    all.as_object_mut().unwrap().extend(data.as_object().unwrap().clone());
    json!({"schema_version": 1, "type": kind, "data": all}).to_string()
}

/// One record of each type the recording does not hold, with every why-field filled.
fn samples() -> Vec<String> {
    let envelope = |kind: &str, data: Value| json!({"schema_version": 1, "type": kind, "data": data}).to_string();
    vec![
        envelope(
            "repair",
            json!({"kind": "row_dropped", "name": "jk-k7p9m2xq-myapp-agentsmith",
                   "reason": "neither the data dir nor the container exists: row dropped"}),
        ),
        with_identity(
            "expiring",
            json!({"kind": "quarantine", "path": "/home/op/.jackin/quarantine/jk-k7p9m2xq-myapp-agentsmith-20261205T000000Z",
                   "expires_at": "2026-12-07T00:00:00Z", "expires_in_secs": 3600,
                   "deleted_by": "jackin-purge --expire-quarantine"}),
        ),
        envelope(
            "host",
            json!({"host": "build-box", "status": "unreachable", "reason": "ssh: connect to host build-box: refused",
                   "rows": 0, "exit": null}),
        ),
        with_identity(
            "quarantine",
            json!({"dir": "/home/op/.jackin/quarantine/jk-k7p9m2xq-myapp-agentsmith-20261205T000000Z",
                   "saved_at": "2026-12-05T00:00:00Z", "expires_at": "2026-12-19T00:00:00Z", "expires_in_secs": 86400,
                   "summary": "1 file dirty · 2 commits unpushed",
                   "repositories": [{"mount_dst": "/workspace/app", "isolation": "worktree", "repository": "/src/app",
                                     "commits": 2, "files": 1, "recoverable": true}],
                   "bytes": 4096, "recoverable": true}),
        ),
        with_identity(
            "recovered",
            json!({"quarantine": "/home/op/.jackin/quarantine/jk-k7p9m2xq-myapp-agentsmith-20261205T000000Z",
                   "mount_dst": "/workspace/app", "repository": "/src/app",
                   "branch": "refs/jackin/recovered/jk-k7p9m2xq-myapp-agentsmith",
                   "refs": [], "worktree": "/src/app-recovered-k7p9", "files": 1, "deleted": 0, "staged": 0,
                   "notes": ["the staged version of big.bin was not saved: larger than the quarantine allows"]}),
        ),
        with_identity(
            "session_record",
            json!({"recorded_at": "2026-12-05T00:00:00Z", "expires_at": "2027-03-05T00:00:00Z",
                   "launch": {"image": "jackin-agent-smith:latest", "role": "agent-smith", "workspace": "my-app",
                              "workdir": "/workspace/app", "agent": "claude",
                              "mounts": [{"dst": "/workspace/app", "src": "/src/app", "isolation": "worktree"}]},
                   "outcome": {"created_at": "2026-12-04T00:00:00Z", "ended_at": "2026-12-05T00:00:00Z",
                               "duration_secs": 86400, "last_status": "crashed",
                               "statuses": [{"at": "2026-12-04T12:00:00Z", "from": "active", "to": "crashed",
                                             "cause": "killed_by_host"}]},
                   "work": {"verdict": "dirty", "summary": "1 file dirty", "quarantine": null,
                            "mounts": [{"dst": "/workspace/app", "verdict": "unknown", "commits": [],
                                        "unreadable": "the worktree's repository is gone"}]},
                   "conversation": {"copied": [], "skipped": [{"path": "history/huge.jsonl",
                                                               "reason": "over the 64 MiB cap"}],
                                    "bytes": 0, "cap_bytes": 67108864}}),
        ),
    ]
}

/// Every string under a why-key of `value`, at any depth, with the key it was under.
fn reasons(value: &Value, under: Option<&str>, out: &mut Vec<(String, String)>) {
    match value {
        Value::String(text) if !text.is_empty() => {
            if let Some(key) = under {
                out.push((key.to_owned(), text.clone()));
            }
        }
        Value::Array(items) => items.iter().for_each(|item| reasons(item, under, out)),
        Value::Object(map) => {
            for (key, item) in map {
                let key = if WHY.contains(&key.as_str()) { Some(key.as_str()) } else { under };
                reasons(item, key, out);
            }
        }
        _ => {}
    }
}

/// The recording's placeholders where a number or an object was (tests/host/wire.rs,
/// `VOLATILE_KEYS`) made a value of the record's type again: a count of 0, no disk figure.
fn typed_again(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, item) in map.iter_mut() {
                if item == "<volatile>" {
                    match key.as_str() {
                        "freed_bytes" | "bytes" | "session_bytes" => *item = json!(0),
                        "disk" | "host_boot_time" => *item = Value::Null,
                        _ => {}
                    }
                }
                typed_again(item);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(typed_again),
        _ => {}
    }
}

#[test]
fn the_text_of_every_record_type_says_why_as_its_json_does() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let recording = fs::read_to_string(root.join("tests/fixtures/wire-run.jsonl")).unwrap();
    let records = recording.lines().filter(|l| l.starts_with("{\"schema_version\""));
    let lines = records.map(str::to_owned).chain(samples());
    let mut seen = BTreeSet::new();
    let mut lacking = Vec::new();
    for line in lines {
        let mut record: Value = serde_json::from_str(&line).unwrap();
        typed_again(&mut record);
        let line = record.to_string();
        let kind = record["type"].as_str().unwrap().to_owned();
        if kind == "candidate" {
            continue;
        }
        let Some(text) = jackin::protocol::text_of_line(&line) else {
            lacking.push(format!("{kind}: no text at all for {line}"));
            continue;
        };
        let mut why = Vec::new();
        reasons(&record["data"], None, &mut why);
        for (key, said) in why {
            // A word of the wire (`killed_by_host`) may be said with spaces.
            if !text.contains(&said) && !text.contains(&said.replace('_', " ")) {
                lacking.push(format!("{kind}: `{key}` {said:?} is not in its text:\n{text}"));
            }
        }
        seen.insert(kind);
    }
    let missing: Vec<&str> = TYPES.iter().copied().filter(|t| !seen.contains(*t)).collect();
    assert!(missing.is_empty(), "record types with no record tried: {missing:?}");
    assert!(lacking.is_empty(), "{}", lacking.join("\n\n"));
}
