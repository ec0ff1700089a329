//! contrib/jackin/jackin-load, run for real: the wrapper around `jackin load`, with the real
//! tools, real git and the real Docker engine. `jackin` itself is a stand-in on PATH
//! (tests/fixtures/jackin-stand-in): jackin cannot be installed where these tests run, so the
//! stand-in makes the index, manifest, worktree and container changes that real-host.md says
//! jackin makes when a session ends clean, dirty or detached. The session lasts until the test
//! creates its end file (the operator exiting or detaching), so the test can look at the session
//! while it runs: the reconcile watch beside it and the recipe it captured. No controlling
//! terminal (a session of its own), as in a launcher started from a script.

use crate::common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::docker::{build_real_images, docker, docker_quiet, engine_available, Session, SessionOptions};
use common::records::{envelopes, Decision};
use common::{git, tools_dir, unique_id, Home};

/// The role container and network of a session the stand-in made, removed however the test ends.
struct Made(String);

impl Drop for Made {
    fn drop(&mut self) {
        let _ = docker_quiet(&["rm", "-f", "-v", &self.0]);
        let _ = docker_quiet(&["network", "rm", &format!("{}-net", self.0)]);
    }
}

/// One run of the wrapper over one stand-in session of `my-app` with the role `agent-smith`.
struct Load {
    home: Home,
    host: PathBuf,
    container: String,
    end: PathBuf,
    cmd: Command,
    child: Option<Child>,
    out: PathBuf,
    err: PathBuf,
    _made: Made,
}

struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Load {
    /// Starts `jackin-load agent-smith <host>` with the stand-in ending the session as `ending`;
    /// `env` adds variables for the wrapper.
    fn start(ending: &str, env: &[(&str, &str)]) -> Load {
        let mut load = Load::prepare(ending, env);
        load.spawn();
        load
    }

    /// The home, the host repository and the command, not started yet.
    fn prepare(ending: &str, env: &[(&str, &str)]) -> Load {
        build_real_images();
        let home = Home::new();
        let host = home.host_repo("my-app");
        let id = unique_id();
        let container = format!("jk-{id}-myapp-agentsmith");
        let stand_ins = home.tmp.path().join("stand-ins");
        common::install_jackin_stand_in(&stand_ins);
        let end = home.tmp.path().join("session-ends");
        let (out, err) = (home.tmp.path().join("wrapper.out"), home.tmp.path().join("wrapper.err"));
        let mut cmd = Command::new(common::root().join("contrib/jackin/jackin-load"));
        cmd.arg("agent-smith").arg(&host);
        let path = format!("{}:{}", stand_ins.display(), std::env::var("PATH").unwrap());
        cmd.env("PATH", path)
            .env("JACKIN_BIN_DIR", tools_dir())
            .env("JACKIN_HOME_DIR", &home.home)
            .env("JACKIN_CONFIG_DIR", &home.config)
            .env("JACKIN_STAND_IN_EXIT", ending)
            .env("JACKIN_STAND_IN_IMAGE", common::docker::TEST_ROLE_IMAGE)
            .env("JACKIN_STAND_IN_IDS", &id)
            .env("JACKIN_STAND_IN_END", &end)
            .env_remove("JACKIN_LOAD_KEEP_FLAGS")
            .env_remove("JACKIN_LOAD_AT_RISK_FLAGS")
            .env_remove("JACKIN_HOOK_FORMAT")
            .envs(env.iter().copied());
        cmd.stdin(Stdio::null()).stdout(fs::File::create(&out).unwrap()).stderr(fs::File::create(&err).unwrap());
        // SAFETY: setsid is async-signal-safe; the wrapper runs without a controlling terminal.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let made = Made(container.clone());
        Load { home, host, container, end, cmd, child: None, out, err, _made: made }
    }

    fn spawn(&mut self) {
        self.child = Some(self.cmd.spawn().unwrap());
    }

    fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("the wrapper was started")
    }

    fn said(&self) -> String {
        fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// Waits until the session's role container runs and the reconcile watch beside `jackin
    /// load` has captured its launch recipe; returns the watch's pid.
    fn running_with_watch(&mut self) -> i32 {
        let deadline = Instant::now() + Duration::from_secs(90);
        let continuity = self.home.continuity_path(&self.container);
        loop {
            let captured_by = common::state::try_read::<common::state::Continuity>(&continuity)
                .ok()
                .and_then(|c| c.recipe?["captured_by"].as_str().map(str::to_owned));
            let running = docker_quiet(&["inspect", "-f", "{{.State.Running}}", &self.container]);
            if captured_by.as_deref() == Some("jackin-reconcile") && running.as_deref() == Some("true") {
                break;
            }
            if let Some(status) = self.child().try_wait().unwrap() {
                panic!("the wrapper ended before the session ran ({status}): {}", self.said());
            }
            assert!(Instant::now() < deadline, "no recipe captured while the session ran: {}", self.said());
            std::thread::sleep(Duration::from_millis(100));
        }
        let watches = children(self.child().id() as i32, "jackin-reconcile");
        assert_eq!(watches.len(), 1, "one reconcile watch beside jackin load: {watches:?}");
        let cmdline = fs::read(format!("/proc/{}/cmdline", watches[0])).unwrap();
        assert!(String::from_utf8_lossy(&cmdline).contains("--watch"), "{cmdline:?}");
        watches[0]
    }

    /// The operator exits or detaches; waits for the wrapper to return.
    fn end(mut self, watch: i32) -> (Ended, Load) {
        fs::write(&self.end, "").unwrap();
        let deadline = Instant::now() + Duration::from_secs(120);
        let status = loop {
            if let Some(status) = self.child().try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the wrapper did not return: {}", self.said());
            std::thread::sleep(Duration::from_millis(100));
        };
        assert!(!is_process(watch, "jackin-reconcile"), "the watch is stopped when jackin returns");
        let ended = Ended {
            code: status.code(),
            stdout: fs::read_to_string(&self.out).unwrap(),
            stderr: fs::read_to_string(&self.err).unwrap(),
        };
        (ended, self)
    }
}

impl Drop for Load {
    /// A test that failed half way still ends the session and the wrapper.
    fn drop(&mut self) {
        let _ = fs::write(&self.end, "");
        if let Some(child) = self.child.as_mut() {
            let deadline = Instant::now() + Duration::from_secs(30);
            while child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// The pids of the children of `parent` whose command is `name`.
fn children(parent: i32, name: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for entry in fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|p| p.parse::<i32>().ok()) else { continue };
        let Ok(stat) = fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid …: comm may hold spaces, so read after the last ')'.
        let Some((_, rest)) = stat.rsplit_once(") ") else { continue };
        let ppid = rest.split(' ').nth(1).and_then(|p| p.parse::<i32>().ok());
        if ppid == Some(parent) && is_process(pid, name) {
            found.push(pid);
        }
    }
    found
}

/// Whether `pid` is a live process running `name`.
fn is_process(pid: i32, name: &str) -> bool {
    let Ok(stat) = fs::read_to_string(format!("/proc/{pid}/stat")) else { return false };
    let zombie = stat.rsplit_once(") ").is_some_and(|(_, rest)| rest.starts_with('Z'));
    !zombie && fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe.ends_with(name))
}

fn resume_line(container: &str) -> String {
    format!("{container}: resume it with: jackin-restore {container}")
}

fn exists(kind: &str, name: &str) -> bool {
    Session::exists(kind, name)
}

#[test]
fn a_clean_exit_is_said_to_be_purged_by_jackin_and_its_tombstone_stays() {
    if !engine_available("a_clean_exit_is_said_to_be_purged_by_jackin_and_its_tombstone_stays") {
        return;
    }
    let mut load = Load::start("clean", &[]);
    let watch = load.running_with_watch();
    let (ended, load) = load.end(watch);
    let c = &load.container;
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert!(ended.stderr.contains(&format!("{c}: purged by jackin")), "{}", ended.stderr);
    assert!(ended.stderr.contains("jackin prune instances"), "{}", ended.stderr);
    assert!(!ended.stderr.contains("resume it with"), "nothing to resume: {}", ended.stderr);
    assert_eq!(load.home.index_row(c).map(|r| r.status).as_deref(), Some("purged"), "jackin's tombstone stays");
    assert!(!load.home.data(c).exists());
    assert!(!exists("container", c));
    assert_eq!(git(&load.host, &["branch", "--list", "jackin/scratch/*"]), "");
}

/// jackin's exit check calls a session unpushed when any local branch of its repository is ahead
/// with no upstream (the stand-in plays the rule as jackin has it). Work recovered from another
/// session's quarantine into the same repository comes back outside refs/heads/, so the next
/// clean exit of a session of that repository is torn down as before; before, the branch
/// `jackin/recovered/D` kept it `preserved_unpushed` (issue 65).
#[test]
fn a_recovery_into_the_repository_does_not_make_jackin_keep_the_next_clean_session() {
    if !engine_available("a_recovery_into_the_repository_does_not_make_jackin_keep_the_next_clean_session") {
        return;
    }
    let mut load = Load::prepare("clean", &[]);
    let host = load.host.clone();
    let discarded = load.home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    common::commit_file(&discarded.mount_path(0), "src/half.rs", "pub fn half() {}\n", "half done");
    let purged = load.home.cmd("jackin-purge").args(["--discard-unfinished", &discarded.container]).output().unwrap();
    assert_eq!(purged.status.code(), Some(0), "{}", common::stderr(&purged));
    let recovered = load.home.cmd("jackin-restore").args(["--recover", &discarded.container]).output().unwrap();
    assert_eq!(recovered.status.code(), Some(0), "{}", common::stderr(&recovered));
    assert_eq!(git(&host, &["for-each-ref", "--format=%(refname)", "refs/heads/jackin/recovered/"]), "");
    load.spawn();
    let watch = load.running_with_watch();
    let (ended, load) = load.end(watch);
    let c = &load.container;
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert_eq!(load.home.index_row(c).map(|r| r.status).as_deref(), Some("purged"), "{}", ended.stderr);
    assert!(!load.home.data(c).exists(), "torn down by jackin");
    // The recovered work is still there, by its short name.
    let short = format!("jackin/recovered/{}", discarded.container);
    assert_eq!(git(&host, &["log", "--format=%s", "-1", &short]), "half done");
}

#[test]
fn a_dirty_exit_kept_by_jackin_is_reported_with_its_resume_line_and_nothing_is_deleted() {
    if !engine_available("a_dirty_exit_kept_by_jackin_is_reported_with_its_resume_line_and_nothing_is_deleted") {
        return;
    }
    let mut load = Load::start("dirty", &[]);
    let watch = load.running_with_watch();
    let (ended, load) = load.end(watch);
    let c = &load.container;
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert!(ended.stderr.contains(&format!("{c}: kept by jackin (preserved_dirty)")), "{}", ended.stderr);
    assert!(ended.stderr.contains(&resume_line(c)), "{}", ended.stderr);
    assert_eq!(ended.stdout.lines().filter(|l| l.starts_with('{')).count(), 0, "no tool ran: {}", ended.stdout);
    let status = "preserved_dirty".to_owned();
    assert_eq!(load.home.status(c), (status.clone(), status));
    let worktree = load.home.isolation(c).records[0].worktree_path.clone();
    assert_eq!(fs::read_to_string(Path::new(&worktree).join("notes.md")).unwrap(), "half done\n");
    assert_eq!(
        git(&load.host, &["branch", "--list", "--format=%(refname:short)", "jackin/scratch/*"]),
        format!("jackin/scratch/{c}")
    );
    // jackin removed the containers itself: the recipe that lets the session come back is the one
    // the watch captured while it ran.
    assert!(!exists("container", c));
    let continuity = load.home.continuity(c);
    assert_eq!(continuity.recipe.as_ref().unwrap()["captured_by"], "jackin-reconcile");
    let plan = load.home.cmd("jackin-restore").args([c.as_str(), "--plan", "--format", "json"]).output().unwrap();
    let plan = String::from_utf8_lossy(&plan.stdout).into_owned();
    assert!(plan.contains(r#""tier":2"#), "recreated from the captured recipe: {plan}");
}

#[test]
fn a_detached_session_is_kept_by_jackin_keep_and_its_resume_line_printed() {
    if !engine_available("a_detached_session_is_kept_by_jackin_keep_and_its_resume_line_printed") {
        return;
    }
    let mut load = Load::prepare("detached", &[]);
    // A session of this home that was running before the load is not this load's.
    let other = load.home.instance(&unique_id(), |_, _| Vec::new()).container;
    let _other = Session::launch(&other, SessionOptions { dind: false, ..Default::default() });
    load.spawn();
    let watch = load.running_with_watch();
    let (ended, load) = load.end(watch);
    let c = &load.container;
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert!(ended.stderr.contains(&format!("{c}: detached, still running; its work is clean")), "{}", ended.stderr);
    assert!(ended.stderr.contains(&format!("{c}: kept (restore_available)")), "{}", ended.stderr);
    assert!(ended.stderr.contains(&resume_line(c)), "{}", ended.stderr);
    // jackin's own lines (the stand-in's) are on stdout too; the records are the JSON Lines.
    let records: String = ended.stdout.lines().filter(|l| l.starts_with('{')).map(|l| format!("{l}\n")).collect();
    let decisions: Vec<Decision> = envelopes(records.as_bytes())
        .into_iter()
        .filter(|r| r.is::<Decision>())
        .map(|r| r.data::<Decision>())
        .collect();
    assert_eq!(decisions.len(), 1, "{}", ended.stdout);
    assert_eq!(decisions[0].outcome, "keep");
    let status = "restore_available".to_owned();
    assert_eq!(load.home.status(c), (status.clone(), status));
    // Kept per `--stop`: the container stopped and removed, the network with it; the recipe on disk.
    assert!(!exists("container", c));
    assert!(!exists("network", &format!("{c}-net")));
    let continuity = load.home.continuity(c);
    assert!(continuity.recipe.is_some());
    assert_eq!(continuity.cause.as_deref(), Some("kept"));
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &other]), "true", "the other session is left alone");
    assert!(!ended.stderr.contains(&other), "{}", ended.stderr);
}

#[test]
fn a_detached_session_with_work_at_risk_is_kept_by_the_policy_without_a_terminal() {
    if !engine_available("a_detached_session_with_work_at_risk_is_kept_by_the_policy_without_a_terminal") {
        return;
    }
    let mut load = Load::start("detached", &[]);
    let watch = load.running_with_watch();
    let worktree = load.home.isolation(&load.container).records[0].worktree_path.clone();
    fs::write(Path::new(&worktree).join("draft.md"), "the agent's draft\n").unwrap();
    let (ended, load) = load.end(watch);
    let c = &load.container;
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert!(ended.stderr.contains(&format!("{c}: detached, still running; it holds work at risk")), "{}", ended.stderr);
    assert!(ended.stderr.contains(&format!("{c}: kept (preserved_dirty)")), "{}", ended.stderr);
    assert!(ended.stderr.contains(&resume_line(c)), "{}", ended.stderr);
    assert_eq!(fs::read_to_string(Path::new(&worktree).join("draft.md")).unwrap(), "the agent's draft\n");
    assert!(!exists("container", c));
}

#[test]
fn the_flags_for_a_clean_detached_session_are_the_operators_to_choose() {
    if !engine_available("the_flags_for_a_clean_detached_session_are_the_operators_to_choose") {
        return;
    }
    // Without --keep, the ask policy cleans a clean session up, as an exit would.
    let mut load = Load::start("detached", &[("JACKIN_LOAD_KEEP_FLAGS", "--stop")]);
    let watch = load.running_with_watch();
    let (ended, load) = load.end(watch);
    let c = &load.container;
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert!(ended.stderr.contains("(jackin-exit-hook --stop)"), "{}", ended.stderr);
    assert!(ended.stderr.contains(&format!("{c}: cleaned up, nothing kept")), "{}", ended.stderr);
    assert!(!load.home.data(c).exists());
    assert!(!exists("container", c));
}

#[test]
fn return_to_the_agent_reattaches_with_jackin_hardline_and_settles_what_it_left() {
    if !engine_available("return_to_the_agent_reattaches_with_jackin_hardline_and_settles_what_it_left") {
        return;
    }
    // The operator answers "Return to agent"; back in the session, the agent exits with work at
    // risk, which jackin keeps.
    let env = [("JACKIN_LOAD_AT_RISK_FLAGS", "--stop --answer return"), ("JACKIN_STAND_IN_HARDLINE_EXIT", "dirty")];
    let mut load = Load::start("detached", &env);
    let watch = load.running_with_watch();
    let worktree = load.home.isolation(&load.container).records[0].worktree_path.clone();
    fs::write(Path::new(&worktree).join("draft.md"), "the agent's draft\n").unwrap();
    let (ended, load) = load.end(watch);
    let c = &load.container;
    assert_eq!(ended.code, Some(0), "{}", ended.stderr);
    assert!(ended.stderr.contains(&format!("{c}: back to the agent: jackin hardline {c}")), "{}", ended.stderr);
    assert!(ended.stderr.contains(&format!("{c}: kept by jackin (preserved_dirty)")), "{}", ended.stderr);
    assert!(ended.stderr.contains(&resume_line(c)), "{}", ended.stderr);
    assert!(!exists("container", c));
}

#[test]
fn jackins_own_failure_is_the_wrappers_exit_status_and_the_watch_is_stopped() {
    if !engine_available("jackins_own_failure_is_the_wrappers_exit_status_and_the_watch_is_stopped") {
        return;
    }
    let home = Home::new();
    let stand_ins = home.tmp.path().join("stand-ins");
    common::install_jackin_stand_in(&stand_ins);
    let not_a_repository = home.tmp.path().join("plain");
    fs::create_dir_all(&not_a_repository).unwrap();
    let mut cmd = Command::new(common::root().join("contrib/jackin/jackin-load"));
    cmd.arg("agent-smith").arg(&not_a_repository);
    cmd.env("PATH", format!("{}:{}", stand_ins.display(), std::env::var("PATH").unwrap()))
        .env("JACKIN_BIN_DIR", tools_dir())
        .env("JACKIN_HOME_DIR", &home.home)
        .env("JACKIN_CONFIG_DIR", &home.config)
        .env("JACKIN_STAND_IN_IMAGE", common::docker::TEST_ROLE_IMAGE)
        .stdin(Stdio::null());
    let started = Instant::now();
    let out = cmd.output().unwrap();
    let said = common::stderr(&out);
    assert_eq!(out.status.code(), Some(1), "jackin's own code: {said}");
    assert!(said.contains("is not a git repository"), "{said}");
    assert!(started.elapsed() < Duration::from_secs(30), "the watch does not hold the wrapper");
}
