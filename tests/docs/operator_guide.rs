//! Runs every command of docs/operator-guide.md, so the guide cannot rot.
//!
//! Conventions of the guide, read here:
//! - Every fenced block tagged `sh` is run, in document order, as one `bash -e -o pipefail` script,
//!   against one throwaway jackin home with real git repositories and real Docker sessions. Blocks
//!   tagged `text` or `json` are shown output or file contents and are not run; a block with any
//!   other tag (or none) fails the test, so a command cannot slip into the guide unrun.
//! - A block's expected exit code is 0 unless it holds a line `# exit N`.
//! - Placeholders: the session ids `k7p9m2xq` (the session that is kept, resumed, crashes and is
//!   resumed again), `q3vx8m1c` (the session whose work is discarded into the quarantine) and
//!   `h4wt6n2r` (the session `jackin load` starts in the section "Using the tools with jackin") are
//!   replaced by this run's unique ids; any other `jk-…` session name fails the test. `~` is a
//!   throwaway HOME in which `~/.jackin` is the jackin home and `~/src/my-app` the host repository
//!   (symlinks into the fixture); commands run from the repository root, so `contrib/…` resolves.
//! - Events between blocks, keyed by the section heading: before the first block of the section
//!   "After the laptop slept…", the kept-then-resumed session's container is killed, as a host
//!   going away would.
//! - `systemctl` is not run for real (no user systemd here): a stand-in on PATH records its
//!   arguments and fails unless each unit it enables was installed where the guide copied it.
//! - `jackin` is not run for real either: jackin cannot be installed here, so the stand-in of
//!   tests/host/jackin_load.rs (tests/fixtures/jackin-stand-in) is on PATH, ending every session it
//!   launches as a detach, its id the third placeholder's. `jackin-load` is found on PATH as
//!   `make install` puts it (contrib/jackin is on PATH).

use crate::common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::docker::{build_real_images, docker, docker_quiet, engine_available, Session, SessionOptions};
use common::{commit_file, git, Home};

const GUIDE_SESSION: &str = "k7p9m2xq";
const GUIDE_DISCARDED: &str = "q3vx8m1c";
const GUIDE_LAUNCHED: &str = "h4wt6n2r";
const CRASH_SECTION: &str = "## After the laptop slept";

struct Block {
    heading: String,
    line: usize,
    script: String,
    expected: i32,
}

fn blocks(guide: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut heading = String::new();
    let mut lines = guide.lines().enumerate();
    while let Some((n, line)) = lines.next() {
        if line.starts_with("## ") {
            heading = line.to_owned();
        }
        let Some(tag) = line.strip_prefix("```") else { continue };
        let mut body = Vec::new();
        for (_, inner) in lines.by_ref() {
            if inner.starts_with("```") {
                break;
            }
            body.push(inner);
        }
        match tag.trim() {
            "sh" => {
                let expected = body
                    .iter()
                    .find_map(|l| l.trim().strip_prefix("# exit ").map(|code| code.trim().parse::<i32>().unwrap()))
                    .unwrap_or(0);
                blocks.push(Block { heading: heading.clone(), line: n + 1, script: body.join("\n"), expected });
            }
            "text" | "json" => {}
            other => panic!("operator-guide.md:{}: a ```{other} block cannot be run; tag commands `sh`", n + 1),
        }
    }
    blocks
}

fn unique_id(seed: &str) -> String {
    format!("{}{}", &seed[..1], &common::unique_id()[..7])
}

fn systemctl_stand_in(dir: &Path, log: &Path) {
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> '{}'\nif [ \"$1\" = --user ] && [ \"$2\" = enable ]; then\n  for unit in \"$@\"; do\n    \
         case $unit in --*|enable) ;; *) [ -f \"$HOME/.config/systemd/user/$unit\" ] || {{ echo \"no unit $unit\" >&2; exit 1; }} ;; \
         esac\n  done\nfi\n",
        log.display()
    );
    let path = dir.join("systemctl");
    fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn every_command_of_the_operator_guide_runs_as_written() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let guide = fs::read_to_string(root.join("docs/operator-guide.md")).unwrap();
    let blocks = blocks(&guide);
    assert!(blocks.iter().all(|b| !b.script.contains("docker ps")), "recovery never needs docker ps");
    assert!(blocks.len() >= 10, "the guide's commands were found ({})", blocks.len());
    assert!(blocks.iter().any(|b| b.heading.starts_with(CRASH_SECTION)), "the section {CRASH_SECTION:?}");
    if !engine_available("operator_guide") {
        return;
    }

    build_real_images();
    let mut home = Home::new();
    let host = home.host_repo("my-app");
    let session_id = unique_id("g");
    let discarded_id = unique_id("d");
    let launched_id = unique_id("h");
    let launched = format!("jk-{launched_id}-myapp-thearchitect");
    let _launched = Launched(launched.clone());
    let session = home.instance(&session_id, |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    let discarded = home.instance(&discarded_id, |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    let c = session.container.clone();
    commit_file(&session.mount_path(0), "feature.rs", "fn feature() {}\n", "feature");
    fs::write(session.mount_path(0).join("notes.md"), "half done\n").unwrap();
    let lost_commit = commit_file(&discarded.mount_path(0), "src/idea.rs", "fn idea() {}\n", "an idea");
    fs::write(discarded.mount_path(0).join("plan.md"), "the plan\n").unwrap();
    let sockets = home.home.join("sockets").join(&c);
    fs::create_dir_all(&sockets).unwrap();
    fs::write(sockets.join("agent.toml"), "role = \"agent-smith\"\nworkdir = \"/workspace/my-app\"\n").unwrap();
    // The agent has exited: its container is stopped, as the launcher's exit hook finds it.
    let _session = Session::launch(
        &c,
        SessionOptions {
            dind: false,
            binds: vec![(session.mount_path(0), "/workspace/my-app")],
            running: false,
            ..Default::default()
        },
    );

    let fake_home = home.tmp.path().join("operator");
    fs::create_dir_all(fake_home.join("src")).unwrap();
    std::os::unix::fs::symlink(&home.home, fake_home.join(".jackin")).unwrap();
    std::os::unix::fs::symlink(&host, fake_home.join("src/my-app")).unwrap();
    let stand_ins = home.tmp.path().join("stand-ins");
    fs::create_dir_all(&stand_ins).unwrap();
    let systemctl_log = home.tmp.path().join("systemctl.log");
    systemctl_stand_in(&stand_ins, &systemctl_log);
    common::install_jackin_stand_in(&stand_ins);
    let tools = common::tools_dir();
    for tool in ["jackin-keep", "jackin-purge", "jackin-reconcile", "jackin-restore"] {
        assert!(tools.join(tool).exists(), "{tool} is built next to jackin-assess");
    }
    let path = format!(
        "{}:{}:{}:{}",
        tools.display(),
        root.join("contrib/jackin").display(),
        stand_ins.display(),
        std::env::var("PATH").unwrap()
    );

    let mut crashed = false;
    for block in &blocks {
        if block.heading.starts_with(CRASH_SECTION) && !crashed {
            assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &c]), "true", "resumed before the crash");
            docker(&["kill", &c]);
            crashed = true;
        }
        let script = block
            .script
            .replace(GUIDE_SESSION, &session_id)
            .replace(GUIDE_DISCARDED, &discarded_id)
            .replace(GUIDE_LAUNCHED, &launched_id);
        for word in script.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-')) {
            if let Some(rest) = word.strip_prefix("jk-") {
                let id = rest.split('-').next().unwrap_or("");
                assert!(
                    id == session_id || id == discarded_id || id == launched_id,
                    "operator-guide.md:{}: {word} is not a session of the fixture",
                    block.line
                );
            }
        }
        let mut cmd = Command::new("bash");
        cmd.arg("-e").arg("-o").arg("pipefail").arg("-c").arg(&script);
        cmd.current_dir(&root).stdin(Stdio::null());
        cmd.env("PATH", &path).env("HOME", &fake_home);
        cmd.env("JACKIN_HOME_DIR", &home.home).env("JACKIN_CONFIG_DIR", &home.config);
        cmd.env("JACKIN_STAND_IN_EXIT", "detached")
            .env("JACKIN_STAND_IN_IMAGE", common::docker::TEST_ROLE_IMAGE)
            .env("JACKIN_STAND_IN_IDS", &launched_id)
            .env_remove("JACKIN_STAND_IN_END")
            .env_remove("JACKIN_LOAD_KEEP_FLAGS")
            .env_remove("JACKIN_LOAD_AT_RISK_FLAGS");
        // SAFETY: setsid is async-signal-safe; the commands run without a controlling terminal,
        // as in a launcher's exit hook or a cron job.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(block.expected),
            "operator-guide.md:{} ({}):\n{script}\n--- stdout\n{}--- stderr\n{}",
            block.line,
            block.heading,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(crashed);

    // What the guide promised happened.
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &c]), "true", "resumed after the crash");
    assert_eq!(docker_quiet(&["exec", &c, "cat", "/workspace/my-app/notes.md"]).as_deref(), Some("half done"));
    assert!(!discarded.dir.exists(), "the discarded session is gone");
    let recovered = git(&host, &["rev-parse", &format!("refs/recovered/heads/jackin/scratch/{}", discarded.container)]);
    assert_eq!(recovered, lost_commit, "the discarded commit came back from the quarantine");
    assert_eq!(fs::read_to_string(fake_home.join("recovered/plan.md")).unwrap(), "the plan\n");
    for unit in ["jackin-reconcile.service", "jackin-reconcile.timer"] {
        assert_eq!(
            fs::read(fake_home.join(".config/systemd/user").join(unit)).unwrap(),
            fs::read(root.join("contrib/systemd").join(unit)).unwrap()
        );
    }
    assert!(fs::read_to_string(&systemctl_log).unwrap().contains("--user enable --now jackin-reconcile.timer"));
    // The session jackin launched was kept twice (by hand, then by jackin-load) and resumed.
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &launched]), "true", "resumed by jackin-restore");
    let kept = home.continuity(&launched).history.iter().filter(|h| h.cause == "kept").count();
    assert_eq!(kept, 2, "kept by hand, then by jackin-load");
}

/// The containers of the session the guide's `jackin load` launched, removed however the test ends.
struct Launched(String);

impl Drop for Launched {
    fn drop(&mut self) {
        let _ = docker_quiet(&["rm", "-f", "-v", &self.0]);
        let _ = docker_quiet(&["network", "rm", &format!("{}-net", self.0)]);
    }
}
