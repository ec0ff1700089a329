//! The schedules as `make install` installs them run as written: every command line of the
//! installed systemd units (`ExecStart=`, `ExecStartPost=`, and the commented alternatives the
//! units offer) and of the installed cron files (with the cron file's own PATH and nothing else),
//! against a home that holds a kept session past retention with work at risk (beyond three newer
//! ones) and a session that ended for good. Each exits 0 or with a code the unit declares a
//! success; the session with work is left alone and the ended one purged; the units pass `systemd-analyze verify` where it is installed.

use crate::common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::docker::engine_available;
use common::{commit_file, stderr, Home};

/// The command lines of a unit: its `ExecStart=`/`ExecStartPost=` lines, commented or not.
fn unit_commands(unit: &str) -> Vec<String> {
    unit.lines()
        .map(|l| l.trim_start_matches('#'))
        .filter_map(|l| l.strip_prefix("ExecStart=").or_else(|| l.strip_prefix("ExecStartPost=")))
        .map(str::to_owned)
        .collect()
}

/// The codes a unit takes for success besides 0 (`SuccessExitStatus=`).
fn success_codes(unit: &str) -> Vec<i32> {
    let mut codes = vec![0];
    for line in unit.lines().filter_map(|l| l.strip_prefix("SuccessExitStatus=")) {
        codes.extend(line.split_whitespace().map(|c| c.parse::<i32>().unwrap()));
    }
    codes
}

/// A cron file's PATH and its command lines (commented alternatives included).
fn cron_entries(cron: &str) -> (String, Vec<String>) {
    let path = cron.lines().find_map(|l| l.strip_prefix("PATH=")).expect("a cron file sets PATH").to_owned();
    let mut commands = Vec::new();
    for line in cron.lines().map(|l| l.trim_start_matches('#')) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let schedule = fields.len() > 6 && fields[..5].iter().all(|f| f.chars().all(|c| "0123456789*/,-".contains(c)));
        if schedule {
            commands.push(fields[6..].join(" "));
        }
    }
    (path, commands)
}

#[test]
fn the_installed_schedules_run_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("usr");
    common::make_install(&prefix);
    let units_dir = prefix.join("share/jackin/systemd");
    let cron_dir = prefix.join("share/jackin/cron");
    let units: Vec<(String, String)> = [
        "jackin-idle.service",
        "jackin-purge.service",
        "jackin-reconcile.service",
        "jackin-reconcile-watch.service",
        "jackin-resume-interrupted.service",
    ]
    .iter()
    .map(|u| (u.to_string(), fs::read_to_string(units_dir.join(u)).unwrap()))
    .collect();
    let bin = prefix.join("bin");
    for (name, unit) in &units {
        let commands = unit_commands(unit);
        assert!(!commands.is_empty(), "{name}: no command line");
        for command in &commands {
            let program = command.split_whitespace().next().unwrap();
            assert!(Path::new(program).starts_with(&bin), "{name}: {program} is not an installed tool");
        }
    }
    let crons: Vec<(String, String)> = ["jackin-idle", "jackin-purge", "jackin-reconcile"]
        .iter()
        .map(|c| (c.to_string(), fs::read_to_string(cron_dir.join(c)).unwrap()))
        .collect();
    for (name, cron) in &crons {
        let (path, commands) = cron_entries(cron);
        assert!(path.split(':').next() == Some(bin.to_str().unwrap()), "{name}: PATH={path} names the installed tools");
        assert!(!commands.is_empty(), "{name}: no schedule line");
    }
    verify_units(&units_dir);
    if !engine_available("the_installed_schedules_run_as_written") {
        return;
    }

    // A kept session past any retention that still holds work, and one that ended for good.
    let mut home = Home::new();
    let app = home.host_repo("app");
    let held = home.instance(&common::unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    commit_file(&held.mount_path(0), "src/feature.rs", "fn feature() {}\n", "agent work");
    let ended = home.instance(&common::unique_id(), |_, _| Vec::new());
    // Three newer kept sessions of the same workspace, role and agent: the retention lines'
    // `--keep-last 3` leaves them, and picks the held one.
    let newer: Vec<_> = (0..3).map(|_| home.instance(&common::unique_id(), |_, _| Vec::new())).collect();
    for (n, kept) in newer.iter().enumerate() {
        home.set_status(&kept.container, "restore_available", Some(&format!("2026-01-0{}T00:00:00Z", n + 2)));
    }
    home.set_status(&held.container, "restore_available", Some("2026-01-01T00:00:00Z"));
    home.set_status(&ended.container, "clean_exited", Some("2026-01-01T00:00:00Z"));
    let operator = tmp.path().join("operator");
    fs::create_dir_all(operator.join(".config")).unwrap();
    std::os::unix::fs::symlink(&home.home, operator.join(".jackin")).unwrap();
    std::os::unix::fs::symlink(&home.config, operator.join(".config/jackin")).unwrap();

    for (name, unit) in &units {
        let codes = success_codes(unit);
        for command in unit_commands(unit) {
            let command = command.replace("%h", operator.to_str().unwrap());
            let words: Vec<&str> = command.split_whitespace().collect();
            let mut cmd = Command::new(words[0]);
            cmd.args(&words[1..]);
            // A user manager's environment: HOME and a minimal PATH, nothing of this shell's.
            cmd.env_clear().env("HOME", &operator).env("PATH", "/usr/bin:/bin");
            // With rootless Docker, the user manager's environment holds DOCKER_HOST too.
            cmd.envs(common::docker::engine_env());
            let code = if command.contains("--watch") { run_until_stopped(cmd) } else { run(cmd) };
            assert!(codes.contains(&code), "{name}: `{command}` exited {code}, not one of {codes:?}");
        }
    }
    assert!(held.dir.exists(), "the timer's retention never deletes work at risk");
    assert!(newer.iter().all(|kept| kept.dir.exists()), "the newest three are kept");
    assert!(!ended.dir.exists(), "the session that ended for good was purged");
    for (name, cron) in &crons {
        let (path, commands) = cron_entries(cron);
        for command in commands {
            let mut cmd = Command::new("/bin/sh");
            cmd.arg("-c").arg(&command);
            cmd.env_clear().env("HOME", &operator).env("PATH", &path);
            // With rootless Docker, the cron file sets DOCKER_HOST beside PATH.
            cmd.envs(common::docker::engine_env());
            let code = run(cmd);
            assert_eq!(code, 0, "{name}: `{command}` with PATH={path}");
        }
    }
    assert!(held.dir.exists(), "cron's retention never deletes work at risk");
}

fn run(mut cmd: Command) -> i32 {
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    let code = out.status.code().unwrap_or(-1);
    if code != 0 {
        eprintln!("stdout:\n{}\nstderr:\n{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    }
    code
}

/// A long-running command (`--watch`), stopped as `systemctl stop` stops it: SIGTERM.
fn run_until_stopped(mut cmd: Command) -> i32 {
    // SAFETY: setsid is async-signal-safe; the command runs in a session of its own.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut child = cmd.stdin(Stdio::null()).stdout(Stdio::null()).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    assert!(child.try_wait().unwrap().is_none(), "--watch keeps running");
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    child.wait().unwrap().code().unwrap_or(-1)
}

/// `systemd-analyze verify` on the installed units, where systemd is installed (with CI=true it
/// must be: .ci/run installs it).
fn verify_units(dir: &Path) {
    let present = Command::new("systemd-analyze").arg("--version").output().is_ok_and(|o| o.status.success());
    if !present {
        assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true and systemd-analyze is missing");
        eprintln!("systemd-analyze is not installed: the units' syntax is not verified");
        return;
    }
    let mut units: Vec<PathBuf> = fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()).collect();
    units.sort();
    let out = Command::new("systemd-analyze").arg("verify").arg("--man=no").args(&units).output().unwrap();
    assert!(out.status.success() && out.stderr.is_empty(), "systemd-analyze verify: {}", stderr(&out));
}
