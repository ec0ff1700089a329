//! The home the documents' examples run against, as the README describes it: `$C` a session with
//! unfinished work (a committed-but-unpushed file, an uncommitted one) and a stopped container (the
//! exit hook's moment), `$D` one whose work gets discarded and recovered. Shared by
//! tests/docs/readme.rs, tests/docs/man_examples.rs and tests/docs/completions.rs.

use crate::common;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::docker::{Session, SessionOptions};
use common::{commit_file, Home, Instance};

pub struct TwoSessions {
    pub home: Home,
    /// The host repository both sessions' worktrees belong to.
    pub host: PathBuf,
    /// `$C`.
    pub kept: Instance,
    /// `$D`.
    pub discarded: Instance,
    /// `$C`'s containers, removed when the test ends.
    _session: Session,
}

impl TwoSessions {
    /// The two sessions, with instance ids of the test's own: the Docker names derive from them,
    /// and tests run in parallel on one engine.
    pub fn new(kept_id: &str, discarded_id: &str) -> TwoSessions {
        let mut home = Home::new();
        let host = home.host_repo("my-app");
        let kept = home.instance(kept_id, |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
        let discarded = home.instance(discarded_id, |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
        commit_file(&kept.mount_path(0), "feature.rs", "fn feature() {}\n", "feature");
        fs::write(kept.mount_path(0).join("notes.md"), "half done\n").unwrap();
        commit_file(&discarded.mount_path(0), "idea.rs", "fn idea() {}\n", "an idea");
        let sockets = home.home.join("sockets").join(&kept.container);
        fs::create_dir_all(&sockets).unwrap();
        fs::write(sockets.join("agent.toml"), "role = \"agent-smith\"\nworkdir = \"/workspace/my-app\"\n").unwrap();
        let session = Session::launch(
            &kept.container,
            SessionOptions {
                dind: false,
                binds: vec![(kept.mount_path(0), "/workspace/my-app")],
                running: false,
                ..Default::default()
            },
        );
        TwoSessions { home, host, kept, discarded, _session: session }
    }

    /// `script` as an operator's shell runs it: `bash -e -o pipefail -c`, the tools on `PATH`,
    /// `JACKIN_HOME_DIR`, `JACKIN_CONFIG_DIR`, `$C` and `$D` set, stdin empty, in `dir`. In a
    /// session of its own: with no controlling terminal, no dialog or picker can wait.
    pub fn run(&self, script: &str, dir: &Path) -> Output {
        self.run_with_path(script, dir, common::tools_dir())
    }

    /// [`TwoSessions::run`] with `more` on `PATH` after the tools (the hooks, as `make install`
    /// puts them beside the tools).
    pub fn run_with_path(&self, script: &str, dir: &Path, more: &Path) -> Output {
        let path = format!("{}:{}:{}", common::tools_dir().display(), more.display(), std::env::var("PATH").unwrap());
        let mut command = Command::new("bash");
        command
            .args(["-e", "-o", "pipefail", "-c", script])
            .env("PATH", &path)
            .env("JACKIN_HOME_DIR", &self.home.home)
            .env("JACKIN_CONFIG_DIR", &self.home.config)
            .env("C", &self.kept.container)
            .env("D", &self.discarded.container)
            .current_dir(dir)
            .stdin(Stdio::null());
        // SAFETY: setsid is async-signal-safe; it detaches the child from any controlling terminal.
        unsafe {
            command.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        command.output().unwrap()
    }
}
