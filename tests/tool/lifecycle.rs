//! The whole life of a session, end to end, with the real binaries, a real Docker engine and real
//! git: launch (fixture) → work → `jackin-assess | jackin-keep` keeps it → `jackin-restore`
//! resumes it (tier 2) → the work is pushed, the session exits clean → `jackin-assess |
//! jackin-keep | jackin-purge` → nothing of it is left anywhere.

use crate::common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::process::{Command, Output};

use common::docker::{docker_quiet, engine_available, Session, SessionOptions};
use common::records::{envelopes, records_of, Candidate, Decision, Envelope, Purged, Restored};
use common::{commit_file, git, stderr, tools_dir, Home};

/// A shell pipeline of the tools, in a session of its own (no controlling terminal, as in a
/// launcher's exit hook run by a service).
fn pipeline(home: &Home, script: &str, env: &[(&str, &str)]) -> Output {
    let dir = tools_dir();
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(format!("set -o pipefail; {script}"));
    cmd.env("PATH", format!("{}:{}", dir.display(), std::env::var("PATH").unwrap()));
    cmd.env("JACKIN_HOME_DIR", &home.home).env("JACKIN_CONFIG_DIR", &home.config);
    for (k, v) in env {
        cmd.env(k, v);
    }
    // SAFETY: setsid is async-signal-safe; it detaches the pipeline from any controlling terminal.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.output().unwrap()
}

fn ok(out: &Output) -> Vec<Envelope> {
    assert_eq!(out.status.code(), Some(0), "{}", stderr(out));
    envelopes(&out.stdout)
}

/// The one `R` record of a run that succeeded.
fn only<R: common::records::Record>(out: &Output) -> R {
    ok(out);
    let mut found = records_of::<R>(&out.stdout);
    assert_eq!(found.len(), 1, "{}", String::from_utf8_lossy(&out.stdout));
    found.remove(0)
}

#[test]
fn launch_work_keep_resume_exit_clean_purge_leaves_nothing() {
    if !engine_available("lifecycle") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let inst = home.instance("l1fecyc1", |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    let c = inst.container.clone();
    home.with_sidecar(&c);
    let sockets = home.home.join("sockets").join(&c);
    fs::create_dir_all(&sockets).unwrap();
    fs::write(sockets.join("agent.toml"), "role = \"agent-smith\"\nworkdir = \"/workspace/my-app\"\n").unwrap();
    fs::write(home.home.join("data").join(format!("{c}.lock")), "").unwrap();
    let _session = Session::launch(
        &c,
        SessionOptions {
            env: vec![("SECRET_TOKEN", "lifecycle-secret-9876")],
            binds: vec![(inst.dir.join("home"), "/home/agent"), (inst.mount_path(0), "/workspace/my-app")],
            ..Default::default()
        },
    );

    // The agent works: a commit on the scratch branch and an unfinished file.
    let worktree = inst.mount_path(0);
    commit_file(&worktree, "feature.rs", "fn feature() {}\n", "feature");
    fs::write(worktree.join("notes.md"), "half done\n").unwrap();

    // The session ends; the operator says keep (no terminal here: --answer).
    let decision: Decision =
        only(&pipeline(&home, &format!("jackin-assess {c} | jackin-keep --stop --answer keep"), &[]));
    assert_eq!(decision.outcome, "keep");
    assert_eq!(decision.status.as_deref(), Some("preserved_dirty"));
    for kind_name in [
        ("container", c.clone()),
        ("container", format!("{c}-dind")),
        ("network", format!("{c}-net")),
        ("volume", format!("{c}-dind-certs")),
    ] {
        assert!(
            docker_quiet(&[kind_name.0, "inspect", &kind_name.1]).is_none(),
            "{} {} was torn down",
            kind_name.0,
            kind_name.1
        );
    }
    assert!(worktree.join("notes.md").exists());

    // The next morning: listed, then resumed by tier 2 with the secret from the environment.
    let listed =
        ok(&pipeline(&home, "jackin-restore --list --format json", &[("SECRET_TOKEN", "lifecycle-secret-9876")]));
    let listed = listed[0].data::<Candidate>();
    assert_eq!(listed.tier, Some(2));
    assert!(listed.ready, "{listed:?}");
    let resumed = ok(&pipeline(
        &home,
        &format!("jackin-restore {c} --yes --format json"),
        &[("SECRET_TOKEN", "lifecycle-secret-9876")],
    ));
    assert_eq!(resumed[0].data::<Restored>().tier, Some(2));
    assert_eq!(docker_quiet(&["exec", &c, "sh", "-c", "echo $SECRET_TOKEN"]).as_deref(), Some("lifecycle-secret-9876"));
    assert_eq!(docker_quiet(&["exec", &c, "cat", "/workspace/my-app/notes.md"]).as_deref(), Some("half done"));

    // The agent finishes: the work is committed and pushed; the session exits clean.
    fs::remove_file(worktree.join("notes.md")).unwrap();
    git(&worktree, &["push", "-q", "origin", "HEAD:refs/heads/feature"]);
    let purged: Purged =
        only(&pipeline(&home, &format!("jackin-assess {c} | jackin-keep --stop | jackin-purge --stop"), &[]));
    assert_eq!(purged.quarantine, None, "nothing was at risk");

    // Nothing of it is left anywhere.
    assert!(!inst.dir.exists(), "data dir");
    assert!(!sockets.exists(), "socket dir");
    assert!(!home.home.join("data").join(format!("{c}.lock")).exists(), "name lock");
    assert!(home.index_row(&c).is_none(), "index row");
    for (kind, name) in [
        ("container", c.clone()),
        ("container", format!("{c}-dind")),
        ("network", format!("{c}-net")),
        ("volume", format!("{c}-dind-certs")),
    ] {
        assert!(docker_quiet(&[kind, "inspect", &name]).is_none(), "{kind} {name}");
    }
    assert!(!git(&host, &["worktree", "list"]).contains(&c), "worktree registration");
    assert!(git(&host, &["branch", "--list", &format!("jackin/scratch/{c}")]).is_empty(), "scratch branch");
    assert!(
        !git(&host, &["branch", "-r"]).is_empty() && git(&host, &["branch", "-r"]).contains("origin/feature"),
        "the pushed work stays"
    );
    for entry in walkdir::WalkDir::new(&home.home).into_iter().flatten().filter(|e| e.file_type().is_file()) {
        let text = String::from_utf8_lossy(&fs::read(entry.path()).unwrap_or_default()).into_owned();
        assert!(!text.contains("lifecycle-secret-9876"), "{} holds the secret", entry.path().display());
    }
}
