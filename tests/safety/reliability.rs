//! The reliability suite: one table of checks (crash points, concurrency, bad input, path attacks,
//! the work-loss matrix, Docker faults, secrets), each row with the cases it ran and its failures.
//!
//! `cargo test --test tests safety::reliability:: -- --nocapture` runs the short form (about a minute) and prints
//! the table; `JACKIN_RELIABILITY=long` runs more cases and the engine-kill fault. The table is
//! also written to `$CARGO_TARGET_TMPDIR/reliability.txt`. `scripts/reliability` wraps both.
//! `JACKIN_RELIABILITY_ONLY=<part of a check's name>` runs only the matching rows.

use crate::common;
mod oracle;

use std::ffi::OsString;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStringExt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::docker::{docker_quiet, engine_available, OwnEngine, Session, SessionOptions, TEST_IMAGE};
use common::records::{records, records_of, Assessment, Candidate, Change};
use common::{clean_decision, commit_file, files_under, git, stderr, unique_id, Entry, Home, Instance, Rng};
use jackin::base::tool::Tool;
use jackin::tools::purge::CRASH_POINTS;
use serde_json::{json, Value};

fn long() -> bool {
    std::env::var("JACKIN_RELIABILITY").is_ok_and(|v| v == "long")
}

/// One row of the table.
#[derive(Default)]
struct Tally {
    cases: usize,
    failures: Vec<String>,
    note: String,
    /// Parts of the check that could not run here (never under `CI=true`, where that fails).
    skipped: Vec<String>,
}

impl Tally {
    fn case(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.cases += 1;
        if !ok {
            self.failures.push(what());
        }
    }
}

const STATUSES: [&str; 10] = [
    "active",
    "running",
    "restore_available",
    "preserved_dirty",
    "preserved_unpushed",
    "clean_exited",
    "crashed",
    "failed_setup",
    "superseded",
    "purged",
];

// ---------------------------------------------------------------------------------------------
// helpers

/// A tool of the home in a session of its own (no controlling terminal, so no dialog can wait).
fn tool(home: &Home, name: &str, args: &[&str]) -> Command {
    let mut cmd = home.detached(name);
    cmd.args(args);
    cmd
}

fn run(mut cmd: Command, stdin: &[u8]) -> Output {
    let mut child = cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let bytes = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&bytes);
    });
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    out
}

fn panicked(out: &Output) -> bool {
    out.status.code() == Some(101) || stderr(out).contains("panicked")
}

/// The index row's status of `container` (`None`: no row), or why the index cannot be read.
fn row_status(home: &Home, container: &str) -> Result<Option<String>, String> {
    Ok(home.try_index_rows()?.into_iter().find(|r| r.container_base == container).map(|r| r.status))
}

/// Index valid, manifest valid, both statuses one of jackin's ten; the manifest's status.
fn state_is_valid(home: &Home, inst: &Instance) -> Result<String, String> {
    let row = row_status(home, &inst.container)?.ok_or("the index row is gone")?;
    let status = home.try_manifest(&inst.container)?.status;
    for s in [&row, &status] {
        if !STATUSES.contains(&s.as_str()) {
            return Err(format!("status {s:?} is not one of jackin's ten"));
        }
    }
    Ok(status)
}

/// The manifest's Docker names as jackin writes them for a session with a DinD sidecar, plus
/// `sockets/<c>/agent.toml`, so keep and restore have a whole session to act on.
fn dockerised(home: &Home, inst: &Instance) {
    let c = &inst.container;
    home.with_sidecar(c);
    let sockets = home.home.join("sockets").join(c);
    fs::create_dir_all(&sockets).unwrap();
    fs::write(
        sockets.join("agent.toml"),
        "role = \"agent-smith\"\nworkdir = \"/workspace/my-app\"\nagents = [\"claude\"]\n",
    )
    .unwrap();
}

fn launch(home: &Home, inst: &Instance, env: Vec<(&str, &str)>) -> Session {
    dockerised(home, inst);
    let session = Session::launch(
        &inst.container,
        SessionOptions {
            dind: true,
            env,
            binds: vec![(inst.dir.join("home"), "/home/agent"), (inst.mount_path(0), "/workspace/my-app")],
            running: true,
            ..Default::default()
        },
    );
    // The exit hook runs once the agent has left: the role container has stopped.
    common::docker::docker(&["stop", "-t", "0", &inst.container]);
    session
}

/// Spawns the command, SIGKILLs it after `delay` (if it still runs), returns whether it was killed.
fn kill_after(mut cmd: Command, stdin: &[u8], delay: Duration) -> bool {
    let mut child: Child = cmd.stdin(Stdio::piped()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let _ = input.write_all(stdin);
    drop(input);
    let deadline = Instant::now() + delay;
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return false;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let status = child.wait().unwrap();
    status.code().is_none()
}

// ---------------------------------------------------------------------------------------------
// crash points

/// A worktree session with an uncommitted change and a scratch commit: purge must quarantine.
fn at_risk(home: &mut Home) -> (Instance, PathBuf) {
    let app = home.host_repo("app");
    let id = unique_id();
    let host = app.clone();
    let inst = home.instance(&id, move |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    let wt = inst.mount_path(0);
    commit_file(&wt, "feature.rs", "fn feature() {}\n", "agent work");
    fs::write(wt.join("README.md"), "changed by the agent\n").unwrap();
    (inst, app)
}

fn crash_points(t: &mut Tally) {
    for &step in CRASH_POINTS {
        let mut home = Home::new();
        let (inst, app) = at_risk(&mut home);
        let _session =
            Session::launch(&inst.container, SessionOptions { dind: false, running: false, ..Default::default() });
        let cmd = tool(&home, "jackin-purge", &["--discard-unfinished", "--format=json", &inst.container]);
        stopped_at(t, "purge", cmd, b"", CrashAt::Step(Some(step)), Tool::Purge);
        let rows = home.try_index_rows();
        t.case(rows.is_ok(), || format!("purge@{step}: index invalid after the crash: {}", rows.unwrap_err()));
        let out = run(tool(&home, "jackin-purge", &["--discard-unfinished", "--format=json", &inst.container]), b"");
        let expected = if step == "row" { 6 } else { 0 };
        t.case(out.status.code() == Some(expected), || {
            format!("purge@{step} rerun: {:?} {}", out.status, stderr(&out))
        });
        let end = (|| -> Result<(), String> {
            if row_status(&home, &inst.container)?.is_some() {
                return Err("row left".into());
            }
            if inst.dir.exists() {
                return Err("data dir left".into());
            }
            if Session::exists("container", &inst.container) {
                return Err("container left".into());
            }
            if git(&app, &["worktree", "list"]).contains(&inst.container) {
                return Err("worktree still registered".into());
            }
            let q = home.quarantines();
            if q.is_empty() || !q.iter().all(|q| q.join("receipt.json").exists()) {
                return Err(format!("quarantine incomplete: {q:?}"));
            }
            Ok(())
        })();
        t.case(end.is_ok(), || format!("purge@{step} end state: {}", end.unwrap_err()));
    }

    // keep and restore: aborted after each of their steps, then rerun; keep's step i and then
    // restore's step i in one session.
    let (keep_points, restore_points) = (jackin::tools::keep::CRASH_POINTS, jackin::tools::restore::CRASH_POINTS);
    for i in 0..keep_points.len().max(restore_points.len()) {
        let keep_at = keep_points.get(i).copied();
        let restore_at = restore_points.get(i).copied();
        keep_then_restore(t, CrashAt::Step(keep_at), CrashAt::Step(restore_at));
    }
    // The long form also SIGKILLs them at varying delays (between steps, mid-write), and counts
    // how many kills landed mid-run; a kill that came after the run ended checks nothing more.
    let delays: Vec<u64> = if long() { vec![5, 15, 30, 60, 100, 150, 250, 400, 700] } else { Vec::new() };
    let (mut keep_kills, mut restore_kills) = (0, 0);
    for &delay in &delays {
        let (keep, restore) = keep_then_restore(t, CrashAt::Delay(delay), CrashAt::Delay(delay * 3));
        keep_kills += usize::from(keep);
        restore_kills += usize::from(restore);
    }
    let killed = if delays.is_empty() {
        String::new()
    } else {
        let runs = delays.len();
        format!("; SIGKILL at {runs} delays each (killed mid-run: keep {keep_kills}/{runs}, restore {restore_kills}/{runs})")
    };
    t.note = format!(
        "purge: its {} crash points; keep: its {}, restore: its {} (tier 2, a replacement's at tier 1){killed}; each rerun",
        CRASH_POINTS.len(),
        keep_points.len(),
        restore_points.len()
    );
}

/// Where keep or restore is stopped: after a step (none: the run is not stopped), or by a
/// SIGKILL after a delay in milliseconds.
#[derive(Clone, Copy, Debug)]
enum CrashAt {
    Step(Option<&'static str>),
    Delay(u64),
}

/// Runs `cmd` stopped at `at`; returns whether it was stopped mid-run. A crash point that does not
/// stop the run is a failure.
fn stopped_at(t: &mut Tally, what: &str, mut cmd: Command, stdin: &[u8], at: CrashAt, tool: Tool) -> bool {
    match at {
        CrashAt::Step(None) => false,
        CrashAt::Step(Some(step)) => {
            cmd.env(tool.variable(), step);
            let out = run(cmd, stdin);
            let aborted =
                out.status.code().is_none() && stderr(&out).contains(&format!("test crash after step {step}"));
            t.case(aborted, || format!("{what}@{step}: not stopped there: {:?} {}", out.status, stderr(&out)));
            aborted
        }
        CrashAt::Delay(ms) => kill_after(cmd, stdin, Duration::from_millis(ms)),
    }
}

/// One at-risk session kept (stopped at `keep_at`, then rerun) and resumed at tier 2 (stopped at
/// `restore_at`, then rerun). Returns whether each was stopped mid-run.
fn keep_then_restore(t: &mut Tally, keep_at: CrashAt, restore_at: CrashAt) -> (bool, bool) {
    let secret = "crash-secret-5f3e";
    let mut home = Home::new();
    let (inst, _) = at_risk(&mut home);
    let work = inst.mount_path(0).join("README.md");
    let _session = launch(&home, &inst, vec![("SECRET_TOKEN", secret)]);
    let input = home.assess_lines(&[&inst.container]);
    let keep = || tool(&home, "jackin-keep", &["--policy=keep", "--format=json"]);
    let keep_stopped = stopped_at(t, "keep", keep(), input.as_bytes(), keep_at, Tool::Keep);
    let mid = state_is_valid(&home, &inst);
    t.case(mid.is_ok(), || format!("keep stopped at {keep_at:?}: {}", mid.clone().unwrap_err()));
    let out = run(keep(), input.as_bytes());
    t.case(out.status.success(), || format!("keep rerun after {keep_at:?}: {:?} {}", out.status, stderr(&out)));
    let end = state_is_valid(&home, &inst);
    t.case(end.as_deref() == Ok("preserved_unpushed") || end.as_deref() == Ok("preserved_dirty"), || {
        format!("keep after {keep_at:?} ends {end:?}")
    });
    t.case(fs::read_to_string(&work).ok().as_deref() == Some("changed by the agent\n"), || {
        format!("keep stopped at {keep_at:?}: the dirty file is gone")
    });
    t.case(!Session::exists("container", &inst.container), || format!("keep after {keep_at:?}: the container is left"));

    let restore = || {
        let mut cmd = tool(&home, "jackin-restore", &[&inst.container, "--yes", "--format=json"]);
        cmd.env("SECRET_TOKEN", secret);
        cmd
    };
    // A replacement's points are passed only at tier 1, by a container that no longer matches its
    // launch recipe: resumed once (tier 2), stopped, and the recipe given one more variable.
    if matches!(restore_at, CrashAt::Step(Some(step)) if step.starts_with("replacement")) {
        let out = run(restore(), b"");
        t.case(out.status.success(), || format!("restore before {restore_at:?}: {:?} {}", out.status, stderr(&out)));
        common::docker::docker(&["stop", "-t", "0", &inst.container, &format!("{}-dind", inst.container)]);
        home.edit_continuity(&inst.container, |kept| {
            let drifted = json!({ "name": "JACKIN_DRIFTED", "source": "literal", "value": "1" });
            kept["recipe"]["role"]["env"].as_array_mut().unwrap().push(drifted);
        });
    }
    let restore_stopped = stopped_at(t, "restore", restore(), b"", restore_at, Tool::Restore);
    let mid = state_is_valid(&home, &inst);
    t.case(mid.is_ok(), || format!("restore stopped at {restore_at:?}: {}", mid.clone().unwrap_err()));
    let out = run(restore(), b"");
    t.case(out.status.success(), || format!("restore rerun after {restore_at:?}: {:?} {}", out.status, stderr(&out)));
    let end = state_is_valid(&home, &inst);
    t.case(end.as_deref() == Ok("active"), || format!("restore after {restore_at:?} ends {end:?}"));
    t.case(work.exists() && inst.mount_path(0).join("feature.rs").exists(), || {
        format!("restore stopped at {restore_at:?}: work files gone")
    });
    let running = docker_quiet(&["inspect", "-f", "{{.State.Running}}", &inst.container]);
    t.case(running.as_deref() == Some("true"), || format!("restore after {restore_at:?}: container {running:?}"));
    (keep_stopped, restore_stopped)
}

// ---------------------------------------------------------------------------------------------
// concurrency

fn concurrency(t: &mut Tally) {
    let rounds = if long() { 5 } else { 1 };
    for round in 0..rounds {
        let home = Home::new();
        let data = home.home.join("data");
        let prefix = &unique_id()[..3];
        let names =
            common::many_sessions(&home, prefix, 500, 500, |i| if i % 10 == 0 { "active" } else { "preserved_dirty" });
        let assessments = home.assess_lines(&names.iter().take(100).map(String::as_str).collect::<Vec<_>>());

        let done = Arc::new(AtomicBool::new(false));
        let reads = Arc::new(AtomicUsize::new(0));
        let bad_reads = Arc::new(Mutex::new(Vec::<String>::new()));
        let poller = {
            let (done, reads, bad, path) =
                (done.clone(), reads.clone(), bad_reads.clone(), data.join("instances.json"));
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    let bytes = fs::read(&path).unwrap_or_default();
                    match serde_json::from_slice::<Value>(&bytes) {
                        Ok(index) if index["instances"].as_array().map_or(0, Vec::len) >= 500 => {}
                        Ok(index) => bad
                            .lock()
                            .unwrap()
                            .push(format!("{} rows mid-run", index["instances"].as_array().map_or(0, Vec::len))),
                        Err(e) => bad.lock().unwrap().push(format!("invalid JSON mid-run: {e}")),
                    }
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        let mut children = Vec::new();
        let mut writes: Vec<(usize, usize)> = Vec::new();
        for k in 0..16 {
            let (label, child) = match k % 5 {
                0 => (
                    "reconcile",
                    tool(&home, "jackin-reconcile", &["--format=json", "--quiet"])
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap(),
                ),
                1 => (
                    "assess",
                    tool(&home, "jackin-assess", &["--all", "--format=json"])
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap(),
                ),
                2 => {
                    let mut child = tool(&home, "jackin-keep", &["--policy=keep", "--dry-run", "--format=json"])
                        .stdin(Stdio::piped())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap();
                    let mut input = child.stdin.take().unwrap();
                    let bytes = assessments.clone().into_bytes();
                    std::thread::spawn(move || {
                        let _ = input.write_all(&bytes);
                    });
                    ("keep --dry-run", child)
                }
                3 => (
                    "restore --list",
                    tool(&home, "jackin-restore", &["--list", "--format=json"])
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap(),
                ),
                _ => {
                    let mine: Vec<&str> = names
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| i % 10 != 0 && i % 16 == k)
                        .map(|(_, n)| n.as_str())
                        .collect();
                    let child = common::status_writer(&home.home, &mine)
                        .stdin(Stdio::null())
                        .stdout(Stdio::piped())
                        .stderr(Stdio::piped())
                        .spawn()
                        .unwrap();
                    writes.push((k, mine.len()));
                    ("status writes", child)
                }
            };
            children.push((label, child));
        }
        for (k, (label, child)) in children.into_iter().enumerate() {
            let out = child.wait_with_output().unwrap();
            // keep --dry-run and restore may report per-session errors (exit 6); never a panic. A
            // status writer must have written every status it was given.
            let wrote = writes
                .iter()
                .find(|(writer, _)| *writer == k)
                .is_none_or(|&(_, n)| common::status_writer_wrote(&out, n));
            let ok = matches!(out.status.code(), Some(0) | Some(6)) && !panicked(&out) && wrote;
            t.case(ok, || format!("round {round}: {label}: {:?} {}", out.status, stderr(&out)));
        }
        done.store(true, Ordering::Relaxed);
        poller.join().unwrap();
        let bad = bad_reads.lock().unwrap().clone();
        t.cases += reads.load(Ordering::Relaxed);
        t.failures.extend(bad.into_iter().take(5));
        let rows = home.try_index_rows();
        t.case(rows.is_ok(), || format!("round {round}: the index at the end: {}", rows.clone().unwrap_err()));
        let rows = rows.unwrap_or_default();
        let mut seen: Vec<String> = rows.iter().map(|r| r.container_base.clone()).collect();
        seen.sort();
        let mut expected = names.clone();
        expected.sort();
        t.case(seen == expected, || format!("round {round}: {} rows of 500 at the end", seen.len()));
        for row in &rows {
            let s = row.status.as_str();
            t.case(STATUSES.contains(&s), || format!("round {round}: row status {s:?}"));
        }
    }
    t.note = format!("16 processes x {rounds} round(s), 500 rows; the index polled throughout (polls counted)");
}

// ---------------------------------------------------------------------------------------------
// bad input

const HOSTILE_NAMES: &[&str] = &[
    "../../etc",
    "/etc/passwd",
    "jk-../../x",
    "jk-a/b",
    "jk-zzzzzzzz-nobody/../..",
    "JK-ABC",
    "..",
    ".",
    "",
    "jk-zzzzzzzz-nobody.lock",
    "jk-\u{202e}evil",
    "jk-zzzz zzzz",
    "~/.ssh",
    "jk-zzzzzzzz-nobody\n",
    "-rf",
];

const HOSTILE_VALUES: &[&str] = &[
    "null",
    "true",
    "[]",
    "{}",
    "-1",
    "1e400",
    "18446744073709551616",
    "-99999999999999999999999",
    "1.5",
    "\"\"",
    "\"\\u0000\"",
    "\"a\\u0000b\"",
    "\"../../etc/passwd\"",
    "\"/etc/shadow\"",
    "\"\\ud800\"",
];

const HOLE: &str = "__hostile_value__";

/// One generated hostile line, from a valid-looking record for an instance that does not exist.
fn hostile_line(rng: &mut Rng, base: &Value) -> Vec<u8> {
    let text = base.to_string();
    match rng.below(12) {
        0 => text.as_bytes()[..rng.below(text.len())].to_vec(),
        1 => {
            let mut v = base.clone();
            let keys: Vec<String> = v["data"].as_object().unwrap().keys().cloned().collect();
            let key = rng.pick(&keys).clone();
            v["data"][&key] = json!(HOLE);
            v.to_string().replace(&format!("\"{HOLE}\""), rng.pick::<&str>(HOSTILE_VALUES)).into_bytes()
        }
        2 => {
            let mut v = base.clone();
            v["data"]["container_base"] = json!(rng.pick(HOSTILE_NAMES));
            v.to_string().into_bytes()
        }
        3 => {
            let mut v = base.clone();
            v["schema_version"] = json!(HOLE);
            let raw = *rng.pick(&["2", "999", "\"1\"", "0", "-1", "1.5", "null", "1e400", "18446744073709551617"]);
            v.to_string().replace(&format!("\"{HOLE}\""), raw).into_bytes()
        }
        4 => {
            let mut v = base.clone();
            v["type"] = json!(rng.pick(&["nuke", "", "decision ", "DECISION", "orphan", "assessment", "error"]));
            v.to_string().into_bytes()
        }
        5 => {
            let depth = 100 + rng.below(5000);
            let mut s = "[".repeat(depth);
            s.push_str(&"]".repeat(depth));
            format!("{{\"schema_version\":1,\"type\":\"decision\",\"data\":{s}}}").into_bytes()
        }
        6 => {
            let mut bytes = text.into_bytes();
            let at = rng.below(bytes.len());
            bytes.insert(at, *rng.pick(&[0u8, 0xff, 0xfe, 0xc3, 0x80, b'"', b'\\']));
            bytes
        }
        7 => {
            let mut v = base.clone();
            v["data"]["container_base"] = json!("jk-zzzzzzzz-nobody".to_owned() + &"x".repeat(rng.below(100_000)));
            v.to_string().into_bytes()
        }
        8 => {
            let mut v = base.clone();
            v.as_object_mut().unwrap().remove(*rng.pick(&["schema_version", "type", "data"]));
            v.to_string().into_bytes()
        }
        9 => rng
            .pick(&[&b"not json"[..], b"{}", b"[]", b"null", b"\xef\xbb\xbf{}", b"{\"schema_version\":1}", b"1"])
            .to_vec(),
        10 => {
            let mut v = base.clone();
            v["data"] = json!(HOLE);
            v.to_string().replace(&format!("\"{HOLE}\""), rng.pick::<&str>(HOSTILE_VALUES)).into_bytes()
        }
        _ => {
            let mut v = base.clone();
            v["data"]["extra"] = json!({"nested": [[[[{"a": "\u{0000}"}]]]], "n": 1e300});
            v["data"]["container_base"] = json!(rng.pick(HOSTILE_NAMES));
            v.to_string().into_bytes()
        }
    }
}

fn hostile_arg(rng: &mut Rng) -> OsString {
    match rng.below(8) {
        0 | 1 => OsString::from(*rng.pick(HOSTILE_NAMES)),
        2 => OsString::from_vec(vec![b'j', b'k', b'-', 0xff, 0xfe, b'/', b'.', b'.']),
        3 => OsString::from("x".repeat(1 + rng.below(5000))),
        4 => OsString::from(*rng.pick(&[
            "--format=yaml",
            "--older-than=banana",
            "--keep-last=-1",
            "--keep-last=99999999999999999999",
            "--quarantine-days=-3",
            "--health-timeout=forever",
            "--policy=nuke",
            "--answer=maybe",
            "--no-such-flag",
            "--home",
        ])),
        5 => OsString::from(format!("jk-{}", "../".repeat(1 + rng.below(50)))),
        6 => OsString::from(format!("/{}", "a/".repeat(1 + rng.below(100)))),
        _ => OsString::from(format!("abc{}", rng.pick(&["/", "\\", "..", ":", "*", "?"]))),
    }
}

fn bad_input(t: &mut Tally) {
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance("b7d1n9ut", |h, c| vec![h.worktree_record(c, &app, "/workspace/my-app")]);
    let dead = tempfile::tempdir().unwrap();
    let dead_host = format!("unix://{}/docker.sock", dead.path().display());
    let before = home.snapshot();
    let nobody = "jk-zzzzzzzz-nobody";
    let assessment: Value =
        serde_json::from_str(home.assess_lines(&[&inst.container]).lines().next().unwrap()).unwrap();
    let mut assessment = assessment;
    assessment["data"]["container_base"] = json!(nobody);
    assessment["data"]["instance_id"] = json!("zzzzzzzz");
    let decision = clean_decision(nobody, "zzzzzzzz", true);
    let orphan = json!({"schema_version": 1, "type": "orphan", "data": {"kind": "temp_file", "name": "instances.json.tmp.999999.1"}});

    let target = if long() { 50_000 } else { 10_000 };
    let batch = 40;
    let mut rng = Rng::new(0x5EED_1234_ABCD_0007);
    let mut fed = 0usize;
    let mut runs = 0usize;
    let stdin_tools: [(&str, &[&str], &Value); 4] = [
        ("jackin-keep", &["--policy=clean", "--format=json"], &assessment),
        ("jackin-purge", &["--format=json"], &decision),
        ("jackin-purge", &["--format=json"], &orphan),
        ("jackin-assess", &["-", "--format=json"], &assessment),
    ];
    let arg_tools: [(&str, &[&str]); 6] = [
        ("jackin-assess", &[]),
        ("jackin-keep", &["--policy=keep"]),
        ("jackin-purge", &[]),
        ("jackin-reconcile", &[]),
        ("jackin-restore", &[]),
        ("jackin-restore", &["--plan"]),
    ];
    while fed < target {
        runs += 1;
        let (label, cmd, documented): (String, Command, &[i32]) = if runs % 3 != 0 {
            let (name, args, base) = stdin_tools[runs % stdin_tools.len()];
            // A whole batch is refused at its first bad line, so some runs carry one record alone to
            // reach the code past the input check; a record of a type the tool does not handle
            // passes through with exit 0 (protocol.md).
            let (lines, documented): (usize, &[i32]) = if runs % 4 == 1 { (1, &[0, 3, 4, 6]) } else { (batch, &[3]) };
            let mut input = Vec::new();
            for _ in 0..lines {
                input.extend(hostile_line(&mut rng, base));
                input.push(b'\n');
            }
            fed += lines;
            let mut cmd = tool(&home, name, args);
            cmd.env("DOCKER_HOST", &dead_host);
            let out = run(cmd, &input);
            record_bad(t, &format!("{name} stdin #{runs}"), &out, documented);
            if runs % 25 == 0 {
                check_unchanged(t, &home, &before, runs);
            }
            continue;
        } else {
            let (name, fixed) = arg_tools[runs % arg_tools.len()];
            let mut cmd = tool(&home, name, fixed);
            cmd.env("DOCKER_HOST", &dead_host);
            let n = 1 + rng.below(8);
            for _ in 0..n {
                cmd.arg(hostile_arg(&mut rng));
            }
            fed += n;
            (format!("{name} args #{runs}"), cmd, &[2, 4, 6])
        };
        let out = run(cmd, b"");
        record_bad(t, &label, &out, documented);
        if runs % 25 == 0 {
            check_unchanged(t, &home, &before, runs);
        }
    }
    check_unchanged(t, &home, &before, runs);
    t.cases = fed;
    let exits: Vec<String> = EXITS.lock().unwrap().iter().map(|(code, n)| format!("{code}: {n}")).collect();
    t.note = format!(
        "{fed} records and arguments in {runs} runs (seeded; runs by exit code {}); no panic, home unchanged",
        exits.join(", ")
    );
}

/// Single generated records on `jackin-purge`'s stdin with the live engine, so that each one that
/// parses reaches the orphan and deletion code: orphans of every kind naming this home's live
/// session, a foreign container, network and volume, another home's session, this home's own
/// files and hostile names; decisions naming the session (work at risk, no discard) or nobody.
/// Nothing that exists may go: every resource on the engine and the home byte for byte.
fn bad_input_live(t: &mut Tally) {
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/my-app")]);
    fs::write(inst.mount_path(0).join("README.md"), "work at risk\n").unwrap();
    dockerised(&home, &inst);
    let c = inst.container.clone();
    let _session = Session::launch(&c, SessionOptions { dind: true, running: false, ..Default::default() });
    // Another home's stopped session on the same engine, and resources no jackin made.
    let other = format!("jk-{}-other", unique_id());
    let _other = Session::launch(&other, SessionOptions { dind: false, running: false, ..Default::default() });
    let foreign = format!("jk-{}-ghost", unique_id());
    common::docker::docker(&["create", "--name", &foreign, "--network", "none", TEST_IMAGE, "sleep", "1"]);
    common::docker::docker(&["network", "create", &format!("{foreign}-net")]);
    common::docker::docker(&["volume", "create", &format!("{foreign}-dind-certs")]);
    let lock = home.home.join("data").join(format!("{c}.lock"));
    fs::write(&lock, "").unwrap();
    // As on any host where jackin has written its index once: a purge that finds nothing to do
    // may still take the index lock (state.md), which is not a change to the home.
    fs::write(home.home.join("data/instances.json.lock"), "").unwrap();
    let resources: Vec<(&str, String)> = vec![
        ("container", c.clone()),
        ("container", format!("{c}-dind")),
        ("network", format!("{c}-net")),
        ("volume", format!("{c}-dind-certs")),
        ("container", other.clone()),
        ("network", format!("{other}-net")),
        ("container", foreign.clone()),
        ("network", format!("{foreign}-net")),
        ("volume", format!("{foreign}-dind-certs")),
    ];
    let mut names: Vec<String> = resources.iter().map(|(_, name)| name.clone()).collect();
    names.extend([
        lock.to_string_lossy().into_owned(),
        format!("{c}.lock"),
        format!("{other}.lock"),
        "instances.json".into(),
        home.index_path().to_string_lossy().into_owned(),
        format!("{c}/.jackin/instance.json"),
        inst.dir.to_string_lossy().into_owned(),
    ]);
    names.extend(HOSTILE_NAMES.iter().map(|n| n.to_string()));
    let kinds = ["container", "network", "volume", "name_lock", "temp_file", "image", "", "directory"];
    let before = home.snapshot();
    let mut rng = Rng::new(0x5EED_4C1F_E0E0_0003);
    let runs = if long() { 1_500 } else { 300 };
    let mut by_code: std::collections::BTreeMap<i32, usize> = Default::default();
    for n in 0..runs {
        let record = if rng.below(3) == 0 {
            let (name, discard) = match rng.below(3) {
                0 => (c.clone(), false),
                1 => ("jk-zzzzzzzz-nobody".to_owned(), rng.below(2) == 0),
                _ => (rng.pick(&names).clone(), false),
            };
            json!({"schema_version": 1, "type": "decision", "data": {
                "container_base": name, "instance_id": inst.id, "workspace_name": "my-app",
                "workspace_label": "my-app", "role_key": "agent-smith", "agent_runtime": "claude",
                "outcome": rng.pick(&["clean", "keep", "return"]), "policy": "clean", "reason": "fuzz",
                "verdict": rng.pick(&["clean", "dirty", "unknown"]), "discard_unfinished": discard,
                "status": "clean_exited", "dry_run": rng.below(4) == 0}})
        } else {
            json!({"schema_version": 1, "type": "orphan", "data": {
                "kind": rng.pick(&kinds), "name": rng.pick(&names), "dry_run": rng.below(4) == 0,
                "reason": "fuzz"}})
        };
        // One record in four is mangled further the way the dead-engine fuzz mangles them.
        let line = if rng.below(4) == 0 { hostile_line(&mut rng, &record) } else { record.to_string().into_bytes() };
        let mut input = line.clone();
        input.push(b'\n');
        let args: &[&str] = if rng.below(4) == 0 { &["--format=json", "--stop"] } else { &["--format=json"] };
        let out = run(tool(&home, "jackin-purge", args), &input);
        let code = out.status.code().unwrap_or(-1);
        *by_code.entry(code).or_default() += 1;
        t.case(!panicked(&out) && [0, 3, 5, 6].contains(&code), || {
            format!("run {n} {}: exit {code}: {}", String::from_utf8_lossy(&line), stderr(&out))
        });
        let changed = common::changed_paths(&before, &home.snapshot());
        t.case(changed.is_empty(), || {
            format!("run {n} {}: the home changed: {changed:?}", String::from_utf8_lossy(&line))
        });
        for (kind, name) in &resources {
            t.case(Session::exists(kind, name), || {
                format!("run {n} {}: {kind} {name} is gone", String::from_utf8_lossy(&line))
            });
        }
        if !t.failures.is_empty() {
            break;
        }
    }
    drop(docker_quiet(&["rm", "-f", &foreign]));
    drop(docker_quiet(&["network", "rm", &format!("{foreign}-net")]));
    drop(docker_quiet(&["volume", "rm", &format!("{foreign}-dind-certs")]));
    let exits: Vec<String> = by_code.iter().map(|(code, n)| format!("{code}: {n}")).collect();
    t.note = format!(
        "{runs} single records (seeded) on jackin-purge with the live engine, against {} resources that must stay \
         (runs by exit code {}); no panic, home unchanged",
        resources.len(),
        exits.join(", ")
    );
}

static EXITS: Mutex<std::collections::BTreeMap<i32, usize>> = Mutex::new(std::collections::BTreeMap::new());

fn record_bad(t: &mut Tally, label: &str, out: &Output, documented: &[i32]) {
    let code = out.status.code();
    *EXITS.lock().unwrap().entry(code.unwrap_or(-1)).or_default() += 1;
    if panicked(out) || !code.is_some_and(|c| documented.contains(&c)) {
        t.failures.push(format!("{label}: exit {code:?}: {}", stderr(out).lines().next().unwrap_or("")));
    }
}

fn check_unchanged(t: &mut Tally, home: &Home, before: &[(PathBuf, Entry)], runs: usize) {
    let changed = common::changed_paths(before, &home.snapshot());
    if !changed.is_empty() {
        t.failures.push(format!("the home changed by run {runs}: {changed:?}"));
    }
}

// ---------------------------------------------------------------------------------------------
// path attacks

fn path_attacks(t: &mut Tally) {
    let mut home = Home::new();
    let sentinel = home.tmp.path().join("sentinel");
    fs::create_dir_all(sentinel.join("victim/.jackin")).unwrap();
    fs::write(sentinel.join("precious.txt"), "do not touch\n").unwrap();
    fs::write(sentinel.join("victim/file"), "mine\n").unwrap();
    fs::write(
        sentinel.join("victim/.jackin/instance.json"),
        common::manifest_text("v1ct1m00", "jk-v1ct1m00-x", "clean_exited", "2026-08-20T09:00:00Z"),
    )
    .unwrap();
    std::os::unix::fs::symlink(sentinel.join("precious.txt"), sentinel.join("link-to-precious")).unwrap();
    let before = common::snapshot_of(&sentinel);

    // A link inside the data dir, a data dir that is a link, a socket dir that is a link, a
    // worktree_path outside the home.
    let link_inside = home.instance(&unique_id(), |_, _| Vec::new());
    std::os::unix::fs::symlink(&sentinel, link_inside.dir.join("home/escape")).unwrap();
    std::os::unix::fs::symlink(sentinel.join("precious.txt"), link_inside.dir.join("state/precious")).unwrap();
    let as_data_dir = home.instance(&unique_id(), |_, _| Vec::new());
    let moved = home.tmp.path().join("moved-data");
    fs::rename(&as_data_dir.dir, &moved).unwrap();
    std::os::unix::fs::symlink(sentinel.join("victim"), &as_data_dir.dir).unwrap();
    let socket_link = home.instance(&unique_id(), |_, _| Vec::new());
    std::os::unix::fs::symlink(&sentinel, home.home.join("sockets").join(&socket_link.container)).unwrap();
    let outside_mount = home.instance(&unique_id(), |_, c| {
        vec![json!({
            "workspace": "my-app", "mount_dst": "/workspace/my-app", "original_src": "/",
            "isolation": "worktree", "worktree_path": sentinel.to_str().unwrap(),
            "scratch_branch": format!("jackin/scratch/{c}"), "base_commit": "0000000000000000000000000000000000000000",
            "selector_key": "agent-smith", "container_name": c, "cleanup_status": "active"
        })]
    });
    let all = [&link_inside, &as_data_dir, &socket_link, &outside_mount];
    let names: Vec<&str> = all.iter().map(|i| i.container.as_str()).collect();

    let mut runs: Vec<(String, Command, Vec<u8>)> = Vec::new();
    for tool_name in ["jackin-assess", "jackin-keep", "jackin-purge", "jackin-reconcile", "jackin-restore"] {
        for bad in ["../sentinel", "/tmp", &format!("jk-../../{}", sentinel.display()), &sentinel.display().to_string()]
        {
            runs.push((format!("{tool_name} {bad}"), tool(&home, tool_name, &[bad]), Vec::new()));
        }
    }
    let input = home.assess_lines(&names);
    let mut assess_all = tool(&home, "jackin-assess", &["--format=json", "--diff"]);
    assess_all.args(&names);
    runs.push(("assess".into(), assess_all, Vec::new()));
    runs.push((
        "keep --policy keep".into(),
        tool(&home, "jackin-keep", &["--policy=keep", "--format=json"]),
        input.clone().into_bytes(),
    ));
    runs.push(("reconcile".into(), tool(&home, "jackin-reconcile", &["--format=json"]), Vec::new()));
    runs.push(("restore --list".into(), tool(&home, "jackin-restore", &["--list", "--format=json"]), Vec::new()));
    for name in &names {
        runs.push((format!("restore --plan {name}"), tool(&home, "jackin-restore", &["--plan", name]), Vec::new()));
        runs.push((format!("restore --yes {name}"), tool(&home, "jackin-restore", &["--yes", name]), Vec::new()));
    }
    let hostile_records = [
        json!({"schema_version":1,"type":"orphan","data":{"kind":"temp_file","name":"../../sentinel/precious.txt"}}),
        json!({"schema_version":1,"type":"orphan","data":{"kind":"temp_file","name":sentinel.join("precious.txt")}}),
        json!({"schema_version":1,"type":"orphan","data":{"kind":"name_lock","name":"../sentinel/precious.txt"}}),
        json!({"schema_version":1,"type":"decision","data":{"container_base":"../../sentinel","outcome":"clean"}}),
    ];
    for record in &hostile_records {
        runs.push((
            format!("purge <- {record}"),
            tool(&home, "jackin-purge", &["--format=json"]),
            format!("{record}\n").into_bytes(),
        ));
    }
    for name in &names {
        runs.push((
            format!("purge --discard-unfinished {name}"),
            tool(&home, "jackin-purge", &["--discard-unfinished", "--format=json", name]),
            Vec::new(),
        ));
        runs.push((
            format!("purge --terminal {name}"),
            tool(&home, "jackin-purge", &["--terminal", "--format=json"]),
            Vec::new(),
        ));
    }
    for (label, cmd, stdin) in runs {
        let out = run(cmd, &stdin);
        t.case(!panicked(&out), || format!("{label}: panicked"));
        let now = common::snapshot_of(&sentinel);
        let gone: Vec<_> = before.iter().filter(|e| !now.contains(e)).map(|e| e.0.display().to_string()).collect();
        let new: Vec<_> = now.iter().filter(|e| !before.contains(e)).map(|e| e.0.display().to_string()).collect();
        t.case(now == before, || {
            format!("{label}: the sentinel outside the home changed: gone {gone:?}, new {new:?}: {}", stderr(&out))
        });
    }
    t.case(moved.join(".jackin/instance.json").exists(), || "the moved data dir changed".into());
    t.note = "symlinks in data dirs, as data dirs, as socket dirs; mounts outside; .. and absolute names".into();
}

// ---------------------------------------------------------------------------------------------
// work-loss matrix

/// (name, isolation, makes the state in the mount; returns the file that must come back, if any)
type State = (&'static str, bool, fn(&Path, &Path) -> Option<(&'static str, &'static str)>);

const STATES: [State; 8] = [
    ("dirty", false, |m, _| {
        fs::write(m.join("README.md"), "dirty change\n").unwrap();
        Some(("README.md", "dirty change\n"))
    }),
    ("untracked", false, |m, _| {
        fs::write(m.join("notes.txt"), "untracked\n").unwrap();
        Some(("notes.txt", "untracked\n"))
    }),
    ("staged", false, |m, _| {
        fs::write(m.join("staged.rs"), "staged\n").unwrap();
        git(m, &["add", "staged.rs"]);
        Some(("staged.rs", "staged\n"))
    }),
    ("unpushed scratch commit", false, |m, _| {
        commit_file(m, "feature.rs", "scratch\n", "scratch work");
        None
    }),
    ("detached HEAD commit", false, |m, _| {
        git(m, &["checkout", "-q", "--detach"]);
        commit_file(m, "probe.rs", "detached\n", "detached work");
        None
    }),
    ("clone commit", true, |m, _| {
        commit_file(m, "clone.rs", "clone\n", "clone work");
        None
    }),
    ("clone stash", true, |m, _| {
        fs::write(m.join("README.md"), "stashed\n").unwrap();
        git(m, &["stash", "-q"]);
        None
    }),
    ("tag-only commit", true, |m, _| {
        commit_file(m, "tagged.rs", "tagged\n", "tagged work");
        git(m, &["tag", "v1-experiment"]);
        git(m, &["reset", "-q", "--hard", "origin/main"]);
        None
    }),
];

fn work_loss(t: &mut Tally) {
    for (state, is_clone, make) in STATES {
        let mut home = Home::new();
        let host = home.host_repo("app");
        let h = host.clone();
        let inst = home.instance(&unique_id(), move |home, c| {
            vec![if is_clone {
                home.clone_record(c, &h, "/workspace/my-app")
            } else {
                home.worktree_record(c, &h, "/workspace/my-app")
            }]
        });
        let mount = inst.mount_path(0);
        let file = make(&mount, &host);
        // Every object the mount has that the host's origin does not: what must come back.
        let mut at_risk: Vec<String> =
            git(&mount, &["rev-list", "--all", "--not", "--remotes"]).lines().map(str::to_owned).collect();
        if state == "detached HEAD commit" {
            at_risk =
                git(&mount, &["rev-list", "HEAD", "--not", "--remotes", "main"]).lines().map(str::to_owned).collect();
        }
        if state == "clone stash" {
            at_risk.push(git(&mount, &["rev-parse", "refs/stash"]));
        }

        // Without the clean decision, purge refuses and changes nothing.
        let before = home.snapshot();
        let out = run(tool(&home, "jackin-purge", &["--format=json", &inst.container]), b"");
        t.case(out.status.code() == Some(6) && home.snapshot() == before, || {
            format!("{state}: a plain purge did not refuse: {:?} {}", out.status, stderr(&out))
        });

        let assessment = home.assess_lines(&[&inst.container]);
        let verdict = records::<Assessment>(assessment.as_bytes())[0].verdict.clone();
        t.case(verdict == "dirty" || verdict == "unpushed", || format!("{state}: assessed {verdict}"));
        let decided = run(tool(&home, "jackin-keep", &["--policy=clean", "--format=json"]), assessment.as_bytes());
        t.case(decided.status.success(), || format!("{state}: keep: {}", stderr(&decided)));
        // jackin's own prune deletes clean_exited rows unchecked: at-risk work is never one.
        let status = row_status(&home, &inst.container);
        t.case(
            matches!(status.as_ref().map(|s| s.as_deref()), Ok(Some("preserved_dirty" | "preserved_unpushed"))),
            || format!("{state}: cleaned up before purge, the row is {status:?}"),
        );
        let out = run(tool(&home, "jackin-purge", &["--format=json"]), &decided.stdout);
        t.case(out.status.success() && !inst.dir.exists(), || {
            format!("{state}: purge: {:?} {}", out.status, stderr(&out))
        });
        let q = home.quarantines();
        t.case(q.len() == 1, || format!("{state}: {} quarantines", q.len()));
        let Some(q) = q.first() else { continue };
        let mount_dir = fs::read_dir(q).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir());
        let Some(mount_dir) = mount_dir else {
            t.case(false, || format!("{state}: no mount directory in the quarantine"));
            continue;
        };
        // Bring it back the way RECEIPT.txt says, into a fresh clone of the origin (not of the
        // host repository: a worktree shares the host's object store, so a clone of the host
        // would hold the session's commits whatever the bundle held).
        let back = home.tmp.path().join("recovered");
        let origin = git(&host, &["remote", "get-url", "origin"]);
        git(home.tmp.path(), &["clone", "-q", &origin, back.to_str().unwrap()]);
        if !at_risk.is_empty() {
            let bundle = mount_dir.join("commits.bundle");
            let fetched = Command::new("git")
                .current_dir(&back)
                .args(["fetch", "-q", bundle.to_str().unwrap(), "refs/*:refs/recovered/*"])
                .output()
                .unwrap();
            t.case(fetched.status.success(), || format!("{state}: git fetch of the bundle: {}", stderr(&fetched)));
            for commit in &at_risk {
                let has = Command::new("git")
                    .current_dir(&back)
                    .args(["cat-file", "-e", &format!("{commit}^{{commit}}")])
                    .status()
                    .unwrap();
                t.case(has.success(), || format!("{state}: commit {commit} did not come back"));
            }
        }
        if let Some((path, content)) = file {
            let copied = fs::read_to_string(mount_dir.join("files").join(path)).ok();
            t.case(copied.as_deref() == Some(content), || format!("{state}: {path} not in the quarantine: {copied:?}"));
        }
    }
    t.note = "assess → keep --policy clean → purge; bundles fetched with git, files compared".into();
}

// ---------------------------------------------------------------------------------------------
// shared engine

/// Rounds of two homes on the one engine: home B's running session, stopped session and the
/// sidecar, network and volume of a session half torn down; home A's own orphan (a role container
/// bound into A's data/ whose instance is gone, and its network). Home A's
/// `jackin-reconcile | jackin-purge --stop` removes A's and neither reports nor touches B's.
fn shared_engine(t: &mut Tally) {
    let rounds = if long() { 5 } else { 2 };
    for round in 0..rounds {
        let home_a = Home::new();
        let mut home_b = Home::new();
        let running = home_b.instance(&unique_id(), |_, _| Vec::new());
        let stopped = home_b.instance(&unique_id(), |_, _| Vec::new());
        let bind = |inst: &Instance| vec![(inst.dir.join("home"), "/home/agent")];
        let sessions = [
            Session::launch(&running.container, SessionOptions { binds: bind(&running), ..Default::default() }),
            Session::launch(
                &stopped.container,
                SessionOptions { binds: bind(&stopped), running: false, ..Default::default() },
            ),
        ];
        // What is left of a session of B half torn down: its sidecar, network and certs volume.
        let torn = Session::launch(
            &Home::container_name(&unique_id()),
            SessionOptions { running: false, ..Default::default() },
        );
        docker_quiet(&["rm", "-f", &torn.container]);
        fs::write(home_b.home.join("data").join(format!("{}.lock", torn.container)), "").unwrap();
        // A's own orphan, proved A's by its bind mount under A's data/.
        let mine = Home::container_name(&unique_id());
        let mine_home = home_a.data(&mine).join("home");
        fs::create_dir_all(&mine_home).unwrap();
        let mine_session = Session::launch(
            &mine,
            SessionOptions {
                dind: false,
                binds: vec![(mine_home, "/home/agent")],
                running: false,
                ..Default::default()
            },
        );
        fs::remove_dir_all(home_a.data(&mine)).unwrap();

        let mut b_items: Vec<(&str, String)> = Vec::new();
        for session in sessions.iter().chain([&torn]) {
            b_items.push(("container", session.container.clone()));
            b_items.extend(session.sidecar.clone().map(|s| ("container", s)));
            b_items.push(("network", session.network.clone()));
            b_items.extend(session.volume.clone().map(|v| ("volume", v)));
        }
        let state = |items: &[(&str, String)]| -> Vec<Option<String>> {
            items
                .iter()
                .map(|(kind, name)| match *kind {
                    "container" => docker_quiet(&["inspect", "-f", "{{.State.Status}}", name]),
                    _ => docker_quiet(&[kind, "inspect", "-f", "{{.Name}}", name]),
                })
                .collect()
        };
        let before = state(&b_items);
        let reconciled = run(tool(&home_a, "jackin-reconcile", &["--format=json"]), b"");
        let reported: Vec<String> =
            records_of::<common::records::Orphan>(&reconciled.stdout).into_iter().map(|o| o.name).collect();
        for (_, name) in &b_items {
            t.case(!reported.contains(name), || format!("round {round}: home B's {name} reported by home A"));
        }
        t.case(reported.contains(&mine) && reported.contains(&mine_session.network), || {
            format!("round {round}: home A's own orphans not reported: {reported:?}")
        });
        let purged = run(tool(&home_a, "jackin-purge", &["--stop", "--format=json"]), &reconciled.stdout);
        t.case(purged.status.success(), || format!("round {round}: purge: {:?} {}", purged.status, stderr(&purged)));
        t.case(state(&b_items) == before, || format!("round {round}: home B's resources changed"));
        t.case(!Session::exists("container", &mine) && !Session::exists("network", &mine_session.network), || {
            format!("round {round}: home A's orphan is still there")
        });
    }
    t.note = format!("{rounds} rounds: home A's reconcile piped into purge --stop beside home B's running, stopped and half torn-down sessions");
}

// ---------------------------------------------------------------------------------------------
// purges at once

/// Rounds of two jackin-purge processes at once, one per session, over two sessions whose only
/// copy of a commit is each other's scratch branch: the commit must survive every round.
fn purges_at_once(t: &mut Tally) {
    let rounds = if long() { 100 } else { 20 };
    for round in 0..rounds {
        let mut home = Home::new();
        let app = home.host_repo("app");
        let first = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
        let second = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
        let commit = commit_file(&first.mount_path(0), "feature.rs", "fn feature() {}\n", "agent work");
        git(&second.mount_path(0), &["reset", "-q", "--hard", &commit]);
        let spawn = |inst: &Instance| {
            tool(&home, "jackin-purge", &["--format=json", &inst.container])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        };
        let (mut a, mut b) = (spawn(&first), spawn(&second));
        let (a, b) = (a.wait().unwrap(), b.wait().unwrap());
        let refs = git(&app, &["for-each-ref", "--contains", &commit, "--format=%(refname)"]);
        t.case(!refs.is_empty(), || format!("round {round}: the commit is lost (exits {a:?}, {b:?})"));
    }
    t.note = format!("{rounds} rounds of two purges at once counting on each other's scratch branch");
}

// ---------------------------------------------------------------------------------------------
// work-loss edges

/// Corrupt isolation records with a discard: the dirty file is in the quarantine. A trash on
/// another filesystem (a tmpfs, where this machine lets the suite mount one): the purge finishes.
fn work_loss_edges(t: &mut Tally) {
    let mut home = Home::new();
    let (inst, _) = at_risk(&mut home);
    let rel = inst.mount_path(0).strip_prefix(inst.dir.join("git")).unwrap().join("README.md");
    fs::write(inst.dir.join(".jackin/isolation.json"), "{\"version\": 1, \"records\": [").unwrap();
    let out = run(tool(&home, "jackin-purge", &["--discard-unfinished", "--format=json", &inst.container]), b"");
    t.case(out.status.success(), || format!("unreadable isolation: purge: {}", stderr(&out)));
    let saved = home.quarantines().first().map(|q| q.join("git").join(&rel));
    let content = saved.and_then(|p| fs::read_to_string(p).ok());
    t.case(content.as_deref() == Some("changed by the agent\n"), || {
        format!("unreadable isolation: the dirty file is not in the quarantine: {content:?}")
    });

    let mut home = Home::new();
    let inst = home.instance(&unique_id(), |_, _| Vec::new());
    let trash = home.home.join("trash");
    match common::Tmpfs::mount("reliability: work-loss edges", &trash, "mode=0700,size=16m") {
        Some(tmpfs) => {
            fs::write(inst.dir.join("home/notes.txt"), "notes").unwrap();
            let out = run(tool(&home, "jackin-purge", &["--format=json", &inst.container]), b"");
            tmpfs.unmount();
            t.case(out.status.success() && !inst.dir.exists(), || format!("trash on a tmpfs: {}", stderr(&out)));
            t.note = "unreadable isolation records + discard; a trash on a tmpfs".into();
        }
        None => {
            t.note = "unreadable isolation records + discard".into();
            t.skipped.push("the trash on a tmpfs (this machine cannot mount one)".into());
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Docker faults

fn docker_faults(t: &mut Tally) {
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/my-app")]);
    dockerised(&home, &inst);
    let input = home.assess_lines(&[&inst.container]);
    // A real clean decision, as `jackin-keep --policy clean` writes it (not run: it would act).
    let dry_run = run(tool(&home, "jackin-keep", &["--policy=clean", "--dry-run", "--format=json"]), input.as_bytes());
    let mut decision: Value = serde_json::from_slice(dry_run.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    decision["data"]["dry_run"] = json!(false);
    let decided = format!("{decision}\n");
    // A terminal session, so `--terminal` has work that needs the engine.
    let finished = home.instance(&unique_id(), |_, _| Vec::new());
    home.set_status(&finished.container, "clean_exited", None);
    let dead = tempfile::tempdir().unwrap();
    let dead_host = format!("unix://{}/docker.sock", dead.path().display());
    let before = home.snapshot();
    let c = inst.container.as_str();
    let cases: Vec<(&str, Vec<&str>, Vec<u8>)> = vec![
        ("jackin-keep", vec!["--policy=keep"], input.clone().into_bytes()),
        ("jackin-keep", vec!["--policy=clean"], input.clone().into_bytes()),
        ("jackin-purge", vec![c], Vec::new()),
        ("jackin-purge", vec![], decided.clone().into_bytes()),
        ("jackin-purge", vec!["--terminal"], Vec::new()),
        ("jackin-reconcile", vec![], Vec::new()),
        ("jackin-reconcile", vec![c], Vec::new()),
        ("jackin-restore", vec!["--list"], Vec::new()),
        ("jackin-restore", vec![c, "--yes"], Vec::new()),
    ];
    for (name, args, stdin) in cases {
        let mut cmd = tool(&home, name, &args);
        cmd.env("DOCKER_HOST", &dead_host);
        let out = run(cmd, &stdin);
        t.case(out.status.code() == Some(4) && !panicked(&out), || {
            format!("{name} {args:?}: {:?} {}", out.status, stderr(&out))
        });
        t.case(home.snapshot() == before, || format!("{name} {args:?}: the home changed with the engine away"));
    }
    if engine_killed(t) {
        t.note = "dead DOCKER_HOST for every Docker tool; a second engine SIGKILLed under 3 live sessions".into();
    } else {
        t.note = "dead DOCKER_HOST for every Docker tool".into();
        t.skipped.push("the engine kill (no dockerd binary)".into());
    }
}

/// Whether it ran (it needs the dockerd binary).
fn engine_killed(t: &mut Tally) -> bool {
    if !common::have_dockerd("reliability: Docker faults, the engine kill") {
        return false;
    }
    let mut engine =
        OwnEngine::start_with_test_image(tempfile::Builder::new().prefix("jk-relkill-").tempdir().unwrap(), Vec::new());
    let host = engine.host();
    let mut home = Home::new();
    let sessions: Vec<Instance> = (0..3).map(|_| home.instance(&unique_id(), |_, _| Vec::new())).collect();
    let mut pids = Vec::new();
    for inst in &sessions {
        let c = &inst.container;
        home.edit_manifest(c, |m| m["docker"]["dind_container"] = format!("{c}-dind").into());
        let sockets = home.home.join("sockets").join(c);
        fs::create_dir_all(&sockets).unwrap();
        fs::write(sockets.join("agent.toml"), "role = \"agent-smith\"\n").unwrap();
        let net = format!("{c}-net");
        let role = format!("jackin.role={c}");
        engine.docker(&["network", "create", "--label", "jackin.managed=true", "--label", &role, &net]);
        let sidecar = format!("{c}-dind");
        engine.docker(&[
            "create",
            "--name",
            &sidecar,
            "--network",
            &net,
            "--label",
            "jackin.managed=true",
            "--label",
            "jackin.kind=dind",
            "--label",
            &role,
            "--health-cmd",
            "test -e /tmp/healthy",
            "--health-interval",
            "1s",
            TEST_IMAGE,
            "sh",
            "-c",
            "touch /tmp/healthy; exec sleep 3600",
        ]);
        engine.docker(&[
            "create",
            "--name",
            c,
            "--network",
            &net,
            "--label",
            "jackin.managed=true",
            "--label",
            "jackin.kind=role",
            "--label",
            "jackin.class=agent-smith",
            TEST_IMAGE,
            "sleep",
            "3600",
        ]);
        engine.docker(&["start", &sidecar]);
        engine.docker(&["start", c]);
        for name in [&sidecar, c] {
            pids.push(engine.docker(&["inspect", "-f", "{{.State.Pid}}", name]).parse::<i32>().unwrap());
        }
        // What jackin-keep would have captured at launch time: the recipe to resume from.
        let mut capture = tool(&home, "jackin-reconcile", &["--format=json", c]);
        capture.env("DOCKER_HOST", &host);
        let _ = run(capture, b"");
    }
    engine.kill_all(&pids);
    engine.launch();
    let mut reconcile = tool(&home, "jackin-reconcile", &["--format=json"]);
    reconcile.env("DOCKER_HOST", &host);
    let out = run(reconcile, b"");
    t.case(out.status.success(), || format!("reconcile after the kill: {}", stderr(&out)));
    let changes = records_of::<Change>(&out.stdout);
    let mut list = tool(&home, "jackin-restore", &["--list", "--format=json"]);
    list.env("DOCKER_HOST", &host);
    let listed = records::<Candidate>(&run(list, b"").stdout);
    for inst in &sessions {
        let cause = changes.iter().find(|c| c.identity.container_base == inst.container).map(|c| c.cause.as_str());
        t.case(cause == Some("killed_by_host"), || format!("{}: cause {cause:?}", inst.container));
        let status = state_is_valid(&home, inst);
        t.case(status.as_deref() == Ok("crashed"), || format!("{}: status {status:?}", inst.container));
        let resumable = listed.iter().any(|r| r.identity.container_base == inst.container);
        t.case(resumable, || format!("{}: not listed as resumable", inst.container));
        let mut resume =
            tool(&home, "jackin-restore", &[&inst.container, "--yes", "--health-timeout=20", "--format=json"]);
        resume.env("DOCKER_HOST", &host);
        let out = run(resume, b"");
        t.case(out.status.success(), || format!("{}: resume: {}", inst.container, stderr(&out)));
        let status = state_is_valid(&home, inst);
        t.case(status.as_deref() == Ok("active"), || format!("{}: after resume {status:?}", inst.container));
    }
    true
}

// ---------------------------------------------------------------------------------------------
// secrets

fn secrets(t: &mut Tally) {
    let secret = "s3cr3t-rel-7c1d9e2f";
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/my-app")]);
    let _session = launch(&home, &inst, vec![("SECRET_TOKEN", secret), ("TERM", "xterm")]);
    let scan = |t: &mut Tally, after: &str| {
        let files = files_under(&home.home);
        for path in files {
            let bytes = fs::read(&path).unwrap_or_default();
            t.case(!String::from_utf8_lossy(&bytes).contains(secret), || {
                format!("after {after}: {} holds the value", path.display())
            });
        }
    };
    let mut rec = tool(&home, "jackin-reconcile", &["--format=json"]);
    rec.env("SECRET_TOKEN", secret);
    let out = run(rec, b"");
    t.case(out.status.success(), || format!("reconcile of the live session: {}", stderr(&out)));
    scan(t, "reconcile of the live session");
    let input = home.assess_lines(&[&inst.container]);
    let out = run(tool(&home, "jackin-keep", &["--policy=keep", "--format=json"]), input.as_bytes());
    t.case(out.status.success(), || format!("keep: {}", stderr(&out)));
    scan(t, "keep");
    let out = run(tool(&home, "jackin-reconcile", &["--format=json"]), b"");
    t.case(out.status.success(), || format!("reconcile: {}", stderr(&out)));
    scan(t, "reconcile");
    let mut restore = tool(&home, "jackin-restore", &[&inst.container, "--yes", "--format=json"]);
    restore.env("SECRET_TOKEN", secret);
    let out = run(restore, b"");
    t.case(out.status.success(), || format!("restore: {}", stderr(&out)));
    let env = docker_quiet(&["inspect", "-f", "{{json .Config.Env}}", &inst.container]).unwrap_or_default();
    t.case(env.contains(secret), || "the resumed container lacks SECRET_TOKEN".into());
    scan(t, "restore");
    t.note = "files under the home scanned after each tool (cases = files scanned)".into();
}

// ---------------------------------------------------------------------------------------------
// the table

type Check = (&'static str, bool, fn(&mut Tally));

const CHECKS: [Check; 12] = [
    ("crash points", true, crash_points),
    ("concurrency", true, concurrency),
    ("bad input", false, bad_input),
    ("bad input, live engine", true, bad_input_live),
    ("path attacks", true, path_attacks),
    ("work-loss matrix", true, work_loss),
    ("Docker faults", false, docker_faults),
    ("secrets", true, secrets),
    ("shared engine", true, shared_engine),
    ("purges at once", true, purges_at_once),
    ("work-loss edges", true, work_loss_edges),
    ("work-loss oracle", true, oracle::work_loss_oracle),
];

#[test]
fn reliability() {
    let docker_up = engine_available("reliability");
    let started = Instant::now();
    let rows: Vec<(&str, Tally, Duration)> = std::thread::scope(|scope| {
        let only = std::env::var("JACKIN_RELIABILITY_ONLY").ok();
        let chosen: Vec<&Check> =
            CHECKS.iter().filter(|(name, _, _)| only.as_deref().is_none_or(|o| name.contains(o))).collect();
        let names: Vec<&str> = CHECKS.iter().map(|(name, _, _)| *name).collect();
        assert!(!chosen.is_empty(), "JACKIN_RELIABILITY_ONLY={only:?} matches no check of {names:?}");
        let handles: Vec<_> = chosen
            .into_iter()
            .map(|&(name, needs_engine, check)| {
                scope.spawn(move || {
                    let start = Instant::now();
                    let mut tally = Tally::default();
                    if needs_engine && !docker_up {
                        tally.note = "SKIPPED: no Docker engine".into();
                        return (name, tally, start.elapsed());
                    }
                    let result = std::panic::catch_unwind(AssertUnwindSafe(|| check(&mut tally)));
                    if let Err(e) = result {
                        let msg = e
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                        tally.failures.push(format!("the check itself panicked: {}", msg.unwrap_or_default()));
                    }
                    (name, tally, start.elapsed())
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let mode = if long() { "long" } else { "short" };
    let mut table = format!("reliability suite ({mode} form, {:.0} s)\n\n", started.elapsed().as_secs_f64());
    table.push_str("| check | cases run | failures | verdict | seconds | what |\n|---|---:|---:|---|---:|---|\n");
    for (name, tally, took) in &rows {
        let verdict = if !tally.failures.is_empty() {
            "FAIL"
        } else if tally.note.starts_with("SKIPPED") {
            "skipped"
        } else if !tally.skipped.is_empty() {
            "pass, part skipped"
        } else {
            "pass"
        };
        let skipped =
            if tally.skipped.is_empty() { String::new() } else { format!("; SKIPPED: {}", tally.skipped.join(", ")) };
        table.push_str(&format!(
            "| {name} | {} | {} | {verdict} | {:.1} | {}{skipped} |\n",
            tally.cases,
            tally.failures.len(),
            took.as_secs_f64(),
            tally.note
        ));
    }
    let mut details = String::new();
    for (name, tally, _) in &rows {
        for f in tally.failures.iter().take(10) {
            details.push_str(&format!("{name}: {f}\n"));
        }
    }
    println!("\n{table}\n{details}");
    let _ = fs::write(Path::new(env!("CARGO_TARGET_TMPDIR")).join("reliability.txt"), format!("{table}\n{details}"));
    assert!(details.is_empty(), "reliability failures:\n{table}\n{details}");
}
