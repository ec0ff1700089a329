//! jackin-restore failing half-way, against a real Docker engine and real git: a sidecar that
//! never becomes healthy (tiers 1 and 2), a tier-3 build that cannot run (its role source
//! unreachable, its base image gone or broken), and a role container that cannot be created once
//! its sidecar is up (its image tag removed during the health wait, a bind source gone). Each
//! test asserts what the failed run leaves (exit code, message, status in manifest and index,
//! containers and their states, the session's work and data) and that a rerun, once the cause is
//! fixed, converges to `active` with everything running.
//!
//! The sessions are shaped like jackin's: a worktree with unfinished work, the agent's home, a
//! DinD sidecar with its network and certs volume. Their launch recipes are captured by
//! `jackin-reconcile` while they run, and the tier-2 and tier-3 ones are kept and torn down by
//! `jackin-assess | jackin-keep --policy=keep --stop`, as an exit hook does.

use crate::common;

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::docker::{docker, docker_quiet, engine_available, Session, SessionOptions, TEST_IMAGE};
use common::records::{envelopes, records_of, Candidate, ErrorRecord, Restored};
use common::state::HistoryEntry;
use common::{git, snapshot_of, stderr, tool_path, unique_id, Home, Instance};
use serde_json::Value;

/// Seconds a sidecar's health command keeps failing after each start: longer than any test.
const NEVER: u32 = 86_400;

/// The unfinished work in the session's worktree (untracked: the verdict is `dirty`).
const WIP: &[u8] = b"half-written design notes\n";
/// What the agent left in its home.
const AGENT_HISTORY: &[u8] = b"$ cargo test\n";

/// Images a test made, removed at its end however it ends.
struct Images(Vec<String>);

impl Drop for Images {
    fn drop(&mut self) {
        for image in &self.0 {
            let _ = docker_quiet(&["rmi", "-f", image]);
        }
    }
}

/// Containers labelled `label` (the intermediate containers of a failed build), removed at the
/// end of a test whatever its assertions said about them.
struct LabelledContainers(String);

impl LabelledContainers {
    fn ids(&self) -> Vec<String> {
        let filter = format!("label={}", self.0);
        docker(&["ps", "-aq", "--filter", &filter]).split_whitespace().map(str::to_owned).collect()
    }
}

impl Drop for LabelledContainers {
    fn drop(&mut self) {
        for id in self.ids() {
            let _ = docker_quiet(&["rm", "-f", &id]);
        }
    }
}

/// A session's home: a host repository, the instance with a worktree of it, the manifest naming
/// a DinD sidecar and its certs volume, `agent.toml` as jackin writes it (a 0700 directory, a
/// 0600 file), and the session's work: an untracked file in the worktree, a file in its home.
fn session_home(id: &str) -> (Home, Instance) {
    let mut home = Home::new();
    let host = home.host_repo("app");
    let inst = home.instance(id, |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    let c = &inst.container;
    home.with_sidecar(c);
    let sockets = home.home.join("sockets").join(c);
    fs::create_dir_all(&sockets).unwrap();
    fs::set_permissions(&sockets, fs::Permissions::from_mode(0o700)).unwrap();
    let agent_toml = sockets.join("agent.toml");
    fs::write(&agent_toml, "role = \"agent-smith\"\nworkdir = \"/workspace/my-app\"\nagents = [\"claude\"]\n").unwrap();
    fs::set_permissions(&agent_toml, fs::Permissions::from_mode(0o600)).unwrap();
    fs::write(inst.mount_path(0).join("wip.md"), WIP).unwrap();
    fs::write(inst.dir.join("home/.agent_history"), AGENT_HISTORY).unwrap();
    (home, inst)
}

/// Launches the session's containers (the agent's home and the worktree bind-mounted, plus
/// `options.binds`), running, and lets `jackin-reconcile` capture its launch recipe, as the cron
/// job does for every live session.
fn launch(home: &Home, inst: &Instance, mut options: SessionOptions) -> Session {
    options.binds.splice(0..0, [(inst.dir.join("home"), "/home/agent"), (inst.mount_path(0), "/workspace/my-app")]);
    options.running = true;
    let session = Session::launch(&inst.container, options);
    let out = home.cmd("jackin-reconcile").args([&inst.container, "--format=json"]).output().unwrap();
    assert!(out.status.success(), "reconcile: {}", stderr(&out));
    let recipe = home.continuity(&inst.container).recipe.expect("reconcile captured a recipe");
    assert_eq!(recipe["captured_by"], "jackin-reconcile", "{recipe}");
    assert_eq!(recipe["sidecar"]["name"], format!("{}-dind", inst.container), "{recipe}");
    session
}

/// The exit hook of a session kept for tomorrow: `jackin-assess C | jackin-keep --policy=keep
/// --stop`, without a terminal. The unfinished work makes it `preserved_dirty`; keep tears the
/// Docker side down.
fn keep(home: &Home, inst: &Instance) {
    let c = &inst.container;
    let assessed = home.assess_lines(&[c]);
    let mut cmd = home.detached("jackin-keep");
    cmd.args(["--policy=keep", "--stop", "--format=json"]);
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    child.stdin.take().unwrap().write_all(assessed.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "keep: {}", stderr(&out));
    assert_eq!(home.status(c), ("preserved_dirty".into(), "preserved_dirty".into()));
    for name in [c.clone(), format!("{c}-dind")] {
        assert!(state(&name).is_none(), "keep removed {name}");
    }
    assert!(!exists("network", &format!("{c}-net")) && !exists("volume", &format!("{c}-dind-certs")));
}

fn restore(home: &Home, args: &[&str]) -> Output {
    home.cmd("jackin-restore").args(args).arg("--format=json").output().unwrap()
}

/// jackin-restore started in the background (its output collected by `wait_with_output`).
fn spawn_restore(home: &Home, args: &[&str]) -> std::process::Child {
    let mut cmd = Command::new(tool_path("jackin-restore"));
    cmd.arg("--home").arg(&home.home).arg("--config-dir").arg(&home.config).args(args).arg("--format=json");
    cmd.env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR");
    cmd.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// A run that failed half-way: exit 6 (partial), one `restore_failed` error record for the
/// session and nothing else on stdout (no `restored` record), and each of `words` in the message
/// on stderr and in the record. Returns the message.
fn failed(out: &Output, container: &str, words: &[&str]) -> String {
    failed_with(6, out, container, words)
}

/// [`failed`] with exit `code`: 4 when the resume could not reach its role source.
fn failed_with(code: i32, out: &Output, container: &str, words: &[&str]) -> String {
    let stderr = stderr(out);
    assert_eq!(out.status.code(), Some(code), "exit {code}: {stderr}");
    let recs = envelopes(&out.stdout);
    assert_eq!(recs.len(), 1, "only the error record: {recs:?}");
    let error = recs[0].data::<ErrorRecord>();
    assert_eq!((error.tool.as_str(), error.code.as_str()), ("jackin-restore", "restore_failed"), "{error:?}");
    assert_eq!(error.container_base.as_deref(), Some(container));
    assert!(stderr.contains(&format!("jackin-restore: error: {container}: ")), "{stderr}");
    for word in words {
        assert!(error.message.contains(word), "the message names {word:?}: {}", error.message);
        assert!(stderr.contains(word), "stderr names {word:?}: {stderr}");
    }
    error.message
}

/// The run that converged: exit 0 and its `restored` record.
fn resumed(out: &Output) -> Restored {
    assert!(out.status.success(), "the rerun resumes: {}", stderr(out));
    let recs = envelopes(&out.stdout);
    assert_eq!(recs.len(), 1, "{recs:?}");
    recs[0].data()
}

/// The resumes jackin-restore wrote into the history (one per resume; a failed attempt's entry,
/// `resume_failed`, is not one).
fn restore_history(home: &Home, inst: &Instance) -> Vec<HistoryEntry> {
    let history = home.continuity(&inst.container).history.into_iter();
    history.filter(|h| h.tool == "jackin-restore" && h.cause == "resumed").collect()
}

/// The session as `jackin-restore --list` offers it.
fn candidate(home: &Home, inst: &Instance) -> Candidate {
    let out = restore(home, &["--list"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let listed = records_of::<Candidate>(&out.stdout);
    listed.into_iter().find(|c| c.identity.container_base == inst.container).expect("still listed as resumable")
}

fn state(container: &str) -> Option<String> {
    docker_quiet(&["inspect", "-f", "{{.State.Status}}", container])
}

fn inspect(container: &str, format: &str) -> String {
    docker(&["inspect", "-f", format, container])
}

fn exists(kind: &str, name: &str) -> bool {
    docker_quiet(&[kind, "inspect", name]).is_some()
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within {timeout:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The session's work and data are there as they were: the unfinished file in the worktree,
/// the agent's home, and the worktree still a registered worktree of its host repository.
fn work_is_there(inst: &Instance) {
    let worktree = inst.mount_path(0);
    assert_eq!(fs::read(worktree.join("wip.md")).unwrap(), WIP);
    assert_eq!(fs::read(inst.dir.join("home/.agent_history")).unwrap(), AGENT_HISTORY);
    let host = PathBuf::from(inst.records[0]["original_src"].as_str().unwrap());
    let registered = git(&host, &["worktree", "list", "--porcelain"]);
    assert!(registered.contains(&format!("worktree {}", worktree.display())), "{registered}");
    assert_eq!(git(&worktree, &["status", "--porcelain"]), "?? wip.md");
}

/// A crashed session (its containers exited) whose DinD sidecar never becomes healthy: its
/// health command keeps failing. Tier 1 starts the sidecar, waits `--health-timeout=2`, and
/// fails: exit 6, a `restore_failed` error naming the sidecar, the seconds waited and the health
/// command. Left behind: the status still `crashed` in the manifest and the index row (nothing
/// was resumed, no history entry says so), the role container stopped and never started (its
/// `StartedAt` is the launch's), the sidecar running, the home byte for byte as it was (work and
/// data included), and the session still listed as resumable at tier 1. Once the sidecar can
/// pass its health command, a rerun takes it as it is and resumes: `active` in both places,
/// isolation records back to `active`, both containers running, the work still there.
#[test]
fn a_sidecar_that_never_becomes_healthy_stops_tier_1_before_the_role_starts_and_a_rerun_resumes() {
    if !engine_available("a_sidecar_that_never_becomes_healthy_stops_tier_1_before_the_role_starts_and_a_rerun_resumes")
    {
        return;
    }
    let (home, inst) = session_home(&unique_id());
    let c = inst.container.clone();
    let sidecar = format!("{c}-dind");
    let _session = launch(&home, &inst, SessionOptions { sidecar_ready_after: NEVER, ..Default::default() });
    docker(&["stop", "-t", "0", &c, &sidecar]);
    let out = home.cmd("jackin-reconcile").args([&c, "--format=json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(home.status(&inst.container), ("crashed".into(), "crashed".into()));
    let role_started_at = inspect(&c, "{{.State.StartedAt}}");
    let before = home.snapshot();

    let started = Instant::now();
    let out = restore(&home, &[&c, "--yes", "--health-timeout=2"]);
    let took = started.elapsed();
    failed(&out, &c, &[&format!("{sidecar} did not become healthy within 2s"), "test -e /tmp/healthy"]);
    assert!(took >= Duration::from_secs(2), "it waited the health timeout: {took:?}");
    assert!(took < Duration::from_secs(60), "and not much more: {took:?}");

    assert_eq!(home.status(&inst.container), ("crashed".into(), "crashed".into()), "not resumed");
    assert!(restore_history(&home, &inst).is_empty(), "no history entry says it was resumed");
    assert_eq!(state(&c).as_deref(), Some("exited"), "the role container is not started");
    assert_eq!(inspect(&c, "{{.State.StartedAt}}"), role_started_at, "it was never started by the failed run");
    assert_eq!(state(&sidecar).as_deref(), Some("running"), "the sidecar was started and left as it is");
    let why = home.only_a_failed_attempt_noted(&inst.container, &before, 1);
    assert!(why.contains(c.as_str()), "the history says why: {why}");
    work_is_there(&inst);
    let listed = candidate(&home, &inst);
    assert_eq!((listed.status.as_str(), listed.tier, listed.ready), ("crashed", Some(1), true), "{listed:?}");

    // The sidecar can pass its health command now: the rerun resumes.
    docker(&["exec", &sidecar, "touch", "/tmp/healthy"]);
    let sidecar_id = inspect(&sidecar, "{{.Id}}");
    let rec = resumed(&restore(&home, &[&c, "--yes", "--health-timeout=30"]));
    assert_eq!(rec.tier, Some(1));
    assert!(rec.actions.contains(&format!("start {sidecar} and wait until it is healthy")), "{:?}", rec.actions);
    assert!(rec.actions.contains(&format!("start {c}")), "{:?}", rec.actions);
    assert_eq!(inspect(&sidecar, "{{.Id}}"), sidecar_id, "the sidecar the first run started");
    assert_eq!((state(&c).as_deref(), state(&sidecar).as_deref()), (Some("running"), Some("running")));
    assert_ne!(inspect(&c, "{{.State.StartedAt}}"), role_started_at);
    assert_eq!(home.status(&inst.container), ("active".into(), "active".into()));
    assert_eq!(home.cleanup_statuses(&inst.container), ["active"]);
    assert_eq!(restore_history(&home, &inst).len(), 1);
    assert_eq!(restore_history(&home, &inst)[0].from, "crashed");
    work_is_there(&inst);
}

/// The same at tier 2: a kept session (torn down by jackin-keep) whose recreated sidecar never
/// becomes healthy. The failed run (exit 6, the sidecar and its health command named) leaves
/// the status `preserved_dirty` in the manifest and the index row, the network, the certs volume
/// and the sidecar recreated (the sidecar running), no role container at all (it is created
/// only after the sidecar is healthy), and the home unchanged. The rerun, once the sidecar can
/// pass its health command, takes the sidecar the first run made (the same container, no name
/// conflict), creates the role container and resumes: `active`, both running.
#[test]
fn a_recreated_sidecar_that_never_becomes_healthy_leaves_no_role_container_and_a_rerun_resumes() {
    if !engine_available("a_recreated_sidecar_that_never_becomes_healthy_leaves_no_role_container_and_a_rerun_resumes")
    {
        return;
    }
    let (home, inst) = session_home(&unique_id());
    let c = inst.container.clone();
    let sidecar = format!("{c}-dind");
    let _session = launch(&home, &inst, SessionOptions { sidecar_ready_after: NEVER, ..Default::default() });
    keep(&home, &inst);
    let before = home.snapshot();

    let out = restore(&home, &[&c, "--yes", "--health-timeout=2"]);
    failed(&out, &c, &[&format!("{sidecar} did not become healthy within 2s"), "test -e /tmp/healthy"]);
    assert_eq!(home.status(&inst.container), ("preserved_dirty".into(), "preserved_dirty".into()), "not resumed");
    assert!(restore_history(&home, &inst).is_empty());
    assert_eq!(state(&sidecar).as_deref(), Some("running"), "the sidecar was recreated and started");
    assert!(exists("network", &format!("{c}-net")) && exists("volume", &format!("{c}-dind-certs")));
    assert_eq!(state(&c), None, "no role container without a healthy sidecar");
    let why = home.only_a_failed_attempt_noted(&inst.container, &before, 2);
    assert!(why.contains(c.as_str()), "the history says why: {why}");
    work_is_there(&inst);
    let listed = candidate(&home, &inst);
    assert_eq!((listed.status.as_str(), listed.tier, listed.ready), ("preserved_dirty", Some(2), true), "{listed:?}");

    docker(&["exec", &sidecar, "touch", "/tmp/healthy"]);
    let sidecar_id = inspect(&sidecar, "{{.Id}}");
    let rec = resumed(&restore(&home, &[&c, "--yes", "--health-timeout=30"]));
    assert_eq!(rec.tier, Some(2));
    assert!(
        rec.actions.contains(&format!("create and start {sidecar} and wait until it is healthy")),
        "{:?}",
        rec.actions
    );
    assert_eq!(inspect(&sidecar, "{{.Id}}"), sidecar_id, "the sidecar the first run made, not another");
    assert_eq!((state(&c).as_deref(), state(&sidecar).as_deref()), (Some("running"), Some("running")));
    assert_eq!(home.status(&inst.container), ("active".into(), "active".into()));
    assert_eq!(home.cleanup_statuses(&inst.container), ["active"]);
    assert_eq!(docker(&["exec", &c, "cat", "/workspace/my-app/wip.md"]), "half-written design notes");
    work_is_there(&inst);
}

/// The role's source: a repository with `dockerfile` and a `marker` at the commit the session
/// was launched from, whose `main` moves on afterwards. Returns the bare repository it is
/// fetched from and the launch commit; builds `image` from the launch commit when given.
fn role_source(home: &Home, dockerfile: &str, image: Option<&str>) -> (PathBuf, String) {
    let source = home.tmp.path().join("role-src");
    fs::create_dir_all(&source).unwrap();
    git(&source, &["init", "-q", "-b", "main"]);
    git(&source, &["config", "user.email", "r@example.invalid"]);
    git(&source, &["config", "user.name", "Role"]);
    fs::write(source.join("Dockerfile"), dockerfile).unwrap();
    fs::write(source.join("marker"), "launched\n").unwrap();
    git(&source, &["add", "-A"]);
    git(&source, &["commit", "-q", "-m", "role at launch"]);
    let sha = git(&source, &["rev-parse", "HEAD"]);
    if let Some(image) = image {
        docker(&["build", "-q", "-t", image, source.to_str().unwrap()]);
    }
    fs::write(source.join("marker"), "moved on\n").unwrap();
    git(&source, &["commit", "-q", "-am", "later work"]);
    let bare = home.tmp.path().join("role-src.git");
    git(home.tmp.path(), &["clone", "-q", "--bare", source.to_str().unwrap(), bare.to_str().unwrap()]);
    (bare, sha)
}

/// A kept session whose image is gone too: only tier 3 (a build from the recorded role commit)
/// brings it back. `dockerfile` is the role's at launch; the manifest records the source, the
/// commit, the image tag and `base` when given.
fn kept_with_only_its_role_source(
    id: &str,
    dockerfile: impl FnOnce(&Home) -> String,
    base: Option<&str>,
) -> (Session, Home, Instance, String, PathBuf, String) {
    let (home, inst) = session_home(id);
    let image = format!("jackin-test-role-{id}:latest");
    let (bare, sha) = role_source(&home, &dockerfile(&home), Some(&image));
    home.edit_manifest(&inst.container, |m| {
        m["role_source_git"] = Value::from(bare.to_str().unwrap());
        m["role_git_sha"] = Value::from(sha.as_str());
        m["image_tag"] = Value::from(image.as_str());
        if let Some(base) = base {
            m["base_image_ref"] = Value::from(base);
        }
    });
    let session = launch(&home, &inst, SessionOptions { image: Some(&image), ..Default::default() });
    keep(&home, &inst);
    docker(&["rmi", "-f", &image]);
    (session, home, inst, image, bare, sha)
}

/// Nothing of a tier-3 attempt was created: no image, no role container, no sidecar, no network,
/// no certs volume (the build comes before every one of them).
fn nothing_created(inst: &Instance, image: &str) {
    let c = &inst.container;
    assert!(!exists("image", image), "no image {image}");
    for name in [c.clone(), format!("{c}-dind")] {
        assert_eq!(state(&name), None, "no container {name}");
    }
    assert!(!exists("network", &format!("{c}-net")), "no network");
    assert!(!exists("volume", &format!("{c}-dind-certs")), "no certs volume");
}

/// Tier 3 with its role source unreachable (the repository moved away): the plan promises tier 3
/// (a full commit ID needs no fetch to be known), the run fails at the fetch with exit 4
/// (unavailable: nothing is created before the fetch) and a message naming the URL, and nothing was created (no image, no container, no network, no
/// volume); the status stays `preserved_dirty` in the manifest and the index, and the session's
/// data and sockets are byte for byte as they were. Once the repository is back, a rerun builds
/// the recorded commit (not the moved branch) and resumes: `active`, role and sidecar running.
#[test]
fn tier_3_with_its_role_source_unreachable_creates_nothing_and_a_rerun_resumes_once_it_is_back() {
    if !engine_available("tier_3_with_its_role_source_unreachable_creates_nothing_and_a_rerun_resumes_once_it_is_back")
    {
        return;
    }
    let id = unique_id();
    let dockerfile =
        |home: &Home| format!("FROM {TEST_IMAGE}\nLABEL test.role={:?}\nCOPY marker /marker\n", home.tmp.path());
    let (_session, home, inst, image, bare, sha) = kept_with_only_its_role_source(&id, dockerfile, None);
    let _images = Images(vec![image.clone()]);
    let c = inst.container.clone();
    let url = bare.to_str().unwrap().to_owned();
    let gone = home.tmp.path().join("role-src-moved.git");
    fs::rename(&bare, &gone).unwrap();

    let plan = restore(&home, &[&c, "--plan"]);
    assert!(plan.status.success(), "{}", stderr(&plan));
    assert_eq!(envelopes(&plan.stdout)[0].data::<Restored>().tier, Some(3));
    let (data, sockets) = (snapshot_of(&home.home.join("data")), snapshot_of(&home.home.join("sockets")));
    let out = restore(&home, &[&c, "--yes"]);
    failed_with(4, &out, &c, &[&format!("fetching {url}")]);
    nothing_created(&inst, &image);
    assert_eq!(home.status(&inst.container), ("preserved_dirty".into(), "preserved_dirty".into()), "not resumed");
    assert!(restore_history(&home, &inst).is_empty());
    let why = home.only_failed_attempts_between(&c, &data, &snapshot_of(&home.home.join("data")), 3);
    assert!(why.contains(&url), "the session's data is as it was, its history says why: {why}");
    assert!(snapshot_of(&home.home.join("sockets")) == sockets, "its socket dir too");
    work_is_there(&inst);

    fs::rename(&gone, &bare).unwrap();
    let rec = resumed(&restore(&home, &[&c, "--yes"]));
    assert_eq!(rec.tier, Some(3));
    assert!(rec.actions.contains(&format!("build {image} from {url} at {sha}")), "{:?}", rec.actions);
    assert_eq!(docker(&["exec", &c, "cat", "/marker"]), "launched", "the recorded commit, not the moved branch");
    assert_eq!((state(&c).as_deref(), state(&format!("{c}-dind")).as_deref()), (Some("running"), Some("running")));
    assert_eq!(home.status(&inst.container), ("active".into(), "active".into()));
    assert_eq!(home.cleanup_statuses(&inst.container), ["active"]);
    work_is_there(&inst);
}

/// A tier-3 build that fails, twice: first the recorded base image is gone (pruned, and not to
/// be pulled from anywhere), so the build's `FROM` fails; then a base of that name is back but
/// broken, so the recorded commit's `RUN test -e /base-ok` fails. Each failed run exits 6 with
/// the build's own error in the message, creates no image, no role container, no sidecar, no
/// network and no volume, leaves no intermediate container of the build behind, and leaves the
/// status `preserved_dirty` and the session's data and sockets as they were. With the base
/// rebuilt as it was, the rerun builds the recorded commit and resumes: `active`, all running.
#[test]
fn a_tier_3_build_that_fails_leaves_nothing_half_made_and_a_rerun_resumes_once_the_base_is_back() {
    if !engine_available("a_tier_3_build_that_fails_leaves_nothing_half_made_and_a_rerun_resumes_once_the_base_is_back")
    {
        return;
    }
    let id = unique_id();
    let base = format!("jackin-test-base-{id}:1");
    let build_base = |home: &Home, ok: bool| {
        let dir = tempfile::tempdir().unwrap();
        let run = if ok { "RUN echo ok > /base-ok\n" } else { "" };
        let dockerfile = format!("FROM {TEST_IMAGE}\nLABEL test.base={:?}\n{run}", home.tmp.path());
        fs::write(dir.path().join("Dockerfile"), dockerfile).unwrap();
        docker(&["build", "-q", "-t", &base, dir.path().to_str().unwrap()]);
    };
    let dockerfile = |home: &Home| {
        build_base(home, true);
        format!("FROM {base}\nLABEL test.role={:?}\nCOPY marker /marker\nRUN test -e /base-ok\n", home.tmp.path())
    };
    let (_session, home, inst, image, bare, sha) = kept_with_only_its_role_source(&id, dockerfile, Some(&base));
    let _images = Images(vec![image.clone(), base.clone()]);
    let build_leftovers = LabelledContainers(format!("test.role={}", home.tmp.path().display()));
    let c = inst.container.clone();
    let url = bare.to_str().unwrap().to_owned();
    let (data, sockets) = (snapshot_of(&home.home.join("data")), snapshot_of(&home.home.join("sockets")));
    let unchanged = |why: &str| {
        nothing_created(&inst, &image);
        assert_eq!(build_leftovers.ids(), Vec::<String>::new(), "{why}: no container of the failed build is left");
        assert_eq!(home.status(&inst.container), ("preserved_dirty".into(), "preserved_dirty".into()), "{why}");
        assert!(restore_history(&home, &inst).is_empty(), "{why}");
        home.only_failed_attempts_between(&inst.container, &data, &snapshot_of(&home.home.join("data")), 3);
        assert!(snapshot_of(&home.home.join("sockets")) == sockets, "{why}: its socket dir too");
        work_is_there(&inst);
    };

    // The recorded base is gone from the engine, and no registry has it.
    docker(&["rmi", &base]);
    let out = restore(&home, &[&c, "--yes"]);
    let does_not_build = format!("the role source {url} at {sha} does not build (recorded base image {base})");
    failed(&out, &c, &[&does_not_build, &format!("building image {image}")]);
    unchanged("base gone");

    // A base of that name is back, but not the one recorded: the role's own RUN step fails.
    build_base(&home, false);
    let out = restore(&home, &[&c, "--yes"]);
    failed(&out, &c, &[&does_not_build, "The command '/bin/sh -c test -e /base-ok' returned a non-zero code: 1"]);
    unchanged("base broken");

    build_base(&home, true);
    let rec = resumed(&restore(&home, &[&c, "--yes"]));
    assert_eq!(rec.tier, Some(3));
    assert!(rec.actions.contains(&format!("build {image} from {url} at {sha}")), "{:?}", rec.actions);
    assert_eq!(docker(&["exec", &c, "cat", "/marker", "/base-ok"]), "launched\nok");
    assert_eq!((state(&c).as_deref(), state(&format!("{c}-dind")).as_deref()), (Some("running"), Some("running")));
    assert_eq!(home.status(&inst.container), ("active".into(), "active".into()));
    assert_eq!(home.cleanup_statuses(&inst.container), ["active"]);
    work_is_there(&inst);
}

/// Tier 2 failing between the sidecar and the role container: the role image's tag is removed
/// (an image prune, jackin's own housekeeping) while restore waits for the recreated sidecar to
/// become healthy, after the plan chose that tag. The sidecar comes up healthy, then creating
/// the role container fails: exit 6, a message naming the container and the image. Left: the
/// sidecar running (with its network and certs volume), no role container, the status
/// `preserved_dirty` in the manifest and the index, the home unchanged, and the session still
/// listed as ready at tier 2. With the tag back, the rerun is not stopped by what the first run
/// left (the sidecar of that name is taken as it is, the same container), creates the role
/// container from the recorded image and resumes: `active`, both running.
#[test]
fn tier_2_failing_after_the_sidecar_is_up_leaves_it_running_and_a_rerun_takes_it_and_resumes() {
    if !engine_available("tier_2_failing_after_the_sidecar_is_up_leaves_it_running_and_a_rerun_takes_it_and_resumes") {
        return;
    }
    let id = unique_id();
    let (home, inst) = session_home(&id);
    let c = inst.container.clone();
    let sidecar = format!("{c}-dind");
    let image = format!("jackin-test-role-{id}:latest");
    docker(&["tag", TEST_IMAGE, &image]);
    let _images = Images(vec![image.clone()]);
    let image_id = docker(&["image", "inspect", "-f", "{{.Id}}", &image]);
    // Healthy 8 s after each start: the window in which the tag goes.
    let options = SessionOptions { image: Some(&image), sidecar_ready_after: 8, ..Default::default() };
    let _session = launch(&home, &inst, options);
    keep(&home, &inst);
    let before = home.snapshot();

    let child = spawn_restore(&home, &[&c, "--yes", "--health-timeout=60"]);
    wait_for("the sidecar is recreated", Duration::from_secs(30), || state(&sidecar).as_deref() == Some("running"));
    assert!(docker_quiet(&["exec", &sidecar, "test", "-e", "/tmp/healthy"]).is_none(), "still in the health wait");
    docker(&["rmi", &image]);
    let out = child.wait_with_output().unwrap();
    failed(&out, &c, &[&format!("creating container {c}"), &image]);

    assert_eq!(state(&sidecar).as_deref(), Some("running"), "the sidecar is left as it is");
    assert_eq!(docker(&["exec", &sidecar, "test", "-e", "/tmp/healthy"]), "", "and it was healthy");
    assert!(exists("network", &format!("{c}-net")) && exists("volume", &format!("{c}-dind-certs")));
    assert_eq!(state(&c), None, "no role container");
    assert_eq!(home.status(&inst.container), ("preserved_dirty".into(), "preserved_dirty".into()), "not resumed");
    assert!(restore_history(&home, &inst).is_empty());
    let why = home.only_a_failed_attempt_noted(&inst.container, &before, 2);
    assert!(why.contains(c.as_str()), "the history says why: {why}");
    work_is_there(&inst);
    let listed = candidate(&home, &inst);
    assert_eq!((listed.status.as_str(), listed.tier, listed.ready), ("preserved_dirty", Some(2), true), "{listed:?}");

    docker(&["tag", TEST_IMAGE, &image]);
    let sidecar_id = inspect(&sidecar, "{{.Id}}");
    let rec = resumed(&restore(&home, &[&c, "--yes", "--health-timeout=60"]));
    assert_eq!(rec.tier, Some(2));
    assert!(rec.actions.contains(&format!("create and start {c}")), "{:?}", rec.actions);
    assert_eq!(inspect(&sidecar, "{{.Id}}"), sidecar_id, "the sidecar the first run made, not another");
    assert_eq!(inspect(&c, "{{.Image}}"), image_id);
    assert_eq!((state(&c).as_deref(), state(&sidecar).as_deref()), (Some("running"), Some("running")));
    assert_eq!(home.status(&inst.container), ("active".into(), "active".into()));
    assert_eq!(home.cleanup_statuses(&inst.container), ["active"]);
    work_is_there(&inst);
}

/// Tier 2 failing between the sidecar and the role container, the other way: a bind source of the
/// role container that is not the session's work (an operator's directory outside the jackin
/// home, mounted read-only) was moved away. The plan checks the worktrees, not this, so the
/// sidecar is recreated and healthy before the engine refuses the role container: exit 6, the
/// missing path named. Left: the sidecar running, no role container, the status
/// `preserved_dirty`, the home unchanged. With the directory back, the rerun takes the sidecar
/// as it is and resumes: `active`, the directory mounted read-only again.
#[test]
fn tier_2_with_a_bind_source_gone_fails_after_the_sidecar_and_a_rerun_resumes_once_it_is_back() {
    if !engine_available("tier_2_with_a_bind_source_gone_fails_after_the_sidecar_and_a_rerun_resumes_once_it_is_back") {
        return;
    }
    let (home, inst) = session_home(&unique_id());
    let c = inst.container.clone();
    let sidecar = format!("{c}-dind");
    let shared = home.tmp.path().join("operator-shared");
    fs::create_dir_all(&shared).unwrap();
    fs::write(shared.join("settings.json"), "{\"theme\":\"dark\"}\n").unwrap();
    let options = SessionOptions { binds: vec![(shared.clone(), "/opt/operator:ro")], ..Default::default() };
    let _session = launch(&home, &inst, options);
    keep(&home, &inst);
    let moved = home.tmp.path().join("operator-shared.moved");
    fs::rename(&shared, &moved).unwrap();
    let before = home.snapshot();

    let out = restore(&home, &[&c, "--yes", "--health-timeout=30"]);
    failed(&out, &c, &[&format!("creating container {c}"), shared.to_str().unwrap()]);
    assert_eq!(state(&sidecar).as_deref(), Some("running"), "the sidecar came up first and is left as it is");
    assert_eq!(state(&c), None, "no role container");
    assert_eq!(home.status(&inst.container), ("preserved_dirty".into(), "preserved_dirty".into()), "not resumed");
    assert!(restore_history(&home, &inst).is_empty());
    let why = home.only_a_failed_attempt_noted(&inst.container, &before, 2);
    assert!(why.contains(c.as_str()), "the history says why: {why}");
    work_is_there(&inst);

    fs::rename(&moved, &shared).unwrap();
    let sidecar_id = inspect(&sidecar, "{{.Id}}");
    let rec = resumed(&restore(&home, &[&c, "--yes", "--health-timeout=30"]));
    assert_eq!(rec.tier, Some(2));
    assert_eq!(inspect(&sidecar, "{{.Id}}"), sidecar_id, "the sidecar the first run made, not another");
    assert_eq!((state(&c).as_deref(), state(&sidecar).as_deref()), (Some("running"), Some("running")));
    assert_eq!(docker(&["exec", &c, "cat", "/opt/operator/settings.json"]), "{\"theme\":\"dark\"}");
    assert!(docker_quiet(&["exec", &c, "touch", "/opt/operator/x"]).is_none(), "mounted read-only, as launched");
    assert_eq!(home.status(&inst.container), ("active".into(), "active".into()));
    assert_eq!(home.cleanup_statuses(&inst.container), ["active"]);
    work_is_there(&inst);
}
