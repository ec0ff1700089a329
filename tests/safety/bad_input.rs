//! Bad input: a clear message, the documented exit code, no panic, nothing written.

use crate::common;

use std::fs;

use common::docker::engine_available;
use common::records::{envelopes, records, Assessment, ErrorRecord};
use common::{tool_path, Home};

fn home_with_instance() -> (Home, String) {
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance("k7p9m2xq", |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    (home, inst.container)
}

/// Runs the command and checks the exit code, that stderr says `needle` once as a
/// `jackin-assess: error:` line, and that no file under the home changed.
fn refused(home: &Home, args: &[&str], stdin: Option<&str>, code: i32, needle: &str) -> std::process::Output {
    let before = home.snapshot();
    let mut cmd = home.cmd("jackin-assess");
    cmd.args(args);
    if let Some(input) = stdin {
        cmd.write_stdin(input.to_owned());
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {stderr}");
    assert!(stderr.contains(needle), "{args:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(home.snapshot(), before, "{args:?} changed a file");
    out
}

#[test]
fn path_like_names_are_usage_errors() {
    let (home, _) = home_with_instance();
    for bad in ["../etc", "jk-../../etc", "/etc/passwd", "jk-a/b", "JK-ABC", "jk-k7p9m2xq-x.lock", "abc"] {
        let out = refused(&home, &[bad], None, 2, "not an instance name");
        assert!(out.stdout.is_empty(), "{bad}");
    }
}

#[test]
fn no_selection_is_a_usage_error_with_a_hint() {
    let (home, _) = home_with_instance();
    refused(&home, &[], None, 2, "hint: name one");
}

#[test]
fn an_unknown_instance_is_an_error_record_and_exit_6() {
    let (home, container) = home_with_instance();
    let out = refused(&home, &["jk-zzzzzzzz-nobody", &container], None, 6, "no instance named jk-zzzzzzzz-nobody");
    let recs = envelopes(&out.stdout);
    let error = recs[0].data::<ErrorRecord>();
    assert_eq!(error.code, "unknown_instance");
    assert_eq!(error.tool, "jackin-assess");
    assert!(recs[1].is::<Assessment>(), "the other instance is still assessed");
}

#[test]
fn a_corrupt_index_is_unavailable_and_named() {
    let (home, container) = home_with_instance();
    fs::write(home.home.join("data/instances.json"), "{\"version\": 1, \"instances\": [").unwrap();
    refused(&home, &[&container], None, 4, "instances.json is corrupt");
    fs::write(home.home.join("data/instances.json"), "{\"version\": 9, \"instances\": []}").unwrap();
    refused(&home, &["--all"], None, 3, "unsupported index version 9");
}

/// An index a newer jackin wrote: every tool says so and exits 3 (bad input), and the file,
/// like the rest of the home, stays byte for byte what it was.
#[test]
fn a_newer_index_is_bad_input_for_every_tool_and_never_rewritten() {
    if !engine_available("a_newer_index_is_bad_input_for_every_tool_and_never_rewritten") {
        return;
    }
    let (home, container) = home_with_instance();
    let assessed = home.cmd("jackin-assess").args([&container, "--format=json"]).output().unwrap();
    assert!(assessed.status.success(), "{}", common::stderr(&assessed));
    let assessment = String::from_utf8(assessed.stdout).unwrap();
    let index = home.index_path();
    let newer = fs::read_to_string(&index).unwrap().replacen("\"version\": 1", "\"version\": 2", 1);
    assert!(newer.contains("\"version\": 2"), "{newer}");
    fs::write(&index, &newer).unwrap();
    let before = home.snapshot();
    let runs: [(&str, Vec<&str>, Option<&str>); 7] = [
        ("jackin-assess", vec![&container], None),
        ("jackin-assess", vec!["--all"], None),
        ("jackin-keep", vec!["--policy=clean"], Some(&assessment)),
        ("jackin-purge", vec![&container, "--discard-unfinished"], None),
        ("jackin-reconcile", vec![], None),
        ("jackin-restore", vec![], None),
        ("jackin-restore", vec![&container], None),
    ];
    for (tool, args, stdin) in runs {
        let mut cmd = home.cmd(tool);
        cmd.args(&args);
        cmd.write_stdin(stdin.unwrap_or("").to_owned());
        let out = cmd.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{tool} {args:?}: {stderr}");
        assert!(stderr.contains("unsupported index version 2"), "{tool} {args:?}: {stderr}");
        assert!(stderr.contains("newer jackin"), "{tool} {args:?}: {stderr}");
        assert_eq!(fs::read_to_string(&index).unwrap(), newer, "{tool} {args:?} rewrote the index");
        assert_eq!(home.snapshot(), before, "{tool} {args:?} changed a file");
    }
}

#[test]
fn a_corrupt_manifest_fails_that_instance() {
    let (home, container) = home_with_instance();
    fs::write(home.data(&container).join(".jackin/instance.json"), "{ not json").unwrap();
    let out = refused(&home, &[&container], None, 6, "instance.json is corrupt");
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "assess_failed");
}

#[test]
fn a_corrupt_isolation_file_is_unknown_not_clean() {
    let (home, container) = home_with_instance();
    fs::write(home.data(&container).join(".jackin/isolation.json"), "[1, 2").unwrap();
    let before = home.snapshot();
    let out = home.cmd("jackin-assess").arg(&container).arg("--exit-code").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let a = &records::<Assessment>(&out.stdout)[0];
    assert_eq!(a.verdict, "unknown");
    assert!(a.summary.contains("isolation records unreadable"), "{a:?}");
    assert_eq!(home.snapshot(), before);
}

#[test]
fn malformed_stdin_is_exit_3() {
    let (home, container) = home_with_instance();
    let good = format!(r#"{{"schema_version":1,"type":"change","data":{{"container_base":"{container}"}}}}"#);
    refused(&home, &["-"], Some(&format!("{good}\nnot json\n")), 3, "line 2: not JSON");
    refused(&home, &["-"], Some(r#"{"type":"change","data":{}}"#), 3, "no schema_version");
    refused(
        &home,
        &["-"],
        Some(&good.replace("\"schema_version\":1", "\"schema_version\":2")),
        3,
        "newer than this tool understands",
    );
    let out = refused(&home, &["-"], Some("{}\n"), 3, "line 1");
    assert!(out.stdout.is_empty(), "nothing is assessed when any line is bad");
}

#[test]
fn a_bad_name_inside_a_record_fails_only_that_record() {
    let (home, container) = home_with_instance();
    let input = format!(
        "{}\n{}\n",
        r#"{"schema_version":1,"type":"change","data":{"container_base":"../../etc"}}"#,
        format_args!(r#"{{"schema_version":1,"type":"change","data":{{"container_base":"{container}"}}}}"#)
    );
    let out = refused(&home, &["-"], Some(&input), 6, "not an instance name");
    let recs = envelopes(&out.stdout);
    assert_eq!(recs[0].data::<ErrorRecord>().code, "bad_name");
    assert!(recs[1].is::<Assessment>());
}

#[test]
fn a_missing_home_is_unavailable() {
    let home = Home::new();
    let out = assert_cmd::Command::new(tool_path("jackin-assess"))
        .args(["--all", "--home"])
        .arg(home.tmp.path().join("nowhere"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.starts_with("jackin-assess: error: cannot reach the jackin home"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "the error is printed once: {stderr}");
    assert!(!home.tmp.path().join("nowhere").exists());
}

#[test]
fn the_home_comes_from_the_environment_when_no_flag_is_given() {
    let (home, container) = home_with_instance();
    let out = assert_cmd::Command::new(tool_path("jackin-assess"))
        .arg(&container)
        .env("JACKIN_HOME_DIR", &home.home)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", common::stderr(&out));
    assert_eq!(records::<Assessment>(&out.stdout)[0].identity.container_base, container);
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let mut home = Home::new();
    for i in 0..40 {
        home.instance(&format!("p{i:03}aaaa"), |_, _| Vec::new());
    }
    let out = std::process::Command::new("bash")
        .arg("-c")
        .arg(format!(
            "{} --home {} --all --format json | head -c 1 >/dev/null; echo \"status=${{PIPESTATUS[0]}}\"",
            tool_path("jackin-assess").display(),
            home.home.display()
        ))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(stdout.trim(), "status=0", "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stderr.is_empty(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn bad_flags_are_exit_2() {
    let (home, _) = home_with_instance();
    refused(&home, &["--all", "--no-such-flag"], None, 2, "--no-such-flag");
    refused(&home, &["--all", "--format", "yaml"], None, 2, "yaml");
}
