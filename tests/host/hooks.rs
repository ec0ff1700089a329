//! The hooks and units in contrib/ and the install target, run for real: the exit hook over real
//! sessions on a real Docker engine (without a terminal: in a session of its own, as
//! tests/tool/keep.rs does), the reference-transaction hook installed in a real host repository and
//! triggered by real `git branch -D`, `git update-ref` and `git push --force`, the scheduled
//! purge's flags against `jackin-purge --help`, and `make install` into a temporary prefix.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::docker::{docker, engine_available, Session, SessionOptions};
use common::{commit_file, git, stderr, tool_path, tools_dir, Home, Instance};

/// Where cargo put the tools for this test run (the debug binaries).
fn bin_dir() -> PathBuf {
    tools_dir().to_path_buf()
}

// ---------------------------------------------------------------------------------------------
// contrib/hooks/jackin-exit-hook

/// The exit hook with no controlling terminal, the tools found through JACKIN_BIN_DIR.
fn exit_hook(home: &Home, container: &str, args: &[&str]) -> Output {
    let mut cmd = Command::new(common::root().join("contrib/hooks/jackin-exit-hook"));
    cmd.arg(container).args(args);
    cmd.env("JACKIN_HOME_DIR", &home.home).env("JACKIN_CONFIG_DIR", &home.config).env("JACKIN_BIN_DIR", bin_dir());
    // SAFETY: setsid is async-signal-safe; it detaches the child from any controlling terminal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.stdin(Stdio::null()).output().unwrap()
}

/// The session's containers, started, with the sidecar's names in its manifest as jackin writes them.
fn running_session(home: &Home, inst: &Instance) -> Session {
    home.with_sidecar(&inst.container);
    Session::launch(
        &inst.container,
        SessionOptions {
            dind: true,
            binds: vec![(inst.dir.join("home"), "/home/agent"), (inst.mount_path(0), "/workspace/my-app")],
            running: true,
            ..Default::default()
        },
    )
}

#[test]
fn exit_hook_keeps_a_dirty_session_when_the_answer_is_keep() {
    if !engine_available("exit_hook_keeps_a_dirty_session_when_the_answer_is_keep") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let inst = home.instance("hq3kd001", |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    fs::write(inst.mount_path(0).join("README.md"), "changed by the agent\n").unwrap();
    let session = running_session(&home, &inst);

    let out = exit_hook(&home, &inst.container, &["--answer", "keep", "--stop"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let status = Some("preserved_dirty".to_owned());
    assert_eq!(home.status_left(&inst.container), (status.clone(), status));
    assert_eq!(fs::read_to_string(inst.mount_path(0).join("README.md")).unwrap(), "changed by the agent\n");
    assert!(!Session::exists("container", &inst.container), "keep removes the stopped container");
    // The records purge passed through reach the hook's stdout (JSON Lines: not a terminal).
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(r#""type":"decision""#) && stdout.contains(r#""outcome":"keep""#), "{stdout}");
    drop(session);
}

#[test]
fn exit_hook_purges_a_clean_session() {
    if !engine_available("exit_hook_purges_a_clean_session") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let inst = home.instance("hq3kc002", |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    let session = running_session(&home, &inst);

    let out = exit_hook(&home, &inst.container, &["--stop"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(home.status_left(&inst.container), (None, None));
    assert!(!inst.dir.exists(), "the data dir is gone");
    assert!(!Session::exists("container", &inst.container));
    assert!(!Session::exists("network", &session.network));
    let branches = git(&host, &["branch", "--list", "jackin/scratch/*"]);
    assert_eq!(branches, "", "the scratch branch is deleted");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(r#""type":"purged""#), "{stdout}");
}

#[test]
fn exit_hook_tells_the_caller_to_reconnect_on_return() {
    if !engine_available("exit_hook_tells_the_caller_to_reconnect_on_return") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let inst = home.instance("hq3kr003", |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    commit_file(&inst.mount_path(0), "feature.rs", "fn f() {}\n", "agent work");
    let _session = running_session(&home, &inst);
    let before = home.snapshot();

    let out = exit_hook(&home, &inst.container, &["--answer", "return", "--stop"]);
    let said = stderr(&out);
    assert_eq!(out.status.code(), Some(75), "{said}");
    assert!(said.contains(&inst.container) && said.contains("reconnect"), "{said}");
    assert_eq!(home.snapshot(), before, "return changes nothing");
    assert_eq!(docker(&["inspect", "-f", "{{.State.Status}}", &inst.container]), "running");

    // The wiring documented in the hook's header: the trap reconnects on 75 only.
    let script = "trap '\"$HOOK\" \"$C\" --answer return --stop || { [ $? -eq 75 ] && echo reattached >\"$MARK\"; }' EXIT; exit 0".to_string();
    let mark = home.tmp.path().join("reattached");
    let mut launcher = Command::new("sh");
    launcher
        .args(["-c", &script])
        .env("HOOK", common::root().join("contrib/hooks/jackin-exit-hook"))
        .env("C", &inst.container)
        .env("MARK", &mark)
        .env("JACKIN_HOME_DIR", &home.home)
        .env("JACKIN_CONFIG_DIR", &home.config)
        .env("JACKIN_BIN_DIR", bin_dir());
    unsafe {
        launcher.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let out = launcher.stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(&mark).unwrap(), "reattached\n");
}

#[test]
fn exit_hook_reports_the_failing_tool_code_and_changes_nothing() {
    let mut home = Home::new();
    let host = home.host_repo("app");
    let inst = home.instance("hq3ku004", |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    let before = home.snapshot();
    // Not an instance of this home: jackin-assess says so (exit 6) and the hook passes it on.
    let out = exit_hook(&home, "jk-hq3kx999-myapp-agentsmith", &[]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("no instance named"));
    // No container name at all: usage.
    let out = exit_hook(&home, "--stop", &[]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(home.snapshot(), before);
    assert!(inst.dir.exists());
}

// ---------------------------------------------------------------------------------------------
// contrib/git/reference-transaction

/// A host repository with the hook installed, and one session whose scratch branch holds a
/// commit that exists nowhere else; its worktree is on a detached HEAD (else git itself refuses
/// to delete a branch checked out in a worktree).
struct Guarded {
    home: Home,
    host: PathBuf,
    inst: Instance,
    branch: String,
    tip: String,
}

fn guarded(id: &str, status: &str) -> Guarded {
    let mut home = Home::new();
    let host = home.host_repo("app");
    let inst = home.instance(id, |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    let tip = commit_file(&inst.mount_path(0), "feature.rs", "fn f() {}\n", "agent work on the feature");
    git(&inst.mount_path(0), &["checkout", "-q", "--detach"]);
    home.set_status(&inst.container, status, Some("2026-08-20T10:00:00Z"));
    let hook = host.join(".git/hooks/reference-transaction");
    fs::copy(common::root().join("contrib/git/reference-transaction"), &hook).unwrap();
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).unwrap();
    let branch = format!("jackin/scratch/{}", inst.container);
    Guarded { home, host, inst, branch, tip }
}

impl Guarded {
    fn git(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
        Command::new("git")
            .args(args)
            .current_dir(dir)
            .env("JACKIN_HOME_DIR", &self.home.home)
            .env("JACKIN_CONFIG_DIR", &self.home.config)
            .env("JACKIN_BIN_DIR", bin_dir())
            .env_remove("JACKIN_ALLOW_SCRATCH_UPDATE")
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }

    fn tip(&self) -> Option<String> {
        let out = Command::new("git")
            .args(["rev-parse", "-q", "--verify", &format!("refs/heads/{}", self.branch)])
            .current_dir(&self.host)
            .output()
            .unwrap();
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    }

    fn assert_refused(&self, out: &Output) {
        let stderr = stderr(out);
        assert!(!out.status.success(), "{stderr}");
        assert!(stderr.contains("refusing to") && stderr.contains(&self.inst.container), "{stderr}");
        assert!(stderr.contains("agent work on the feature"), "names the commits at risk: {stderr}");
        assert!(stderr.contains(&self.tip[..7]), "{stderr}");
        assert!(stderr.contains("JACKIN_ALLOW_SCRATCH_UPDATE=1"), "{stderr}");
        assert!(stderr.contains(&format!("jackin-purge --discard-unfinished {}", self.inst.container)), "{stderr}");
        assert_eq!(self.tip().as_deref(), Some(self.tip.as_str()), "the branch is untouched");
    }
}

#[test]
fn scratch_branch_of_a_kept_session_cannot_be_deleted() {
    let g = guarded("hq3rd010", "preserved_unpushed");
    let before = g.home.snapshot();
    let out = g.git(&g.host, &["branch", "-D", &g.branch], &[]);
    g.assert_refused(&out);
    let out = g.git(&g.host, &["update-ref", "-d", &format!("refs/heads/{}", g.branch)], &[]);
    g.assert_refused(&out);
    assert_eq!(g.home.snapshot(), before, "the jackin home is only read");
}

#[test]
fn scratch_branch_of_a_kept_session_cannot_be_force_moved() {
    let g = guarded("hq3rf011", "restore_available");
    let full = format!("refs/heads/{}", g.branch);
    let out = g.git(&g.host, &["update-ref", &full, "main"], &[]);
    g.assert_refused(&out);

    // A forced push from another clone into the host repository (receive-pack runs the hook).
    let other = g.home.tmp.path().join("other");
    git(g.home.tmp.path(), &["clone", "-q", g.host.to_str().unwrap(), other.to_str().unwrap()]);
    let out = g.git(&other, &["push", "--force", "origin", &format!("main:{full}")], &[]);
    g.assert_refused(&out);

    // A fast-forward loses nothing and is not looked at.
    let wt = g.inst.mount_path(0);
    let ahead = commit_file(&wt, "more.rs", "fn g() {}\n", "more agent work");
    let out = g.git(&g.host, &["update-ref", &full, &ahead], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(g.tip().as_deref(), Some(ahead.as_str()));
}

#[test]
fn scratch_branch_whose_worktree_is_gone_is_still_guarded() {
    let g = guarded("hq3rg012", "preserved_dirty");
    fs::remove_dir_all(g.inst.mount_path(0)).unwrap();
    git(&g.host, &["worktree", "prune"]);
    let out = g.git(&g.host, &["branch", "-D", &g.branch], &[]);
    g.assert_refused(&out);
}

#[test]
fn scratch_branch_of_an_active_session_can_be_deleted() {
    let g = guarded("hq3ra013", "active");
    let out = g.git(&g.host, &["branch", "-D", &g.branch], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(g.tip(), None);
}

#[test]
fn scratch_branch_whose_commits_are_pushed_can_be_deleted() {
    let g = guarded("hq3rp014", "preserved_unpushed");
    git(&g.host, &["push", "-q", "origin", &format!("{}:refs/heads/feature", g.branch)]);
    let full = format!("refs/heads/{}", g.branch);
    let out = g.git(&g.host, &["update-ref", &full, "main"], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = g.git(&g.host, &["branch", "-D", &g.branch], &[]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(g.tip(), None);
}

#[test]
fn scratch_branch_update_is_allowed_with_the_override() {
    let g = guarded("hq3ro015", "preserved_unpushed");
    let out = g.git(&g.host, &["branch", "-D", &g.branch], &[("JACKIN_ALLOW_SCRATCH_UPDATE", "1")]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(g.tip(), None);
}

#[test]
fn branches_that_are_no_session_are_not_looked_at() {
    let g = guarded("hq3rn016", "preserved_unpushed");
    for name in ["jackin/scratch/jk-hq3rz999-myapp-agentsmith", "jackin/scratch/Not_An_Instance", "feature/x"] {
        git(&g.host, &["branch", name, &g.tip]);
        let out = g.git(&g.host, &["branch", "-D", name], &[]);
        assert!(out.status.success(), "{name}: {}", stderr(&out));
    }
}

#[test]
fn purge_is_not_blocked_by_the_hook() {
    // libgit2 runs no hooks: the operator's explicit purge with --discard-unfinished goes through.
    let g = guarded("hq3rq017", "preserved_unpushed");
    let out =
        g.home.cmd("jackin-purge").args(["--discard-unfinished", "--format=json", &g.inst.container]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(g.tip(), None, "purge deleted the scratch branch");
}

// ---------------------------------------------------------------------------------------------
// contrib/cron, contrib/systemd

/// Every `--flag` on the jackin-purge lines of the scheduled units (commented lines included)
/// is a flag of jackin-purge, and the commands themselves run on an empty home.
#[test]
fn scheduled_purge_units_use_existing_flags() {
    let help = Command::new(tool_path("jackin-purge")).arg("--help").output().unwrap();
    let help = String::from_utf8(help.stdout).unwrap();
    let mut commands = Vec::new();
    for unit in ["contrib/cron/jackin-purge", "contrib/systemd/jackin-purge.service"] {
        let text = fs::read_to_string(common::root().join(unit)).unwrap();
        for line in text.lines().filter(|l| l.contains("bin/jackin-purge ") || l.contains(" jackin-purge --")) {
            let args: Vec<&str> =
                line.split_whitespace().skip_while(|w| !w.ends_with("jackin-purge")).skip(1).collect();
            assert!(!args.is_empty(), "{unit}: {line}");
            for flag in args.iter().filter(|a| a.starts_with("--")) {
                let name = flag.split('=').next().unwrap();
                assert!(help.contains(&format!("{name} ")) || help.contains(&format!("{name}\n")), "{unit}: {name}");
            }
            commands.push(args.iter().map(|a| a.to_string()).collect::<Vec<_>>());
        }
    }
    assert!(commands.len() >= 4, "{commands:?}");
    assert!(commands.iter().any(|c| c.contains(&"--older-than".into()) && c.contains(&"--keep-last".into())));
    let home = Home::new();
    for args in &commands {
        let out = home.cmd("jackin-purge").args(args).arg("--dry-run").output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {}", stderr(&out));
    }
    // A quiet day is silent (cron mails whatever a job prints): nothing to purge, nothing said
    // (before, the daily line printed `purged 0 · 0 B freed` every day).
    let reconcile = fs::read_to_string(common::root().join("contrib/cron/jackin-reconcile")).unwrap();
    let reconcile_line = reconcile.lines().find(|l| l.contains(" jackin-reconcile ")).expect("the cron line");
    let reconcile_args: Vec<String> =
        reconcile_line.split_whitespace().skip_while(|w| *w != "jackin-reconcile").skip(1).map(String::from).collect();
    let runs = commands.iter().map(|args| ("jackin-purge", args)).chain([("jackin-reconcile", &reconcile_args)]);
    for (tool, args) in runs {
        let out = home.cmd(tool).args(args).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{tool} {args:?}: {}", stderr(&out));
        assert_eq!((String::from_utf8_lossy(&out.stdout), stderr(&out)), ("".into(), String::new()), "{tool} {args:?}");
    }
    let timer = fs::read_to_string(common::root().join("contrib/systemd/jackin-purge.timer")).unwrap();
    assert!(timer.contains("OnCalendar=daily"));
}

// ---------------------------------------------------------------------------------------------
// Makefile

fn make(args: &[&str]) -> Output {
    Command::new("make").arg("-s").args(args).current_dir(common::root()).output().unwrap()
}

#[test]
fn make_install_puts_everything_where_a_system_expects_it() {
    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("usr");
    let bin_dir = format!("BIN_DIR={}", bin_dir().display());
    let out = make(&["install", &format!("PREFIX={}", prefix.display()), "DESTDIR=", &bin_dir]);
    assert!(out.status.success(), "{}", stderr(&out));
    let tools = ["jackin-assess", "jackin-keep", "jackin-purge", "jackin-reconcile", "jackin-restore", "jackin-move"];
    let mut expected: Vec<String> = Vec::new();
    for tool in tools {
        expected.push(format!("bin/{tool}"));
        expected.push(format!("share/man/man1/{tool}.1"));
        expected.push(format!("share/bash-completion/completions/{tool}"));
        expected.push(format!("share/zsh/site-functions/_{tool}"));
        expected.push(format!("share/fish/vendor_completions.d/{tool}.fish"));
    }
    for file in [
        "bin/jackin-exit-hook",
        "bin/jackin-load",
        "share/jackin/hooks/jackin-exit-hook",
        "share/jackin/jackin/jackin-load",
        "share/jackin/git/reference-transaction",
        "share/jackin/cron/jackin-purge",
        "share/jackin/cron/jackin-reconcile",
        "share/jackin/systemd/jackin-purge.service",
        "share/jackin/systemd/jackin-purge.timer",
        "share/jackin/systemd/jackin-reconcile.service",
        "share/jackin/systemd/jackin-reconcile.timer",
        "share/jackin/launchd/io.jackin.tools.purge.plist",
        "share/jackin/launchd/io.jackin.tools.reconcile.plist",
        "share/jackin/launchd/io.jackin.tools.resume-interrupted.plist",
    ] {
        expected.push(file.to_owned());
    }
    for file in &expected {
        assert!(prefix.join(file).is_file(), "{file} installed");
    }
    for file in expected
        .iter()
        .filter(|f| f.starts_with("bin/") || f.contains("hook") || f.contains("/git/") || f.ends_with("jackin-load"))
    {
        let mode = fs::metadata(prefix.join(file)).unwrap().permissions().mode();
        assert_eq!(mode & 0o111, 0o111, "{file} is executable");
    }
    assert_eq!(
        fs::read(prefix.join("share/man/man1/jackin-keep.1")).unwrap(),
        fs::read(common::root().join("man/jackin-keep.1")).unwrap()
    );
    // The installed units start the installed binaries.
    let unit = fs::read_to_string(prefix.join("share/jackin/systemd/jackin-reconcile.service")).unwrap();
    let exec = unit.lines().find(|l| l.starts_with("ExecStart=")).unwrap();
    assert_eq!(exec, format!("ExecStart={}/bin/jackin-reconcile --quiet --format text", prefix.display()));
    assert!(!fs::read_to_string(prefix.join("share/jackin/systemd/jackin-purge.service")).unwrap().contains("%h/"));
    // The installed binaries run.
    for tool in tools {
        let out = Command::new(prefix.join("bin").join(tool)).arg("--version").output().unwrap();
        assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains(tool), "{tool}");
    }
    let out = Command::new(prefix.join("bin/jackin-load")).arg("--help").output().unwrap();
    assert!(out.status.success() && stderr(&out).contains("jackin-load [jackin load arguments"), "{}", stderr(&out));

    let out = make(&["uninstall", &format!("PREFIX={}", prefix.display()), "DESTDIR="]);
    assert!(out.status.success(), "{}", stderr(&out));
    for file in &expected {
        assert!(!prefix.join(file).exists(), "{file} uninstalled");
    }
}

#[test]
fn make_install_stages_into_destdir() {
    let tmp = tempfile::tempdir().unwrap();
    let stage = tmp.path().join("stage");
    let bin_dir = format!("BIN_DIR={}", bin_dir().display());
    let out = make(&["install", "PREFIX=/usr/local", &format!("DESTDIR={}", stage.display()), &bin_dir]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stage.join("usr/local/bin/jackin-restore").is_file());
    assert!(stage.join("usr/local/share/zsh/site-functions/_jackin-purge").is_file());
    assert!(stage.join("usr/local/share/jackin/git/reference-transaction").is_file());
    let unit = fs::read_to_string(stage.join("usr/local/share/jackin/systemd/jackin-purge.service")).unwrap();
    assert!(
        unit.contains("\nExecStart=/usr/local/bin/jackin-purge --terminal"),
        "the unit names the final path: {unit}"
    );
    let agent =
        fs::read_to_string(stage.join("usr/local/share/jackin/launchd/io.jackin.tools.reconcile.plist")).unwrap();
    assert!(
        agent.contains("<string>/usr/local/bin/jackin-reconcile</string>"),
        "the agent names the final path: {agent}"
    );
}
