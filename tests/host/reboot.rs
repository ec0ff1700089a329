//! After a reboot: one command brings every interrupted session back (issue 51). The tests' own
//! engine is killed as a host going away kills it (engine, containerd, shims and containers at
//! once) and started again; `jackin-restore --interrupted` then resumes what can come back and
//! names the reason for what cannot, and a failed attempt leaves the session's files as they were.
//! The sessions have a real host's shapes: a role image with its own `ENV` and `USER`, a DinD
//! image that declares a `VOLUME`, an internal network, jackin's own `--env-file` variables.

use crate::common;

use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use common::docker::{
    build_real_images, engine_available, OwnEngine, Session, SessionOptions, TEST_IMAGE, TEST_REAL_DIND_IMAGE,
    TEST_ROLE_IMAGE,
};
use common::records::{records_of, Interrupted};
use common::{stderr, Home, Instance};
use serde_json::Value;

/// One session's Docker side on the test's engine, launched as the other tests launch one
/// (`Session::launch`: jackin's names and labels, the sidecar with its certs volume and health
/// command), with the shapes of `options`; and its agent.toml. Returns the session and its
/// containers.
fn launch(home: &Home, inst: &Instance, options: SessionOptions) -> (Session, Vec<String>) {
    let c = &inst.container;
    if options.dind {
        home.with_sidecar(c);
    }
    let dir = home.home.join("sockets").join(c);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("agent.toml"), "role = \"agent-smith\"\n").unwrap();
    let session = Session::launch(c, options);
    let containers = session.sidecar.iter().cloned().chain([session.container.clone()]).collect();
    (session, containers)
}

fn pids(engine: &OwnEngine, containers: &[String]) -> Vec<i32> {
    containers.iter().map(|c| engine.docker(&["inspect", "-f", "{{.State.Pid}}", c]).parse().unwrap()).collect()
}

fn running(engine: &OwnEngine, container: &str) -> bool {
    engine.docker(&["inspect", "-f", "{{.State.Running}}", container]) == "true"
}

/// What a resume resumes from, as bytes: the manifest, the isolation records, the index row.
fn identity_files(home: &Home, inst: &Instance) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files: Vec<(PathBuf, Vec<u8>)> = ["instance.json", "isolation.json"]
        .iter()
        .map(|f| inst.dir.join(".jackin").join(f))
        .filter(|p| p.exists())
        .map(|p| (p.clone(), fs::read(&p).unwrap()))
        .collect();
    let row = home.index()["instances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["container_base"] == inst.container.as_str())
        .cloned()
        .unwrap();
    files.push((home.index_path(), serde_json::to_vec(&row).unwrap()));
    files
}

/// `jackin-restore --interrupted` with `how` (`--plan`, `--yes`) on the test's engine.
fn sweep(home: &Home, host: &str, how: &str) -> std::process::Output {
    home.cmd("jackin-restore").args(["--interrupted", how, "--format=json"]).env("DOCKER_HOST", host).output().unwrap()
}

fn continuity_bytes(home: &Home, inst: &Instance) -> Vec<u8> {
    fs::read(home.continuity_path(&inst.container)).unwrap()
}

#[test]
fn after_a_host_kill_one_command_resumes_every_interrupted_session_that_can_come_back() {
    let test = "after_a_host_kill_one_command_resumes_every_interrupted_session_that_can_come_back";
    if !engine_available(test) || !common::have_dockerd(test) {
        return;
    }
    build_real_images();
    let mut engine =
        OwnEngine::start_with_test_image(tempfile::Builder::new().prefix("jk-reboot-").tempdir().unwrap(), Vec::new());
    // A real host's shapes: a role image with its own ENV and USER, a DinD image with a VOLUME.
    engine.load_image(TEST_ROLE_IMAGE);
    engine.load_image(TEST_REAL_DIND_IMAGE);
    let host = engine.host();
    let mut home = Home::new();
    let with_dind = home.instance("rb1aaaaa", |_, _| Vec::new());
    let plain = home.instance("rb1bbbbb", |_, _| Vec::new());
    let image_gone = home.instance("rb1ccccc", |_, _| Vec::new());
    let network_gone = home.instance("rb1ddddd", |_, _| Vec::new());
    let in_use = home.instance("rb1eeeee", |_, _| Vec::new());
    // An image of its own (another ID than the test image's), so it can be gone for good.
    engine.docker(&["create", "--name", "rb1-base", TEST_IMAGE, "true"]);
    engine.docker(&["commit", "--change", "LABEL jackin.test=gone", "rb1-base", "jk-reboot-gone:1"]);
    engine.docker(&["rm", "rb1-base"]);
    // Nothing to rebuild it from: the manifest names no commit.
    home.edit_manifest(&image_gone.container, |m| m["role_git_sha"] = Value::Null);

    // jackin's own variables, as its launch passes them in an --env-file it deletes afterwards.
    let env_file = home.tmp.path().join("jackin-launch.env");
    let dind = format!("{}-dind", with_dind.container);
    let launch_env = format!(
        "JACKIN=1\nJACKIN_CONTAINER_NAME={}\nJACKIN_AGENT=claude\nJACKIN_DIND_HOSTNAME={dind}\n\
         DOCKER_HOST=tcp://{dind}:2376\nDOCKER_CERT_PATH=/certs/client\nDOCKER_TLS_VERIFY=1\n",
        with_dind.container
    );
    fs::write(&env_file, launch_env).unwrap();
    let env_file_arg = env_file.to_str().unwrap().to_owned();
    let on_engine = || SessionOptions { host: Some(&host), ..Default::default() };
    let real = SessionOptions {
        image: Some(TEST_ROLE_IMAGE),
        sidecar_image: Some(TEST_REAL_DIND_IMAGE),
        internal_network: true,
        role_args: vec!["--env-file", &env_file_arg],
        ..on_engine()
    };
    let without_dind = |image| SessionOptions { dind: false, image, ..on_engine() };
    let launched = [
        launch(&home, &with_dind, real),
        launch(&home, &plain, without_dind(Some(TEST_ROLE_IMAGE))),
        launch(&home, &image_gone, without_dind(Some("jk-reboot-gone:1"))),
        launch(&home, &network_gone, on_engine()),
        launch(&home, &in_use, without_dind(None)),
    ];
    fs::remove_file(&env_file).unwrap();
    let containers: Vec<String> = launched.iter().flat_map(|(_, names)| names.iter().cloned()).collect();
    // A reconcile while they run captures each one's launch recipe.
    let out = home.cmd("jackin-reconcile").env("DOCKER_HOST", &host).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let sessions = [&with_dind, &plain, &image_gone, &network_gone, &in_use];
    for inst in sessions {
        assert!(home.continuity(&inst.container).recipe.is_some(), "{}: a recipe was captured", inst.container);
    }
    // The launcher of one session is still attached when the host goes: it holds the name lock.
    let lock = fs::File::create(home.home.join("data").join(format!("{}.lock", in_use.container))).unwrap();
    fs2::FileExt::lock_exclusive(&lock).unwrap();

    let pids = pids(&engine, &containers);
    engine.kill_all(&pids);
    engine.launch();
    // After the restart: jackin's garbage collection took one network; one image is gone with its
    // container.
    engine.docker(&["network", "rm", &format!("{}-net", network_gone.container)]);
    engine.docker(&["rm", &image_gone.container]);
    engine.docker(&["rmi", "jk-reboot-gone:1"]);

    // Asked wrong, or narrowed to no session: nothing changes.
    let before = home.snapshot();
    for (args, code) in [
        (&["--interrupted"][..], 2),
        (&["--since", "3d"][..], 2),
        (&["--interrupted", "--exec", "--yes"][..], 2),
        (&["--interrupted", "--plan", "--role", "no-such-role"][..], 0),
    ] {
        let out =
            home.cmd("jackin-restore").args(args).arg("--format=json").env("DOCKER_HOST", &host).output().unwrap();
        assert_eq!(out.status.code(), Some(code), "{args:?}: {}", stderr(&out));
        assert!(records_of::<Interrupted>(&out.stdout).is_empty(), "{args:?}");
        let after = home.snapshot();
        assert!(after == before, "{args:?} changed {:?}", common::changed_paths(&before, &after));
    }
    let usage = home.cmd("jackin-restore").arg("--interrupted").env("DOCKER_HOST", &host).output().unwrap();
    assert!(stderr(&usage).contains("pass --yes"), "says what to do: {}", stderr(&usage));
    for (args, variable) in [(&["--jobs", "0"][..], "24h"), (&[][..], "soon")] {
        let mut cmd = home.cmd("jackin-restore");
        cmd.args(["--interrupted", "--yes"]).args(args).env("JACKIN_INTERRUPTED_SINCE", variable);
        let out = cmd.env("DOCKER_HOST", &host).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?} {variable}: {}", stderr(&out));
        assert!(home.snapshot() == before, "{args:?} {variable} changed nothing");
    }

    // The plan changes nothing, and says what the run will do.
    let out = sweep(&home, &host, "--plan");
    assert_eq!(
        out.status.code(),
        Some(6),
        "the image that is gone stops one: {}{}",
        stderr(&out),
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(home.snapshot(), before, "--plan changed nothing");
    let planned = records_of::<Interrupted>(&out.stdout);
    let outcome = |records: &[Interrupted], inst: &Instance| {
        let record = records.iter().find(|r| r.identity.container_base == inst.container);
        record.unwrap_or_else(|| panic!("no record of {}: {records:?}", inst.container)).clone()
    };
    for inst in [&with_dind, &plain, &network_gone] {
        assert_eq!(outcome(&planned, inst).outcome, "would_resume", "{}", inst.container);
    }
    assert!(planned.iter().all(|r| r.dry_run), "every record of --plan says it is a dry run: {planned:?}");
    assert_eq!(outcome(&planned, &image_gone).outcome, "not_resumed");
    assert_eq!(outcome(&planned, &in_use).outcome, "left_alone");
    let text = home
        .cmd("jackin-restore")
        .args(["--interrupted", "--plan", "--format=text"])
        .env("DOCKER_HOST", &host)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.ends_with("5 interrupted: 3 would resume, 1 not resumed, 1 left alone\n"), "{text}");
    let image_line = text.lines().find(|l| l.starts_with(&image_gone.container)).unwrap();
    assert!(
        image_line.contains("(killed_by_host) · not resumed: ") || image_line.contains("· not resumed: "),
        "{text}"
    );

    home.cmd("jackin-reconcile").env("DOCKER_HOST", &host).assert().code(0);
    let identity_before = identity_files(&home, &image_gone);
    let continuity_before = continuity_bytes(&home, &image_gone);

    let started = Instant::now();
    let out = sweep(&home, &host, "--yes");
    let sweep_took = started.elapsed();
    let stderr_text = stderr(&out);
    assert_eq!(out.status.code(), Some(6), "one could not come back: {stderr_text}");
    let records = records_of::<Interrupted>(&out.stdout);
    assert_eq!(records.len(), 5, "{records:?}");
    assert!(records.iter().all(|r| !r.dry_run), "a real sweep is no dry run: {records:?}");
    for inst in [&with_dind, &plain, &network_gone] {
        let record = outcome(&records, inst);
        assert_eq!((record.outcome.as_str(), record.tier, record.exit), ("resumed", Some(1), 0), "{record:?}");
        assert_eq!(record.status, "crashed");
        assert_eq!(record.cause.as_deref(), Some("killed_by_host"), "{record:?}");
        assert!(record.attach.contains(&inst.container), "{record:?}");
        assert!(running(&engine, &inst.container), "{} runs again", inst.container);
        assert_eq!(home.status(&inst.container), ("active".into(), "active".into()));
    }
    for inst in [&with_dind, &network_gone] {
        assert!(running(&engine, &format!("{}-dind", inst.container)), "its sidecar runs again");
    }
    let recreated = outcome(&records, &network_gone);
    assert!(recreated.actions.iter().any(|a| a.starts_with("create network")), "{recreated:?}");

    let failed = outcome(&records, &image_gone);
    assert_eq!((failed.outcome.as_str(), failed.exit), ("not_resumed", 6), "{failed:?}");
    let reason = failed.reason.as_deref().unwrap();
    assert!(reason.contains("jk-reboot-gone:1") && reason.contains("no source to rebuild"), "{reason}");
    assert!(failed.next.as_deref().is_some_and(|n| n.contains("--plan")), "{failed:?}");
    // What stopped it was known before any step: its files are as they were, byte for byte.
    assert_eq!(identity_files(&home, &image_gone), identity_before);
    assert_eq!(continuity_bytes(&home, &image_gone), continuity_before, "the recipe, cause and history");

    let left = outcome(&records, &in_use);
    assert_eq!(left.outcome, "left_alone");
    assert!(left.reason.as_deref().is_some_and(|r| r.starts_with("in use")), "{left:?}");
    assert!(!running(&engine, &in_use.container), "a session in use is not touched");

    // Once the holder is done, the next run brings it back; what came back stays as it is.
    drop(lock);
    let out = sweep(&home, &host, "--yes");
    let again = records_of::<Interrupted>(&out.stdout);
    assert_eq!(outcome(&again, &in_use).outcome, "resumed", "{again:?}");
    assert_eq!(again.len(), 2, "the resumed ones are no longer interrupted: {again:?}");

    // The same containers started by hand, for the figure the closing note compares against.
    let resumed: Vec<String> = containers.iter().filter(|c| !c.contains("rb1ccccc")).cloned().collect();
    let mut stop = vec!["stop", "-t", "0"];
    stop.extend(resumed.iter().map(String::as_str));
    engine.docker(&stop);
    let started = Instant::now();
    let mut start = vec!["start"];
    start.extend(resumed.iter().map(String::as_str));
    engine.docker(&start);
    let by_hand = started.elapsed();
    eprintln!(
        "reboot: 5 sessions ({} containers), --interrupted --yes took {:.2} s; `docker start` of the same {} \
         containers {:.2} s",
        containers.len(),
        sweep_took.as_secs_f64(),
        resumed.len(),
        by_hand.as_secs_f64()
    );
}

/// jackin keeps a session it resumed and the operator detached from with its container left
/// running (`preserved_unpushed`, as its finalizer writes it after a detach); the host then kills
/// it. The sweep counts it as interrupted whatever status jackin left it in, and resumes it
/// (before, it was neither resumed nor listed, while `--list` called it ready, issue 65). A kept
/// session whose container was stopped before it was kept (keep --stop) is no interruption.
#[test]
fn a_session_jackin_kept_running_and_the_host_killed_is_resumed_by_the_sweep() {
    let test = "a_session_jackin_kept_running_and_the_host_killed_is_resumed_by_the_sweep";
    if !engine_available(test) || !common::have_dockerd(test) {
        return;
    }
    let mut engine =
        OwnEngine::start_with_test_image(tempfile::Builder::new().prefix("jk-reboot2-").tempdir().unwrap(), Vec::new());
    let host = engine.host();
    let mut home = Home::new();
    let detached = home.instance("rb2aaaaa", |_, _| Vec::new());
    let stopped_first = home.instance("rb2bbbbb", |_, _| Vec::new());
    let on_engine = || SessionOptions { host: Some(&host), dind: false, ..Default::default() };
    let launched = [launch(&home, &detached, on_engine()), launch(&home, &stopped_first, on_engine())];
    let out = home.cmd("jackin-reconcile").env("DOCKER_HOST", &host).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    // jackin's detach: kept with its container up. The other kept after its container stopped.
    home.set_status(&detached.container, "preserved_unpushed", Some("2026-01-01T00:00:00Z"));
    engine.docker(&["stop", "-t", "0", &stopped_first.container]);
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let kept_at = jackin::base::time::now_rfc3339();
    home.set_status(&stopped_first.container, "preserved_unpushed", Some(&kept_at));

    let pids = pids(&engine, &launched[0].1);
    engine.kill_all(&pids);
    engine.launch();

    let out = sweep(&home, &host, "--plan");
    let planned = records_of::<Interrupted>(&out.stdout);
    assert_eq!(planned.len(), 1, "only the one the host stopped: {planned:?}\n{}", stderr(&out));
    assert_eq!(planned[0].identity.container_base, detached.container);
    assert_eq!((planned[0].outcome.as_str(), planned[0].status.as_str()), ("would_resume", "preserved_unpushed"));
    let out = sweep(&home, &host, "--yes");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let records = records_of::<Interrupted>(&out.stdout);
    assert_eq!((records[0].outcome.as_str(), records[0].tier), ("resumed", Some(1)), "{records:?}");
    assert!(running(&engine, &detached.container), "it runs again");
    assert!(!running(&engine, &stopped_first.container), "the one kept stopped is left as it was");
    assert_eq!(home.status(&stopped_first.container).0, "preserved_unpushed");
}
