//! Runs every command of docs/operator-guide.md, and of docs/reference.md and
//! docs/exit-policy.md, so that what they say cannot rot. The blocks' conventions are
//! tests/docs/markdown.rs's: `sh` blocks are run in document order as one `bash -e -o pipefail`
//! script each (`# exit N` when a block should end with N), and a `text` block right after one
//! is its output, checked.
//!
//! What these documents share, read here:
//! - Placeholders: the session ids `k7p9m2xq` (the session that is kept, resumed, crashes and is
//!   resumed again; `k7p9` is its id prefix), `q3vx8m1c` (the session whose work is discarded into
//!   the quarantine; `$C` and `$D` name the same two sessions) and `h4wt6n2r` (the session `jackin load` starts in the guide's section
//!   "Using the tools with jackin") are replaced by this run's unique ids; any other `jk-…` session
//!   name fails the test. `~` is a throwaway HOME in which `~/.jackin` is the jackin home and
//!   `~/src/my-app` the host repository (symlinks into the fixture); commands run from the
//!   repository root, so `contrib/…` resolves. `unix:///var/run/docker.sock` in a command is the
//!   tests' engine (`DOCKER_HOST` when set: scripts/test-docker-host).
//! - Events between blocks of the guide, keyed by the section heading: before the first block of
//!   the section "After the laptop slept…", the kept-then-resumed session's container is killed,
//!   as a host going away would.
//! - `systemctl` is not run for real (no user systemd here): a stand-in on PATH records its
//!   arguments and fails unless each unit it enables was installed where the document copied it.
//! - `jackin` is not run for real either: jackin cannot be installed here, so the stand-in of
//!   tests/host/jackin_load.rs (tests/fixtures/jackin-stand-in) is on PATH, ending every session it
//!   launches as a detach, its id the third placeholder's. `jackin-load` is found on PATH as
//!   `make install` puts it (contrib/jackin is on PATH).

use crate::common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use super::markdown::{self, Block, Kind};
use common::docker::{build_real_images, docker, docker_quiet, engine_available, Session, SessionOptions};
use common::{commit_file, git, Home, Instance};

const GUIDE_SESSION: &str = "k7p9m2xq";
const GUIDE_PREFIX: &str = "k7p9";
const GUIDE_DISCARDED: &str = "q3vx8m1c";
const GUIDE_LAUNCHED: &str = "h4wt6n2r";
const CRASH_SECTION: &str = "## After the laptop slept";

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

/// The home the documents' examples run against: the kept session with unfinished work and a
/// stopped container, the session to discard, and the operator's HOME around them.
struct GuideHome {
    home: Home,
    host: PathBuf,
    session: Instance,
    session_id: String,
    discarded: Instance,
    discarded_id: String,
    launched_id: String,
    /// The HOME the commands run with.
    operator: PathBuf,
    systemctl_log: PathBuf,
    path: String,
    lost_commit: String,
    _launched: Launched,
    _session: Session,
}

impl GuideHome {
    fn new() -> GuideHome {
        let mut home = Home::new();
        let host = home.host_repo("my-app");
        let (session_id, discarded_id, launched_id) = (unique_id("g"), unique_id("d"), unique_id("h"));
        let launched = Launched(format!("jk-{launched_id}-myapp-thearchitect"));
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
        let container = Session::launch(
            &c,
            SessionOptions {
                dind: false,
                binds: vec![(session.mount_path(0), "/workspace/my-app")],
                running: false,
                ..Default::default()
            },
        );
        let operator = home.tmp.path().join("operator");
        fs::create_dir_all(operator.join("src")).unwrap();
        std::os::unix::fs::symlink(&home.home, operator.join(".jackin")).unwrap();
        std::os::unix::fs::symlink(&host, operator.join("src/my-app")).unwrap();
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
            common::root().join("contrib/jackin").display(),
            stand_ins.display(),
            std::env::var("PATH").unwrap()
        );
        GuideHome {
            home,
            host,
            session,
            session_id,
            discarded,
            discarded_id,
            launched_id,
            operator,
            systemctl_log,
            path,
            lost_commit,
            _launched: launched,
            _session: container,
        }
    }

    /// `text` with the placeholders replaced by this home's ids, and the default engine socket
    /// by the tests' engine (another one when DOCKER_HOST gives it, as with rootless Docker).
    fn substituted(&self, text: &str) -> String {
        text.replace(common::docker::DEFAULT_SOCKET, &common::docker::engine_host())
            .replace(GUIDE_SESSION, &self.session_id)
            .replace(GUIDE_PREFIX, &self.session_id[..4])
            .replace(GUIDE_DISCARDED, &self.discarded_id)
            .replace(GUIDE_LAUNCHED, &self.launched_id)
    }

    /// Runs `block` of `file` as an operator's shell would, and checks its exit code and the
    /// output it shows.
    fn run(&self, file: &str, block: &Block) {
        let script = self.substituted(&block.body);
        let ids = [&self.session_id, &self.discarded_id, &self.launched_id];
        for word in script.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '-')) {
            if let Some(rest) = word.strip_prefix("jk-") {
                let id = rest.split('-').next().unwrap_or("");
                assert!(ids.iter().any(|i| *i == id), "{file}:{}: {word} is not a session of the fixture", block.line);
            }
        }
        let out = self.output(&script);
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let said = || {
            format!("{file}:{} ({}):\n{script}\n--- stdout\n{stdout}--- stderr\n{stderr}", block.line, block.heading)
        };
        assert_eq!(out.status.code(), Some(block.exit), "{}", said());
        if let Some(expected) = &block.output {
            // `~/.jackin` is the home the tools print by its own path (here not under HOME).
            let expected = self
                .substituted(expected)
                .replace("~/.jackin", self.home.home.to_str().unwrap())
                .replace('~', self.operator.to_str().unwrap());
            if let Err(line) = markdown::shows(&expected, &format!("{stdout}{stderr}")) {
                panic!("{}\n--- the document shows a line the output does not have:\n{line}", said());
            }
        }
    }

    fn output(&self, script: &str) -> Output {
        let mut cmd = Command::new("bash");
        cmd.arg("-e").arg("-o").arg("pipefail").arg("-c").arg(script);
        cmd.current_dir(common::root()).stdin(Stdio::null());
        cmd.env("PATH", &self.path).env("HOME", &self.operator);
        cmd.env("JACKIN_HOME_DIR", &self.home.home).env("JACKIN_CONFIG_DIR", &self.home.config);
        // `$C` and `$D`, as README.md and the reference name a session: the two sessions.
        cmd.env("C", &self.session.container).env("D", &self.discarded.container);
        cmd.env("JACKIN_STAND_IN_EXIT", "detached")
            .env("JACKIN_STAND_IN_IMAGE", common::docker::TEST_ROLE_IMAGE)
            .env("JACKIN_STAND_IN_IDS", &self.launched_id)
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
        cmd.output().unwrap()
    }
}

/// The blocks of `file` to run; its developer blocks are checked here.
fn runnable(file: &str) -> Vec<Block> {
    let doc = fs::read_to_string(common::root().join(file)).unwrap();
    let blocks = markdown::blocks(file, &doc);
    for block in blocks.iter().filter(|b| b.kind == Kind::Developer) {
        if let Err(why) = markdown::check_developer(block, &common::root()) {
            panic!("{file}:{}: {why}", block.line);
        }
    }
    blocks.into_iter().filter(|b| b.kind == Kind::Run).collect()
}

#[test]
fn every_command_of_the_operator_guide_runs_as_written() {
    let file = "docs/operator-guide.md";
    let blocks = runnable(file);
    assert!(blocks.iter().all(|b| !b.body.contains("docker ps")), "recovery never needs docker ps");
    assert!(blocks.len() >= 10, "the guide's commands were found ({})", blocks.len());
    assert!(blocks.iter().any(|b| b.heading.starts_with(CRASH_SECTION)), "the section {CRASH_SECTION:?}");
    if !engine_available("operator_guide") {
        return;
    }
    build_real_images();
    let g = GuideHome::new();
    let c = g.session.container.clone();
    let mut crashed = false;
    for block in &blocks {
        if block.heading.starts_with(CRASH_SECTION) && !crashed {
            assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &c]), "true", "resumed before the crash");
            docker(&["kill", &c]);
            crashed = true;
        }
        g.run(file, block);
    }
    assert!(crashed);

    // What the guide promised happened.
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &c]), "true", "resumed after the crash");
    assert_eq!(docker_quiet(&["exec", &c, "cat", "/workspace/my-app/notes.md"]).as_deref(), Some("half done"));
    assert!(!g.discarded.dir.exists(), "the discarded session is gone");
    let recovered =
        git(&g.host, &["rev-parse", &format!("refs/recovered/heads/jackin/scratch/{}", g.discarded.container)]);
    assert_eq!(recovered, g.lost_commit, "the discarded commit came back from the quarantine");
    assert_eq!(fs::read_to_string(g.operator.join("recovered/plan.md")).unwrap(), "the plan\n");
    for unit in ["jackin-reconcile.service", "jackin-reconcile.timer"] {
        assert_eq!(
            fs::read(g.operator.join(".config/systemd/user").join(unit)).unwrap(),
            fs::read(common::root().join("contrib/systemd").join(unit)).unwrap()
        );
    }
    assert!(fs::read_to_string(&g.systemctl_log).unwrap().contains("--user enable --now jackin-reconcile.timer"));
    // The session jackin launched was kept twice (by hand, then by jackin-load) and resumed.
    let launched = &g._launched.0;
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", launched]), "true", "resumed by jackin-restore");
    let kept = g.home.continuity(launched).history.iter().filter(|h| h.cause == "kept").count();
    assert_eq!(kept, 2, "kept by hand, then by jackin-load");
}

/// The reference's and the exit policy's examples, in document order, on a home of their own.
#[test]
fn every_command_of_the_reference_and_the_exit_policy_runs_as_written() {
    let documents = ["docs/exit-policy.md", "docs/reference.md"];
    let blocks: Vec<(&str, Vec<Block>)> = documents.iter().map(|file| (*file, runnable(file))).collect();
    assert!(blocks.iter().all(|(_, b)| !b.is_empty()), "every document has commands");
    if !engine_available("reference_examples") {
        return;
    }
    build_real_images();
    let g = GuideHome::new();
    for (file, blocks) in &blocks {
        for block in blocks {
            g.run(file, block);
        }
    }
}

/// The containers of the session the guide's `jackin load` launched, removed however the test ends.
struct Launched(String);

impl Drop for Launched {
    fn drop(&mut self) {
        let _ = docker_quiet(&["rm", "-f", "-v", &self.0]);
        let _ = docker_quiet(&["network", "rm", &format!("{}-net", self.0)]);
    }
}
