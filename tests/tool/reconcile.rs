//! jackin-reconcile against a real Docker engine: the rules table with real containers, a real
//! host-level kill of an engine of the test's own, index repair, orphans, recipes without secret
//! values, --watch, and concurrent writers.

use crate::common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::docker::{docker, docker_quiet, engine_available, OwnEngine, Session, SessionOptions, TEST_IMAGE};
use common::records::{envelopes, records_of, Change, Orphan, Repair};
use common::{stderr, write_json, Home};
use serde_json::{json, Value};

/// Docker resources made by the docker CLI in a test, removed on drop. `host` is the engine's
/// `-H` argument when it is not the system engine.
struct Made {
    host: Option<String>,
    items: Vec<(&'static str, String)>,
}

impl Made {
    fn new() -> Self {
        Made { host: None, items: Vec::new() }
    }

    fn args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        let mut all = Vec::new();
        if let Some(host) = &self.host {
            all.extend(["-H", host.as_str()]);
        }
        all.extend(args);
        all
    }

    fn docker(&self, args: &[&str]) -> String {
        docker(&self.args(args))
    }

    /// A container with jackin's labels for a role (`sidecar_of` None) or a sidecar.
    fn container(&mut self, name: &str, sidecar_of: Option<&str>, extra: &[&str], cmd: &[&str]) {
        let role_label = format!("jackin.role={}", sidecar_of.unwrap_or(name));
        let kind = if sidecar_of.is_some() { "jackin.kind=dind" } else { "jackin.kind=role" };
        let mut args = vec!["create", "--name", name, "--label", "jackin.managed=true", "--label", kind];
        if sidecar_of.is_some() {
            args.extend(["--label", &role_label]);
        }
        args.extend(extra);
        args.push(TEST_IMAGE);
        args.extend(cmd);
        self.docker(&args);
        self.items.push(("container", name.to_owned()));
    }

    fn network(&mut self, name: &str, role: &str) {
        let label = format!("jackin.role={role}");
        self.docker(&["network", "create", "--label", "jackin.managed=true", "--label", &label, name]);
        self.items.push(("network", name.to_owned()));
    }

    fn volume(&mut self, name: &str) {
        self.docker(&["volume", "create", name]);
        self.items.push(("volume", name.to_owned()));
    }

    fn run_to_exit(&mut self, name: &str, extra: &[&str], cmd: &[&str]) {
        self.container(name, None, extra, cmd);
        self.docker(&["start", name]);
        self.docker(&["wait", name]);
    }

    /// Runs a container that outgrows its memory until the engine says it was OOM-killed: the
    /// engine records the kernel's OOM event apart from the exit, and under load the exit can
    /// win, leaving `OOMKilled` false on a run the kernel did kill.
    fn run_until_oom_killed(&mut self, name: &str, extra: &[&str], cmd: &[&str]) {
        self.run_to_exit(name, extra, cmd);
        for _ in 0..5 {
            for _ in 0..20 {
                if self.docker(&["inspect", "-f", "{{.State.OOMKilled}}", name]) == "true" {
                    return;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            self.docker(&["start", name]);
            self.docker(&["wait", name]);
        }
        panic!("the engine never marked {name} OOM-killed");
    }
}

impl Drop for Made {
    fn drop(&mut self) {
        for (kind, name) in self.items.iter().rev() {
            let args: Vec<&str> = match *kind {
                "container" => vec!["rm", "-f", name],
                "network" => vec!["network", "rm", name],
                _ => vec!["volume", "rm", "-f", name],
            };
            let _ = docker_quiet(&self.args(&args));
        }
    }
}

fn change_of<'a>(changes: &'a [Change], container: &str) -> Option<&'a Change> {
    changes.iter().find(|c| c.identity.container_base == container)
}

/// (from, to, cause) of a change.
fn transition(c: &Change) -> (&str, &str, &str) {
    (&c.from, &c.to, &c.cause)
}

/// Holds `data/<container>.lock` the way the launcher does, until dropped.
fn hold_name_lock(home: &Home, container: &str) -> fs::File {
    let file = fs::File::create(home.home.join("data").join(format!("{container}.lock"))).unwrap();
    fs2::FileExt::lock_exclusive(&file).unwrap();
    file
}

#[test]
fn the_rules_table_with_real_containers() {
    if !engine_available("the_rules_table_with_real_containers") {
        return;
    }
    let mut home = Home::new();
    let removed = home.instance("rt7aaaaa", |_, _| Vec::new());
    let exited = home.instance("rt7bbbbb", |_, _| Vec::new());
    let oom = home.instance("rt7ccccc", |_, _| Vec::new());
    let kept = home.instance("rt7ddddd", |_, _| Vec::new());
    let live = home.instance("rt7eeeee", |_, _| Vec::new());
    let failed = home.instance("rt7fffff", |_, _| Vec::new());
    let locked = home.instance("rt7ggggg", |_, _| Vec::new());
    home.set_status(&kept.container, "restore_available", None);
    home.set_status(&failed.container, "failed_setup", None);

    let mut made = Made::new();
    made.run_to_exit(&exited.container, &[], &["sh", "-c", "exit 3"]);
    made.run_until_oom_killed(
        &oom.container,
        &["--memory", "8m", "--memory-swap", "8m"],
        &["sh", "-c", "x=$(head -c 60000000 /dev/zero | tr '\\0' a)"],
    );
    made.run_to_exit(&failed.container, &[], &["sh", "-c", "exit 1"]);
    made.run_to_exit(&locked.container, &[], &["sh", "-c", "exit 2"]);
    let _kept_session = Session::launch(&kept.container, SessionOptions { dind: false, ..Default::default() });
    let _live_session = Session::launch(
        &live.container,
        SessionOptions {
            dind: false,
            env: vec![("SECRET_TOKEN", "tok-9f8e7d6c5b4a"), ("TERM", "xterm")],
            ..Default::default()
        },
    );
    let _launcher = hold_name_lock(&home, &locked.container);

    // A dry run says what would change, with --exit-code 1, and changes nothing.
    let before = home.snapshot();
    let out = home.cmd("jackin-reconcile").args(["--dry-run", "--exit-code", "--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let changes = records_of::<Change>(&out.stdout);
    let dry = change_of(&changes, &removed.container).expect("a dry-run change");
    assert!(dry.dry_run);
    assert_eq!(home.snapshot(), before, "a dry run changes nothing");

    let out = home.cmd("jackin-reconcile").args(["--format", "json", "-v"]).output().unwrap();
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("engine API calls"), "{said}");
    let changes = records_of::<Change>(&out.stdout);

    let c = change_of(&changes, &removed.container).expect("removed container");
    assert_eq!(transition(c), ("active", "crashed", "container_removed"));
    let c = change_of(&changes, &exited.container).expect("exited container");
    assert_eq!((c.to.as_str(), c.cause.as_str()), ("crashed", "container_exited"));
    let role = c.evidence.exit().role.clone();
    assert_eq!((role.exit_code, role.oom_killed), (Some(3), Some(false)));
    assert!(role.finished_at.is_some());
    let c = change_of(&changes, &oom.container).expect("OOM-killed container");
    assert_eq!((c.to.as_str(), c.cause.as_str()), ("crashed", "container_exited"));
    let role = c.evidence.exit().role.clone();
    assert_eq!((role.exit_code, role.oom_killed), (Some(137), Some(true)));
    let c = change_of(&changes, &kept.container).expect("running under a kept row");
    assert_eq!(transition(c), ("restore_available", "running", "container_running"));
    assert!(change_of(&changes, &live.container).is_none());
    assert!(change_of(&changes, &failed.container).is_none(), "an ordinary failed setup stays failed_setup");
    assert!(change_of(&changes, &locked.container).is_none(), "a held name lock means the launcher is still at work");

    // Both of jackin's files carry the status; the cause and evidence are in the tools' own file.
    for (inst, status) in [
        (&removed, "crashed"),
        (&exited, "crashed"),
        (&oom, "crashed"),
        (&kept, "running"),
        (&live, "active"),
        (&failed, "failed_setup"),
        (&locked, "active"),
    ] {
        assert_eq!(home.status(&inst.container), (status.into(), status.into()), "{}", inst.container);
    }
    let cont = home.continuity(&oom.container);
    assert_eq!(cont.cause.as_deref(), Some("container_exited"));
    assert_eq!(cont.evidence.expect("the evidence of the exit").exit().role.oom_killed, Some(true));
    let history = &cont.history;
    assert_eq!(history.len(), 1);
    assert_eq!(
        (history[0].from.as_str(), history[0].to.as_str(), history[0].tool.as_str()),
        ("active", "crashed", "jackin-reconcile")
    );
    assert_eq!(home.continuity(&kept.container).cause.as_deref(), Some("container_running"));

    // Recipe on first sight, names only: the secret's value is in no file under the home.
    let recipe = home.continuity(&live.container).recipe.expect("a recipe on first sight");
    assert_eq!(recipe["captured_by"], "jackin-reconcile");
    let env = recipe["role"]["env"].as_array().unwrap();
    assert!(env.iter().any(|e| e["name"] == "SECRET_TOKEN" && e["source"] == "env:SECRET_TOKEN"));
    for (path, entry) in home.snapshot() {
        assert!(
            !String::from_utf8_lossy(entry.bytes()).contains("tok-9f8e7d6c5b4a"),
            "secret value in {}",
            path.display()
        );
    }
    for (_, entry) in home.snapshot() {
        let text = String::from_utf8_lossy(entry.bytes());
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            if let Some(s) = v.get("status").and_then(Value::as_str) {
                assert!([
                    "active",
                    "running",
                    "clean_exited",
                    "crashed",
                    "preserved_dirty",
                    "preserved_unpushed",
                    "restore_available",
                    "superseded",
                    "purged",
                    "failed_setup"
                ]
                .contains(&s));
            }
        }
    }

    // Nothing new: text format prints nothing at all (cron mails only news), exit 0.
    let out = home.cmd("jackin-reconcile").args(["--format", "text", "--quiet", "--exit-code"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");

    // Named instances are reconciled alone.
    home.set_status(&exited.container, "active", None);
    let out = home.cmd("jackin-reconcile").args(["--format", "text", "rt7bbbbb"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("{} · active → crashed · container exited", exited.container)), "{text}");
}

#[test]
fn a_real_host_kill_is_labelled_killed_by_host() {
    if !engine_available("a_real_host_kill_is_labelled_killed_by_host") {
        return;
    }
    if !common::have_dockerd("a_real_host_kill_is_labelled_killed_by_host") {
        return;
    }
    let mut engine = OwnEngine::start_with_test_image(
        tempfile::Builder::new().prefix("jk-hostkill-").tempdir().unwrap(),
        Vec::new(),
    );
    let host = engine.host();

    let mut home = Home::new();
    let live = home.instance("hk7aaaaa", |_, _| Vec::new());
    let mislabelled = home.instance("hk7bbbbb", |_, _| Vec::new());
    let own_exit = home.instance("hk7ccccc", |_, _| Vec::new());
    for inst in [&live, &mislabelled] {
        home.with_sidecar(&inst.container);
    }
    let mut made = Made { host: Some(host.clone()), items: Vec::new() };
    let mut container_pids = Vec::new();
    for inst in [&live, &mislabelled] {
        let net = format!("{}-net", inst.container);
        made.network(&net, &inst.container);
        let sidecar = format!("{}-dind", inst.container);
        made.container(&sidecar, Some(&inst.container), &["--network", &net], &["sleep", "3600"]);
        made.container(&inst.container, None, &["--network", &net], &["sleep", "3600"]);
        made.docker(&["start", &sidecar]);
        made.docker(&["start", &inst.container]);
        for name in [&sidecar, &inst.container] {
            container_pids.push(made.docker(&["inspect", "-f", "{{.State.Pid}}", name]).parse::<i32>().unwrap());
        }
    }
    // An ordinary exit before the kill stays an ordinary exit.
    made.run_to_exit(&own_exit.container, &["--network", "none"], &["sh", "-c", "exit 4"]);
    // jackin saw the engine vanish during this one's start and called it a failed setup.
    home.set_status(&mislabelled.container, "failed_setup", None);

    engine.kill_all(&container_pids);
    engine.launch();

    let out = home.cmd("jackin-reconcile").args(["--format", "json", "-v"]).env("DOCKER_HOST", &host).output().unwrap();
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let changes = records_of::<Change>(&out.stdout);
    for (inst, from) in [(&live, "active"), (&mislabelled, "failed_setup")] {
        let c =
            change_of(&changes, &inst.container).unwrap_or_else(|| panic!("{} changed: {changes:?}", inst.container));
        assert_eq!(transition(c), (from, "crashed", "killed_by_host"), "{c:?}");
        let evidence = c.evidence.exit();
        assert_eq!((evidence.role.exit_code, evidence.role.oom_killed), (Some(255), Some(false)), "{evidence:?}");
        assert_eq!(evidence.sidecar.as_ref().and_then(|s| s.exit_code), Some(255), "{evidence:?}");
        assert!(evidence.sign.is_some(), "{evidence:?}");
        assert!(evidence.engine_started_at.is_some(), "{evidence:?}");
        // Where the system says when it booted (Linux); the portable build (a Mac's) does not.
        assert_eq!(evidence.host_boot_time.is_some(), jackin::base::os::KNOWS_BOOT_TIME, "{evidence:?}");
        assert_eq!(home.status(&inst.container), ("crashed".into(), "crashed".into()));
        let cont = home.continuity(&inst.container);
        assert_eq!(cont.cause.as_deref(), Some("killed_by_host"));
        assert_eq!(
            cont.evidence.expect("the evidence of the kill").exit().sidecar.as_ref().and_then(|s| s.exit_code),
            Some(255)
        );
    }
    let c = change_of(&changes, &own_exit.container).expect("the ordinary exit");
    assert_eq!(c.cause, "container_exited");
    assert_eq!(c.evidence.role().exit_code, Some(4));
    drop(made);
    drop(engine);
}

/// A session that ended on its own (role and sidecar both exit 255) before a graceful restart of
/// the engine is `container_exited`: the restart happened after it was over.
#[test]
fn an_exit_before_an_engine_restart_is_not_killed_by_host() {
    if !engine_available("an_exit_before_an_engine_restart_is_not_killed_by_host") {
        return;
    }
    if !common::have_dockerd("an_exit_before_an_engine_restart_is_not_killed_by_host") {
        return;
    }
    let mut engine =
        OwnEngine::start_with_test_image(tempfile::Builder::new().prefix("jk-restart-").tempdir().unwrap(), Vec::new());
    let host = engine.host();
    let mut home = Home::new();
    let ended = home.instance("rs7aaaaa", |_, _| Vec::new());
    home.with_sidecar(&ended.container);
    let mut made = Made { host: Some(host.clone()), items: Vec::new() };
    let net = format!("{}-net", ended.container);
    made.network(&net, &ended.container);
    let sidecar = format!("{}-dind", ended.container);
    made.container(&sidecar, Some(&ended.container), &["--network", &net], &["sh", "-c", "exit 255"]);
    made.docker(&["start", &sidecar]);
    made.docker(&["wait", &sidecar]);
    made.run_to_exit(&ended.container, &["--network", &net], &["sh", "-c", "exit 255"]);
    // The engine's socket carries its start time at a one-second grain: let it fall after the exit.
    std::thread::sleep(Duration::from_millis(1100));
    engine.stop_gracefully();
    engine.launch();

    let out = home.cmd("jackin-reconcile").args(["--format", "json", "-v"]).env("DOCKER_HOST", &host).output().unwrap();
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let changes = records_of::<Change>(&out.stdout);
    let c = change_of(&changes, &ended.container).unwrap_or_else(|| panic!("no change: {changes:?}"));
    assert_eq!(transition(c), ("active", "crashed", "container_exited"), "{c:?}");
    let evidence = c.evidence.exit();
    assert_eq!(evidence.role.exit_code, Some(255), "{evidence:?}");
    assert!(evidence.engine_started_at.is_some(), "{evidence:?}");
    drop(made);
    drop(engine);
}

#[test]
fn an_unreachable_engine_changes_nothing() {
    let mut home = Home::new();
    let inst = home.instance("ur7aaaaa", |_, _| Vec::new());
    let orphan_dir = home.data("jk-ur7bbbbb-norow");
    fs::create_dir_all(orphan_dir.join(".jackin")).unwrap();
    fs::write(
        orphan_dir.join(".jackin/instance.json"),
        common::manifest_text("ur7bbbbb", "jk-ur7bbbbb-norow", "active", "2026-08-20T10:00:00Z"),
    )
    .unwrap();
    let dead = tempfile::tempdir().unwrap();
    let before = home.snapshot();
    for args in [vec!["--format", "json"], vec!["--watch"], vec![inst.container.as_str()]] {
        let out = home
            .cmd("jackin-reconcile")
            .args(&args)
            .env("DOCKER_HOST", format!("unix://{}/docker.sock", dead.path().display()))
            .timeout(Duration::from_secs(60))
            .output()
            .unwrap();
        let stderr = stderr(&out);
        assert_eq!(out.status.code(), Some(4), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "one clear line: {stderr}");
        assert!(stderr.starts_with("jackin-reconcile: error: the Docker engine at unix://"), "{stderr}");
        assert!(out.stdout.is_empty());
        assert_eq!(home.snapshot(), before, "{args:?}: nothing changed");
    }
}

#[test]
fn bad_arguments_change_nothing() {
    let mut home = Home::new();
    home.instance("ba7aaaaa", |_, _| Vec::new());
    let before = home.snapshot();
    for arg in ["../etc", "jk-BAD", "ab"] {
        let out = home.cmd("jackin-reconcile").arg(arg).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{arg}");
        assert!(stderr(&out).contains("jackin-reconcile: error:"));
    }
    let out = home.cmd("jackin-reconcile").args(["--watch", "ba7aaaaa"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(home.snapshot(), before);
}

#[test]
fn the_index_is_repaired() {
    if !engine_available("the_index_is_repaired") {
        return;
    }
    let mut home = Home::new();
    let kept = home.instance("ir7aaaaa", |_, _| Vec::new());
    home.set_status(&kept.container, "restore_available", None);
    let vanished = home.instance("ir7bbbbb", |_, _| Vec::new());
    home.set_status(&vanished.container, "crashed", None);
    fs::remove_dir_all(&vanished.dir).unwrap();
    let unrowed = "jk-ir7ccccc-myapp-agentsmith";
    fs::create_dir_all(home.data(unrowed).join(".jackin")).unwrap();
    fs::write(
        home.manifest_path(unrowed),
        common::manifest_text("ir7ccccc", unrowed, "preserved_dirty", "2026-08-21T00:00:00Z"),
    )
    .unwrap();
    let mut idx = home.index();
    idx["instances"].as_array_mut().unwrap()[0]["pinned"] = json!(true);
    write_json(&home.index_path(), &idx);

    let out = home.cmd("jackin-reconcile").args(["--format", "json", "--exit-code"]).output().unwrap();
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let repairs = records_of::<Repair>(&out.stdout);
    let kinds: Vec<(&str, &str)> = repairs.iter().map(|r| (r.kind.as_str(), r.name.as_str())).collect();
    assert!(kinds.contains(&("row_restored", unrowed)), "{kinds:?}");
    assert!(kinds.contains(&("row_dropped", vanished.container.as_str())), "{kinds:?}");
    assert_eq!(home.status(unrowed), ("preserved_dirty".into(), "preserved_dirty".into()));
    assert!(home.index_row(&vanished.container).is_none());
    assert_eq!(home.status(&kept.container), ("restore_available".into(), "restore_available".into()));

    // An index that does not parse: moved aside, said so, rebuilt from the manifests.
    fs::write(home.index_path(), "{\"version\": 1, \"instances\": [").unwrap();
    let out = home.cmd("jackin-reconcile").args(["--format", "json", "--quiet"]).output().unwrap();
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("moved aside and rebuilt"), "{said}");
    let repairs = records_of::<Repair>(&out.stdout);
    let rebuilt = repairs.iter().find(|r| r.kind == "index_rebuilt").expect("a repair record");
    let moved_to = PathBuf::from(rebuilt.moved_to.as_deref().unwrap());
    assert!(moved_to.file_name().unwrap().to_str().unwrap().starts_with("instances.json.corrupt-"));
    assert_eq!(fs::read_to_string(&moved_to).unwrap(), "{\"version\": 1, \"instances\": [");
    let rows = home.index_rows();
    let names: Vec<&str> = rows.iter().map(|r| r.container_base.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&unrowed) && names.contains(&kept.container.as_str()));

    // An index of another version is never rewritten.
    let future = "{\n  \"version\": 2,\n  \"instances\": []\n}";
    fs::write(home.index_path(), future).unwrap();
    let before = home.snapshot();
    let out = home.cmd("jackin-reconcile").output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert!(stderr(&out).contains("unsupported index version 2"));
    assert_eq!(home.snapshot(), before);
}

#[test]
fn orphans_are_reported_and_jackins_other_locks_are_not() {
    if !engine_available("orphans_are_reported_and_jackins_other_locks_are_not") {
        return;
    }
    let mut home = Home::new();
    let alive = home.instance("or7aaaaa", |_, _| Vec::new());
    let gone = "jk-or7zzzzz-myapp-agentsmith";
    let mut made = Made::new();
    made.network(&format!("{gone}-net"), gone);
    made.volume(&format!("{gone}-dind-certs"));
    // Its proof of being this home's: the role container's bind mount under data/, which stays in
    // the container's config after the data dir is gone.
    let gone_home = home.data(gone).join("home");
    fs::create_dir_all(&gone_home).unwrap();
    let bind = format!("{}:/home/agent", gone_home.display());
    made.container(gone, None, &["--network", "none", "-v", &bind], &["true"]);
    fs::remove_dir_all(home.data(gone)).unwrap();
    made.container(&format!("{gone}-dind"), Some(gone), &["--network", "none"], &["true"]);
    made.network(&format!("{}-net", alive.container), &alive.container);
    made.container(&alive.container, None, &["--network", "none"], &["true"]);
    let data = home.home.join("data");
    fs::write(data.join(format!("{gone}.lock")), "").unwrap();
    let held_gone = "jk-or7yyyyy-myapp-agentsmith";
    let _held = hold_name_lock(&home, held_gone);
    fs::write(data.join(format!("{}.lock", alive.container)), "").unwrap();
    for other in ["instances.json.lock", "my-app.repo.lock", "caffeinate.lock", "prewarm-dind-adoption.lock"] {
        fs::write(data.join(other), "").unwrap();
    }
    fs::create_dir_all(data.join("my-app.locks")).unwrap();
    let mut finished = Command::new("true").spawn().unwrap();
    let dead_pid = finished.id();
    finished.wait().unwrap();
    let stale = format!("instances.json.tmp.{dead_pid}.0");
    fs::write(data.join(&stale), "{").unwrap();
    let stale_manifest = format!("instance.json.tmp.{dead_pid}.3");
    fs::write(alive.dir.join(".jackin").join(&stale_manifest), "{").unwrap();
    let in_flight = format!("instances.json.tmp.{}.1", std::process::id());
    fs::write(data.join(&in_flight), "{").unwrap();

    let before = home.snapshot();
    let out = home.cmd("jackin-reconcile").args(["--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(home.snapshot(), before, "orphans are reported, never removed");
    let orphans: Vec<(String, String)> = records_of::<Orphan>(&out.stdout)
        .into_iter()
        .map(|o| (o.kind, o.name))
        .filter(|(_, name)| name.contains("or7") || name.contains("tmp"))
        .collect();
    let mut expected = vec![
        ("container".to_owned(), gone.to_owned()),
        ("container".to_owned(), format!("{gone}-dind")),
        ("network".to_owned(), format!("{gone}-net")),
        ("volume".to_owned(), format!("{gone}-dind-certs")),
        ("name_lock".to_owned(), gone.to_owned()),
        ("temp_file".to_owned(), stale.clone()),
        ("temp_file".to_owned(), format!("{}/.jackin/{stale_manifest}", alive.container)),
    ];
    let mut found = orphans.clone();
    found.sort();
    expected.sort();
    assert_eq!(found, expected);
    drop(made);
}

/// The state of each Docker resource: a container's status, or whether a network or volume exists.
fn engine_state(items: &[(&str, String)]) -> Vec<(String, Option<String>)> {
    items
        .iter()
        .map(|(kind, name)| {
            let state = match *kind {
                "container" => docker_quiet(&["inspect", "-f", "{{.State.Status}}", name]),
                _ => docker_quiet(&[kind, "inspect", "-f", "{{.Name}}", name]),
            };
            (name.clone(), state)
        })
        .collect()
}

/// Two homes on one engine: home A's `jackin-reconcile | jackin-purge --stop` reports and removes
/// A's own orphans only. Home B's running session, its stopped session and what is left of a
/// session half torn down (its sidecar, network and certs volume) are neither reported nor touched.
#[test]
fn another_homes_sessions_on_the_same_engine_are_neither_reported_nor_touched() {
    if !engine_available("another_homes_sessions_on_the_same_engine_are_neither_reported_nor_touched") {
        return;
    }
    let home_a = Home::new();
    let mut home_b = Home::new();
    let running = home_b.instance(&common::unique_id(), |_, _| Vec::new());
    let stopped = home_b.instance(&common::unique_id(), |_, _| Vec::new());
    let binds = |dir: &std::path::Path| vec![(dir.join("home"), "/home/agent")];
    let b_running =
        Session::launch(&running.container, SessionOptions { binds: binds(&running.dir), ..Default::default() });
    let b_stopped = Session::launch(
        &stopped.container,
        SessionOptions { binds: binds(&stopped.dir), running: false, ..Default::default() },
    );
    let mut made = Made::new();
    let torn = Home::container_name(&common::unique_id());
    made.network(&format!("{torn}-net"), &torn);
    made.volume(&format!("{torn}-dind-certs"));
    made.container(&format!("{torn}-dind"), Some(&torn), &["--network", "none"], &["true"]);
    fs::write(home_b.home.join("data").join(format!("{torn}.lock")), "").unwrap();

    let mine = Home::container_name(&common::unique_id());
    let mine_home = home_a.data(&mine).join("home");
    fs::create_dir_all(&mine_home).unwrap();
    let bind = format!("{}:/home/agent", mine_home.display());
    made.container(&mine, None, &["--network", "none", "-v", &bind], &["true"]);
    fs::remove_dir_all(home_a.data(&mine)).unwrap();
    made.network(&format!("{mine}-net"), &mine);

    let mut b_items: Vec<(&str, String)> = Vec::new();
    for session in [&b_running, &b_stopped] {
        b_items.push(("container", session.container.clone()));
        b_items.push(("container", session.sidecar.clone().unwrap()));
        b_items.push(("network", session.network.clone()));
        b_items.push(("volume", session.volume.clone().unwrap()));
    }
    b_items.extend([
        ("container", format!("{torn}-dind")),
        ("network", format!("{torn}-net")),
        ("volume", format!("{torn}-dind-certs")),
    ]);
    let b_before = engine_state(&b_items);
    assert_eq!(b_before[0].1.as_deref(), Some("running"));
    assert_eq!(b_before[4].1.as_deref(), Some("created"));

    let out = home_a.cmd("jackin-reconcile").args(["--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let orphans: Vec<String> = records_of::<Orphan>(&out.stdout).into_iter().map(|o| o.name).collect();
    for (_, name) in &b_items {
        assert!(!orphans.contains(name), "home B's {name} reported as home A's orphan: {orphans:?}");
    }
    assert!(orphans.contains(&mine) && orphans.contains(&format!("{mine}-net")), "{orphans:?}");

    let purge =
        home_a.cmd("jackin-purge").args(["--stop", "--format", "json"]).write_stdin(out.stdout).output().unwrap();
    assert_eq!(purge.status.code(), Some(0), "{}", stderr(&purge));
    assert!(!Session::exists("container", &mine) && !Session::exists("network", &format!("{mine}-net")));
    assert_eq!(engine_state(&b_items), b_before, "home B's resources are as they were");

    // Told by hand that home B's resources are orphans, home A's purge still leaves them alone.
    let told: String = b_items
        .iter()
        .map(|(kind, name)| {
            json!({"schema_version": 1, "type": "orphan", "data": {"kind": kind, "name": name, "reason": "r"}})
                .to_string()
                + "\n"
        })
        .collect();
    let purge = home_a.cmd("jackin-purge").args(["--stop", "--format", "json"]).write_stdin(told).output().unwrap();
    let stderr = stderr(&purge);
    assert_eq!(purge.status.code(), Some(6), "{stderr}");
    assert_eq!(stderr.matches("not provably this home's").count(), b_items.len(), "{stderr}");
    assert_eq!(engine_state(&b_items), b_before, "home B's resources are as they were");
    drop(made);
}

/// Told that a container or a name lock is an orphan, jackin-purge removes it only when nothing
/// of its instance is left in this home: an index row alone or a data dir alone keeps it. A
/// stopped orphan container goes without `--stop`; a running one is busy until `--stop` is
/// given. A lock that is gone already is reported as nothing removed, and no file is left.
#[test]
fn an_orphan_goes_only_when_nothing_of_its_instance_is_left_and_it_is_not_running() {
    if !engine_available("an_orphan_goes_only_when_nothing_of_its_instance_is_left_and_it_is_not_running") {
        return;
    }
    let mut home = Home::new();
    let mut made = Made::new();
    let data = home.home.join("data");
    // Each is proved this home's by a bind mount under data/, as a role container is; the
    // mount stays in the container's config after its source is gone.
    let role = |made: &mut Made, name: &str, cmd: &[&str]| {
        let dir = data.join(name).join("home");
        fs::create_dir_all(&dir).unwrap();
        let bind = format!("{}:/home/agent", dir.display());
        made.container(name, None, &["--network", "none", "-v", &bind], cmd);
    };
    let row_only = home.instance(&common::unique_id(), |_, _| Vec::new()).container;
    role(&mut made, &row_only, &["true"]);
    fs::remove_dir_all(home.data(&row_only)).unwrap();
    let dir_only = Home::container_name(&common::unique_id());
    role(&mut made, &dir_only, &["true"]);
    let stopped = Home::container_name(&common::unique_id());
    role(&mut made, &stopped, &["true"]);
    fs::remove_dir_all(home.data(&stopped)).unwrap();
    let running = Home::container_name(&common::unique_id());
    role(&mut made, &running, &["sleep", "3600"]);
    docker(&["start", &running]);
    fs::remove_dir_all(home.data(&running)).unwrap();
    for name in [&row_only, &dir_only] {
        fs::write(data.join(format!("{name}.lock")), "").unwrap();
    }
    let vanished = Home::container_name(&common::unique_id());
    let told = |items: &[(&str, &str)]| -> String {
        items
            .iter()
            .map(|(kind, name)| {
                json!({"schema_version": 1, "type": "orphan", "data": {"kind": kind, "name": name, "reason": "r"}})
                    .to_string()
                    + "\n"
            })
            .collect()
    };
    let input = told(&[
        ("container", &row_only),
        ("container", &dir_only),
        ("container", &stopped),
        ("container", &running),
        ("name_lock", &row_only),
        ("name_lock", &dir_only),
        ("name_lock", &vanished),
    ]);
    let out = home.cmd("jackin-purge").args(["--format", "json"]).write_stdin(input).output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{err}");
    let outcome = |e: &common::records::Envelope| -> (String, String) {
        match e.kind.as_str() {
            "error" => (e.data["code"].as_str().unwrap().to_owned(), e.data["message"].as_str().unwrap().to_owned()),
            kind => (kind.to_owned(), e.data["removed"].to_string()),
        }
    };
    let outcomes: Vec<(String, String)> = envelopes(&out.stdout).iter().map(outcome).collect();
    let codes: Vec<&str> = outcomes.iter().map(|(code, _)| code.as_str()).collect();
    assert_eq!(
        codes,
        ["not_orphan", "not_orphan", "purged", "live", "not_orphan", "not_orphan", "purged"],
        "{outcomes:?}\n{err}"
    );
    assert!(outcomes[0].1.contains("its instance still exists"), "{outcomes:?}");
    assert!(outcomes[1].1.contains("its instance still exists"), "{outcomes:?}");
    assert!(outcomes[3].1.contains("is running (--stop stops it first)"), "{outcomes:?}");
    assert!(outcomes[4].1.contains("still has a data dir or an index row"), "{outcomes:?}");
    assert!(outcomes[5].1.contains("still has a data dir or an index row"), "{outcomes:?}");
    assert_eq!(outcomes[6].1, "[]", "a lock that was not there is not reported removed");
    assert!(!data.join(format!("{vanished}.lock")).exists(), "the hold's own file went with it");
    assert!(Session::exists("container", &row_only) && Session::exists("container", &dir_only));
    assert!(!Session::exists("container", &stopped));
    assert_eq!(docker(&["inspect", "-f", "{{.State.Status}}", &running]), "running");
    assert!(data.join(format!("{row_only}.lock")).exists() && data.join(format!("{dir_only}.lock")).exists());

    let out = home
        .cmd("jackin-purge")
        .args(["--stop", "--format", "json"])
        .write_stdin(told(&[("container", &running)]))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!Session::exists("container", &running), "with --stop a running orphan is stopped and removed");
    drop(made);
}

/// jackin's prewarmed sidecar, its certs volume and its files belong to no instance: never
/// reported as orphans, and jackin-purge leaves them alone even when told they are.
#[test]
fn the_prewarmed_sidecar_is_never_an_orphan() {
    if !engine_available("the_prewarmed_sidecar_is_never_an_orphan") {
        return;
    }
    let home = Home::new();
    let sidecar = format!("jk-prewarm-dind-{}", std::process::id());
    let certs = format!("jk-prewarm-certs-{}", std::process::id());
    let mut made = Made::new();
    made.docker(&["volume", "create", "--label", "jackin.managed=true", &certs]);
    made.items.push(("volume", certs.clone()));
    let labels = ["jackin.managed=true", "jackin.kind=prewarm-dind", "jackin.prewarm=true"];
    let mut create = vec!["create", "--name", &sidecar, "--network", "none"];
    for label in &labels {
        create.extend(["--label", label]);
    }
    let mount = format!("{certs}:/certs");
    create.extend(["-v", &mount, TEST_IMAGE, "sleep", "3600"]);
    made.docker(&create);
    made.items.push(("container", sidecar.clone()));
    made.docker(&["start", &sidecar]);
    let data = home.home.join("data");
    fs::write(data.join("prewarm-dind.json"), "{\"container\": \"jk-prewarm-dind-1\"}").unwrap();

    let out = home.cmd("jackin-reconcile").args(["--format", "json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let named: Vec<Orphan> =
        records_of::<Orphan>(&out.stdout).into_iter().filter(|o| o.name.contains("prewarm")).collect();
    assert!(named.is_empty(), "{named:?}");
    let told: String = [("container", &sidecar), ("volume", &certs)]
        .iter()
        .map(|(kind, name)| {
            format!(
                "{{\"schema_version\":1,\"type\":\"orphan\",\"data\":{{\"kind\":\"{kind}\",\"name\":\"{name}\",\"reason\":\"r\"}}}}\n"
            )
        })
        .collect();
    let before = home.snapshot();
    let out = home.cmd("jackin-purge").args(["--stop", "--format", "json"]).write_stdin(told).output().unwrap();
    let stderr = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{stderr}");
    assert_eq!(stderr.matches("jackin's prewarmed sidecar").count(), 2, "{stderr}");
    assert!(Session::exists("container", &sidecar) && Session::exists("volume", &certs));
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &sidecar]), "true");
    assert_eq!(home.snapshot(), before);
    drop(made);
}

#[test]
fn watch_reacts_to_a_stopped_container_and_exits_on_sigterm() {
    if !engine_available("watch_reacts_to_a_stopped_container_and_exits_on_sigterm") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("wa7aaaaa", |_, _| Vec::new());
    let _session = Session::launch(&inst.container, SessionOptions { dind: false, ..Default::default() });
    // The operator's program: each event it is handed, one line.
    let events = home.tmp.path().join("events.log");
    let program = home.tmp.path().join("on-event");
    fs::write(
        &program,
        format!(
            "#!/bin/sh
echo \"$JACKIN_EVENT $JACKIN_SESSION $JACKIN_STATUS\" >> '{}'\n",
            events.display()
        ),
    )
    .unwrap();
    fs::set_permissions(&program, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut child: Child = Command::new(env!("CARGO_BIN_EXE_jackin-reconcile"))
        .arg("--on-event")
        .arg(&program)
        .args(["--watch", "-v", "--format", "json", "--home"])
        .arg(&home.home)
        .arg("--config-dir")
        .arg(&home.config)
        .env_remove("JACKIN_HOME_DIR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<(bool, String)>();
    let stdout = child.stdout.take().unwrap();
    let stderr = child.stderr.take().unwrap();
    let tx2 = tx.clone();
    std::thread::spawn(move || {
        BufReader::new(stdout).lines().map_while(Result::ok).for_each(|l| drop(tx.send((true, l))))
    });
    std::thread::spawn(move || {
        BufReader::new(stderr).lines().map_while(Result::ok).for_each(|l| drop(tx2.send((false, l))))
    });
    let wait_for = |what: &dyn Fn(bool, &str) -> bool, log: &mut Vec<String>| {
        let deadline = Instant::now() + Duration::from_secs(60);
        while let Ok((out, line)) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            log.push(line.clone());
            if what(out, &line) {
                return true;
            }
        }
        false
    };
    let mut log = Vec::new();
    let stop_guard = KillOnDrop(child.id());
    assert!(wait_for(&|out, l| !out && l.contains("watching the engine's events"), &mut log), "{log:?}");
    docker(&["stop", "-t", "1", &inst.container]);
    let container = inst.container.clone();
    let exited = |out: bool, line: &str| {
        let record = if out { envelopes(line.as_bytes()).pop() } else { None };
        record
            .filter(|r| r.is::<Change>())
            .map(|r| r.data::<Change>())
            .is_some_and(|c| c.identity.container_base == container && c.cause == "container_exited")
    };
    assert!(wait_for(&exited, &mut log), "{log:?}");
    assert_eq!(home.manifest(&inst.container).status, "crashed");
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the watcher did not exit on SIGTERM");
        std::thread::sleep(Duration::from_millis(100));
    };
    std::mem::forget(stop_guard);
    assert_eq!(status.code(), Some(0), "{log:?}");
    // Handed to the operator's program once (through jackin-notify, which the hidden --on-event
    // starts and waits for before the watcher exits).
    let handed = fs::read_to_string(&events).unwrap_or_default();
    assert_eq!(handed, format!("status_change {} crashed\n", inst.container), "{log:?}");
}

struct KillOnDrop(u32);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        unsafe { libc::kill(self.0 as i32, libc::SIGKILL) };
    }
}

#[test]
fn sixteen_processes_at_once_lose_no_row() {
    if !engine_available("sixteen_processes_at_once_lose_no_row") {
        return;
    }
    let home = Home::new();
    let data = home.home.join("data");
    let names = common::many_sessions(&home, "cc7", 520, 500, |i| if i % 10 == 0 { "active" } else { "crashed" });

    let done = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicUsize::new(0));
    let reader = {
        let (done, reads, path) = (Arc::clone(&done), Arc::clone(&reads), data.join("instances.json"));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                let bytes = fs::read(&path).unwrap();
                let index: Value = serde_json::from_slice(&bytes)
                    .unwrap_or_else(|e| panic!("the index is not valid JSON mid-run: {e}"));
                assert!(index["instances"].as_array().unwrap().len() >= 500);
                reads.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut children = Vec::new();
    for k in 0..16 {
        let child = if k % 2 == 0 {
            Command::new(env!("CARGO_BIN_EXE_jackin-reconcile"))
                .args(["--format", "json", "--quiet", "--home"])
                .arg(&home.home)
                .arg("--config-dir")
                .arg(&home.config)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map(|child| (child, None))
                .unwrap()
        } else {
            let mine: Vec<&str> = names
                .iter()
                .enumerate()
                .filter(|(i, _)| i % 8 == k / 2 && i % 10 != 0)
                .map(|(_, n)| n.as_str())
                .take(25)
                .collect();
            common::status_writer(&home.home, &mine)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .map(|child| (child, Some(mine.len())))
                .unwrap()
        };
        children.push(child);
    }
    for (child, writes) in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success() && writes.is_none_or(|n| common::status_writer_wrote(&out, n)),
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            stderr(&out)
        );
    }
    done.store(true, Ordering::Relaxed);
    reader.join().unwrap();
    assert!(reads.load(Ordering::Relaxed) > 0);

    let rows = home.index_rows();
    let mut seen: Vec<&str> = rows.iter().map(|r| r.container_base.as_str()).collect();
    seen.sort();
    let mut expected: Vec<&str> = names.iter().map(String::as_str).collect();
    expected.sort();
    assert_eq!(seen, expected, "every row once, the 20 restored ones included");
    for (i, name) in names.iter().enumerate() {
        let status = home.manifest(name).status;
        if i % 10 == 0 {
            assert_eq!(status, "crashed", "{name}: its container does not exist");
        } else if i % 8 < 8
            && names.iter().enumerate().filter(|(j, _)| j % 8 == i % 8 && j % 10 != 0).take(25).any(|(_, n)| n == name)
        {
            assert_eq!(status, "restore_available", "{name}");
        }
    }
}

/// jackin leaves a `purged` row when it tears a clean session down itself (real-host.md,
/// "Tombstones are jackin's"): reconcile keeps it, and the other tools have nothing to do with it.
#[test]
fn jackins_tombstones_stay_and_are_nothing_to_act_on() {
    if !engine_available("jackins_tombstones_stay_and_are_nothing_to_act_on") {
        return;
    }
    let mut home = Home::new();
    let alive = home.instance("tmbal000", |_, _| Vec::new());
    let tomb = home.tombstone("tmbst000");
    let row = |home: &Home| home.index_row(&tomb).map(|r| r.status);

    let out = home.cmd("jackin-reconcile").arg("--format=json").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(records_of::<Repair>(&out.stdout).is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!(row(&home).as_deref(), Some("purged"), "reconcile keeps jackin's tombstone");
    let named = home.cmd("jackin-reconcile").args(["--format=json", &tomb]).output().unwrap();
    assert_eq!(named.status.code(), Some(0), "{}", stderr(&named));

    let all = home.cmd("jackin-assess").args(["--all", "--format=json"]).output().unwrap();
    assert_eq!(all.status.code(), Some(0), "{}", stderr(&all));
    let listed = String::from_utf8_lossy(&all.stdout).into_owned();
    assert!(listed.contains(&alive.container) && !listed.contains(&tomb), "{listed}");

    let before = home.snapshot();
    for (tool, args) in [
        ("jackin-assess", vec![tomb.as_str()]),
        ("jackin-assess", vec!["tmbst"]),
        ("jackin-restore", vec![tomb.as_str(), "--yes"]),
    ] {
        let out = home.cmd(tool).args(&args).arg("--format=json").output().unwrap();
        assert_eq!(out.status.code(), Some(3), "{tool} {args:?}: {}", stderr(&out));
        let error: Value = serde_json::from_slice(out.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
        assert_eq!(error["data"]["code"], "tombstone", "{tool} {args:?}");
        assert!(stderr(&out).contains("jackin's tombstone"), "{tool}: {}", stderr(&out));
    }
    assert_eq!(home.snapshot(), before, "nothing changed");
    assert_eq!(row(&home), Some("purged".into()));

    let list = home.cmd("jackin-restore").args(["--list", "--format=json"]).output().unwrap();
    assert_eq!(list.status.code(), Some(0), "{}", stderr(&list));
    assert!(!String::from_utf8_lossy(&list.stdout).contains(&tomb));
    let terminal = home.cmd("jackin-purge").args(["--terminal", "--format=json"]).output().unwrap();
    assert_eq!(terminal.status.code(), Some(0), "{}", stderr(&terminal));
    assert_eq!(row(&home), Some("purged".into()), "a selection by status leaves it to jackin's prune");

    // Named to jackin-purge it is finished, as a purge that stopped after removing the name lock
    // is (lifecycle.md: a rerun finishes the job; only the row was left).
    let named = home.cmd("jackin-purge").args([tomb.as_str(), "--format=json"]).output().unwrap();
    assert_eq!(named.status.code(), Some(0), "{}", stderr(&named));
    assert_eq!(row(&home), None);
    assert!(home.index_row(&alive.container).is_some(), "only that row");
}

/// An index lock held past the wait is "busy" (exit 5) and nothing of the session changes: not
/// the manifest, not the row, not the tools' own file (before, the manifest said `crashed` and
/// the row `active` until the next run, with exit 6).
#[test]
fn an_index_lock_held_past_the_wait_is_busy_with_nothing_changed() {
    if !engine_available("an_index_lock_held_past_the_wait_is_busy_with_nothing_changed") {
        return;
    }
    let mut home = Home::new();
    let gone = home.instance("il7aaaaa", |_, _| Vec::new());
    let lock = fs::File::create(home.home.join("data/instances.json.lock")).unwrap();
    fs2::FileExt::lock_exclusive(&lock).unwrap();
    let before = home.snapshot();
    let out = home
        .cmd("jackin-reconcile")
        .args(["--format", "json", gone.container.as_str()])
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(5), "{said}");
    assert!(said.contains("index lock") && said.contains("held by another process"), "{said}");
    assert_eq!(home.snapshot(), before, "nothing changed while the index was locked");
    drop(lock);
    let out = home.cmd("jackin-reconcile").args(["--format", "json", gone.container.as_str()]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let changes = records_of::<Change>(&out.stdout);
    let c = change_of(&changes, &gone.container).expect("the change, once the lock is free");
    assert_eq!(transition(c), ("active", "crashed", "container_removed"));
}
