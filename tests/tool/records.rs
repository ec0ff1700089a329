//! The record a purge leaves of each session it removes: launch, outcome, what the work became,
//! and the agent's conversation copied byte for byte (never through a link, never a FIFO, never
//! a sparse file's holes); listed and shown by jackin-restore, expired by jackin-purge.

use crate::common;

use std::fs;
use std::path::Path;

use common::docker::engine_available;
use common::records::{envelopes, Purged, SessionRecord};
use common::{commit_file, git, stderr, unique_id, Home};

/// A session line the agent wrote: JSON, then bytes that are not UTF-8 and a terminal escape.
const CONVERSATION: &[u8] =
    b"{\"role\":\"user\",\"text\":\"fix the parser\"}\n\xff\xfe\x1b]0;owned\x07{\"role\":\"assistant\"}\n";

#[test]
fn a_purge_leaves_a_record_with_the_conversation_copied_and_it_expires_on_its_own() {
    if !engine_available("a_purge_leaves_a_record_with_the_conversation_copied_and_it_expires_on_its_own") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let c = inst.container.clone();
    let wt = inst.mount_path(0);
    git(&wt, &["config", "user.email", "agent@example.invalid"]);
    git(&wt, &["config", "user.name", "Agent"]);
    let pushed = commit_file(&wt, "src/a.rs", "fn a() {}\n", "pushed work");
    git(&wt, &["push", "-q", "origin", "HEAD:refs/heads/feature-a"]);
    git(&wt, &["fetch", "-q", "origin"]);
    let at_risk = commit_file(&wt, "src/b.rs", "fn b() {}\n", "work at risk \u{1b}[31mred");

    // The agent's home: a conversation, and what a hostile agent leaves beside it.
    let agent_home = inst.dir.join("home");
    let projects = agent_home.join(".claude/projects/-workspace-app");
    fs::create_dir_all(&projects).unwrap();
    fs::write(projects.join("session.jsonl"), CONVERSATION).unwrap();
    // Past --conversation-cap (one byte more than the conversation): named, not copied.
    fs::write(projects.join("zz.jsonl"), "{}\n").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", projects.join("leak.jsonl")).unwrap();
    let fifo = projects.join("pipe.jsonl");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    let sparse = fs::File::create(projects.join("huge.jsonl")).unwrap();
    sparse.set_len(1 << 40).unwrap();
    let elsewhere = home.tmp.path().join("elsewhere/sessions");
    fs::create_dir_all(&elsewhere).unwrap();
    fs::write(elsewhere.join("not-this-session.jsonl"), "someone else's\n").unwrap();
    std::os::unix::fs::symlink(elsewhere.parent().unwrap(), agent_home.join(".codex")).unwrap();

    // A conversation directory deeper than PATH_MAX: named and left out, never a purge refused.
    let deep: Vec<u8> = std::iter::repeat_n(&b"d".repeat(200)[..], 25).collect::<Vec<_>>().join(&b'/');
    common::make_deep(&projects, &[&deep[..], b"/session.jsonl"].concat(), b"too deep\n");
    // And under a path of the operator's, more entries than a record names.
    let many = agent_home.join("notes/many");
    fs::create_dir_all(&many).unwrap();
    for i in 0..10_050 {
        fs::write(many.join(format!("{i:05}")), "").unwrap();
    }

    let out = home.purge(
        &[
            "--discard-unfinished",
            "--record-days",
            "0",
            "--conversation-cap",
            &(CONVERSATION.len() + 1).to_string(),
            "--conversation-path",
            ".claude/projects",
            "--conversation-path",
            ".codex/sessions",
            "--conversation-path",
            "notes",
            &c,
        ],
        "",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let purged = envelopes(&out.stdout)[0].data::<Purged>();
    let quarantine = purged.quarantine.clone().expect("the commit at risk was saved");
    assert!(!inst.dir.exists(), "the data directory is gone");

    let dir = home.home.join("records").join(&c);
    let copied = dir.join("conversation/.claude/projects/-workspace-app/session.jsonl");
    assert_eq!(fs::read(&copied).unwrap(), CONVERSATION, "copied byte for byte");
    let copies: Vec<_> = walkdir::WalkDir::new(dir.join("conversation/.claude")).into_iter().flatten().collect();
    let files: Vec<_> = copies.iter().filter(|e| !e.file_type().is_dir()).map(|e| e.path()).collect();
    assert_eq!(files, vec![copied.as_path()], "only the one regular file of .claude");

    let record: SessionRecord = serde_json::from_value(common::read_json(&dir.join("record.json"))).unwrap();
    assert_eq!(record.identity.container_base, c);
    assert_eq!(record.path, None, "the file does not name its own place");
    let mount = &record.launch.mounts[0];
    assert_eq!((mount.dst.as_str(), mount.isolation.as_str()), ("/workspace/app", "worktree"));
    assert_eq!(record.work.quarantine.as_deref(), Some(quarantine.as_str()));
    let fates: Vec<(&str, &str)> =
        record.work.mounts[0].commits.iter().map(|c| (c.id.as_str(), c.became.as_str())).collect();
    assert_eq!(fates, vec![(at_risk.as_str(), "quarantined"), (pushed.as_str(), "pushed")]);
    let skipped: Vec<(&str, &str)> =
        record.conversation.skipped.iter().map(|s| (s.path.as_str(), s.reason.as_str())).collect();
    assert!(skipped.contains(&(".codex", "a link or not a directory")), "{skipped:?}");
    assert!(
        skipped.iter().any(|(p, r)| p.starts_with(".claude/projects/-workspace-app/ddd") && r.starts_with("cannot be")),
        "the directory past PATH_MAX: {skipped:?}"
    );
    assert!(skipped.contains(&(".claude/projects/-workspace-app/leak.jsonl", "not a regular file")), "{skipped:?}");
    assert!(skipped.contains(&(".claude/projects/-workspace-app/pipe.jsonl", "not a regular file")), "{skipped:?}");
    assert!(
        skipped.contains(&(".claude/projects/-workspace-app/huge.jsonl", "over the conversation cap")),
        "{skipped:?}"
    );
    assert!(
        skipped.contains(&(".claude/projects/-workspace-app/zz.jsonl", "over the conversation cap")),
        "{skipped:?}"
    );
    assert_eq!(record.conversation.bytes, CONVERSATION.len() as u64);
    let named = record.conversation.copied.len() + record.conversation.skipped.len();
    assert!(named <= 10_001, "a bounded record: {named} entries named");
    assert_eq!(record.conversation.skipped.last().unwrap().path, "notes");
    assert!(record.conversation.skipped.last().unwrap().reason.starts_with("more than 10000 entries"));

    // Listed and shown by jackin-restore; the agent's text is inert in the text.
    let listed = home.cmd("jackin-restore").args(["--records", "--format=json"]).output().unwrap();
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let listed: Vec<SessionRecord> = envelopes(&listed.stdout).iter().map(|e| e.data::<SessionRecord>()).collect();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].path.as_deref(), dir.to_str());
    assert_eq!(listed[0].work, record.work);
    let shown = home.cmd("jackin-restore").args(["--record", &inst.id[..6], "--format=text"]).output().unwrap();
    assert_eq!(shown.status.code(), Some(0), "{}", stderr(&shown));
    let text = String::from_utf8(shown.stdout).unwrap();
    assert!(text.contains("work at risk") && text.contains("quarantined") && text.contains("pushed"), "{text}");
    assert!(!text.contains('\u{1b}'), "no escape reaches the terminal: {text:?}");
    // A name that is no record's, or no quarantine's: 6, as a name that is no session's.
    for args in [["--record", "jk-nothere0-x"], ["--recover", "jk-nothere0-x"]] {
        let before = home.snapshot();
        let missing = home.cmd("jackin-restore").args(args).output().unwrap();
        assert_eq!(missing.status.code(), Some(6), "{args:?}: {}", stderr(&missing));
        assert_eq!(home.snapshot(), before, "{args:?}: nothing changed");
    }

    // Kept for --record-days (0 here): the next expiry run deletes it, and only it, and says it
    // was a session record (before, it was called a quarantine).
    let text = home.cmd("jackin-purge").args(["--expire-quarantine", "--dry-run", "--format=text"]).output().unwrap();
    let last = String::from_utf8_lossy(&text.stdout).lines().last().unwrap_or_default().to_owned();
    assert!(last.starts_with("would purge 0 and 1 expired session record · "), "{last}");
    let out = home.purge(&["--expire-quarantine"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let expired: Vec<Purged> = envelopes(&out.stdout).iter().map(|e| e.data::<Purged>()).collect();
    let kinds: Vec<&str> = expired.iter().flat_map(|p| p.removed.iter().map(|r| r.kind.as_str())).collect();
    assert_eq!(kinds, ["session_record"], "{expired:?}");
    assert!(!dir.exists(), "the expired record is gone");
    assert!(Path::new(&quarantine).exists(), "the quarantine keeps its own 14 days");
}
