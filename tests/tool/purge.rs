//! jackin-purge against a real Docker engine and real git repositories.
//!
//! The `decision` records here are composed by hand exactly as protocol.md defines them
//! (`records::Decision`): jackin-keep is being built in parallel, so a real
//! `jackin-assess | jackin-keep --policy clean` pipeline cannot feed these tests yet.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::docker::{docker, docker_quiet, engine_available, Session, SessionOptions, TEST_DIND_IMAGE};
use common::records::{envelopes, records, ErrorRecord, Purged};
use common::{branches, clean_decision, commit_file, git, stderr, unique_id, Home, Instance};
use serde_json::json;

fn decision(inst: &Instance, discard: bool) -> String {
    clean_decision(&inst.container, &inst.id, discard).to_string()
}

fn has_row(home: &Home, container: &str) -> bool {
    home.index_row(container).is_some()
}

fn trash_is_empty(home: &Home) -> bool {
    fs::read_dir(home.home.join("trash")).map_or(true, |mut d| d.next().is_none())
}

#[test]
fn a_clean_decision_removes_everything_of_the_instance_and_nothing_else() {
    if !engine_available("a_clean_decision_removes_everything_of_the_instance_and_nothing_else") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    git(&app, &["branch", "feature/unrelated"]);
    let id = unique_id();
    let inst = home.instance(&id, |h, c| {
        vec![h.worktree_record(c, &app, "/workspace/app"), h.clone_record(c, &app, "/workspace/lib")]
    });
    home.with_sidecar(&inst.container);
    let sidecar_image = Some(TEST_DIND_IMAGE);
    let session =
        Session::launch(&inst.container, SessionOptions { running: false, sidecar_image, ..Default::default() });
    let anonymous = session.sidecar_anonymous_volumes();
    assert_eq!(anonymous.len(), 1, "the sidecar image declares /var/lib/docker: {anonymous:?}");
    fs::create_dir_all(home.home.join("sockets").join(&inst.container)).unwrap();
    fs::write(home.home.join("sockets").join(&inst.container).join("agent.toml"), "role = \"agent-smith\"\n").unwrap();
    fs::write(inst.dir.join("home/conversation.jsonl"), "x".repeat(1000)).unwrap();
    let data = home.home.join("data");
    let lock = data.join(format!("{}.lock", inst.container));
    fs::write(&lock, "").unwrap();
    // jackin's own files beside the instances: never touched.
    let others =
        ["instances.json.lock", "app.repo.lock", "caffeinate.lock", "prewarm-dind.json", "my-app.locks/a.lock"];
    for other in others {
        fs::create_dir_all(data.join(other).parent().unwrap()).unwrap();
        fs::write(data.join(other), "jackin's").unwrap();
    }
    let worktree_path = inst.mount_path(0);
    assert!(git(&app, &["worktree", "list"]).contains(worktree_path.to_str().unwrap()));

    let keep = decision(&inst, false)
        .replace(&inst.container, "jk-zzzzzzzz-other")
        .replace("\"outcome\":\"clean\"", "\"outcome\":\"keep\"");
    assert!(keep.contains("\"outcome\":\"keep\""));
    let future = r#"{"schema_version":1,"type":"future" ,"data":{"z":1}}"#;
    let input = format!("{keep}\n{}\n{future}\n", decision(&inst, false));
    let out = home.purge(&[], &input);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let lines: Vec<&str> = std::str::from_utf8(&out.stdout).unwrap().lines().collect();
    assert_eq!(lines[0], keep, "other records pass through byte for byte, in order");
    assert_eq!(lines[2], future);
    let purged = envelopes(&out.stdout)[1].data::<Purged>();
    assert_eq!(purged.identity.container_base, inst.container);
    assert_eq!(purged.quarantine, None);
    let kinds = purged.removed_kinds();
    for kind in ["container", "network", "volume", "worktree", "branch", "directory", "name_lock", "index_row"] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    assert_eq!(kinds.iter().filter(|k| **k == "container").count(), 2, "role and sidecar");
    assert!(purged.freed_bytes >= 1000);

    for name in [&session.container, session.sidecar.as_ref().unwrap()] {
        assert!(!Session::exists("container", name), "{name} still exists");
    }
    assert!(!Session::exists("network", &session.network));
    assert!(!Session::exists("volume", session.volume.as_ref().unwrap()));
    assert!(!Session::exists("volume", &anonymous[0]), "the sidecar's anonymous volume leaked");
    assert!(!git(&app, &["worktree", "list"]).contains(&inst.container), "the worktree is still registered");
    assert!(!app.join(".git/worktrees").join(&inst.container).exists());
    let b = branches(&app);
    assert!(!b.iter().any(|b| b.contains("jackin/scratch")), "{b:?}");
    assert!(b.contains(&"main".to_owned()) && b.contains(&"feature/unrelated".to_owned()), "{b:?}");
    assert!(!inst.dir.exists() && !home.home.join("sockets").join(&inst.container).exists() && !lock.exists());
    assert!(!has_row(&home, &inst.container));
    assert!(trash_is_empty(&home));
    for other in others {
        assert_eq!(fs::read_to_string(data.join(other)).unwrap(), "jackin's", "{other}");
    }
    assert!(app.join("README.md").exists(), "the host checkout is untouched");
}

#[test]
fn a_running_session_is_refused_without_stop() {
    if !engine_available("a_running_session_is_refused_without_stop") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&unique_id(), |_, _| Vec::new());
    let session = Session::launch(&inst.container, SessionOptions { dind: false, ..Default::default() });
    let before = home.snapshot();
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("is running"), "{}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "live");
    assert_eq!(home.snapshot(), before, "nothing changed");
    assert_eq!(session.state(&inst.container).as_deref(), Some("running"));

    let out = home.purge(&["--stop", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!Session::exists("container", &inst.container));
    assert!(!inst.dir.exists() && !has_row(&home, &inst.container));
}

/// `--stop` decides first: a running session whose work at risk the purge would refuse is not
/// stopped (exit 6, nothing changed); one someone is attached to (`jackin hardline`) is not
/// stopped even with a discard (exit 5).
#[test]
fn a_purge_that_refuses_stops_nothing() {
    if !engine_available("a_purge_that_refuses_stops_nothing") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    fs::write(inst.mount_path(0).join("notes.txt"), "the agent's unsaved notes\n").unwrap();
    let c = inst.container.as_str();
    let session = Session::launch(c, SessionOptions { dind: false, ..Default::default() });
    let before = home.snapshot();
    let out = home.purge(&["--stop", c], "");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "at_risk");
    assert_eq!(session.state(c).as_deref(), Some("running"), "refused, so not stopped");
    assert_eq!(home.snapshot(), before, "nothing changed");

    let attached = common::docker::Attached::to(c);
    for args in [&["--stop", "--discard-unfinished", c][..], &["--stop", "--discard-unfinished", "--dry-run", c]] {
        let out = home.purge(args, "");
        assert_eq!(out.status.code(), Some(5), "{args:?}: {}", stderr(&out));
        assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "live", "{args:?}");
        assert!(stderr(&out).contains("attached"), "{}", stderr(&out));
        assert_eq!(session.state(c).as_deref(), Some("running"), "{args:?}: not stopped under the operator");
        assert_eq!(home.snapshot(), before, "{args:?}: nothing changed");
    }
    drop(attached);
    let out = home.purge(&["--stop", "--discard-unfinished", c], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!Session::exists("container", c));
}

#[test]
fn a_held_name_lock_is_refused() {
    if !engine_available("a_held_name_lock_is_refused") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&unique_id(), |_, _| Vec::new());
    let lock_path = home.home.join("data").join(format!("{}.lock", inst.container));
    let lock = fs::File::create(&lock_path).unwrap();
    fs2::FileExt::lock_exclusive(&lock).unwrap();
    let before = home.snapshot();
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert!(stderr(&out).contains("held by another process"), "{}", stderr(&out));
    if jackin::base::os::NAMES_LOCK_HOLDERS {
        assert!(stderr(&out).contains(&format!("(pid {})", std::process::id())), "the holder named: {}", stderr(&out));
    }
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "busy");
    assert_eq!(home.snapshot(), before);
    drop(lock);
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!lock_path.exists() && !inst.dir.exists());
}

/// A worktree with a commit only its scratch branch has, a modified file, an untracked file
/// and an untracked symlink.
fn at_risk_worktree(home: &mut Home) -> (Instance, PathBuf, String) {
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = inst.mount_path(0);
    git(&wt, &["config", "user.email", "agent@example.invalid"]);
    git(&wt, &["config", "user.name", "Agent"]);
    let commit = commit_file(&wt, "src/feature.rs", "fn feature() {}\n", "agent work");
    fs::write(wt.join("README.md"), "changed by the agent\n").unwrap();
    fs::create_dir_all(wt.join("notes")).unwrap();
    fs::write(wt.join("notes/plan.md"), "the plan\n").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", wt.join("notes/link")).unwrap();
    (inst, app, commit)
}

#[test]
fn work_at_risk_is_refused_then_quarantined_and_comes_back() {
    if !engine_available("work_at_risk_is_refused_then_quarantined_and_comes_back") {
        return;
    }
    let mut home = Home::new();
    let (inst, app, commit) = at_risk_worktree(&mut home);
    let before = home.snapshot();
    let out = home.purge(&[], &format!("{}\n", decision(&inst, false)));
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let recs = records::<ErrorRecord>(&out.stdout);
    assert_eq!(recs[0].code, "at_risk");
    assert!(recs[0].message.contains("1 branch unpushed"), "{recs:?}");
    assert_eq!(home.snapshot(), before, "nothing changed");
    assert!(home.quarantines().is_empty());

    // A decision line that says discard_unfinished, typed rather than made by this home's keep, is
    // a claim nobody here made: refused whole (exit 3), nothing changed.
    let out = home.purge(&[], &format!("{}\n", decision(&inst, true)));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "unproven");
    assert_eq!(home.snapshot(), before, "nothing changed");

    // The decision of this home's keep under the clean policy carries discard_unfinished, sealed:
    // quarantined, then deleted.
    let out = home.purge(&[], &home.decided(&inst.container, &["--policy=clean"]));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recs = records::<Purged>(&out.stdout);
    let q = PathBuf::from(recs[0].quarantine.as_deref().expect("a quarantine path"));
    assert_eq!(home.quarantines(), vec![q.clone()]);
    assert!(q.file_name().unwrap().to_str().unwrap().starts_with(&format!("{}-", inst.container)));
    assert!(!inst.dir.exists());
    assert!(!branches(&app).iter().any(|b| b.contains("jackin/scratch")));

    let receipt = common::state::receipt(&q);
    assert_eq!(receipt.container_base, inst.container.as_str());
    let text = fs::read_to_string(q.join("RECEIPT.txt")).unwrap();
    assert!(text.contains("git fetch") && text.contains("cp -a"), "{text}");
    let mount = &receipt.mounts[0];
    let bundle = q.join(mount.bundle.as_deref().unwrap());

    // The commit comes back into a fresh clone of origin, which never had it.
    let fresh = home.tmp.path().join("fresh");
    let origin = git(&app, &["remote", "get-url", "origin"]);
    git(home.tmp.path(), &["clone", "-q", &origin, fresh.to_str().unwrap()]);
    git(&fresh, &["bundle", "verify", "-q", bundle.to_str().unwrap()]);
    git(&fresh, &["fetch", "-q", bundle.to_str().unwrap(), "refs/*:refs/recovered/*"]);
    let recovered = git(&fresh, &["rev-parse", &format!("refs/recovered/heads/jackin/scratch/{}", inst.container)]);
    assert_eq!(recovered, commit);
    assert_eq!(git(&fresh, &["show", &format!("{commit}:src/feature.rs")]), "fn feature() {}");

    // The dirty files come back as they were; the symlink as a link.
    let files = q.join(mount.files_dir.as_deref().unwrap());
    assert_eq!(fs::read_to_string(files.join("README.md")).unwrap(), "changed by the agent\n");
    assert_eq!(fs::read_to_string(files.join("notes/plan.md")).unwrap(), "the plan\n");
    assert_eq!(fs::read_link(files.join("notes/link")).unwrap(), Path::new("/etc/hostname"));
}

#[test]
fn a_clone_s_stashes_and_unpushed_commits_are_quarantined() {
    if !engine_available("a_clone_s_stashes_and_unpushed_commits_are_quarantined") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.clone_record(c, &app, "/workspace/app")]);
    let clone = inst.mount_path(0);
    let commit = commit_file(&clone, "lib.rs", "pub fn x() {}\n", "unpushed in the clone");
    fs::write(clone.join("README.md"), "stashed change\n").unwrap();
    git(&clone, &["stash", "-q"]);
    let stash = git(&clone, &["rev-parse", "refs/stash"]);
    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = PathBuf::from(records::<Purged>(&out.stdout)[0].quarantine.as_deref().unwrap());
    let receipt = common::state::receipt(&q);
    let bundle = q.join(receipt.mounts[0].bundle.as_deref().unwrap());
    let fresh = home.tmp.path().join("fresh");
    git(
        home.tmp.path(),
        &["clone", "-q", git(&app, &["remote", "get-url", "origin"]).as_str(), fresh.to_str().unwrap()],
    );
    git(&fresh, &["fetch", "-q", bundle.to_str().unwrap(), "refs/*:refs/recovered/*"]);
    assert_eq!(git(&fresh, &["rev-parse", "refs/recovered/heads/main"]), commit);
    assert_eq!(git(&fresh, &["rev-parse", "refs/recovered/stashes/stash-0"]), stash);
    assert_eq!(git(&fresh, &["show", &format!("{stash}:README.md")]), "stashed change");
    assert!(!inst.dir.exists());
}

#[test]
fn a_symlink_out_of_the_data_dir_is_removed_as_a_link() {
    if !engine_available("a_symlink_out_of_the_data_dir_is_removed_as_a_link") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&unique_id(), |_, _| Vec::new());
    let outside = home.tmp.path().join("precious");
    fs::create_dir_all(outside.join("sub")).unwrap();
    fs::write(outside.join("sub/data.txt"), "precious").unwrap();
    std::os::unix::fs::symlink(&outside, inst.dir.join("home/escape")).unwrap();
    std::os::unix::fs::symlink(outside.join("sub/data.txt"), inst.dir.join("state/file-link")).unwrap();
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!inst.dir.exists());
    assert_eq!(fs::read_to_string(outside.join("sub/data.txt")).unwrap(), "precious");
}

#[test]
fn dry_run_changes_nothing_and_says_what_would_go() {
    if !engine_available("dry_run_changes_nothing_and_says_what_would_go") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let _session =
        Session::launch(&inst.container, SessionOptions { dind: false, running: false, ..Default::default() });
    let before = home.snapshot();
    let branches_before = branches(&app);
    let out = home.purge(&["--dry-run", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recs = records::<Purged>(&out.stdout);
    assert!(recs[0].dry_run);
    let kinds = recs[0].removed_kinds();
    for kind in ["container", "network", "worktree", "branch", "directory", "index_row"] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    assert_eq!(home.snapshot(), before);
    assert_eq!(branches(&app), branches_before);
    assert!(Session::exists("container", &inst.container));
}

#[test]
fn bad_input_changes_nothing() {
    if !engine_available("bad_input_changes_nothing") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&unique_id(), |_, _| Vec::new());
    let before = home.snapshot();
    let good = decision(&inst, false);
    let bad_name = good.replace(&inst.container, "../../etc");
    let bad_lock =
        r#"{"schema_version":1,"type":"orphan","data":{"kind":"name_lock","name":"instances.json","reason":"x"}}"#;
    let bad_temp =
        r#"{"schema_version":1,"type":"orphan","data":{"kind":"temp_file","name":"../x.tmp.1.2","reason":"x"}}"#;
    for (input, needle) in [
        (format!("{good}\nnot json\n"), "line 2: not JSON"),
        (format!("{good}\n{bad_name}\n"), "line 2: bad decision record"),
        (
            format!("{good}\n{{\"schema_version\":1,\"type\":\"decision\",\"data\":{{}}}}\n"),
            "line 2: bad decision record",
        ),
        (format!("{good}\n{bad_lock}\n"), "line 2: bad orphan record"),
        (format!("{good}\n{bad_temp}\n"), "line 2: bad orphan record"),
        (format!("{good}\n{{\"schema_version\":2,\"type\":\"decision\",\"data\":{{}}}}\n"), "newer than this tool"),
    ] {
        let out = home.purge(&[], &input);
        assert_eq!(out.status.code(), Some(3), "{input}: {}", stderr(&out));
        assert!(stderr(&out).contains(needle), "{input}: {}", stderr(&out));
        assert!(out.stdout.is_empty());
        assert_eq!(home.snapshot(), before, "{input}");
    }
    for bad in ["../etc", "jk-../../etc", "/etc/passwd", "jk-a/b"] {
        let out = home.purge(&[bad], "");
        assert_eq!(out.status.code(), Some(2), "{bad}");
        assert_eq!(home.snapshot(), before);
    }
    let out = home.purge(&["jk-zzzzzzzz-nobody"], "");
    assert_eq!(out.status.code(), Some(6));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "unknown_instance");
    assert_eq!(home.snapshot(), before);
}

/// An orphan of a kind this purge does not know (a word of a newer version, or a kind that is
/// never an orphan) is refused on its own: not bad input, so the rest of the run goes on.
#[test]
fn an_orphan_of_an_unknown_kind_is_refused_alone_and_the_others_go() {
    if !engine_available("an_orphan_of_an_unknown_kind_is_refused_alone_and_the_others_go") {
        return;
    }
    let home = Home::new();
    let gone = format!("jk-{}-myapp-agentsmith", unique_id());
    let lock = home.home.join("data").join(format!("{gone}.lock"));
    fs::write(&lock, "").unwrap();
    let orphan = |kind: &str, name: &str| json!({"schema_version":1,"type":"orphan","data":{"kind":kind,"name":name,"reason":"instance gone"}});
    let input = format!(
        "{}\n{}\n{}\n",
        orphan("gadget", &gone),
        orphan("worktree", &gone),
        orphan("name_lock", lock.to_str().unwrap())
    );
    let out = home.purge(&[], &input);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let lines = envelopes(&out.stdout);
    let errors: Vec<ErrorRecord> = lines.iter().filter(|e| e.is::<ErrorRecord>()).map(|e| e.data()).collect();
    let refused: Vec<(&str, &str)> = errors.iter().map(|e| (e.code.as_str(), e.message.as_str())).collect();
    assert_eq!(
        refused,
        [
            ("unknown_orphan_kind", "orphan kind \"gadget\" is not one this purge knows; left alone"),
            ("unknown_orphan_kind", "orphan kind \"worktree\" is not one this purge knows; left alone"),
        ]
    );
    let purged: Vec<Purged> = lines.iter().filter(|e| e.is::<Purged>()).map(|e| e.data()).collect();
    assert_eq!(purged.len(), 1);
    assert_eq!(purged[0].removed_kinds(), ["name_lock"]);
    assert!(!lock.exists());
}

/// A dry run of orphan name locks says what a real run would do: a free one would go, a held one
/// is refused as busy; neither is touched.
#[test]
fn a_dry_run_of_orphan_name_locks_tells_a_free_one_from_a_held_one() {
    if !engine_available("a_dry_run_of_orphan_name_locks_tells_a_free_one_from_a_held_one") {
        return;
    }
    let home = Home::new();
    let data = home.home.join("data");
    let free = data.join(format!("jk-{}-myapp-agentsmith.lock", unique_id()));
    let held = data.join(format!("jk-{}-myapp-agentsmith.lock", unique_id()));
    fs::write(&free, "").unwrap();
    let holder = fs::File::create(&held).unwrap();
    fs2::FileExt::lock_exclusive(&holder).unwrap();
    let orphan = |path: &Path| json!({"schema_version":1,"type":"orphan","data":{"kind":"name_lock","name":path.to_str().unwrap(),"reason":"instance gone"}});
    let before = home.snapshot();

    let out = home.purge(&["--dry-run"], &format!("{}\n", orphan(&free)));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let purged = records::<Purged>(&out.stdout);
    assert_eq!(purged.len(), 1, "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(purged[0].removed_kinds(), ["name_lock"]);

    let out = home.purge(&["--dry-run"], &format!("{}\n", orphan(&held)));
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let lines = envelopes(&out.stdout);
    let errors: Vec<ErrorRecord> = lines.iter().filter(|e| e.is::<ErrorRecord>()).map(|e| e.data()).collect();
    assert_eq!(errors.iter().map(|e| e.code.as_str()).collect::<Vec<_>>(), ["busy"]);
    let purged: Vec<Purged> = lines.iter().filter(|e| e.is::<Purged>()).map(|e| e.data()).collect();
    assert!(purged.iter().all(|p| p.removed_kinds().is_empty()), "{purged:?}");

    assert_eq!(home.snapshot(), before);
    assert!(free.exists() && held.exists());
    drop(holder);
}

#[test]
fn orphans_are_removed_and_jackin_s_other_files_are_not() {
    if !engine_available("orphans_are_removed_and_jackin_s_other_files_are_not") {
        return;
    }
    let mut home = Home::new();
    let live = home.instance(&unique_id(), |_, _| Vec::new());
    let data = home.home.join("data");
    let gone = format!("jk-{}-myapp-agentsmith", unique_id());
    let gone_net = format!("{gone}-net");
    let gone_vol = format!("{gone}-dind-certs");
    docker(&["network", "create", "--label", "jackin.managed=true", &gone_net]);
    docker(&["volume", "create", &gone_vol]);
    fs::write(data.join(format!("{gone}.lock")), "").unwrap();
    fs::write(data.join(format!("{}.lock", live.container)), "").unwrap();
    // A lock of a gone session that some process holds (a launch taking the name again): busy.
    let taken = format!("jk-{}-myapp-agentsmith", unique_id());
    let held = fs::File::create(data.join(format!("{taken}.lock"))).unwrap();
    fs2::FileExt::lock_exclusive(&held).unwrap();
    fs::write(data.join("instances.json.tmp.999999999.3"), "{").unwrap();
    fs::write(data.join("instances.json.lock"), "").unwrap();
    let orphan = |kind: &str, name: &str| {
        json!({"schema_version":1,"type":"orphan","data":{"kind":kind,"name":name,"reason":"instance gone"}})
            .to_string()
    };
    let input = [
        orphan("network", &gone_net),
        orphan("volume", &gone_vol),
        orphan("name_lock", &format!("{gone}.lock")),
        orphan("name_lock", &live.container),
        orphan("temp_file", "instances.json.tmp.999999999.3"),
        orphan("name_lock", &format!("{taken}.lock")),
    ]
    .join("\n");
    let out = home.purge(&[], &input);
    docker_quiet(&["network", "rm", &gone_net]);
    docker_quiet(&["volume", "rm", &gone_vol]);
    assert_eq!(out.status.code(), Some(6), "the live instance's lock is refused: {}", stderr(&out));
    let recs = envelopes(&out.stdout);
    assert_eq!(recs.iter().filter(|r| r.is::<Purged>()).count(), 4, "{recs:?}");
    assert_eq!(recs[3].data::<ErrorRecord>().code, "not_orphan");
    let busy = recs[5].data::<ErrorRecord>();
    assert!(busy.code == "busy" && busy.message.contains("held by another process"), "{busy:?}");
    assert!(data.join(format!("{taken}.lock")).exists(), "a held lock stays");
    drop(held);
    assert!(!Session::exists("network", &gone_net) && !Session::exists("volume", &gone_vol));
    assert!(!data.join(format!("{gone}.lock")).exists());
    assert!(!data.join("instances.json.tmp.999999999.3").exists());
    assert!(data.join(format!("{}.lock", live.container)).exists());
    assert!(data.join("instances.json.lock").exists());
    assert!(live.dir.exists() && has_row(&home, &live.container));
}

#[test]
fn terminal_and_retention_select_the_right_instances() {
    if !engine_available("terminal_and_retention_select_the_right_instances") {
        return;
    }
    let mut home = Home::new();
    let done = home.instance(&unique_id(), |_, _| Vec::new());
    let active = home.instance(&unique_id(), |_, _| Vec::new());
    let kept_old = home.instance(&unique_id(), |_, _| Vec::new());
    let kept_new = home.instance(&unique_id(), |_, _| Vec::new());
    // Written after every instance exists: `Home::instance` rewrites the index from its own rows.
    home.set_status(&done.container, "clean_exited", Some("2026-01-01T00:00:00Z"));
    home.set_status(&kept_new.container, "restore_available", Some("2026-01-03T00:00:00Z"));
    home.set_status(&kept_old.container, "restore_available", Some("2026-01-02T00:00:00Z"));

    let out = home.purge(&["--terminal"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(records::<Purged>(&out.stdout).len(), 1);
    assert!(!done.dir.exists() && !has_row(&home, &done.container));
    assert!(active.dir.exists() && kept_old.dir.exists() && kept_new.dir.exists());

    let out = home.purge(&["--keep-last", "1"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(records::<Purged>(&out.stdout)[0].identity.container_base, kept_old.container);
    assert!(!kept_old.dir.exists() && kept_new.dir.exists() && active.dir.exists());

    let out = home.purge(&["--older-than", "1h"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!kept_new.dir.exists() && active.dir.exists(), "active is never a retention target");

    // A kept session past retention that still holds work is left alone and said, and the run
    // succeeds: a daily timer does not fail every day over it.
    let (held, _, _) = at_risk_worktree(&mut home);
    home.set_status(&held.container, "restore_available", Some("2026-01-01T00:00:00Z"));
    let out = home.purge(&["--older-than", "1h"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(held.dir.exists(), "work at risk is never deleted by retention");
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    assert!(said.contains(&held.container) && said.contains("left alone"), "{said}");
}

#[test]
fn expired_quarantines_are_deleted() {
    if !engine_available("expired_quarantines_are_deleted") {
        return;
    }
    let mut home = Home::new();
    let (inst, _, _) = at_risk_worktree(&mut home);
    // The dry run of the discard says where the work would be saved first.
    let out = home.purge(&["--discard-unfinished", "--dry-run", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let saved_in = records::<Purged>(&out.stdout)[0].quarantine.clone().expect("the quarantine named");
    let prefix = home.home.join("quarantine").join(format!("{}-", inst.container));
    assert!(saved_in.starts_with(prefix.to_str().unwrap()), "{saved_in}");
    assert!(home.quarantines().is_empty(), "a dry run saves nothing");
    let text = home
        .cmd("jackin-purge")
        .args(["--discard-unfinished", "--dry-run", "--format=text", &inst.container])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("unfinished work would be saved in "), "{text:?}");
    let out = home.purge(&["--discard-unfinished", "--quarantine-days", "0", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(home.quarantines().len(), 1);
    let out = home.purge(&["--expire-quarantine", "--dry-run"], "");
    assert_eq!(records::<Purged>(&out.stdout)[0].removed[0].kind, "quarantine");
    let text = home.cmd("jackin-purge").args(["--expire-quarantine", "--dry-run", "--format=text"]).output().unwrap();
    let last = String::from_utf8_lossy(&text.stdout).lines().last().unwrap_or_default().to_owned();
    assert!(last.starts_with("would purge 0 and 1 expired quarantine · "), "{last}");
    assert_eq!(home.quarantines().len(), 1);
    let out = home.purge(&["--expire-quarantine"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(records::<Purged>(&out.stdout)[0].identity.container_base, inst.container);
    assert!(home.quarantines().is_empty());
}

#[test]
fn no_quarantine_discards_without_saving() {
    if !engine_available("no_quarantine_discards_without_saving") {
        return;
    }
    let mut home = Home::new();
    let (inst, _, _) = at_risk_worktree(&mut home);
    let out = home.purge(&["--discard-unfinished", "--no-quarantine", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(records::<Purged>(&out.stdout)[0].quarantine, None);
    assert!(home.quarantines().is_empty() && !inst.dir.exists());
}

/// A purge that died after its mark leaves the mark behind. When the session changes after that
/// (here its status and time are written anew, as a resume would) and the agent works on, a
/// later purge must judge the work as it is, not trust the old mark and delete it unseen.
#[test]
fn a_purge_mark_from_before_the_session_changed_is_not_trusted() {
    if !engine_available("a_purge_mark_from_before_the_session_changed_is_not_trusted") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let mut first = home.cmd("jackin-purge");
    first.args(["--format=json", &inst.container]).env("JACKIN_PURGE_CRASH_AT", "stamped");
    assert_eq!(first.output().unwrap().status.code(), None, "killed after the mark and the stamp");
    assert!(inst.dir.join(".jackin/purge.json").exists());

    home.set_status(&inst.container, "active", Some("2026-12-01T09:00:00Z"));
    let wt = inst.mount_path(0);
    fs::write(wt.join("new-work.txt"), "written after the failed purge\n").unwrap();
    let before = home.snapshot();
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let errors = records::<ErrorRecord>(&out.stdout);
    assert_eq!(errors[0].code, "at_risk", "{:?}", errors);
    assert_eq!(home.snapshot(), before, "nothing changed");

    // With the work allowed to go, it is saved first, and the purge finishes.
    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let quarantine = records::<Purged>(&out.stdout)[0].quarantine.clone().expect("the new work was saved");
    let q = Path::new(&quarantine);
    let receipt = common::state::receipt(q);
    let files = q.join(receipt.mounts[0].files_dir.as_deref().unwrap());
    assert_eq!(fs::read_to_string(files.join("new-work.txt")).unwrap(), "written after the failed purge\n");
    assert!(!inst.dir.exists());
}

/// A manifest that cannot be read: refused with the way forward, and nothing changes; with
/// `--discard-unfinished` the session goes by the names derived from its container name, its work
/// at risk saved first (state.md: the names are derived when the manifest is missing or
/// unreadable).
#[test]
fn an_unreadable_manifest_is_refused_with_the_way_forward_and_a_discard_purges_it() {
    if !engine_available("an_unreadable_manifest_is_refused_with_the_way_forward_and_a_discard_purges_it") {
        return;
    }
    let mut home = Home::new();
    let (inst, app, commit) = at_risk_worktree(&mut home);
    let _session =
        Session::launch(&inst.container, SessionOptions { dind: false, running: false, ..Default::default() });
    fs::write(inst.dir.join(".jackin/instance.json"), "{\"version\": 2, \"instance_id\": ").unwrap();
    let before = home.snapshot();
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let error = &records::<ErrorRecord>(&out.stdout)[0];
    assert_eq!(error.code, "manifest_unreadable");
    assert!(error.message.contains("--discard-unfinished purges it"), "{}", error.message);
    assert_eq!(home.snapshot(), before, "nothing changed");
    assert!(Session::exists("container", &inst.container));

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let purged = &records::<Purged>(&out.stdout)[0];
    assert!(purged.removed_kinds().contains(&"container"), "{:?}", purged.removed);
    // The manifest unreadable, the instance is named as its index row names it.
    assert_eq!(purged.identity.workspace_name.as_deref(), Some("my-app"), "{purged:?}");
    let q = PathBuf::from(purged.quarantine.clone().expect("the work was saved"));
    let receipt = common::state::receipt(&q);
    let files = q.join(receipt.mounts[0].files_dir.as_deref().unwrap());
    assert_eq!(fs::read_to_string(files.join("README.md")).unwrap(), "changed by the agent\n");
    let bundle = q.join(receipt.mounts[0].bundle.as_deref().unwrap());
    git(&app, &["fetch", "-q", bundle.to_str().unwrap(), "refs/*:refs/recovered/*"]);
    assert_eq!(git(&app, &["rev-parse", &format!("refs/recovered/heads/jackin/scratch/{}", inst.container)]), commit);
    assert!(!inst.dir.exists() && !has_row(&home, &inst.container));
    assert!(!Session::exists("container", &inst.container));
}

/// Kill the purge right after `step`, check the index is valid JSON, rerun, check the end state.
fn crash_at(step: &str) {
    if !engine_available(&format!("crash_at_{step}")) {
        return;
    }
    let mut home = Home::new();
    let (inst, app, _) = at_risk_worktree(&mut home);
    let _session =
        Session::launch(&inst.container, SessionOptions { dind: false, running: false, ..Default::default() });
    fs::write(home.home.join("data").join(format!("{}.lock", inst.container)), "").unwrap();
    // The capsule's sockets directory, as jackin leaves one beside the data directory.
    let sockets = home.home.join("sockets").join(&inst.container);
    fs::create_dir_all(&sockets).unwrap();
    fs::write(sockets.join("agent.toml"), "").unwrap();
    let mut cmd = home.cmd("jackin-purge");
    cmd.args(["--discard-unfinished", "--format=json", &inst.container]).env("JACKIN_PURGE_CRASH_AT", step);
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), None, "{step}: the process was killed: {}", stderr(&out));
    let rows = home.index_rows();
    if !["quarantined", "recorded"].contains(&step) {
        if let Some(row) = rows.iter().find(|r| r.container_base == inst.container) {
            assert_eq!(row.status, "purged", "{step}: an honest index says the purge is under way");
        }
    }

    if step == "trash" {
        // Each directory in the trash says whose and which it was, for an operator who looks.
        let names: Vec<String> = fs::read_dir(home.home.join("trash"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        let data = names.iter().find(|n| n.starts_with(&format!("{}.data.", inst.container)));
        let data = data.unwrap_or_else(|| panic!("{step}: no data directory in the trash: {names:?}"));
        assert!(home.home.join("trash").join(data).join("home").is_dir(), "{step}: {data} is the data directory");
        let socket_dir = names.iter().find(|n| n.starts_with(&format!("{}.sockets.", inst.container)));
        let socket_dir = socket_dir.unwrap_or_else(|| panic!("{step}: no sockets directory in the trash: {names:?}"));
        assert!(home.home.join("trash").join(socket_dir).join("agent.toml").is_file(), "{step}: {socket_dir}");
    }

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    let finished_already = step == "row";
    if finished_already {
        assert_eq!(out.status.code(), Some(6), "{step}: {}", stderr(&out));
    } else {
        assert_eq!(out.status.code(), Some(0), "{step}: {}", stderr(&out));
        assert_eq!(records::<Purged>(&out.stdout).len(), 1, "{step}");
    }
    assert!(!has_row(&home, &inst.container), "{step}");
    assert!(!inst.dir.exists(), "{step}");
    assert!(!sockets.exists(), "{step}");
    assert!(!home.home.join("data").join(format!("{}.lock", inst.container)).exists(), "{step}");
    assert!(!Session::exists("container", &inst.container), "{step}");
    assert!(!git(&app, &["worktree", "list"]).contains(&inst.container), "{step}");
    assert!(!branches(&app).iter().any(|b| b.contains("jackin/scratch")), "{step}");
    assert!(trash_is_empty(&home), "{step}");
    assert!(!home.quarantines().is_empty(), "{step}: the work was saved");
    for q in home.quarantines() {
        assert!(q.join("receipt.json").exists(), "{step}: {} is complete", q.display());
    }
    let records = home.home.join("records");
    assert!(records.join(&inst.container).join("record.json").is_file(), "{step}: the session's record is whole");
    let partial = fs::read_dir(&records).unwrap().flatten().any(|e| e.file_name().to_string_lossy().starts_with('.'));
    assert!(!partial, "{step}: no half-written record is left");
}

#[test]
fn crash_after_quarantined() {
    crash_at("quarantined");
}
#[test]
fn crash_after_recorded() {
    crash_at("recorded");
}
#[test]
fn crash_after_stamped() {
    crash_at("stamped");
}
#[test]
fn crash_after_docker() {
    crash_at("docker");
}
#[test]
fn crash_after_worktrees() {
    crash_at("worktrees");
}
#[test]
fn crash_after_trash() {
    crash_at("trash");
}
#[test]
fn crash_after_dirs() {
    crash_at("dirs");
}
#[test]
fn crash_after_lock() {
    crash_at("lock");
}
#[test]
fn crash_after_row() {
    crash_at("row");
}

/// The `"…"` arguments of every call `call("…")` in `source`, in order.
fn quoted_arguments(source: &str, call: &str) -> Vec<String> {
    let open = format!("{call}(\"");
    source.match_indices(&open).map(|(at, _)| source[at + open.len()..].split('"').next().unwrap().to_owned()).collect()
}

/// A crash point added to the code and not listed, listed and never passed, or without a test
/// here, fails: every `crash_point("…")` of a tool in lib/ is one of its listed points, in order,
/// each listed once; every listed point of purge has its `crash_at` test in this file (keep's and
/// restore's are run by the reliability suite's crash row, which walks the same lists; import's by
/// tests/tool/moves.rs, which walks its list).
#[test]
fn every_crash_point_is_listed_passed_and_tested() {
    use jackin::base::tool::Tool;
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut called: Vec<(Tool, Vec<String>)> =
        vec![(Tool::Purge, vec![]), (Tool::Keep, vec![]), (Tool::Restore, vec![]), (Tool::Import, vec![])];
    for entry in walkdir::WalkDir::new(root.join("lib")).into_iter().filter_map(Result::ok) {
        let Ok(source) = fs::read_to_string(entry.path()) else { continue };
        let points = quoted_arguments(&source, "crash_point");
        if points.is_empty() {
            continue;
        }
        let tools = [
            ("Tool::Purge", Tool::Purge),
            ("Tool::Keep", Tool::Keep),
            ("Tool::Restore", Tool::Restore),
            ("Tool::Import", Tool::Import),
        ];
        // The keep sequence (services/keeping.rs) passes its points for whichever tool keeps:
        // jackin-keep's, and jackin-idle's after its own `checked` (checked below).
        let shared_keep = entry.path().ends_with("lib/services/keeping.rs");
        let tool = tools
            .into_iter()
            .find(|(name, tool)| {
                source.contains(name)
                    || entry.path().starts_with(root.join("lib/tools/purge"))
                    || (shared_keep && *tool == Tool::Keep)
            })
            .map(|(_, tool)| tool)
            .unwrap_or_else(|| panic!("{}: crash points of no tool", entry.path().display()));
        called.iter_mut().find(|(t, _)| *t == tool).unwrap().1.extend(points);
    }
    let listed = |tool: Tool| match tool {
        Tool::Purge => jackin::tools::purge::CRASH_POINTS,
        Tool::Keep => jackin::tools::keep::CRASH_POINTS,
        Tool::Restore => jackin::tools::restore::CRASH_POINTS,
        Tool::Import => jackin::extras::moves::import::CRASH_POINTS,
        other => panic!("{other:?} has no crash points"),
    };
    for (tool, points) in &called {
        assert_eq!(points, listed(*tool), "{tool:?}: the crash points called, in the order of the source");
    }
    let this_file = fs::read_to_string(root.join("tests/tool/purge.rs")).unwrap();
    let mut tested = quoted_arguments(&this_file, "crash_at");
    tested.retain(|step| !step.contains('{'));
    assert_eq!(tested, listed(Tool::Purge), "a crash_at test for each of purge's crash points, in order");
    let walks = |file: &str, list: &str| fs::read_to_string(root.join(file)).unwrap().contains(list);
    assert!(walks("tests/safety/reliability.rs", "keep::CRASH_POINTS"), "the reliability suite walks keep's points");
    assert!(
        walks("tests/safety/reliability.rs", "restore::CRASH_POINTS"),
        "the reliability suite walks restore's points"
    );
    assert!(walks("tests/tool/moves.rs", "moves::import::CRASH_POINTS"), "tests/tool/moves.rs walks import's points");
    let idle = jackin::extras::idle::act::CRASH_POINTS;
    assert_eq!((idle[0], &idle[1..]), ("checked", listed(Tool::Keep)), "jackin-idle: checked, then the keep's points");
    assert!(walks("tests/tool/idle.rs", "Tool::Idle, \"checked\""), "tests/tool/idle.rs pauses jackin-idle at checked");
}

#[test]
fn in_the_text_format_records_passed_through_are_shown_as_text() {
    let mut home = Home::new();
    let inst = home.instance(&unique_id(), |_, _| Vec::new());
    let keep = decision(&inst, false).replace("\"outcome\":\"clean\"", "\"outcome\":\"keep\"");
    let future = r#"{"schema_version":1,"type":"future","data":{"z":1}}"#;
    let before = home.snapshot();
    let out =
        home.cmd("jackin-purge").arg("--format=text").write_stdin(format!("{keep}\n{future}\n")).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines, [format!("{} · keep · clean session (clean policy)", inst.container).as_str(), future]);
    assert_eq!(home.snapshot(), before, "a keep decision purges nothing");
}

/// Two sessions of one host repository whose worktrees are clean at a commit that only their two
/// scratch branches reach: each, alone, is safe to purge because the other's branch survives.
fn sessions_sharing_a_commit(home: &mut Home) -> (Instance, Instance, PathBuf, String) {
    let app = home.host_repo("app");
    let first = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let second = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = first.mount_path(0);
    git(&wt, &["config", "user.email", "agent@example.invalid"]);
    git(&wt, &["config", "user.name", "Agent"]);
    let commit = commit_file(&wt, "src/feature.rs", "fn feature() {}\n", "agent work");
    git(&second.mount_path(0), &["reset", "-q", "--hard", &commit]);
    (first, second, app, commit)
}

/// Purges at once: two jackin-purge processes, one per session, each counting on the other's
/// scratch branch. Serialised per host repository, the second re-assesses after the first deleted
/// its branch, finds the commit at risk and refuses; the commit survives every round.
#[test]
fn two_purges_at_once_never_both_count_on_each_others_scratch_branch() {
    if !engine_available("two_purges_at_once_never_both_count_on_each_others_scratch_branch") {
        return;
    }
    for round in 0..20 {
        let mut home = Home::new();
        let (first, second, app, commit) = sessions_sharing_a_commit(&mut home);
        let spawn = |inst: &Instance| {
            std::process::Command::new(common::tool_path("jackin-purge"))
                .arg("--home")
                .arg(&home.home)
                .arg("--config-dir")
                .arg(&home.config)
                .args(["--format=json", &inst.container])
                .env_remove("JACKIN_HOME_DIR")
                .env_remove("JACKIN_CONFIG_DIR")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn(&first), spawn(&second));
        let (a, b) = (a.wait_with_output().unwrap(), b.wait_with_output().unwrap());
        let mut codes = [a.status.code(), b.status.code()];
        codes.sort();
        let refs = git(&app, &["for-each-ref", "--contains", &commit, "--format=%(refname)"]);
        assert!(!refs.is_empty(), "round {round}: the commit is lost: {} / {}", stderr(&a), stderr(&b));
        assert_eq!(codes, [Some(0), Some(6)], "round {round}: {} / {}", stderr(&a), stderr(&b));
    }
}

/// Unreadable isolation records: no mount can be assessed, so a discard moves the instance's
/// whole `git/` tree into the quarantine before anything is deleted, and the receipt says so.
#[test]
fn unreadable_isolation_records_put_the_whole_git_tree_in_the_quarantine() {
    if !engine_available("unreadable_isolation_records_put_the_whole_git_tree_in_the_quarantine") {
        return;
    }
    let mut home = Home::new();
    let (inst, _, _) = at_risk_worktree(&mut home);
    let worktree = inst.mount_path(0);
    let rel = worktree.strip_prefix(inst.dir.join("git")).unwrap().to_path_buf();
    fs::write(inst.dir.join(".jackin/isolation.json"), "{\"version\": 1, \"records\": ").unwrap();

    let before = home.snapshot();
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(6), "unreadable work is at risk: {}", stderr(&out));
    assert_eq!(home.snapshot(), before);

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!inst.dir.exists());
    let q = home.quarantines().pop().expect("a quarantine");
    let saved = q.join("git").join(&rel);
    assert_eq!(fs::read_to_string(saved.join("README.md")).unwrap(), "changed by the agent\n");
    assert_eq!(fs::read_to_string(saved.join("notes/plan.md")).unwrap(), "the plan\n");
    let receipt = common::state::receipt(&q);
    assert_eq!(receipt.git_tree.as_deref(), Some("git"));
    let text = fs::read_to_string(q.join("RECEIPT.txt")).unwrap();
    assert!(text.contains("git/ tree of the instance"), "{text}");
}

/// The trash on another filesystem than the data (EXDEV on the rename): the directories are
/// deleted in place, links unlinked and never followed, and the purge finishes.
#[test]
fn a_trash_on_another_filesystem_deletes_in_place() {
    if !engine_available("a_trash_on_another_filesystem_deletes_in_place") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&unique_id(), |_, _| Vec::new());
    let test = "a_trash_on_another_filesystem_deletes_in_place";
    let Some(_trash) = common::Tmpfs::mount(test, &home.home.join("trash"), "mode=0700,size=16m") else {
        return;
    };
    let outside = home.tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("keep.txt"), "not the instance's").unwrap();
    fs::write(inst.dir.join("home/notes.txt"), "12345").unwrap();
    std::os::unix::fs::symlink(&outside, inst.dir.join("home/link")).unwrap();
    let sockets = home.home.join("sockets").join(&inst.container);
    fs::create_dir_all(&sockets).unwrap();
    fs::write(sockets.join("agent.toml"), "x").unwrap();

    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!inst.dir.exists() && !sockets.exists() && !has_row(&home, &inst.container));
    assert_eq!(fs::read_to_string(outside.join("keep.txt")).unwrap(), "not the instance's");
    assert!(records::<Purged>(&out.stdout)[0].freed_bytes >= 5);
    assert_eq!(fs::read_dir(home.home.join("trash")).unwrap().count(), 0, "nothing was left in the trash");
}

/// `--dry-run` prints the plan a run then applies: over a clean session (worktree, clone, sidecar,
/// sockets, name lock), one at risk (discarded), one whose isolation records do not parse
/// (discarded), one with only its index row left, and a live one, the dry run's `purged` records
/// name exactly what the run then removes, in the same order, and its refusals are the run's.
#[test]
fn a_dry_run_names_exactly_what_the_run_then_removes() {
    if !engine_available("a_dry_run_names_exactly_what_the_run_then_removes") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let clean = home.instance(&unique_id(), |h, c| {
        vec![h.worktree_record(c, &app, "/workspace/app"), h.clone_record(c, &app, "/workspace/lib")]
    });
    home.with_sidecar(&clean.container);
    let _clean_session = Session::launch(&clean.container, SessionOptions { running: false, ..Default::default() });
    fs::create_dir_all(home.home.join("sockets").join(&clean.container)).unwrap();
    fs::write(home.home.join("sockets").join(&clean.container).join("agent.toml"), "role = \"x\"\n").unwrap();
    fs::write(home.home.join("data").join(format!("{}.lock", clean.container)), "").unwrap();
    let at_risk_session = |home: &mut Home| {
        let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
        let wt = inst.mount_path(0);
        git(&wt, &["config", "user.email", "agent@example.invalid"]);
        git(&wt, &["config", "user.name", "Agent"]);
        commit_file(&wt, "src/feature.rs", "fn feature() {}\n", "agent work");
        fs::write(wt.join("README.md"), "changed by the agent\n").unwrap();
        inst
    };
    let at_risk = at_risk_session(&mut home);
    let unreadable = at_risk_session(&mut home);
    fs::write(unreadable.dir.join(".jackin/isolation.json"), "{\"version\": 1, \"records\": [").unwrap();
    let row_only = home.instance(&unique_id(), |_, _| Vec::new());
    fs::remove_dir_all(&row_only.dir).unwrap();
    let live = home.instance(&unique_id(), |_, _| Vec::new());
    let _live_session = Session::launch(&live.container, SessionOptions { dind: false, ..Default::default() });
    let all = [&clean, &at_risk, &unreadable, &row_only, &live];
    let mut args: Vec<&str> = vec!["--discard-unfinished"];
    args.extend(all.iter().map(|i| i.container.as_str()));

    let report = |out: &std::process::Output| {
        let envelopes = envelopes(&out.stdout);
        let purged: Vec<(String, Vec<(String, String)>)> = envelopes
            .iter()
            .filter(|e| e.is::<Purged>())
            .map(|e| e.data::<Purged>())
            .map(|p| (p.identity.container_base, p.removed.into_iter().map(|r| (r.kind, r.name)).collect()))
            .collect();
        let refused: Vec<(Option<String>, String)> = envelopes
            .iter()
            .filter(|e| e.is::<ErrorRecord>())
            .map(|e| e.data::<ErrorRecord>())
            .map(|e| (e.container_base, e.code))
            .collect();
        (purged, refused)
    };
    let mut dry_args = args.clone();
    dry_args.push("--dry-run");
    let before = home.snapshot();
    let dry = home.purge(&dry_args, "");
    assert_eq!(dry.status.code(), Some(5), "the live one is busy: {}", stderr(&dry));
    assert_eq!(home.snapshot(), before, "a dry run changes nothing");
    let run = home.purge(&args, "");
    assert_eq!(run.status.code(), Some(5), "{}", stderr(&run));
    let (planned, refused_in_plan) = report(&dry);
    let (removed, refused) = report(&run);
    assert_eq!(planned, removed, "the dry run's plan against what the run removed");
    assert_eq!(refused_in_plan, refused);
    assert_eq!(refused, [(Some(live.container.clone()), "live".to_owned())]);
    assert_eq!(planned.len(), 4);
    let kinds = |c: &Instance| -> Vec<String> {
        planned.iter().find(|(name, _)| *name == c.container).unwrap().1.iter().map(|(k, _)| k.clone()).collect()
    };
    assert_eq!(
        kinds(&clean),
        [
            "container",
            "container",
            "network",
            "volume",
            "worktree",
            "branch",
            "directory",
            "directory",
            "name_lock",
            "index_row"
        ]
    );
    assert_eq!(kinds(&unreadable), ["directory", "index_row"], "no host repository touched without its records");
    assert_eq!(kinds(&row_only), ["index_row"]);
    assert_eq!(home.quarantines().len(), 2, "both discards were saved first");
}

/// An instance whose manifest is gone has only its index row to stamp at step 3: killed right
/// after that step, the row says `purged` (an honest index: the purge is under way), and the rerun
/// finishes. Without the stamp the row would still read `active` while its data is deleted.
#[test]
fn without_a_manifest_the_row_alone_is_stamped_before_anything_is_deleted() {
    if !engine_available("without_a_manifest_the_row_alone_is_stamped_before_anything_is_deleted") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    fs::remove_file(inst.dir.join(".jackin/instance.json")).unwrap();
    let out = home
        .cmd("jackin-purge")
        .args(["--format=json", &inst.container])
        .env("JACKIN_PURGE_CRASH_AT", "stamped")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), None, "killed at the crash point: {}", stderr(&out));
    assert_eq!(home.index_row(&inst.container).map(|r| r.status), Some("purged".to_owned()));
    assert!(inst.dir.exists(), "nothing deleted yet");
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!has_row(&home, &inst.container) && !inst.dir.exists());
    // Without a manifest, the record names the instance as its index row did.
    let identity = &records::<Purged>(&out.stdout)[0].identity;
    assert_eq!((identity.workspace_name.as_deref(), identity.role_key.as_str()), (Some("my-app"), "agent-smith"));
}

/// The manifest is the instance's own word: the `purged` record names the instance as the
/// manifest does (here with no index row to begin with, on a rerun that goes by the purge mark),
/// and the Docker resources removed are those the manifest names (here a network not named after
/// the container, labelled as jackin labels the instance's), not the names derived from the
/// container's. A name alone proves nothing: the same network without jackin's labels stays.
#[test]
fn the_manifest_names_the_instance_and_its_docker_resources() {
    if !engine_available("the_manifest_names_the_instance_and_its_docker_resources") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&unique_id(), |_, _| Vec::new());
    let network = format!("custom-{}", inst.id);
    home.edit_manifest(&inst.container, |manifest| manifest["docker"]["network"] = json!(network));
    // No index row (jackin stopped before writing it): only the manifest names the instance.
    let mut index = home.index();
    index["instances"] = json!([]);
    common::write_json(&home.index_path(), &index);
    let role_label = format!("jackin.role={}", inst.container);
    docker(&["network", "create", "--internal", &network]);
    let _cleanup = NetworkCleanup(network.clone());
    let before = home.snapshot();
    let out = home.purge(&["--dry-run", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let listed = records::<Purged>(&out.stdout).remove(0).removed;
    assert!(!listed.iter().any(|r| r.kind == "network"), "an unlabelled network is not the session's: {listed:?}");
    assert_eq!(home.snapshot(), before);
    docker(&["network", "rm", &network]);
    docker(&["network", "create", "--internal", "--label", "jackin.managed=true", "--label", &role_label, &network]);

    // Killed once past step 3, so that the rerun goes by the purge mark, not an assessment.
    let crashed = home.cmd("jackin-purge").arg(&inst.container).env("JACKIN_PURGE_CRASH_AT", "stamped").output();
    assert_eq!(crashed.unwrap().status.code(), None, "killed at the crash point");
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let purged = records::<Purged>(&out.stdout).remove(0);
    assert_eq!(purged.identity.workspace_label, "my-app", "the manifest's label");
    assert!(purged.removed.iter().any(|r| r.kind == "network" && r.name == network), "{:?}", purged.removed);
    assert!(!Session::exists("network", &network), "the manifest's network is gone");
}

struct NetworkCleanup(String);

impl Drop for NetworkCleanup {
    fn drop(&mut self) {
        docker_quiet(&["network", "rm", &self.0]);
    }
}

/// A host repository that is there but cannot be opened (its `.git` is not a repository) stops
/// the purge of a session with a worktree of it, even on a discard: the registration and the
/// scratch branch in it cannot be seen, so nothing is deleted (`purge_failed`, exit 6). Only a
/// host repository that is gone took those with it.
#[test]
fn a_host_repository_that_cannot_be_opened_stops_the_purge() {
    if !engine_available("a_host_repository_that_cannot_be_opened_stops_the_purge") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let moved = home.tmp.path().join("app.git-aside");
    fs::rename(app.join(".git"), &moved).unwrap();
    fs::write(app.join(".git"), "not a repository\n").unwrap();
    let before = home.snapshot();
    let out = home.purge(&["--discard-unfinished", "--no-quarantine", &inst.container], "");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let refused = records::<ErrorRecord>(&out.stdout);
    assert_eq!(refused[0].code, "purge_failed", "{refused:?}");
    assert!(refused[0].message.contains("opening the host repository"), "{refused:?}");
    assert_eq!(home.snapshot(), before, "nothing changed");
}

/// `--format text` closes with the total: how many were purged and the space freed.
#[test]
fn the_text_report_closes_with_the_total() {
    if !engine_available("the_text_report_closes_with_the_total") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&unique_id(), |_, _| Vec::new());
    fs::write(inst.dir.join("home/notes.txt"), vec![b'x'; 4096]).unwrap();
    let out = home.cmd("jackin-purge").args(["--format=text", &inst.container]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let last = text.lines().last().unwrap_or_default();
    assert!(last.starts_with("purged 1 · ") && last.ends_with(" freed"), "{text}");
    let dry = home.instance(&unique_id(), |_, _| Vec::new());
    let out = home.cmd("jackin-purge").args(["--format=text", "--dry-run", &dry.container]).output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.lines().last().unwrap_or_default().starts_with("would purge 1 · "), "{text}");
}

/// Every path a record carries that is not absolute, or that is spelled from the working
/// directory (`./…`, `../…`): the mounts' `path`, `original_src`, `quarantine`,
/// a quarantine's `dir` and `repository`, a recover's `worktree`, a repair's `moved_to`, and the
/// `name` of what a purge removed when it is a file (`directory`, `name_lock`, `worktree`).
fn relative_paths(value: &serde_json::Value, found: &mut Vec<String>) {
    match value {
        serde_json::Value::Object(map) => {
            let kind = map.get("kind").and_then(serde_json::Value::as_str);
            let file_kind = kind.is_some_and(|k| ["directory", "name_lock", "worktree"].contains(&k));
            for (key, v) in map {
                if let Some(text) = v.as_str() {
                    let path_key = match key.as_str() {
                        "path" => map.contains_key("mount_dst"),
                        "original_src" | "quarantine" | "dir" | "repository" | "worktree" | "moved_to" => true,
                        "name" => file_kind,
                        _ => false,
                    };
                    let from_cwd = ["./", "../"].iter().any(|p| text.starts_with(p));
                    if (path_key && !text.starts_with('/')) || from_cwd {
                        found.push(format!("{key}: {text}"));
                    }
                }
                relative_paths(v, found);
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|v| relative_paths(v, found)),
        _ => {}
    }
}

/// With a relative home (`--home ./jackin` from its parent directory, `JACKIN_HOME_DIR=../jackin`
/// from a sibling),
/// and a relative quarantine directory for `--recover`, every path in every record of assess,
/// keep, purge (a discard, with its quarantine), restore `--list`, `--quarantined` and
/// `--recover` is absolute: the next process in the pipe may run from anywhere.
#[test]
fn records_carry_absolute_paths_when_the_home_is_given_relative() {
    if !engine_available("records_carry_absolute_paths") {
        return;
    }
    let mut home = Home::new();
    let (at_risk, _app, _) = at_risk_worktree(&mut home);
    let kept = home.instance(&unique_id(), |_, _| Vec::new());
    let cwd = home.tmp.path().to_path_buf();
    let run = |tool: &str, args: &[&str], stdin: &[u8], env_home: bool| -> Vec<u8> {
        let mut cmd = assert_cmd::Command::new(common::tool_path(tool));
        cmd.env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR");
        cmd.env_remove("JACKIN_PURGE_CRASH_AT").env_remove("JACKIN_PURGE_PAUSE_AT");
        if env_home {
            cmd.current_dir(cwd.join("src")).env("JACKIN_HOME_DIR", "../jackin").env("JACKIN_CONFIG_DIR", "../config");
        } else {
            cmd.current_dir(&cwd).args(["--home", "./jackin", "--config-dir", "./config"]);
        }
        let out = cmd.arg("--format=json").args(args).write_stdin(stdin.to_vec()).output().unwrap();
        assert!(out.status.success(), "{tool} {args:?}: {}", stderr(&out));
        out.stdout
    };
    let mut outputs = Vec::new();
    let assessed = run("jackin-assess", &[&at_risk.container], b"", false);
    let decided = run("jackin-keep", &["--policy=clean"], &assessed, false);
    let purged = run("jackin-purge", &[], &decided, false);
    let kept_assessed = run("jackin-assess", &[&kept.container], b"", true);
    let kept_decided = run("jackin-keep", &["--keep"], &kept_assessed, true);
    let listed = run("jackin-restore", &["--list"], b"", false);
    let quarantined = run("jackin-restore", &["--quarantined"], b"", true);
    let purged_record = &records::<Purged>(&purged)[0];
    let quarantine = purged_record.quarantine.clone().expect("the discard saved the work");
    let relative_q = match Path::new(&quarantine).strip_prefix(&cwd) {
        Ok(inside) => format!("./{}", inside.to_str().unwrap()),
        Err(_) => quarantine.clone(),
    };
    let recovered = run("jackin-restore", &["--recover", &relative_q, "--dry-run"], b"", false);
    for (what, out) in [
        ("assess", &assessed),
        ("keep", &decided),
        ("purge", &purged),
        ("assess (env)", &kept_assessed),
        ("keep (env)", &kept_decided),
        ("restore --list", &listed),
        ("restore --quarantined (env)", &quarantined),
        ("restore --recover", &recovered),
    ] {
        let lines: Vec<serde_json::Value> =
            String::from_utf8_lossy(out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(!lines.is_empty(), "{what} wrote records");
        outputs.push((what, lines));
    }
    for (what, lines) in &outputs {
        for line in lines {
            let mut found = Vec::new();
            relative_paths(line, &mut found);
            assert!(found.is_empty(), "{what}: {found:?} in {line}");
        }
    }
    // The checks saw paths of every kind the home makes.
    assert!(Path::new(&quarantine).is_absolute() && Path::new(&quarantine).is_dir(), "{quarantine}");
    let removed: Vec<&str> = purged_record.removed.iter().map(|r| r.name.as_str()).collect();
    assert!(
        removed.iter().any(|n| n.ends_with(&format!("data/{}", at_risk.container)) && n.starts_with('/')),
        "{removed:?}"
    );
    let dir = outputs[6].1[0]["data"]["dir"].as_str().unwrap();
    assert_eq!(fs::canonicalize(dir).unwrap(), fs::canonicalize(&quarantine).unwrap(), "--quarantined names it");
    assert_eq!(outputs[7].1[0]["data"]["quarantine"].as_str(), Some(quarantine.as_str()), "--recover too");
}
