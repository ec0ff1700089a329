//! jackin-idle on a real engine (issue 67): of four running sessions (a client attached with
//! `docker exec`, a busy role container, one whose work tree changed during the window, and one
//! nobody touched) only the last is kept, with its recipe, and it resumes at tier 2 with its
//! work and a healthy sidecar; a session that wakes between the check and the stop is left
//! running; the policy file decides which workspaces a schedule's run keeps.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::common;
use common::docker::{self, engine_available, Session, SessionOptions, TEST_AGENT_IMAGE};
use common::records::{envelopes, Restored};
use common::{Home, Instance, Paused};
use jackin::base::tool::Tool;
use serde_json::Value;

/// A running session of the test agent image, with a worktree of `host` and (`dind`) a sidecar;
/// `entrypoint` its main process (`/agent-init` idles, `/agent-busy` works).
fn running(home: &mut Home, host: &Path, entrypoint: &'static str, dind: bool) -> (Instance, Session) {
    docker::build_agent_image();
    let inst = home.instance(&common::unique_id(), |h, c| vec![h.worktree_record(c, host, "/workspace/app")]);
    home.write_agent_toml(&inst.container);
    let options = SessionOptions {
        dind,
        image: Some(TEST_AGENT_IMAGE),
        role_args: vec!["--entrypoint", entrypoint],
        binds: vec![(inst.mount_path(0), "/workspace/app")],
        ..Default::default()
    };
    if dind {
        home.edit_manifest(&inst.container, |m| {
            m["docker"]["dind_container"] = Value::from(format!("{}-dind", inst.container));
            m["docker"]["certs_volume"] = Value::from(format!("{}-dind-certs", inst.container));
        });
    }
    (inst.clone(), Session::launch(&inst.container, options))
}

fn idle(home: &Home, args: &[&str]) -> std::process::Output {
    let out = home.cmd("jackin-idle").args(args).arg("--format=json").output().unwrap();
    assert!(out.status.success(), "jackin-idle {args:?}: {}", common::stderr(&out));
    out
}

/// The `idle` records of a run, by session.
fn checks(out: &std::process::Output) -> Vec<Value> {
    envelopes(&out.stdout).into_iter().filter(|e| e.kind == "idle").map(|e| e.data).collect()
}

fn check_of<'a>(checks: &'a [Value], inst: &Instance) -> &'a Value {
    checks.iter().find(|c| c["container_base"] == inst.container.as_str()).unwrap_or_else(|| {
        panic!("no idle record of {}: {checks:?}", inst.container);
    })
}

fn policy(home: &Home, text: &str) -> PathBuf {
    let path = home.config.join("jackin-tools-idle.toml");
    fs::create_dir_all(&home.config).unwrap();
    fs::write(&path, text).unwrap();
    path
}

#[test]
fn of_four_running_sessions_only_the_one_nobody_used_is_kept_and_it_resumes_with_its_work() {
    if !engine_available("of_four_running_sessions_only_the_one_nobody_used_is_kept") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let (attached, s1) = running(&mut home, &host, "/agent-init", false);
    let (busy, s2) = running(&mut home, &host, "/agent-busy", false);
    let (writer, s3) = running(&mut home, &host, "/agent-init", false);
    let (untouched, s4) = running(&mut home, &host, "/agent-init", true);
    fs::write(untouched.mount_path(0).join("notes.md"), "half done\n").unwrap();
    // A client attached for the whole test: a real docker exec whose stdin stays open.
    let mut client = Command::new("docker")
        .args(["exec", "-i", &attached.container, "cat"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));

    // The first check starts the CPU watch: nothing is idle yet.
    let first = checks(&idle(&home, &["--idle-for", "3s"]));
    assert_eq!(first.len(), 4, "{first:?}");
    assert!(first.iter().all(|c| c["idle"] == false), "{first:?}");
    assert_eq!(check_of(&first, &attached)["clients"], 1);
    assert!(check_of(&first, &attached)["why"].as_str().unwrap().contains("client(s) attached"));
    assert!(check_of(&first, &untouched)["why"].as_str().unwrap().contains("the CPU watch began"));

    // The agent of `writer` writes its work tree all along (every half second, as the host sees
    // the bind mount).
    let stop_writing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writing = {
        let (stop, progress) = (stop_writing.clone(), writer.mount_path(0).join("progress.txt"));
        std::thread::spawn(move || {
            for n in 0.. {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                fs::write(&progress, format!("step {n}\n")).unwrap();
                std::thread::sleep(Duration::from_millis(500));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(3500));

    // Without a policy for the workspace, a schedule's run keeps nothing.
    let quiet = idle(&home, &["--yes"]);
    assert!(quiet.stdout.is_empty(), "silent: {}", String::from_utf8_lossy(&quiet.stdout));
    // With one, only the untouched session is idle, and kept.
    policy(&home, "[workspaces.my-app]\nkeep_after = \"3s\"\n");
    let view = checks(&idle(&home, &[]));
    assert_eq!(check_of(&view, &untouched)["idle"], true, "{view:?}");
    for (inst, why) in [(&attached, "client(s) attached"), (&busy, "CPU use"), (&writer, "a file change")] {
        let check = check_of(&view, inst);
        assert_eq!(check["idle"], false, "{check}");
        assert!(check["why"].as_str().unwrap().contains(why), "{}: {check}", inst.container);
    }
    let kept = idle(&home, &["--yes"]);
    let changes: Vec<Value> =
        envelopes(&kept.stdout).into_iter().filter(|e| e.kind == "change").map(|e| e.data).collect();
    assert_eq!(changes.len(), 1, "{}", String::from_utf8_lossy(&kept.stdout));
    let change = &changes[0];
    assert_eq!(change["container_base"], untouched.container.as_str());
    assert_eq!((change["from"].as_str(), change["to"].as_str()), (Some("active"), Some("preserved_dirty")));
    assert_eq!(change["cause"], "idle_kept");
    assert_eq!(change["evidence"]["policy"], "workspace my-app");
    assert_eq!(change["evidence"]["recipe"]["sidecar"], true, "{change}");
    for (inst, session) in [(&attached, &s1), (&busy, &s2), (&writer, &s3)] {
        assert_eq!(session.state(&inst.container).as_deref(), Some("running"), "{} left running", inst.container);
    }
    assert!(!Session::exists("container", &untouched.container), "its containers freed");
    assert!(!Session::exists("container", s4.sidecar.as_deref().unwrap()));
    let continuity = common::read_json(&untouched.dir.join(".jackin/continuity.json"));
    let last = continuity["history"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["cause"].as_str(), last["tool"].as_str()), (Some("idle_kept"), Some("jackin-idle")));
    assert!(continuity["recipe"]["sidecar"].is_object(), "the recipe holds the sidecar");

    // The list says it was kept idle; it resumes at tier 2 with its work, its sidecar healthy.
    let listed = home.cmd("jackin-restore").args(["--list", "--format=text"]).output().unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    let short = format!("jk-{} ", untouched.id);
    let line = listed.lines().find(|l| l.contains(&short)).unwrap_or_else(|| panic!("{listed}"));
    assert!(line.contains("kept idle since"), "{line}");
    let out =
        home.cmd("jackin-restore").args([untouched.container.as_str(), "--yes", "--format=json"]).output().unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let restored = envelopes(&out.stdout)[0].data::<Restored>();
    assert_eq!(restored.tier, Some(2), "{restored:?}");
    assert_eq!(s4.state(&untouched.container).as_deref(), Some("running"));
    // Restore ran the sidecar's health command itself before it started the role container; the
    // engine's own health status follows at its next interval.
    let sidecar = s4.sidecar.as_deref().unwrap();
    let health = || docker::docker(&["inspect", "-f", "{{.State.Health.Status}}", sidecar]).trim().to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while health() != "healthy" && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(health(), "healthy");
    assert_eq!(fs::read_to_string(untouched.mount_path(0).join("notes.md")).unwrap(), "half done\n");
    stop_writing.store(true, std::sync::atomic::Ordering::Relaxed);
    writing.join().unwrap();
    drop(client.stdin.take());
    let _ = client.wait();
}

/// A session found idle that wakes before the stop (a file written between the check and the
/// second look under its claim) is left running, and the run says why.
#[test]
fn a_session_that_wakes_between_the_check_and_the_stop_is_left_running() {
    if !engine_available("a_session_that_wakes_between_the_check_and_the_stop_is_left_running") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let (inst, session) = running(&mut home, &host, "/agent-init", false);
    idle(&home, &["--idle-for", "2s"]);
    std::thread::sleep(Duration::from_millis(2500));
    let mut cmd = Command::new(common::tool_path("jackin-idle"));
    cmd.arg("--home").arg(&home.home).arg("--config-dir").arg(&home.config);
    cmd.args(["--idle-for", "2s", "--yes", "--format=json"]).env_remove("JACKIN_HOME_DIR");
    let paused = Paused::start(cmd, Tool::Idle, "checked", home.tmp.path().join("pause"));
    fs::write(inst.mount_path(0).join("woke.txt"), "the agent woke up\n").unwrap();
    let out = paused.finish();
    assert!(out.status.success(), "{}", common::stderr(&out));
    let left: Vec<Value> = envelopes(&out.stdout).into_iter().map(|e| e.data).collect();
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["action"], "left");
    assert!(left[0]["why"].as_str().unwrap().contains("woke up: a file changed"), "{}", left[0]);
    assert_eq!(session.state(&inst.container).as_deref(), Some("running"));
    assert_eq!(home.index_row(&inst.container).map(|r| r.status).as_deref(), Some("active"));
}

/// Bad input changes nothing: an unreadable policy (exit 4), `--dry-run` without `--yes` and a
/// duration without a unit (exit 2). `--yes --dry-run` names what the run would keep, as a dry
/// run's change, and keeps nothing.
#[test]
fn bad_input_changes_nothing_and_a_dry_run_keeps_nothing() {
    if !engine_available("bad_input_changes_nothing_and_a_dry_run_keeps_nothing") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let (inst, session) = running(&mut home, &host, "/agent-init", false);
    idle(&home, &["--idle-for", "1s"]);
    std::thread::sleep(Duration::from_millis(1500));
    let before = home.snapshot();
    let file = policy(&home, "[workspaces.my-app]\nkeep_after = \"soon\"\n");
    let out = home.cmd("jackin-idle").args(["--yes"]).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("keep_after"), "{}", common::stderr(&out));
    fs::remove_file(file).unwrap();
    for args in [&["--dry-run"][..], &["--idle-for", "4"]] {
        let out = home.cmd("jackin-idle").args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", common::stderr(&out));
    }
    assert_eq!(home.snapshot(), before, "nothing changed");
    let out = idle(&home, &["--idle-for", "1s", "--yes", "--dry-run"]);
    let change = envelopes(&out.stdout).into_iter().find(|e| e.kind == "change").expect("the would-be change");
    let change = change.data;
    assert_eq!((change["dry_run"].as_bool(), change["cause"].as_str()), (Some(true), Some("idle_kept")));
    assert_eq!(home.snapshot(), before, "a dry run wrote nothing");
    assert_eq!(session.state(&inst.container).as_deref(), Some("running"));
}
