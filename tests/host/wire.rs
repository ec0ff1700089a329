//! The wire, recorded: one run of every tool over a home of varied sessions (clean, dirty,
//! unpushed, exited with a code, container removed, kept but running, an orphan network, names
//! that do not resolve), against a real engine and real git, with every record compared byte for
//! byte with `tests/fixtures/wire-run.jsonl`. What differs between runs and machines (the
//! temporary directory, the ids' random part, commit ids, times, byte counts, the engine's id and
//! version) is replaced by a placeholder first; everything else (the key order, the error codes,
//! the removed and orphan kinds, the causes and the evidence) must be what it was when the file
//! was recorded. A change of the wire is a change of that file, made on purpose:
//! `JACKIN_RECORD_WIRE=1 cargo test --test tests host::wire::` writes it anew.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::Stdio;

use common::docker::{docker, docker_quiet, engine_available, Session, SessionOptions, TEST_IMAGE};
use common::{commit_file, git, unique_id, Home};

const RECORDING: &str = "tests/fixtures/wire-run.jsonl";

/// Keys whose values differ from machine to machine or from minute to minute, whatever their
/// type: byte counts (they follow the lengths of temporary paths), the engine's identity, a
/// candidate's label (it says how long ago, and how many bytes), and who exported a session
/// (`user@host`).
const VOLATILE_KEYS: [&str; 11] = [
    // Where a record was made (this machine's name) and the seal of this run's key.
    "host",
    "seal",
    "engine_id",
    "engine_version",
    "freed_bytes",
    "host_boot_time",
    "disk",
    "label",
    "bytes",
    "session_bytes",
    "exported_by",
];

/// One line of a run with what varies replaced: `tmp` (the home's temporary directory) and
/// `prefix` (the random part of this run's instance ids) by names, then commit ids, RFC 3339
/// times and the values of [`VOLATILE_KEYS`] by placeholders.
fn normalized(line: &str, tmp: &str, prefix: &str) -> String {
    let line = line.replace(tmp, "<tmp>");
    let mut out = String::with_capacity(line.len());
    let mut rest = line.as_str();
    while let Some(start) = rest.find('"') {
        out.push_str(&rest[..=start]);
        rest = &rest[start + 1..];
        let Some(end) = string_end(rest) else { break };
        let text = &rest[..end];
        rest = &rest[end..];
        if VOLATILE_KEYS.contains(&text) && rest.starts_with("\":") {
            out.push_str(text);
            out.push_str("\":");
            rest = &rest[2..];
            let value_end = value_end(rest);
            out.push_str("\"<volatile>\"");
            rest = &rest[value_end..];
            continue;
        }
        out.push_str(&placeholder(text).unwrap_or_else(|| text.to_owned()));
        out.push('"');
        rest = &rest[1..];
    }
    out.push_str(rest);
    out.replace(prefix, "<id>")
}

/// Where the JSON string that `s` starts inside ends (the index of its closing quote).
fn string_end(s: &str) -> Option<usize> {
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Where the JSON value that `s` starts with ends: past its closing quote or bracket, or at
/// the comma or bracket after a number, `true`, `false` or `null`.
fn value_end(s: &str) -> usize {
    let bytes = s.as_bytes();
    let (mut depth, mut i) = (0usize, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                i += 1 + string_end(&s[i + 1..]).unwrap_or(s.len() - i - 1);
                if depth == 0 {
                    return i + 1;
                }
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' if depth == 0 => return i,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b',' if depth == 0 => return i,
            _ => {}
        }
        i += 1;
    }
    s.len()
}

/// A commit id, an image id (`sha256:…`: the test images are built on each engine anew, and a
/// build's `RUN` steps stamp their time into it) or an RFC 3339 time, as a placeholder.
fn placeholder(text: &str) -> Option<String> {
    let hex = |t: &str| t.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase());
    let digest = text.strip_prefix("sha256:").unwrap_or(text);
    if (digest.len() == 40 || digest.len() == 64) && hex(digest) {
        return Some("<sha>".into());
    }
    let b = text.as_bytes();
    let time = b.len() >= 20
        && b[..4].iter().all(u8::is_ascii_digit)
        && b[4] == b'-'
        && b[10] == b'T'
        && text.bytes().all(|c| c.is_ascii_digit() || b"-:T.Z+".contains(&c));
    if time {
        return Some("<time>".into());
    }
    quarantine_stamp(text)
}

/// A quarantine directory's name ends in the time of its save (`-20261205T001430Z`, maybe a
/// `-2` after it): the time replaced.
fn quarantine_stamp(text: &str) -> Option<String> {
    let at = text.find("/quarantine/")?;
    let name = &text[at..];
    let stamp = name.char_indices().find(|&(i, _)| {
        let s = name.as_bytes();
        s.len() >= i + 17
            && s[i] == b'-'
            && s[i + 1..i + 9].iter().all(u8::is_ascii_digit)
            && s[i + 9] == b'T'
            && s[i + 10..i + 16].iter().all(u8::is_ascii_digit)
            && s[i + 16] == b'Z'
    })?;
    let start = at + stamp.0 + 1;
    Some(format!("{}<stamp>{}", &text[..start], &text[start + 16..]))
}

/// A run of `tool` with `args` (and `stdin`), as the lines of the recording: a header, its
/// records normalized, and its exit code.
fn run(home: &Home, log: &mut Vec<String>, prefix: &str, tool: &str, args: &[&str], stdin: &str) -> String {
    let mut child = home
        .detached(tool)
        .args(args)
        .arg("--format=json")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let tmp = home.tmp.path().to_str().unwrap();
    let shown: Vec<String> = args.iter().map(|a| normalized(a, tmp, prefix)).collect();
    log.push(format!("# {tool} {}", shown.join(" ")));
    let stdout = String::from_utf8(out.stdout).unwrap();
    for line in stdout.lines() {
        log.push(normalized(line, tmp, prefix));
    }
    log.push(format!("# exit {}", out.status.code().unwrap_or(-1)));
    stdout
}

/// A run of `tool` with `args` alone (they name the home), no stdin, normalized as [`run`] does.
fn run_bare(home: &Home, log: &mut Vec<String>, prefix: &str, tool: &str, args: &[&str]) {
    let out = std::process::Command::new(common::tool_path(tool))
        .args(args)
        .arg("--format=json")
        .env_remove("JACKIN_HOME_DIR")
        .env_remove("JACKIN_CONFIG_DIR")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let tmp = home.tmp.path().to_str().unwrap();
    let shown: Vec<String> = args.iter().map(|a| normalized(a, tmp, prefix)).collect();
    log.push(format!("# {tool} {}", shown.join(" ")));
    for line in String::from_utf8(out.stdout).unwrap().lines() {
        log.push(normalized(line, tmp, prefix));
    }
    log.push(format!("# exit {}", out.status.code().unwrap_or(-1)));
}

/// The records of `stdout` of one type, as the lines a tool reads on stdin.
fn of_type(stdout: &str, kind: &str) -> String {
    let wanted = format!("\"type\":\"{kind}\"");
    stdout.lines().filter(|l| l.contains(&wanted)).map(|l| format!("{l}\n")).collect()
}

/// The lines of `stdout` that name `container`.
fn naming(stdout: &str, container: &str) -> String {
    stdout.lines().filter(|l| l.contains(container)).map(|l| format!("{l}\n")).collect()
}

#[test]
fn every_tool_writes_the_recorded_wire() {
    if !engine_available("every_tool_writes_the_recorded_wire") {
        return;
    }
    // Ids share a random prefix (so that runs do not collide on the engine) and end in a fixed
    // letter (so that they sort the same in every run).
    let prefix: String = unique_id()[..5].to_owned();
    let id = |last: &str| format!("{prefix}0{last}");
    let mut home = Home::new();
    let repo = home.host_repo("app");
    let clean = home.instance(&id("aa"), |h, c| vec![h.worktree_record(c, &repo, "/workspace/app")]);
    let dirty = home.instance(&id("ab"), |h, c| vec![h.worktree_record(c, &repo, "/workspace/app")]);
    fs::write(dirty.mount_path(0).join("notes.txt"), "unfinished\n").unwrap();
    let unpushed = home.instance(&id("ac"), |h, c| vec![h.clone_record(c, &repo, "/workspace/app")]);
    commit_file(&unpushed.mount_path(0), "src/lib.rs", "pub fn f() {}\n", "agent work");
    let exited = home.instance(&id("ad"), |_, _| Vec::new());
    let removed = home.instance(&id("ae"), |_, _| Vec::new());
    let kept_running = home.instance(&id("af"), |_, _| Vec::new());
    home.set_status(&kept_running.container, "restore_available", None);

    let exited_net = format!("{}-net", exited.container);
    docker(&["network", "create", "--label", "jackin.managed=true", &exited_net]);
    docker(&[
        "create",
        "--name",
        &exited.container,
        "--network",
        &exited_net,
        "--label",
        "jackin.managed=true",
        "--label",
        "jackin.kind=role",
        TEST_IMAGE,
        "sh",
        "-c",
        "exit 3",
    ]);
    docker(&["start", &exited.container]);
    docker(&["wait", &exited.container]);
    let _running = Session::launch(&kept_running.container, SessionOptions { dind: false, ..Default::default() });
    // Orphans of this home's files: an unheld name lock of an instance that is gone, and the
    // temp file of an atomic write whose writer is gone.
    let gone = format!("jk-{}-myapp-agentsmith", id("zz"));
    fs::write(home.home.join("data").join(format!("{gone}.lock")), "").unwrap();
    fs::write(home.home.join("data/instances.json.tmp.4194303.1"), "{").unwrap();

    let mut log = Vec::new();
    let names = [&clean, &dirty, &unpushed].map(|i| i.container.as_str());
    let unknown = format!("jk-{}-myapp-agentsmith", id("zy"));
    let assessed = run(&home, &mut log, &prefix, "jackin-assess", &[names[0], names[1], names[2]], "");
    let change = |name: &str| format!(r#"{{"schema_version":1,"type":"change","data":{{"container_base":"{name}"}}}}"#);
    let unresolved = format!("{}\n{}\n", change("../../etc"), change(&unknown));
    run(&home, &mut log, &prefix, "jackin-assess", &["-"], &unresolved);

    let assessments = of_type(&assessed, "assessment");
    run(&home, &mut log, &prefix, "jackin-keep", &["--dry-run", "--policy", "clean"], &assessments);
    let decided = run(&home, &mut log, &prefix, "jackin-keep", &["--policy", "clean"], &naming(&assessments, names[0]));
    run(&home, &mut log, &prefix, "jackin-keep", &["--keep"], &naming(&assessments, names[1]));
    // The kept dirty session exported, and imported by a second home standing in for another
    // host (a clone of the same origin, named by its jackin config), under the same temporary
    // directory so that its paths read the same in every run.
    let archive = home.tmp.path().join("dirty.tar.gz");
    let archive = archive.to_str().unwrap();
    run(&home, &mut log, &prefix, "jackin-move", &["export", "--dry-run", archive, names[1]], "");
    run(&home, &mut log, &prefix, "jackin-move", &["export", archive, names[1]], "");
    let other = home.tmp.path().join("other-host");
    let other_repo = other.join("src/app");
    fs::create_dir_all(other.join("jackin/data")).unwrap();
    fs::create_dir_all(other.join("config")).unwrap();
    git(home.tmp.path(), &["clone", "-q", &git(&repo, &["remote", "get-url", "origin"]), other_repo.to_str().unwrap()]);
    let config = format!(
        "[workspaces.my-app]\nworkdir = \"/workspace/app\"\n\n[[workspaces.my-app.mounts]]\nsrc = \"{}\"\ndst = \"/workspace/app\"\n",
        other_repo.display()
    );
    fs::write(other.join("config/config.toml"), config).unwrap();
    let (other_home, other_config) = (other.join("jackin"), other.join("config"));
    let elsewhere = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--home", other_home.to_str().unwrap(), "--config-dir", other_config.to_str().unwrap()]);
        all.iter().map(|a| a.to_string()).collect::<Vec<String>>()
    };
    for args in [elsewhere(&["import", archive, "--dry-run"]), elsewhere(&["import", archive])] {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        run_bare(&home, &mut log, &prefix, "jackin-move", &args);
    }

    let to_purge = format!("{}{}", of_type(&decided, "decision"), naming(&assessments, names[2]));
    run(&home, &mut log, &prefix, "jackin-purge", &["--dry-run"], &to_purge);
    run(&home, &mut log, &prefix, "jackin-purge", &[], &to_purge);
    run(&home, &mut log, &prefix, "jackin-purge", &["--dry-run", "--discard-unfinished", names[2]], "");

    run(&home, &mut log, &prefix, "jackin-reconcile", &["--dry-run"], "");
    let reconciled = run(&home, &mut log, &prefix, "jackin-reconcile", &[], "");
    run(&home, &mut log, &prefix, "jackin-purge", &["--dry-run", &exited.container, &removed.container], "");
    run(&home, &mut log, &prefix, "jackin-purge", &[&exited.container, &unknown], "");
    run(&home, &mut log, &prefix, "jackin-purge", &["--dry-run"], &of_type(&reconciled, "orphan"));
    run(&home, &mut log, &prefix, "jackin-purge", &[], &of_type(&reconciled, "orphan"));
    run(&home, &mut log, &prefix, "jackin-purge", &[&kept_running.container], "");

    run(&home, &mut log, &prefix, "jackin-restore", &["--plan", &dirty.container], "");
    run(&home, &mut log, &prefix, "jackin-restore", &["--plan", &unknown], "");
    // Newest first, by times of a second's resolution: the order of a list is not recorded.
    let listed = log.len() + 1;
    run(&home, &mut log, &prefix, "jackin-restore", &["--list"], "");
    let exit = log.len() - 1;
    log[listed..exit].sort();
    let swept = log.len() + 1;
    run(&home, &mut log, &prefix, "jackin-restore", &["--interrupted", "--plan"], "");
    let exit = log.len() - 1;
    log[swept..exit].sort();

    // The tools' own file of each session that is left: causes and evidence as they rest on disk.
    let tmp = home.tmp.path().to_str().unwrap().to_owned();
    for inst in [&dirty, &unpushed, &kept_running] {
        let path = home.data(&inst.container).join(".jackin/continuity.json");
        log.push(format!("# {}", normalized(path.to_str().unwrap(), &tmp, &prefix)));
        let text = fs::read_to_string(&path).unwrap_or_else(|e| format!("unreadable: {e}"));
        log.extend(text.lines().map(|l| normalized(l, &tmp, &prefix)));
    }

    let _ = docker_quiet(&["rm", "-f", &exited.container]);
    let _ = docker_quiet(&["network", "rm", &exited_net]);
    let _ = git(&repo, &["worktree", "prune"]);

    let run_text = log.join("\n") + "\n";
    let recording = Path::new(env!("CARGO_MANIFEST_DIR")).join(RECORDING);
    if std::env::var_os("JACKIN_RECORD_WIRE").is_some() {
        fs::write(&recording, &run_text).unwrap();
        return;
    }
    let recorded = fs::read_to_string(&recording).unwrap();
    for (n, (now, then)) in run_text.lines().zip(recorded.lines()).enumerate() {
        assert_eq!(now, then, "line {} of {RECORDING} differs (JACKIN_RECORD_WIRE=1 records it anew)", n + 1);
    }
    assert_eq!(run_text.lines().count(), recorded.lines().count(), "{run_text}");
}

#[test]
fn a_quarantines_time_is_replaced_and_nothing_else() {
    assert_eq!(
        quarantine_stamp("/h/quarantine/jk-ab12cd34-x-20261205T001430Z").as_deref(),
        Some("/h/quarantine/jk-ab12cd34-x-<stamp>")
    );
    assert_eq!(
        quarantine_stamp("/h/quarantine/jk-a-20261205T001430Z-2/0-w").as_deref(),
        Some("/h/quarantine/jk-a-<stamp>-2/0-w")
    );
    assert_eq!(quarantine_stamp("/h/data/jk-a-20261205T001430Z"), None);
}

#[test]
fn the_normalizer_replaces_only_what_varies() {
    let line = r#"{"a":"/tmp/x/jackin/data/jk-k7p9m00aa","t":"2026-12-01T10:00:00.123456789Z","c":"8d3c1f0a9b7e6d5c4b3a29180716f5e4d3c2b1a0","freed_bytes":4096,"engine_id":"AB:CD","disk":{"total":3,"data":[1,"}"]},"label":"x","n":3,"s":"not \"2026\" a time","i":"sha256:1818d66a68138c4e94b4becf595f8de2ad8a1fdd589da03040e0021e22e9c26d","h":"sha256:1"}"#;
    assert_eq!(
        normalized(line, "/tmp/x", "k7p9m"),
        r#"{"a":"<tmp>/jackin/data/jk-<id>00aa","t":"<time>","c":"<sha>","freed_bytes":"<volatile>","engine_id":"<volatile>","disk":"<volatile>","label":"<volatile>","n":3,"s":"not \"2026\" a time","i":"<sha>","h":"sha256:1"}"#
    );
}
