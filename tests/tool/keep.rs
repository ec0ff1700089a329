//! jackin-keep against real git repositories and a real Docker engine. The assessments are made
//! by the real jackin-assess binary and piped into jackin-keep. Runs "without a terminal" start
//! jackin-keep in a session of its own (setsid), so `/dev/tty` cannot be opened whatever terminal
//! runs the tests; the dialog tests give it a real pseudo-terminal as its controlling terminal.

use crate::common;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use common::docker::{docker, engine_available, Session, SessionOptions};
use common::records::{envelopes, records, records_of, Assessment, Decision, ErrorRecord};
use common::state::IndexRow;
use common::{commit_file, files_under, stderr, tool_path, Home, Instance};
use rexpect::process::WaitStatus;
use rexpect::session::PtySession;

fn keep_command(home: &Home, args: &[&str]) -> Command {
    let mut cmd = Command::new(tool_path("jackin-keep"));
    cmd.arg("--home").arg(&home.home).arg("--config-dir").arg(&home.config).arg("--format=json").args(args);
    cmd.env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR");
    cmd
}

/// jackin-keep with no controlling terminal, `input` on stdin.
fn keep(home: &Home, args: &[&str], input: &str) -> Output {
    let mut cmd = home.detached("jackin-keep");
    cmd.arg("--format=json").args(args);
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    child.wait_with_output().unwrap()
}

/// The decisions of a run that succeeded and wrote nothing else.
fn ok(out: &Output) -> Vec<Decision> {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    records(&out.stdout)
}

/// Four sessions of one host repository: clean, dirty, unpushed, unknown.
struct Four {
    home: Home,
    clean: Instance,
    dirty: Instance,
    unpushed: Instance,
    unknown: Instance,
}

fn four(prefix: &str) -> Four {
    let mut home = Home::new();
    let host = home.host_repo("app");
    let mut make = |suffix: &str| {
        let host = host.clone();
        home.instance(&format!("{prefix}{suffix}"), move |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")])
    };
    let (clean, dirty, unpushed, unknown) = (make("cln00"), make("drt00"), make("unp00"), make("unk00"));
    fs::write(dirty.mount_path(0).join("README.md"), "changed by the agent\n").unwrap();
    commit_file(&unpushed.mount_path(0), "feature.rs", "fn f() {}\n", "agent work");
    fs::remove_dir_all(unknown.mount_path(0)).unwrap();
    home.with_seal_key();
    Four { home, clean, dirty, unpushed, unknown }
}

impl Four {
    fn all(&self) -> [&Instance; 4] {
        [&self.clean, &self.dirty, &self.unpushed, &self.unknown]
    }

    fn input(&self) -> String {
        let names: Vec<&str> = self.all().iter().map(|i| i.container.as_str()).collect();
        self.home.assess_lines(&names)
    }
}

/// Runs keep over the four sessions and checks each decision: (outcome, reason, discard, status
/// in the manifest and the index afterwards).
fn check_cells(f: &Four, args: &[&str], input: &str, expected: [(&str, &str, bool, &str); 4]) {
    let out = keep(&f.home, args, input);
    let recs = ok(&out);
    assert_eq!(recs.len(), 4, "{recs:?}");
    for ((d, inst), (outcome, reason, discard, status)) in recs.iter().zip(f.all()).zip(expected) {
        assert_eq!(d.identity.container_base, inst.container);
        assert_eq!((d.outcome.as_str(), d.reason.as_str()), (outcome, reason), "{args:?} {d:?}");
        assert_eq!(d.discard_unfinished, discard, "{args:?} {d:?}");
        assert_eq!(f.home.status(&inst.container), (status.to_owned(), status.to_owned()), "{args:?} {d:?}");
        if outcome != "return" {
            assert_eq!(d.status.as_deref(), Some(status), "{d:?}");
        }
    }
}

#[test]
fn every_cell_of_the_policy_table_without_a_terminal() {
    if !engine_available("every_cell_of_the_policy_table_without_a_terminal") {
        return;
    }
    let f = four("kpt");
    let input = f.input();
    let verdicts: Vec<String> = records::<Assessment>(input.as_bytes()).into_iter().map(|a| a.verdict).collect();
    assert_eq!(verdicts, ["clean", "dirty", "unpushed", "unknown"]);

    check_cells(
        &f,
        &["--policy=ask"],
        &input,
        [
            ("clean", "clean session", false, "clean_exited"),
            ("keep", "dirty, no answer", false, "preserved_dirty"),
            ("keep", "unpushed, no answer", false, "preserved_unpushed"),
            ("keep", "unknown, no answer", false, "preserved_dirty"),
        ],
    );
    check_cells(
        &f,
        &["--policy=ask", "--keep"],
        &input,
        [
            ("keep", "operator keep", false, "restore_available"),
            ("keep", "operator keep", false, "preserved_dirty"),
            ("keep", "operator keep", false, "preserved_unpushed"),
            ("keep", "operator keep", false, "preserved_dirty"),
        ],
    );
    check_cells(
        &f,
        &["--policy=ask", "--answer=clean"],
        &input,
        [
            ("clean", "clean session", false, "clean_exited"),
            ("clean", "answer clean", true, "preserved_dirty"),
            ("clean", "answer clean", true, "preserved_unpushed"),
            ("keep", "unknown", false, "preserved_dirty"),
        ],
    );
    check_cells(
        &f,
        &["--policy=ask", "--answer=clean", "--discard-unfinished"],
        &input,
        [
            ("clean", "clean session", false, "clean_exited"),
            ("clean", "answer clean", true, "preserved_dirty"),
            ("clean", "answer clean", true, "preserved_unpushed"),
            ("clean", "answer clean", true, "preserved_dirty"),
        ],
    );
    check_cells(
        &f,
        &["--policy=ask", "--answer=keep"],
        &input,
        [
            ("clean", "clean session", false, "clean_exited"),
            ("keep", "answer keep", false, "preserved_dirty"),
            ("keep", "answer keep", false, "preserved_unpushed"),
            ("keep", "answer keep", false, "preserved_dirty"),
        ],
    );
    check_cells(
        &f,
        &["--policy=keep"],
        &input,
        [
            ("keep", "policy keep", false, "restore_available"),
            ("keep", "policy keep", false, "preserved_dirty"),
            ("keep", "policy keep", false, "preserved_unpushed"),
            ("keep", "policy keep", false, "preserved_dirty"),
        ],
    );
    check_cells(
        &f,
        &["--policy=clean"],
        &input,
        [
            ("clean", "clean session", false, "clean_exited"),
            ("clean", "policy clean", true, "preserved_dirty"),
            ("clean", "policy clean", true, "preserved_unpushed"),
            ("keep", "unknown", false, "preserved_dirty"),
        ],
    );
    let out = keep(&f.home, &["--policy=discard"], &input);
    assert!(stderr(&out).contains("what cannot be read cannot be saved"));
    assert_eq!(records::<Decision>(&out.stdout)[1].policy, "clean", "discard means clean");

    // --answer return changes nothing at all of the sessions it returns to: only the clean
    // session's files and its own index row may change (added, changed or removed).
    let before = f.home.snapshot();
    let rows_before = f.home.index_rows();
    let out = keep(&f.home, &["--policy=ask", "--answer=return"], &input);
    let outcomes: Vec<String> = ok(&out).into_iter().map(|d| d.outcome).collect();
    assert_eq!(outcomes, ["clean", "return", "return", "return"]);
    let changed = common::changed_paths(&before, &f.home.snapshot());
    let clean_dir = f.home.data(&f.clean.container);
    assert!(changed.iter().all(|p| p.starts_with(&clean_dir) || *p == f.home.index_path()), "{changed:?}");
    for returned in [&f.dirty, &f.unpushed, &f.unknown] {
        let row = |rows: Vec<IndexRow>| rows.into_iter().find(|r| r.container_base == returned.container);
        assert_eq!(row(f.home.index_rows()), row(rows_before.clone()), "{}'s row", returned.container);
    }
}

/// The assessment keep is given may be older than the work: a file written after it must not
/// end under `clean_exited`, which jackin's own prune deletes unchecked. Keep assesses again
/// before that stamp and says so; the session keeps `preserved_dirty` and purge refuses it.
#[test]
fn a_clean_assessment_older_than_the_work_does_not_stamp_clean_exited() {
    if !engine_available("a_clean_assessment_older_than_the_work_does_not_stamp_clean_exited") {
        return;
    }
    let f = four("kst");
    let stale = f.home.assess_lines(&[&f.clean.container]);
    fs::write(f.clean.mount_path(0).join("written-after.txt"), "after the assessment\n").unwrap();
    let out = keep(&f.home, &["--policy=clean", "-v"], &stale);
    let decisions = ok(&out);
    assert_eq!(decisions[0].status.as_deref(), Some("preserved_dirty"), "{decisions:?}");
    assert!(stderr(&out).contains("assessed again before the stamp: "), "{}", stderr(&out));
    assert_eq!(decisions[0].verdict, "dirty", "the decision says what the stamp was made on");
    assert!(!decisions[0].discard_unfinished, "the clean-up was not allowed to discard this");
    assert!(stderr(&out).contains("the work changed after it was assessed clean"), "{}", stderr(&out));
    assert_eq!(f.home.status(&f.clean.container).0, "preserved_dirty");

    let purge = f.home.purge(&[], &String::from_utf8(out.stdout).unwrap());
    assert_eq!(purge.status.code(), Some(6), "{}", stderr(&purge));
    assert!(f.clean.mount_path(0).join("written-after.txt").exists(), "purge refused it: the file is there");

    // Assessed clean and still clean: clean_exited, as before. Assessed a moment after the
    // session was made (more than the re-check's margin for the kernel's clock tick), nothing
    // it looked at has changed since, which stat data tell without a second assessment.
    let f = four("ksu");
    std::thread::sleep(std::time::Duration::from_millis(200));
    let out = keep(&f.home, &["--policy=clean", "-v"], &f.home.assess_lines(&[&f.clean.container]));
    assert_eq!(ok(&out)[0].status.as_deref(), Some("clean_exited"));
    assert_eq!(f.home.status(&f.clean.container).0, "clean_exited");
    assert!(stderr(&out).contains("the assessment stands: nothing it looked at changed since"), "{}", stderr(&out));

    // Assessed dirty and cleaned with a discard: never stamped clean_exited, so it is not
    // assessed again and no change of work is claimed.
    let out = keep(&f.home, &["--policy=clean", "--discard-unfinished"], &f.home.assess_lines(&[&f.dirty.container]));
    let decisions = ok(&out);
    assert_eq!((decisions[0].outcome.as_str(), decisions[0].discard_unfinished), ("clean", true), "{decisions:?}");
    assert!(!stderr(&out).contains("assessed clean"), "{}", stderr(&out));
}

/// The exit hook's order on a real host: jackin's exit removes the role container, then the hook
/// assesses and keeps. The engine remembers the removal (its events), so the assessment stands
/// without a look at the work; a container removed after the assessment proves nothing, and the
/// work's stat data are looked at instead.
#[test]
fn a_role_container_removed_before_the_assessment_needs_no_second_look() {
    if !engine_available("a_role_container_removed_before_the_assessment_needs_no_second_look") {
        return;
    }
    let f = four("ksr");
    let c = f.clean.container.as_str();
    docker(&["create", "--name", c, "--network", "none", common::docker::TEST_IMAGE, "true"]);
    docker(&["rm", c]);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let out = keep(&f.home, &["--policy=clean", "-v"], &f.home.assess_lines(&[c]));
    assert_eq!(ok(&out)[0].status.as_deref(), Some("clean_exited"));
    assert!(stderr(&out).contains("the role container was removed before it"), "{}", stderr(&out));

    let f = four("ksl");
    let c = f.clean.container.as_str();
    docker(&["create", "--name", c, "--network", "none", common::docker::TEST_IMAGE, "true"]);
    std::thread::sleep(std::time::Duration::from_millis(100));
    let assessed = f.home.assess_lines(&[c]);
    docker(&["rm", c]);
    let out = keep(&f.home, &["--policy=clean", "-v"], &assessed);
    assert_eq!(ok(&out)[0].status.as_deref(), Some("clean_exited"));
    assert!(!stderr(&out).contains("removed before it"), "{}", stderr(&out));
    assert!(stderr(&out).contains("the assessment stands: nothing it looked at changed since"), "{}", stderr(&out));
}

#[test]
fn keep_marks_the_isolation_records_and_leaves_a_clean_session_active() {
    if !engine_available("keep_marks_the_isolation_records_and_leaves_a_clean_session_active") {
        return;
    }
    let f = four("kpi");
    let out = keep(&f.home, &["--policy=keep"], &f.input());
    ok(&out);
    let said = stderr(&out);
    let unverified: Vec<&str> = said.lines().filter(|l| l.contains("its work cannot be verified")).collect();
    assert!(unverified.len() == 1 && unverified[0].contains(&f.unknown.container), "only the unknown one: {said}");
    assert_eq!(f.home.cleanup_statuses(&f.clean.container), ["active"]);
    assert_eq!(f.home.cleanup_statuses(&f.dirty.container), ["preserved_dirty"]);
    assert_eq!(f.home.cleanup_statuses(&f.unpushed.container), ["preserved_unpushed"]);
    assert_eq!(f.home.cleanup_statuses(&f.unknown.container), ["preserved_dirty"]);
    let continuity = f.home.continuity(&f.dirty.container);
    assert_eq!(continuity.cause.as_deref(), Some("kept"));
    let kept = continuity.kept.expect("who kept it and why");
    assert_eq!(kept.reason, "policy keep");
    assert_eq!(kept.policy, "keep");
    assert_eq!(kept.verdict, "dirty");
    assert_eq!(kept.assessment["mounts"][0]["files"][0]["path"], "README.md");
    let history = &continuity.history[0];
    assert_eq!((history.from.as_str(), history.to.as_str()), ("active", "preserved_dirty"));
    assert_eq!(history.tool, "jackin-keep");
}

#[test]
fn the_configured_policy_applies_and_a_broken_config_changes_nothing() {
    if !engine_available("the_configured_policy_applies_and_a_broken_config_changes_nothing") {
        return;
    }
    let f = four("kpc");
    let input = f.input();
    fs::write(f.home.config.join("config.toml"), "dirty_exit_policy = \"keep\"\n").unwrap();
    fs::create_dir_all(f.home.config.join("workspaces")).unwrap();
    fs::write(f.home.config.join("workspaces/my-app.toml"), "dirty_exit_policy = \"discard\"\n").unwrap();
    let recs = ok(&keep(&f.home, &[], &input));
    assert_eq!(recs[1].policy, "clean", "the workspace's policy wins over the global one");
    assert_eq!(recs[1].outcome, "clean");

    fs::write(f.home.config.join("workspaces/my-app.toml"), "dirty_exit_policy = [\n").unwrap();
    let before = f.home.snapshot();
    let out = keep(&f.home, &[], &input);
    assert_eq!(out.status.code(), Some(4));
    let stderr = stderr(&out);
    assert!(stderr.contains("my-app.toml does not parse"), "{stderr}");
    assert!(out.stdout.is_empty());
    assert_eq!(f.home.snapshot(), before);
    // --policy does not read the config at all.
    ok(&keep(&f.home, &["--policy=ask", "--dry-run"], &input));
}

#[test]
fn exit_action_files_decide_only_when_fresh() {
    if !engine_available("exit_action_files_decide_only_when_fresh") {
        return;
    }
    let f = four("kpe");
    let input = f.home.assess_lines(&[&f.dirty.container]);
    let action = f.dirty.dir.join("state/exit-action.json");

    fs::write(&action, "\"discard\"").unwrap();
    let recs = ok(&keep(&f.home, &["--policy=ask"], &input));
    assert_eq!(recs[0].outcome, "clean");
    assert_eq!(recs[0].reason, "exit-action clean");
    assert!(recs[0].discard_unfinished);
    assert!(!action.exists(), "a consumed exit-action file is cleared");

    fs::write(&action, "\"keep\"").unwrap();
    let recs = ok(&keep(&f.home, &["--policy=ask"], &input));
    assert_eq!(recs[0].reason, "exit-action keep");
    assert!(!action.exists());

    // --answer wins over the file.
    fs::write(&action, "\"discard\"").unwrap();
    let recs = ok(&keep(&f.home, &["--policy=ask", "--answer=return"], &input));
    assert_eq!(recs[0].outcome, "return");
    assert!(action.exists(), "return changes nothing");

    // Written before the session started (the manifest's updated_at, as no container exists).
    let file = fs::File::options().write(true).open(&action).unwrap();
    file.set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000)).unwrap();
    let recs = ok(&keep(&f.home, &["--policy=ask"], &input));
    assert_eq!(recs[0].outcome, "keep");
    assert_eq!(recs[0].reason, "dirty, no answer", "a stale choice must not decide");

    fs::write(&action, "\"whatever\"").unwrap();
    let out = keep(&f.home, &["--policy=ask"], &input);
    assert_eq!(records::<Decision>(&out.stdout)[0].reason, "dirty, no answer");
    assert!(stderr(&out).contains("exit-action.json ignored"));
}

#[test]
fn an_exit_action_older_than_the_containers_start_is_stale() {
    if !engine_available("an_exit_action_older_than_the_containers_start_is_stale") {
        return;
    }
    let f = four("kps");
    let c = &f.dirty.container;
    let _session = Session::launch(c, SessionOptions { dind: false, ..Default::default() });
    docker(&["stop", "-t", "0", c]);
    let input = f.home.assess_lines(&[c]);
    let action = f.dirty.dir.join("state/exit-action.json");
    fs::write(&action, "\"discard\"").unwrap();
    // After the manifest's updated_at (2026-08-20), but before the container last started (now).
    let started = docker(&["inspect", "-f", "{{.State.StartedAt}}", c]);
    let started = humantime::parse_rfc3339_weak(&started).unwrap();
    let file = fs::File::options().write(true).open(&action).unwrap();
    file.set_modified(started - Duration::from_secs(60)).unwrap();
    let recs = ok(&keep(&f.home, &["--policy=ask", "--dry-run"], &input));
    assert_eq!(recs[0].reason, "dirty, no answer");
    file.set_modified(started + Duration::from_secs(1)).unwrap();
    let recs = ok(&keep(&f.home, &["--policy=ask", "--dry-run"], &input));
    assert_eq!(recs[0].reason, "exit-action clean");
    assert!(recs[0].dry_run);
}

/// A jackin session with a sidecar, a network and a certs volume, its manifest naming them, and
/// its agent.toml in the socket dir.
fn docker_session(f: &Four, inst: &Instance, env: Vec<(&'static str, &'static str)>, running: bool) -> Session {
    let c = &inst.container;
    f.home.with_sidecar(c);
    let sockets = f.home.home.join("sockets").join(c);
    fs::create_dir_all(&sockets).unwrap();
    fs::write(
        sockets.join("agent.toml"),
        "role = \"agent-smith\"\nworkdir = \"/workspace/my-app\"\nagents = [\"claude\"]\n",
    )
    .unwrap();
    let session = Session::launch(
        c,
        SessionOptions {
            dind: true,
            env,
            binds: vec![(inst.dir.join("home"), "/home/agent"), (inst.mount_path(0), "/workspace/my-app")],
            running: true,
            sidecar_image: Some(common::docker::TEST_DIND_IMAGE),
            ..Default::default()
        },
    );
    if !running {
        docker(&["stop", "-t", "0", c]);
    }
    session
}

#[test]
fn keep_frees_docker_keeps_the_work_and_no_secret_value() {
    if !engine_available("keep_frees_docker_keeps_the_work_and_no_secret_value") {
        return;
    }
    let f = four("kpk");
    let inst = &f.dirty;
    let c = inst.container.as_str();
    let secret = "s3cr3t-kpk-9f8e7d6c";
    let session = docker_session(&f, inst, vec![("SECRET_TOKEN", secret), ("TERM", "xterm")], false);
    let anonymous = session.sidecar_anonymous_volumes();
    assert_eq!(anonymous.len(), 1, "the sidecar image declares /var/lib/docker: {anonymous:?}");
    fs::write(inst.dir.join("home/conversation.jsonl"), "{\"turn\":1}\n").unwrap();
    let input = f.home.assess_lines(&[c]);

    let recs = ok(&keep(&f.home, &["--policy=keep"], &input));
    assert_eq!(recs[0].outcome, "keep");
    assert_eq!(recs[0].status.as_deref(), Some("preserved_dirty"));
    for (kind, name) in [
        ("container", c.to_owned()),
        ("container", format!("{c}-dind")),
        ("network", format!("{c}-net")),
        ("volume", format!("{c}-dind-certs")),
        ("volume", anonymous[0].clone()),
    ] {
        assert!(!Session::exists(kind, &name), "{kind} {name} is still there");
    }
    assert_eq!(f.home.status(c), ("preserved_dirty".into(), "preserved_dirty".into()));
    assert_eq!(fs::read_to_string(inst.mount_path(0).join("README.md")).unwrap(), "changed by the agent\n");
    assert_eq!(fs::read_to_string(inst.dir.join("home/conversation.jsonl")).unwrap(), "{\"turn\":1}\n");
    assert!(f.home.home.join("sockets").join(c).join("agent.toml").exists());
    let worktrees =
        common::git(&f.clean.records[0]["original_src"].as_str().map(PathBuf::from).unwrap(), &["worktree", "list"]);
    assert!(worktrees.contains(c), "the worktree is still registered: {worktrees}");

    let continuity = f.home.continuity(c);
    let recipe = continuity.recipe.as_ref().expect("the recipe keep captured");
    assert_eq!(recipe["captured_by"], "jackin-keep");
    assert_eq!(recipe["role"]["name"], c);
    assert_eq!(recipe["role"]["image"], common::docker::TEST_IMAGE);
    assert_eq!(recipe["sidecar"]["name"], format!("{c}-dind"));
    assert_eq!(recipe["network"]["name"], format!("{c}-net"));
    assert_eq!(recipe["certs_volume"], format!("{c}-dind-certs"));
    assert!(recipe["agent_toml"].as_str().unwrap().contains("agent-smith"));
    let env = recipe["role"]["env"].as_array().unwrap();
    assert!(env
        .iter()
        .any(|e| e["name"] == "SECRET_TOKEN" && e["source"] == "env:SECRET_TOKEN" && e.get("value").is_none()));
    assert!(continuity.kept.expect("who kept it").by.contains('@'));

    for path in files_under(&f.home.home) {
        let bytes = fs::read(&path).unwrap();
        assert!(!String::from_utf8_lossy(&bytes).contains(secret), "{} holds the secret value", path.display());
    }
    drop(session);
}

#[test]
fn a_live_session_is_not_touched_without_stop() {
    if !engine_available("a_live_session_is_not_touched_without_stop") {
        return;
    }
    let f = four("kpl");
    let inst = &f.unpushed;
    let c = inst.container.as_str();
    let _session = docker_session(&f, inst, Vec::new(), true);
    let input = format!("{}{}", f.home.assess_lines(&[c]), f.home.assess_lines(&[&f.clean.container]));
    let before = f.home.snapshot();
    let out = keep(&f.home, &["--policy=keep", "--dry-run"], &input);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let out = keep(&f.home, &["--policy=keep"], &input);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let recs = envelopes(&out.stdout);
    let error = recs[0].data::<ErrorRecord>();
    assert_eq!(error.code, "live");
    assert_eq!(error.container_base.as_deref(), Some(c));
    assert!(stderr(&out).contains("is live"));
    assert_eq!(recs[1].data::<Decision>().outcome, "keep", "the other session is kept");
    // Nothing of the live session changed (its files, its row); the other one was kept.
    let changed = common::changed_paths(&before, &f.home.snapshot());
    assert!(changed.iter().all(|p| !p.starts_with(&inst.dir)), "{changed:?}");
    assert!(!changed.is_empty(), "the other session was kept: the snapshot sees its change");
    assert_eq!(_session.state(c).as_deref(), Some("running"));
    assert_eq!(f.home.status(c).0, "active");

    let recs = ok(&keep(&f.home, &["--policy=keep", "--stop"], &f.home.assess_lines(&[c])));
    assert_eq!(recs[0].status.as_deref(), Some("preserved_unpushed"));
    assert!(!Session::exists("container", c));
    let recipe = f.home.continuity(c).recipe.expect("the recipe was captured before the teardown");
    assert_eq!(recipe["role"]["name"], c, "the recipe was captured before the teardown");
}

#[test]
fn an_unreachable_engine_changes_nothing() {
    let f = four("kpu");
    let input = f.input();
    let before = f.home.snapshot();
    let mut cmd = keep_command(&f.home, &["--policy=clean"]);
    cmd.env("DOCKER_HOST", format!("unix://{}/no-docker.sock", f.home.tmp.path().display()));
    let out = assert_cmd::Command::from_std(cmd).write_stdin(input).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot be reached"));
    assert!(out.stdout.is_empty());
    assert_eq!(f.home.snapshot(), before);
}

#[test]
fn bad_input_changes_nothing_and_other_records_pass_through() {
    let f = four("kpb");
    let input = f.input();
    let before = f.home.snapshot();
    for (bad, needle) in [
        ("not json\n", "line 5: not JSON"),
        ("{\"schema_version\":9,\"type\":\"x\",\"data\":{}}\n", "newer than this tool"),
        ("{\"schema_version\":1,\"type\":\"assessment\",\"data\":{\"verdict\":\"fine\"}}\n", "bad assessment record"),
    ] {
        let out = keep(&f.home, &["--policy=clean"], &format!("{input}{bad}"));
        assert_eq!(out.status.code(), Some(3), "{bad}");
        assert!(stderr(&out).contains(needle), "{}", stderr(&out));
        assert!(out.stdout.is_empty());
        assert_eq!(f.home.snapshot(), before, "{bad}");
    }
    // No assessment: no Docker needed, every record passes through byte for byte.
    let other =
        "{\"schema_version\":1,\"type\":\"orphan\" ,\"data\":{\"kind\":\"volume\",\"name\":\"v\",\"reason\":\"r\"}}\n";
    let out = keep(&f.home, &[], other);
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(String::from_utf8_lossy(&out.stdout), other);
}

#[test]
fn dry_run_decides_and_changes_nothing() {
    if !engine_available("dry_run_decides_and_changes_nothing") {
        return;
    }
    let f = four("kpd");
    let orphan =
        "{\"schema_version\":1,\"type\":\"orphan\",\"data\":{\"kind\":\"volume\",\"name\":\"v\",\"reason\":\"r\"}}\n";
    let input = format!("{orphan}{}", f.input());
    fs::write(f.dirty.dir.join("state/exit-action.json"), "\"discard\"").unwrap();
    let before = f.home.snapshot();
    let out = keep(&f.home, &["--policy=clean", "--dry-run"], &input);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).lines().next().unwrap(),
        orphan.trim_end(),
        "in order, byte for byte"
    );
    assert_eq!(envelopes(&out.stdout).len(), 5);
    let decisions: Vec<(String, Option<String>, bool)> =
        records_of::<Decision>(&out.stdout).into_iter().map(|d| (d.outcome, d.status, d.dry_run)).collect();
    let decided = |outcome: &str, status: &str| (outcome.to_owned(), Some(status.to_owned()), true);
    assert_eq!(
        decisions,
        [
            decided("clean", "clean_exited"),
            decided("clean", "preserved_dirty"),
            decided("clean", "preserved_unpushed"),
            decided("keep", "preserved_dirty"),
        ]
    );
    assert_eq!(f.home.snapshot(), before);
}

/// Under the `clean` outcome, work at risk keeps its `preserved_*` status (jackin's own prune
/// deletes `clean_exited` rows unchecked); jackin-purge stamps the terminal status itself, once
/// the work is in the quarantine.
#[test]
fn a_clean_up_of_work_at_risk_stays_preserved_until_purge_has_quarantined_it() {
    if !engine_available("a_clean_up_of_work_at_risk_stays_preserved_until_purge_has_quarantined_it") {
        return;
    }
    let f = four("kps");
    let input = f.home.assess_lines(&[&f.dirty.container]);
    let out = keep(&f.home, &["--policy=clean"], &input);
    let decision = &ok(&out)[0];
    assert_eq!((decision.outcome.as_str(), decision.discard_unfinished), ("clean", true));
    assert_eq!(decision.status.as_deref(), Some("preserved_dirty"));
    assert_eq!(f.home.status(&f.dirty.container), ("preserved_dirty".into(), "preserved_dirty".into()));

    let mut purge = f.home.cmd("jackin-purge");
    let purge = purge.arg("--format=json").env("JACKIN_PURGE_CRASH_AT", "stamped").write_stdin(out.stdout);
    let crashed = purge.output().unwrap();
    assert_ne!(crashed.status.code(), Some(0), "the test crash point stops it: {}", stderr(&crashed));
    assert_eq!(f.home.status(&f.dirty.container), ("purged".into(), "purged".into()));
    let saved: Vec<PathBuf> = f.home.quarantines().iter().flat_map(|q| files_under(q)).collect();
    assert!(
        saved.iter().any(|p| p.ends_with("README.md") && fs::read_to_string(p).unwrap() == "changed by the agent\n"),
        "{saved:?}"
    );
}

/// The exit-action file is in the agent's reach: a clean-up chosen there is saved first even
/// when the pipeline says `--no-quarantine`, which still holds for the operator's own answer.
#[test]
fn a_clean_up_chosen_in_the_container_is_saved_whatever_the_pipeline_says() {
    if !engine_available("a_clean_up_chosen_in_the_container_is_saved_whatever_the_pipeline_says") {
        return;
    }
    let f = four("kpn");
    fs::write(f.dirty.dir.join("state/exit-action.json"), "\"discard\"").unwrap();
    let by_the_container = keep(&f.home, &["--policy=ask"], &f.home.assess_lines(&[&f.dirty.container]));
    let decision = &ok(&by_the_container)[0];
    assert_eq!((decision.reason.as_str(), decision.quarantine_required), ("exit-action clean", true));
    let by_the_operator =
        keep(&f.home, &["--policy=ask", "--answer=clean"], &f.home.assess_lines(&[&f.unpushed.container]));
    assert!(!ok(&by_the_operator)[0].quarantine_required);

    for decided in [by_the_container, by_the_operator] {
        let mut purge = f.home.cmd("jackin-purge");
        let out = purge
            .args(["--format=json", "--discard-unfinished", "--no-quarantine"])
            .write_stdin(decided.stdout)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    }
    let quarantines = f.home.quarantines();
    let named = |inst: &Instance| {
        quarantines.iter().filter(|q| q.file_name().unwrap().to_string_lossy().starts_with(&inst.container)).count()
    };
    assert_eq!(named(&f.dirty), 1, "{quarantines:?}");
    assert_eq!(named(&f.unpushed), 0, "the operator's --no-quarantine holds for the operator's answer");
    let saved: Vec<PathBuf> = quarantines.iter().flat_map(|q| files_under(q)).collect();
    assert!(
        saved.iter().any(|p| p.ends_with("README.md") && fs::read_to_string(p).unwrap() == "changed by the agent\n"),
        "{saved:?}"
    );
    assert!(!f.dirty.dir.exists() && !f.unpushed.dir.exists(), "both purged");
}

/// Each isolation record's `cleanup_status` follows its own mount's verdict, not the instance's
/// worst: the clean worktree beside a dirty one stays `active`.
#[test]
fn each_isolation_record_is_marked_by_its_own_mount() {
    if !engine_available("each_isolation_record_is_marked_by_its_own_mount") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let lib = home.host_repo("lib");
    let inst = home.instance("kpm00000", |h, c| {
        vec![h.worktree_record(c, &app, "/workspace/app"), h.worktree_record(c, &lib, "/workspace/lib")]
    });
    fs::write(inst.mount_path(0).join("README.md"), "changed by the agent\n").unwrap();
    let input = home.assess_lines(&[&inst.container]);
    let decision = &ok(&keep(&home, &["--policy=keep"], &input))[0];
    assert_eq!(decision.status.as_deref(), Some("preserved_dirty"));
    assert_eq!(home.cleanup_statuses(&inst.container), ["preserved_dirty", "active"]);
}

// ---- with a terminal -------------------------------------------------------------------------

static RUN: AtomicUsize = AtomicUsize::new(0);

/// jackin-keep with a pseudo-terminal as its controlling terminal (and stderr); stdin is the
/// record file, stdout a file whose path is returned. `TERM=dumb`: the numbered-text dialog.
fn keep_on_pty(home: &Home, args: &[&str], input: &str) -> (PtySession, PathBuf) {
    let mut cmd = keep_command(home, args);
    cmd.env("TERM", "dumb");
    spawn_on_pty(home, cmd, input)
}

/// jackin-keep on a 100×30 pseudo-terminal that can draw (`TERM=xterm-256color`): the screens.
fn keep_on_screens(home: &Home, args: &[&str], input: &str, env: &[(&str, &str)]) -> (PtySession, PathBuf) {
    let keep = keep_command(home, args);
    let mut cmd = Command::new("sh");
    // The pty starts with no size; stty gives it one before jackin-keep starts.
    cmd.arg("-c").arg("stty rows 30 cols 100 </dev/tty && exec \"$0\" \"$@\"").arg(keep.get_program());
    cmd.args(keep.get_args()).env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR");
    cmd.env("TERM", "xterm-256color").env_remove("NO_COLOR").env_remove("JACKIN_PAGER").env_remove("PAGER");
    cmd.envs(env.iter().copied());
    spawn_on_pty(home, cmd, input)
}

fn spawn_on_pty(home: &Home, mut cmd: Command, input: &str) -> (PtySession, PathBuf) {
    let n = RUN.fetch_add(1, Ordering::SeqCst);
    let input_path = home.tmp.path().join(format!("keep-in-{n}.jsonl"));
    let output_path = home.tmp.path().join(format!("keep-out-{n}.jsonl"));
    fs::write(&input_path, input).unwrap();
    cmd.stdin(fs::File::open(&input_path).unwrap()).stdout(fs::File::create(&output_path).unwrap());
    (rexpect::session::spawn_command(cmd, Some(30_000)).unwrap(), output_path)
}

fn finish(mut pty: PtySession) -> (i32, String) {
    let rest = pty.exp_eof().unwrap();
    match pty.process.wait().unwrap() {
        WaitStatus::Exited(_, code) => (code, rest),
        other => panic!("jackin-keep ended with {other:?}"),
    }
}

fn decisions(output: &Path) -> Vec<Decision> {
    records(&fs::read(output).unwrap())
}

#[test]
fn the_dialog_shows_the_work_and_needs_an_acknowledgement_before_the_choice() {
    if !engine_available("the_dialog_shows_the_work_and_needs_an_acknowledgement_before_the_choice") {
        return;
    }
    let f = four("kpa");
    fs::write(f.unpushed.mount_path(0).join("notes.txt"), "untracked\n").unwrap();
    let input = f.home.assess_lines(&[&f.unpushed.container]);
    let (mut pty, output) = keep_on_pty(&f.home, &["--policy=ask"], &input);
    pty.exp_string("has unfinished work").unwrap();
    pty.exp_string("?? notes.txt").unwrap();
    // rexpect reads bytes as Latin-1, so the "·" between the words is matched around.
    pty.exp_string(&format!("jackin/scratch/{} ", f.unpushed.container)).unwrap();
    pty.exp_string(" 1 commit ").unwrap();
    pty.exp_string(" no upstream").unwrap();
    pty.exp_string("Press Enter once you have read this").unwrap();
    pty.send_line("2").unwrap();
    pty.exp_string("then press Enter").unwrap();
    assert!(fs::read(&output).unwrap().is_empty(), "nothing is decided before the acknowledgement");
    assert_eq!(f.home.status(&f.unpushed.container).0, "active");
    pty.send_line("").unwrap();
    pty.exp_string("1) Return to agent (default)").unwrap();
    pty.exp_string("2) Exit and keep").unwrap();
    pty.exp_string("3) Exit and clean up").unwrap();
    pty.exp_string("d) View the full diffs").unwrap();
    pty.exp_string("Choose [1]").unwrap();
    pty.send_line("2").unwrap();
    let (code, _) = finish(pty);
    assert_eq!(code, 0);
    let d = decisions(&output);
    assert_eq!((d[0].outcome.as_str(), d[0].reason.as_str()), ("keep", "operator keep"));
    assert_eq!(f.home.status(&f.unpushed.container).0, "preserved_dirty");
}

#[test]
fn the_dialog_return_default_changes_nothing() {
    if !engine_available("the_dialog_return_default_changes_nothing") {
        return;
    }
    let f = four("kpr");
    let input = f.home.assess_lines(&[&f.dirty.container]);
    let before = f.home.snapshot();
    let (mut pty, output) = keep_on_pty(&f.home, &["--policy=ask"], &input);
    pty.exp_string(" M README.md").unwrap();
    pty.send_line("").unwrap();
    pty.exp_string("Choose [1]").unwrap();
    pty.send_line("").unwrap();
    let (code, shown) = finish(pty);
    assert_eq!(code, 0);
    assert!(!shown.contains("\x1b[?1049h"), "TERM=dumb: no alternate screen, numbered text: {shown:?}");
    let d = decisions(&output);
    assert_eq!((d[0].outcome.as_str(), d[0].reason.as_str()), ("return", "operator return"));
    let after: Vec<_> =
        f.home.snapshot().into_iter().filter(|(p, _)| !p.starts_with(f.home.tmp.path().join("keep-"))).collect();
    assert_eq!(after, before);
}

#[test]
fn an_explicit_answer_answers_without_a_screen_even_on_a_terminal() {
    if !engine_available("an_explicit_answer_answers_without_a_screen_even_on_a_terminal") {
        return;
    }
    let f = four("kpe");
    let input = f.home.assess_lines(&[&f.dirty.container]);
    let before = f.home.snapshot();
    let (pty, output) = keep_on_screens(&f.home, &["--policy=ask", "--answer=return"], &input, &[]);
    let (code, shown) = finish(pty);
    assert_eq!(code, 0, "{shown}");
    assert!(!shown.contains("unfinished"), "no dialog was shown: {shown:?}");
    let d = decisions(&output);
    assert_eq!((d[0].outcome.as_str(), d[0].reason.as_str()), ("return", "answer return"));
    let after: Vec<_> =
        f.home.snapshot().into_iter().filter(|(p, _)| !p.starts_with(f.home.tmp.path().join("keep-"))).collect();
    assert_eq!(after, before);
}

const DOWN: &str = "\x1b[B";

/// What a terminal window does when it is resized: the new size on the pty (the kernel then
/// sends SIGWINCH to the program in front).
fn resize(pty: &PtySession, cols: u16, rows: u16) {
    use std::os::fd::AsRawFd;
    let size = libc::winsize { ws_row: rows, ws_col: cols, ws_xpixel: 0, ws_ypixel: 0 };
    // SAFETY: TIOCSWINSZ on the pty master this test owns, with a valid winsize.
    assert_eq!(unsafe { libc::ioctl(pty.process.pty.as_raw_fd(), libc::TIOCSWINSZ, &size) }, 0);
}

#[test]
fn the_screens_need_the_acknowledgement_before_keep_or_clean() {
    if !engine_available("the_screens_need_the_acknowledgement_before_keep_or_clean") {
        return;
    }
    let f = four("kps");
    fs::write(f.unpushed.mount_path(0).join("notes.txt"), "untracked\n").unwrap();
    let input = f.home.assess_lines(&[&f.unpushed.container]);
    let (mut pty, output) = keep_on_screens(&f.home, &["--policy=ask"], &input, &[]);
    // ratatui writes only the cells that change, so words are matched one by one.
    pty.exp_string("\x1b[?1049h").unwrap();
    pty.exp_string("unfinished").unwrap();
    pty.exp_string("notes.txt").unwrap();
    pty.exp_string("upstream").unwrap();
    pty.exp_string("read").unwrap();
    // A resize redraws the screen at the new size.
    resize(&pty, 70, 16);
    pty.exp_string("unfinished").unwrap();
    pty.exp_string("read").unwrap();
    // The choices' keys do nothing on screen 1, and nothing is decided.
    pty.send("2").unwrap();
    pty.send(DOWN).unwrap();
    pty.send("3").unwrap();
    pty.flush().unwrap();
    std::thread::sleep(Duration::from_millis(500));
    assert!(fs::read(&output).unwrap().is_empty(), "nothing is decided before the acknowledgement");
    assert_eq!(f.home.status(&f.unpushed.container).0, "active");
    pty.send("\r").unwrap();
    pty.flush().unwrap();
    pty.exp_string("What").unwrap();
    pty.exp_string("Return").unwrap();
    pty.exp_string("Inspect").unwrap();
    pty.send(DOWN).unwrap();
    pty.send("\r").unwrap();
    pty.flush().unwrap();
    let (code, shown) = finish(pty);
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("\x1b[?1049l"), "the alternate screen is left: {shown:?}");
    let d = decisions(&output);
    assert_eq!((d[0].outcome.as_str(), d[0].reason.as_str()), ("keep", "operator keep"));
    assert_eq!(f.home.status(&f.unpushed.container).0, "preserved_dirty");
}

#[test]
fn inspect_pages_the_diffs_and_the_unpushed_commits() {
    if !engine_available("inspect_pages_the_diffs_and_the_unpushed_commits") {
        return;
    }
    let f = four("kpi");
    fs::write(f.unpushed.mount_path(0).join("README.md"), "changed before inspecting\n").unwrap();
    let input = f.home.assess_lines(&[&f.unpushed.container]);
    let paged = f.home.tmp.path().join("paged.txt");
    let pager = format!("cat > '{}'", paged.display());
    let (mut pty, output) = keep_on_screens(&f.home, &["--policy=ask"], &input, &[("JACKIN_PAGER", &pager)]);
    pty.exp_string("unfinished").unwrap();
    pty.send("\r").unwrap();
    pty.flush().unwrap();
    pty.exp_string("Inspect").unwrap();
    pty.send("i").unwrap();
    pty.send("\r").unwrap();
    pty.flush().unwrap();
    // Back from the pager: the choices are drawn again, Return still the default of the row keys.
    pty.exp_string("Inspect").unwrap();
    pty.send("1").unwrap();
    pty.send("\r").unwrap();
    pty.flush().unwrap();
    let (code, shown) = finish(pty);
    assert_eq!(code, 0, "{shown}");
    let paged = fs::read_to_string(&paged).expect("the pager ran");
    assert!(paged.contains("M README.md"), "{paged}");
    assert!(paged.contains("+changed before inspecting"), "{paged}");
    let log = common::git(&f.unpushed.mount_path(0), &["log", "--oneline", "-1"]);
    assert!(paged.contains(log.trim()), "the unpushed commit as git log --oneline shows it: {paged}");
    assert_eq!(decisions(&output)[0].outcome, "return");
}

#[test]
fn ctrl_c_on_the_screens_changes_nothing() {
    if !engine_available("ctrl_c_on_the_screens_changes_nothing") {
        return;
    }
    let f = four("kpc");
    let input = format!("{}{}", f.home.assess_lines(&[&f.clean.container]), f.home.assess_lines(&[&f.dirty.container]));
    let before = f.home.snapshot();
    // The terminal closing (SIGHUP) is an interruption like Ctrl-C.
    for (screen, hang_up) in [(1, false), (2, false), (2, true)] {
        // Screen 1 with NO_COLOR: no bold, no reverse video.
        let env: &[(&str, &str)] = if screen == 1 { &[("NO_COLOR", "1")] } else { &[] };
        let (mut pty, output) = keep_on_screens(&f.home, &["--policy=ask"], &input, env);
        pty.exp_string("unfinished").unwrap();
        if screen == 2 {
            pty.send("\r").unwrap();
            pty.flush().unwrap();
            pty.exp_string("Inspect").unwrap();
        }
        if hang_up {
            pty.process.signal(rexpect::process::signal::Signal::SIGHUP).unwrap();
        } else {
            pty.send_control('c').unwrap();
        }
        let (code, rest) = finish(pty);
        assert_eq!(code, 130, "{rest}");
        assert!(rest.contains("interrupted: nothing was changed"), "{rest}");
        if screen == 1 {
            assert!(rest.contains("Ctrl-C"), "{rest:?}");
            assert!(!rest.contains("\x1b[1m") && !rest.contains("\x1b[7m"), "NO_COLOR: {rest:?}");
        }
        assert!(fs::read(&output).unwrap().is_empty(), "nothing written on stdout");
        let after: Vec<_> =
            f.home.snapshot().into_iter().filter(|(p, _)| !p.starts_with(f.home.tmp.path().join("keep-"))).collect();
        assert_eq!(after, before);
    }
}

#[test]
fn the_dialog_clean_up_shows_diffs_on_request_and_marks_the_session() {
    if !engine_available("the_dialog_clean_up_shows_diffs_on_request_and_marks_the_session") {
        return;
    }
    let f = four("kpx");
    let input = f.home.assess_lines(&[&f.dirty.container]);
    let (mut pty, output) = keep_on_pty(&f.home, &["--policy=ask"], &input);
    pty.exp_string("Press Enter").unwrap();
    pty.send_line("").unwrap();
    pty.exp_string("Choose [1]").unwrap();
    pty.send_line("d").unwrap();
    pty.exp_string("+changed by the agent").unwrap();
    pty.exp_string("Choose [1]").unwrap();
    pty.send_line("3").unwrap();
    assert_eq!(finish(pty).0, 0);
    let d = decisions(&output);
    assert_eq!((d[0].outcome.as_str(), d[0].discard_unfinished), ("clean", true));
    let kept_until_purged = ("preserved_dirty".to_owned(), "preserved_dirty".to_owned());
    assert_eq!(f.home.status(&f.dirty.container), kept_until_purged, "jackin's prune never deletes it");
    assert_eq!(
        fs::read_to_string(f.dirty.mount_path(0).join("README.md")).unwrap(),
        "changed by the agent\n",
        "keep deletes nothing"
    );
}

#[test]
fn the_dialog_refuses_to_clean_unreadable_work_without_the_flag() {
    if !engine_available("the_dialog_refuses_to_clean_unreadable_work_without_the_flag") {
        return;
    }
    let f = four("kpn");
    let input = f.home.assess_lines(&[&f.unknown.container]);
    let (mut pty, output) = keep_on_pty(&f.home, &["--policy=ask"], &input);
    pty.exp_string("is gone").unwrap();
    pty.send_line("").unwrap();
    pty.exp_string("3) Exit and clean up: unavailable").unwrap();
    pty.send_line("3").unwrap();
    pty.exp_string("not possible").unwrap();
    pty.exp_string("Choose [1]").unwrap();
    pty.send_line("2").unwrap();
    assert_eq!(finish(pty).0, 0);
    assert_eq!(decisions(&output)[0].status.as_deref(), Some("preserved_dirty"));

    let (mut pty, output) = keep_on_pty(&f.home, &["--policy=ask", "--discard-unfinished"], &input);
    pty.exp_string("Press Enter").unwrap();
    pty.send_line("").unwrap();
    pty.exp_string("Choose [1]").unwrap();
    pty.send_line("3").unwrap();
    assert_eq!(finish(pty).0, 0);
    assert_eq!(decisions(&output)[0].outcome, "clean");
}

#[test]
fn ctrl_c_in_the_dialog_changes_nothing() {
    if !engine_available("ctrl_c_in_the_dialog_changes_nothing") {
        return;
    }
    let f = four("kpq");
    // Two sessions: the first is decided (clean session), the second is interrupted.
    let input = format!("{}{}", f.home.assess_lines(&[&f.clean.container]), f.home.assess_lines(&[&f.dirty.container]));
    let before = f.home.snapshot();
    for screen in [1, 2] {
        let (mut pty, output) = keep_on_pty(&f.home, &["--policy=ask"], &input);
        pty.exp_string("Press Enter").unwrap();
        if screen == 2 {
            pty.send_line("").unwrap();
            pty.exp_string("Choose [1]").unwrap();
        }
        pty.send_control('c').unwrap();
        let (code, rest) = finish(pty);
        assert_eq!(code, 130, "{rest}");
        assert!(rest.contains("interrupted: nothing was changed"), "{rest}");
        assert!(fs::read(&output).unwrap().is_empty(), "nothing written on stdout");
        let after: Vec<_> =
            f.home.snapshot().into_iter().filter(|(p, _)| !p.starts_with(f.home.tmp.path().join("keep-"))).collect();
        assert_eq!(after, before);
    }
}

#[test]
fn with_a_terminal_only_unfinished_work_under_ask_is_asked_about() {
    if !engine_available("with_a_terminal_only_unfinished_work_under_ask_is_asked_about") {
        return;
    }
    let f = four("kpw");
    let clean = f.home.assess_lines(&[&f.clean.container]);
    let dirty = f.home.assess_lines(&[&f.dirty.container]);
    let unknown = f.home.assess_lines(&[&f.unknown.container]);
    for (args, input, outcome, reason) in [
        (&["--policy=ask"][..], &clean, "clean", "clean session"),
        (&["--policy=ask", "--keep"][..], &clean, "keep", "operator keep"),
        (&["--policy=ask", "--keep"][..], &dirty, "keep", "operator keep"),
        (&["--policy=keep"][..], &dirty, "keep", "policy keep"),
        (&["--policy=keep"][..], &clean, "keep", "policy keep"),
        (&["--policy=clean"][..], &dirty, "clean", "policy clean"),
        (&["--policy=clean"][..], &unknown, "keep", "unknown"),
        (&["--policy=clean"][..], &clean, "clean", "clean session"),
    ] {
        let (pty, output) = keep_on_pty(&f.home, args, input);
        let (code, shown) = finish(pty);
        assert_eq!(code, 0, "{args:?}: {shown}");
        assert!(!shown.contains("unfinished work"), "{args:?} asked: {shown}");
        let d = decisions(&output);
        assert_eq!((d[0].outcome.as_str(), d[0].reason.as_str()), (outcome, reason), "{args:?}");
    }
}

#[test]
fn records_on_a_terminal_stdin_are_a_usage_error() {
    let f = four("kpy");
    let mut cmd = keep_command(&f.home, &[]);
    cmd.stdout(Stdio::null());
    let before = f.home.snapshot();
    let pty = rexpect::session::spawn_command(cmd, Some(30_000)).unwrap();
    let (code, shown) = finish(pty);
    assert_eq!(code, 2, "{shown}");
    assert!(shown.contains("stdin is a terminal") && shown.contains("hint: pipe assessments into it"), "{shown}");
    assert_eq!(f.home.snapshot(), before);
}

#[test]
fn the_dialog_names_the_upstream_and_the_stashes_of_a_clone() {
    if !engine_available("the_dialog_names_the_upstream_and_the_stashes_of_a_clone") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let inst = home.instance("kpg00000", |h, c| vec![h.clone_record(c, &host, "/workspace/my-app")]);
    let clone = inst.mount_path(0);
    fs::write(clone.join("README.md"), "stashed work\n").unwrap();
    common::git(&clone, &["stash", "-q"]);
    commit_file(&clone, "a.rs", "a\n", "one");
    commit_file(&clone, "b.rs", "b\n", "two");
    let input = home.assess_lines(&[&inst.container]);
    let (mut pty, output) = keep_on_pty(&home, &["--policy=ask"], &input);
    pty.exp_string("main ").unwrap();
    pty.exp_string(" 2 commits ahead of origin/main").unwrap();
    pty.exp_string("1 stash ").unwrap();
    pty.exp_string("Press Enter").unwrap();
    pty.send_line("").unwrap();
    pty.exp_string("Choose [1]").unwrap();
    pty.send_line("2").unwrap();
    assert_eq!(finish(pty).0, 0);
    assert_eq!(decisions(&output)[0].status.as_deref(), Some("preserved_unpushed"));
    assert_eq!(home.cleanup_statuses(&inst.container), ["preserved_unpushed"]);
}

#[test]
fn an_in_place_session_is_kept_the_same_way() {
    if !engine_available("an_in_place_session_is_kept_the_same_way") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("kpp00000", |_, _| Vec::new());
    let c = inst.container.as_str();
    let _session = Session::launch(
        c,
        SessionOptions { dind: false, binds: vec![(inst.dir.join("home"), "/home/agent")], ..Default::default() },
    );
    docker(&["stop", "-t", "0", c]);
    let input = home.assess_lines(&[c]);
    assert!(records::<Assessment>(input.as_bytes())[0].in_place);
    let recs = ok(&keep(&home, &["--policy=ask", "--keep"], &input));
    assert_eq!((recs[0].outcome.as_str(), recs[0].reason.as_str()), ("keep", "operator keep"));
    assert_eq!(home.status(c), ("restore_available".into(), "restore_available".into()));
    assert!(!Session::exists("container", c) && !Session::exists("network", &format!("{c}-net")));
    assert!(inst.dir.join("home").is_dir());
    assert!(!inst.dir.join(".jackin/isolation.json").exists(), "no isolation records are invented");
    assert_eq!(
        home.continuity(c).recipe.expect("the recipe keep captured")["role"]["mounts"][0]["destination"],
        "/home/agent"
    );
}

/// A keep of a session without isolation records writes none, even when the assessment it is
/// given says its work is at risk (an assessment is input; the records are jackin's file). And
/// that assessment, changed after assess sealed it, is not believed: the session is looked at
/// again and kept as what it is (clean: `restore_available`).
#[test]
fn a_kept_session_without_isolation_records_gets_none_whatever_its_assessment_says() {
    if !engine_available("a_kept_session_without_isolation_records_gets_none") {
        return;
    }
    let mut home = Home::new();
    home.with_seal_key();
    let inst = home.instance(&common::unique_id(), |_, _| Vec::new());
    let c = inst.container.as_str();
    let mut said: serde_json::Value = serde_json::from_str(home.assess_lines(&[c]).trim()).unwrap();
    assert!(said["data"]["seal"].is_string(), "assess seals once the home has its key: {said}");
    said["data"]["verdict"] = "dirty".into();
    let recs = ok(&keep(&home, &["--policy=keep"], &format!("{said}\n")));
    assert_eq!(recs[0].status.as_deref(), Some("restore_available"), "{recs:?}");
    assert!(!inst.dir.join(".jackin/isolation.json").exists(), "no isolation records are invented");
}

/// A clean-up of a live session with `--stop` stops its role container first (a graceful stop:
/// the agent's processes get their SIGTERM) before it stamps it; the purge it is piped into
/// removes what is stopped.
#[test]
fn a_clean_up_of_a_live_session_stops_its_role_container() {
    if !engine_available("a_clean_up_of_a_live_session_stops_its_role_container") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&common::unique_id(), |_, _| Vec::new());
    let c = inst.container.as_str();
    let session = Session::launch(c, SessionOptions { dind: false, ..Default::default() });
    let recs = ok(&keep(&home, &["--policy=clean", "--stop"], &home.assess_lines(&[c])));
    assert_eq!((recs[0].outcome.as_str(), recs[0].status.as_deref()), ("clean", Some("clean_exited")), "{recs:?}");
    assert_eq!(session.state(c).as_deref(), Some("exited"), "stopped, not left running");
}

/// The launcher (here the test, holding `data/<c>.lock` as jackin does while it has the session
/// attached) has the session: `--stop` does not take it from under it. Refused with exit 5, the
/// holder named, nothing stopped or changed; once the lock is free, `--keep --stop` keeps it as
/// the specification says (a detached session).
#[test]
fn keep_stop_leaves_a_session_whose_name_lock_another_process_holds() {
    if !engine_available("keep_stop_leaves_a_held_session") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&common::unique_id(), |_, _| Vec::new());
    let c = inst.container.as_str();
    let _session = Session::launch(c, SessionOptions { dind: false, ..Default::default() });
    let input = home.assess_lines(&[c]);
    let lock = fs::File::create(home.home.join("data").join(format!("{c}.lock"))).unwrap();
    fs2::FileExt::lock_exclusive(&lock).unwrap();
    let before = home.snapshot();
    for args in [&["--keep", "--stop"][..], &["--keep", "--stop", "--dry-run"]] {
        let out = keep(&home, args, &input);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {}", stderr(&out));
        let error = &records::<ErrorRecord>(&out.stdout)[0];
        assert_eq!((error.code.as_str(), error.container_base.as_deref()), ("busy", Some(c)));
        assert!(error.message.contains("the session is live"), "{error:?}");
        if jackin::base::os::NAMES_LOCK_HOLDERS {
            assert!(error.message.contains(&format!("(pid {})", std::process::id())), "the holder named: {error:?}");
        }
    }
    assert_eq!(_session.state(c).as_deref(), Some("running"), "not stopped");
    assert_eq!(home.snapshot(), before, "nothing changed");
    drop(lock);
    let recs = ok(&keep(&home, &["--keep", "--stop"], &input));
    assert_eq!(recs[0].status.as_deref(), Some("restore_available"));
    assert!(!Session::exists("container", c));
}

/// An operator attached to the running session (`jackin hardline`, jackin takes no name lock for
/// it): `--keep --stop` does not stop the container under them. Refused with exit 5, nothing
/// stopped or changed; once they detach, the same keep goes through.
#[test]
fn keep_stop_leaves_a_session_someone_is_attached_to() {
    if !engine_available("keep_stop_leaves_a_session_someone_is_attached_to") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&common::unique_id(), |_, _| Vec::new());
    let c = inst.container.as_str();
    let session = Session::launch(c, SessionOptions { dind: false, ..Default::default() });
    let input = home.assess_lines(&[c]);
    let attached = common::docker::Attached::to(c);
    let before = home.snapshot();
    for args in [&["--keep", "--stop"][..], &["--policy=clean", "--stop"]] {
        let out = keep(&home, args, &input);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {}", stderr(&out));
        let error = &records::<ErrorRecord>(&out.stdout)[0];
        assert_eq!((error.code.as_str(), error.container_base.as_deref()), ("live", Some(c)), "{error:?}");
        assert!(error.message.contains("1 process(es) attached"), "{error:?}");
        assert_eq!(session.state(c).as_deref(), Some("running"), "{args:?}: not stopped");
        assert_eq!(home.snapshot(), before, "{args:?}: nothing changed");
    }
    drop(attached);
    let recs = ok(&keep(&home, &["--keep", "--stop"], &input));
    assert_eq!(recs[0].status.as_deref(), Some("restore_available"));
    assert!(!Session::exists("container", c));
}

/// A name lock that cannot even be opened (here a symlink to itself) is not a busy session: the
/// instance fails with what is wrong (an `error` record, exit 6), not with "retry later" (busy,
/// exit 5), and nothing changes.
#[test]
fn a_name_lock_that_cannot_be_opened_is_an_error_not_busy() {
    if !engine_available("a_name_lock_that_cannot_be_opened") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&common::unique_id(), |_, _| Vec::new());
    let c = inst.container.as_str();
    let input = home.assess_lines(&[c]);
    let lock = home.home.join("data").join(format!("{c}.lock"));
    std::os::unix::fs::symlink(&lock, &lock).unwrap();
    let before = home.snapshot();
    let out = keep(&home, &["--keep"], &input);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("cannot open {}", lock.display())), "{}", stderr(&out));
    let errors = records::<ErrorRecord>(&out.stdout);
    assert!(errors.len() == 1 && errors[0].code != "busy", "{errors:?}");
    assert_eq!(home.snapshot(), before, "nothing changed");
}

/// A purge caught after its re-assessment holds the session's claim: keep is refused with exit 5
/// naming the purge (a dry run too), and keeps nothing; the purge then finishes.
#[test]
fn keep_refuses_a_session_a_purge_is_at_work_on_and_changes_nothing() {
    if !engine_available("keep_refuses_while_purging") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&common::unique_id(), |_, _| Vec::new());
    let c = inst.container.as_str();
    let input = home.assess_lines(&[c]);
    let mut purge = home.detached("jackin-purge");
    purge.args([c, "--format=json"]).stdin(Stdio::null());
    let paused = common::Paused::start(
        purge,
        jackin::base::tool::Tool::Purge,
        "quarantined",
        home.tmp.path().join("purge.paused"),
    );
    let holder = format!("jackin-purge (pid {})", paused.pid);
    let before = home.snapshot();
    for args in [&["--keep"][..], &["--keep", "--dry-run"], &["--policy=clean"]] {
        let out = keep(&home, args, &input);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {}", stderr(&out));
        assert!(stderr(&out).contains(&common::holder_as_said(&holder)), "{args:?}: {}", stderr(&out));
        let recs = envelopes(&out.stdout);
        assert_eq!(recs.len(), 1, "no decision: {}", String::from_utf8_lossy(&out.stdout));
        assert_eq!(recs[0].data::<ErrorRecord>().code, "busy");
    }
    assert_eq!(home.snapshot(), before, "nothing kept, nothing stamped");
    let purged = paused.finish();
    assert_eq!(purged.status.code(), Some(0), "{}", stderr(&purged));
    assert!(!inst.dir.exists());
}

/// A session named on keep's command line is refused (exit 2, nothing read or changed) with the
/// pipe that keeps it; before, `jackin-keep --keep --stop C` kept the piped sessions, or nothing,
/// and exited 0.
#[test]
fn a_session_named_on_the_command_line_is_refused_with_the_pipe_that_keeps_it() {
    let f = four("kpn");
    let input = f.home.assess_lines(&[&f.dirty.container]);
    let before = f.home.snapshot();
    for stdin in [String::new(), input] {
        let out = f
            .home
            .cmd("jackin-keep")
            .args(["--keep", "--stop", &f.clean.container])
            .write_stdin(stdin)
            .output()
            .unwrap();
        let said = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{said}");
        assert!(said.contains(&format!("jackin-assess {} | jackin-keep --keep --stop", f.clean.container)), "{said}");
        assert!(out.stdout.is_empty());
        assert_eq!(f.home.snapshot(), before);
    }
}
