//! Test fixtures: a throwaway jackin home with real git repositories and jackin's files composed
//! by hand from state.md (not by the library under test, so the tests check that it reads them).

pub mod docker;
pub mod records;
pub mod smart_http;
pub mod ssh;
pub mod state;
pub mod tls;

use std::fs;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use jackin::base::tool::Tool;
use serde_json::{json, Value};

pub struct Home {
    pub tmp: tempfile::TempDir,
    pub home: PathBuf,
    pub config: PathBuf,
    rows: Vec<Value>,
}

/// Runs the git CLI in test setup; fails the test with git's own words.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_AUTHOR_DATE", "2026-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2026-01-01T00:00:00Z")
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?} in {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

pub fn commit_file(repo: &Path, file: &str, content: &str, message: &str) -> String {
    let path = repo.join(file);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(&path, content).unwrap();
    git(repo, &["add", file]);
    git(repo, &["commit", "-q", "-m", message]);
    git(repo, &["rev-parse", "HEAD"])
}

/// Whether a test's prerequisite other than the engine is here; `missing` says what is absent
/// and how `.ci/run` provides it. Without it the test is skipped with a line on stderr; under
/// `CI=true` a check that cannot run fails instead, so a green CI run means every check ran.
pub fn prerequisite(test: &str, present: bool, missing: &str) -> bool {
    if present {
        return true;
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("{test}: CI=true and {missing}");
    }
    eprintln!("SKIPPED {test}: {missing}");
    false
}

/// Whether the `dockerd` binary is here, for the tests that start an engine of their own.
pub fn have_dockerd(test: &str) -> bool {
    let present = Command::new("dockerd").arg("--version").output().is_ok_and(|o| o.status.success());
    prerequisite(test, present, "there is no dockerd binary (apt-get install docker.io)")
}

/// A tmpfs mounted for one test, unmounted when it ends, however it ends.
pub struct Tmpfs(PathBuf);

impl Tmpfs {
    /// `None` (the test skipped, or failed under `CI=true`) where this machine does not let the
    /// tests mount (not root, no CAP_SYS_ADMIN).
    pub fn mount(test: &str, at: &Path, options: &str) -> Option<Tmpfs> {
        fs::create_dir_all(at).unwrap();
        let out = Command::new("mount").args(["-t", "tmpfs", "-o", options, "tmpfs"]).arg(at).output();
        let mounted = out.as_ref().is_ok_and(|o| o.status.success());
        let why = match &out {
            Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_owned(),
            Err(e) => e.to_string(),
        };
        let missing = format!("this machine cannot mount a tmpfs (run as root, with CAP_SYS_ADMIN): {why}");
        prerequisite(test, mounted, &missing).then(|| Tmpfs(at.to_path_buf()))
    }

    /// Unmounts it now (a test that checks what is left after the unmount).
    pub fn unmount(self) {}
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// One instance's identity and where its mounts are.
#[derive(Debug, Clone)]
pub struct Instance {
    pub id: String,
    pub container: String,
    pub dir: PathBuf,
    pub records: Vec<Value>,
}

impl Instance {
    pub fn mount_path(&self, i: usize) -> PathBuf {
        PathBuf::from(self.records[i]["worktree_path"].as_str().unwrap())
    }
}

impl Home {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("jackin");
        let config = tmp.path().join("config");
        fs::create_dir_all(home.join("data")).unwrap();
        fs::create_dir_all(home.join("sockets")).unwrap();
        fs::create_dir_all(&config).unwrap();
        Home { tmp, home, config, rows: Vec::new() }
    }

    /// The key this home's tools seal their records with, as a host has it once its first
    /// jackin-keep ran (services/seal.rs): from then on assess seals, and keep trusts what it seals.
    pub fn with_seal_key(&self) {
        use std::os::unix::fs::OpenOptionsExt;
        let key: Vec<u8> = (0..32).map(|_| fastrand::u8(..)).collect();
        let mut file =
            fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(self.home.join("seal.key")).unwrap();
        std::io::Write::write_all(&mut file, &key).unwrap();
    }

    /// A host repository with one commit on `main` and an `origin` remote whose `main` is
    /// pushed, like an operator's checkout.
    pub fn host_repo(&self, name: &str) -> PathBuf {
        let origin = self.tmp.path().join(format!("{name}-origin.git"));
        let repo = self.tmp.path().join("src").join(name);
        fs::create_dir_all(&repo).unwrap();
        git(self.tmp.path(), &["init", "-q", "--bare", origin.to_str().unwrap()]);
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["config", "user.email", "op@example.invalid"]);
        git(&repo, &["config", "user.name", "Operator"]);
        fs::write(repo.join(".gitignore"), "target/\n*.log\n").unwrap();
        git(&repo, &["add", ".gitignore"]);
        commit_file(&repo, "README.md", "hello\n", "initial");
        commit_file(&repo, "src/main.rs", "fn main() {}\n", "code");
        git(&repo, &["remote", "add", "origin", origin.to_str().unwrap()]);
        git(&repo, &["push", "-q", "-u", "origin", "main"]);
        repo
    }

    /// The session's `sockets/<c>/agent.toml` as jackin writes it (workdir `/workspace`); its path.
    pub fn write_agent_toml(&self, container: &str) -> PathBuf {
        let dir = self.home.join("sockets").join(container);
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("agent.toml"), "role = \"agent-smith\"\nworkdir = \"/workspace\"\nagents = [\"claude\"]\n")
            .unwrap();
        dir.join("agent.toml")
    }

    pub fn data(&self, container: &str) -> PathBuf {
        self.home.join("data").join(container)
    }

    /// A worktree mount of `host`, made the way jackin makes it.
    pub fn worktree_record(&self, container: &str, host: &Path, mount_dst: &str) -> Value {
        let dst = mount_dst.trim_start_matches('/');
        let path = self.data(container).join("git/worktree/repo").join(dst).join(container);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        let branch = format!("jackin/scratch/{container}");
        git(host, &["worktree", "add", "-q", "-b", &branch, path.to_str().unwrap()]);
        let base = git(host, &["rev-parse", "HEAD"]);
        json!({
            "workspace": "my-app", "mount_dst": mount_dst, "original_src": host.to_str().unwrap(),
            "isolation": "worktree", "worktree_path": path.to_str().unwrap(),
            "scratch_branch": branch, "base_commit": base, "selector_key": "agent-smith",
            "container_name": container, "cleanup_status": "active"
        })
    }

    /// A clone mount of `host`: `git clone --local`, then origin set to the host's origin URL.
    pub fn clone_record(&self, container: &str, host: &Path, mount_dst: &str) -> Value {
        let dst = mount_dst.trim_start_matches('/');
        let path = self.data(container).join("git/clone/repo").join(dst).join(container);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        git(self.tmp.path(), &["clone", "-q", "--local", host.to_str().unwrap(), path.to_str().unwrap()]);
        let origin_url = git(host, &["remote", "get-url", "origin"]);
        git(&path, &["remote", "set-url", "origin", &origin_url]);
        git(&path, &["fetch", "-q", "origin"]);
        git(&path, &["branch", "-q", "--set-upstream-to=origin/main", "main"]);
        git(&path, &["config", "user.email", "agent@example.invalid"]);
        git(&path, &["config", "user.name", "Agent"]);
        let base = git(host, &["rev-parse", "HEAD"]);
        json!({
            "workspace": "my-app", "mount_dst": mount_dst, "original_src": host.to_str().unwrap(),
            "isolation": "clone", "worktree_path": path.to_str().unwrap(),
            "scratch_branch": "", "base_commit": base, "selector_key": "agent-smith",
            "container_name": container, "cleanup_status": "active"
        })
    }

    pub fn container_name(id: &str) -> String {
        format!("jk-{id}-myapp-agentsmith")
    }

    /// Writes the manifest, the isolation records and the index row of a new `active` instance.
    /// `mounts` makes the mounts once the data directory exists.
    pub fn instance(&mut self, id: &str, mounts: impl FnOnce(&Home, &str) -> Vec<Value>) -> Instance {
        let container = Self::container_name(id);
        let dir = self.data(&container);
        fs::create_dir_all(dir.join(".jackin")).unwrap();
        fs::create_dir_all(dir.join("home")).unwrap();
        fs::create_dir_all(dir.join("state")).unwrap();
        let records = mounts(self, &container);
        let updated = format!("2026-08-20T09:{:02}:03Z", self.rows.len() % 60);
        fs::write(dir.join(".jackin/instance.json"), manifest_text(id, &container, "active", &updated)).unwrap();
        if !records.is_empty() {
            let isolation = json!({"version": 1, "records": records});
            fs::write(dir.join(".jackin/isolation.json"), serde_json::to_string_pretty(&isolation).unwrap()).unwrap();
        }
        self.rows.push(json!({
            "instance_id": id, "container_base": container, "workspace_name": "my-app",
            "workspace_label": "my-app", "workdir": "/workspace/my-app", "role_key": "agent-smith",
            "agent_runtime": "claude", "status": "active", "updated_at": updated
        }));
        self.write_index();
        Instance { id: id.to_owned(), container, dir, records }
    }

    /// jackin's `purged` tombstone: a row of a session jackin removed, with no data directory.
    pub fn tombstone(&mut self, id: &str) -> String {
        let container = Self::container_name(id);
        self.rows.push(json!({
            "instance_id": id, "container_base": container, "workspace_name": "my-app",
            "workspace_label": "my-app", "workdir": "/workspace/my-app", "role_key": "agent-smith",
            "agent_runtime": "claude", "status": "purged", "updated_at": "2026-08-19T09:00:00Z"
        }));
        self.write_index();
        container
    }

    pub fn write_index(&self) {
        let mut rows = self.rows.clone();
        rows.sort_by(|a, b| b["updated_at"].as_str().cmp(&a["updated_at"].as_str()));
        let index = json!({"version": 1, "instances": rows});
        fs::write(self.home.join("data/instances.json"), serde_json::to_string_pretty(&index).unwrap()).unwrap();
    }

    pub fn cmd(&self, tool: &str) -> assert_cmd::Command {
        let mut cmd = assert_cmd::Command::new(tool_path(tool));
        cmd.arg("--home").arg(&self.home).arg("--config-dir").arg(&self.config);
        cmd.env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR");
        cmd
    }

    /// A tool of the home in a session of its own (no controlling terminal, so no dialog can
    /// wait), with no crash point set from the environment.
    pub fn detached(&self, tool: &str) -> Command {
        let mut cmd = Command::new(tool_path(tool));
        cmd.arg("--home").arg(&self.home).arg("--config-dir").arg(&self.config);
        cmd.env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR");
        for crashing in [Tool::Purge, Tool::Keep, Tool::Restore, Tool::Import] {
            cmd.env_remove(crashing.variable()).env_remove(crashing.pause_variable());
        }
        // SAFETY: setsid is async-signal-safe; it detaches the child from any controlling terminal.
        unsafe {
            cmd.pre_exec(|| {
                libc::setsid();
                Ok(())
            });
        }
        cmd
    }

    /// The JSON Lines jackin-assess writes for `args` (container names and flags); fails the
    /// test when it does not succeed.
    fn assessed(&self, args: &[&str]) -> String {
        let out = self.detached("jackin-assess").args(args).arg("--format=json").stdin(Stdio::null()).output().unwrap();
        assert!(out.status.success(), "jackin-assess {args:?}: {}", stderr(&out));
        String::from_utf8(out.stdout).unwrap()
    }

    /// The jackin-assess output for these sessions, as an exit hook would pipe it.
    pub fn assess_lines(&self, containers: &[&str]) -> String {
        self.assessed(containers)
    }

    /// The one assessment jackin-assess makes of `container`.
    pub fn assess(&self, container: &str) -> records::Assessment {
        self.only_assessment(&[container])
    }

    /// The one assessment of `container` with `--disk`.
    pub fn assess_disk(&self, container: &str) -> records::Assessment {
        self.only_assessment(&["--disk", container])
    }

    fn only_assessment(&self, args: &[&str]) -> records::Assessment {
        let mut recs = records::records::<records::Assessment>(self.assessed(args).as_bytes());
        assert_eq!(recs.len(), 1, "{recs:?}");
        recs.remove(0)
    }

    /// jackin-purge with `args` and `--format=json`, `stdin` its input, no crash point set.
    /// What `jackin-assess C | jackin-keep ARGS` prints: the decision this home's keep makes
    /// (and seals) for `container`, for a purge to act on.
    pub fn decided(&self, container: &str, keep_args: &[&str]) -> String {
        let assessed = self.assess_lines(&[container]);
        let out = self.cmd("jackin-keep").args(keep_args).arg("--format=json").write_stdin(assessed).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap()
    }

    pub fn purge(&self, args: &[&str], stdin: &str) -> Output {
        let mut cmd = self.cmd("jackin-purge");
        cmd.args(args).arg("--format=json").env_remove("JACKIN_PURGE_CRASH_AT");
        cmd.write_stdin(stdin.to_owned());
        cmd.output().unwrap()
    }

    pub fn index_path(&self) -> PathBuf {
        self.home.join("data/instances.json")
    }

    pub fn index(&self) -> Value {
        read_json(&self.index_path())
    }

    /// The quarantine directories, in name order.
    pub fn quarantines(&self) -> Vec<PathBuf> {
        let Ok(entries) = fs::read_dir(self.home.join("quarantine")) else { return Vec::new() };
        let mut dirs: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        dirs.sort();
        dirs
    }

    /// Every entry under the home (files with their bytes and mode, directories with their mode,
    /// symlinks with their target, and what could not be read, with why): "nothing changed" is
    /// this list unchanged, so a deleted directory, a changed link or a mode change shows.
    pub fn snapshot(&self) -> Vec<(PathBuf, Entry)> {
        snapshot_of(&self.home)
    }
}

/// A tool's run caught right after one of its steps (base/crash.rs, `JACKIN_<TOOL>_PAUSE_AT`),
/// holding there whatever it holds (the session's claim among it) until [`Paused::finish`] lets it
/// go on. Killed if the test ends first.
pub struct Paused {
    child: Option<std::process::Child>,
    file: PathBuf,
    /// The paused process.
    pub pid: u32,
}

impl Paused {
    /// Starts `cmd` (stdin, if it reads one, already set) paused after `step`, and waits until it
    /// is there; fails the test with its output when it ends before.
    pub fn start(mut cmd: Command, tool: Tool, step: &str, file: PathBuf) -> Paused {
        cmd.env(tool.pause_variable(), step).env(jackin::base::crash::PAUSE_FILE, &file);
        let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
        loop {
            if let Some(pid) = fs::read_to_string(&file).ok().and_then(|t| t.trim().parse().ok()) {
                return Paused { child: Some(child), file, pid };
            }
            if child.try_wait().unwrap().is_some() {
                let out = child.wait_with_output().unwrap();
                panic!("{} ended before step {step}: {}", tool.name(), stderr(&out));
            }
            assert!(std::time::Instant::now() < deadline, "{} did not reach step {step}", tool.name());
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Lets the run go on from its step, and waits for it to end.
    pub fn finish(mut self) -> Output {
        fs::remove_file(&self.file).unwrap();
        self.child.take().unwrap().wait_with_output().unwrap()
    }
}

impl Drop for Paused {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One entry of a [`Home::snapshot`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Entry {
    File {
        mode: u32,
        bytes: Vec<u8>,
    },
    Dir {
        mode: u32,
    },
    Link {
        target: PathBuf,
    },
    /// A socket, a FIFO, a device.
    Other {
        mode: u32,
    },
    /// Listed but not readable: an entry the snapshot cannot compare by content still counts.
    Unreadable {
        error: String,
    },
}

impl Entry {
    /// The bytes of a regular file, empty for anything else.
    pub fn bytes(&self) -> &[u8] {
        match self {
            Entry::File { bytes, .. } => bytes,
            _ => &[],
        }
    }
}

/// Every entry under `root`, `root` itself included, in path order.
pub fn snapshot_of(root: &Path) -> Vec<(PathBuf, Entry)> {
    use std::os::unix::fs::PermissionsExt;
    let mut entries: Vec<(PathBuf, Entry)> = walkdir::WalkDir::new(root)
        .into_iter()
        .map(|entry| match entry {
            Err(e) => {
                let path = e.path().map(Path::to_path_buf).unwrap_or_default();
                (path, Entry::Unreadable { error: e.to_string() })
            }
            Ok(e) => {
                let path = e.path().to_path_buf();
                let entry = match e.metadata() {
                    Err(err) => Entry::Unreadable { error: err.to_string() },
                    Ok(meta) => {
                        let mode = meta.permissions().mode();
                        let kind = e.file_type();
                        if kind.is_symlink() {
                            match fs::read_link(&path) {
                                Ok(target) => Entry::Link { target },
                                Err(err) => Entry::Unreadable { error: err.to_string() },
                            }
                        } else if kind.is_dir() {
                            Entry::Dir { mode }
                        } else if kind.is_file() {
                            match fs::read(&path) {
                                Ok(bytes) => Entry::File { mode, bytes },
                                Err(err) => Entry::Unreadable { error: err.to_string() },
                            }
                        } else {
                            Entry::Other { mode }
                        }
                    }
                };
                (path, entry)
            }
        })
        .collect();
    entries.sort();
    entries
}

/// The paths that were added, removed or changed (content, mode, kind, link target) from
/// `before` to `after`, in path order.
pub fn changed_paths(before: &[(PathBuf, Entry)], after: &[(PathBuf, Entry)]) -> Vec<PathBuf> {
    let before: std::collections::BTreeMap<&PathBuf, &Entry> = before.iter().map(|(p, e)| (p, e)).collect();
    let after: std::collections::BTreeMap<&PathBuf, &Entry> = after.iter().map(|(p, e)| (p, e)).collect();
    let mut paths: Vec<PathBuf> = before.keys().chain(after.keys()).map(|p| (*p).clone()).collect();
    paths.sort();
    paths.dedup();
    paths.retain(|p| before.get(p) != after.get(p));
    paths
}

/// `count` sessions `jk-<prefix><n>-conc` in `home`, each with a manifest whose status is
/// `status_of(n)`; the first `indexed` of them also have index rows (newest first, as jackin
/// writes them). Returns their names in order.
pub fn many_sessions(
    home: &Home,
    prefix: &str,
    count: usize,
    indexed: usize,
    status_of: impl Fn(usize) -> &'static str,
) -> Vec<String> {
    let data = home.home.join("data");
    let mut rows = Vec::new();
    let mut names = Vec::new();
    for i in 0..count {
        let id = format!("{prefix}{i:05}");
        let container = format!("jk-{id}-conc");
        let status = status_of(i);
        let updated = format!("2026-08-20T{:02}:{:02}:00Z", i / 60, i % 60);
        fs::create_dir_all(data.join(&container).join(".jackin")).unwrap();
        fs::write(
            data.join(&container).join(".jackin/instance.json"),
            manifest_text(&id, &container, status, &updated),
        )
        .unwrap();
        if i < indexed {
            rows.push(json!({
                "instance_id": id, "container_base": container, "workspace_name": "my-app",
                "workspace_label": "my-app", "workdir": "/workspace/my-app", "role_key": "agent-smith",
                "agent_runtime": "claude", "status": status, "updated_at": updated
            }));
        }
        names.push(container);
    }
    rows.reverse();
    fs::write(
        data.join("instances.json"),
        serde_json::to_string_pretty(&json!({"version": 1, "instances": rows})).unwrap(),
    )
    .unwrap();
    names
}

/// The `decision` record an "Exit and clean up" makes for a clean session (protocol.md), composed
/// by hand, with `discard_unfinished` as given.
pub fn clean_decision(container: &str, instance_id: &str, discard: bool) -> Value {
    let data = json!({
        "container_base": container, "instance_id": instance_id, "workspace_name": "my-app",
        "workspace_label": "my-app", "role_key": "agent-smith", "agent_runtime": "claude",
        "outcome": "clean", "policy": "clean", "reason": "clean session", "verdict": "clean",
        "discard_unfinished": discard, "status": "clean_exited"
    });
    json!({"schema_version": 1, "type": "decision", "data": data})
}

/// This machine's name, as every record the tools write carries it (`uname -n`).
pub fn this_host() -> String {
    let out = std::process::Command::new("uname").arg("-n").output().unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The local branches of `repo`, in git's order.
pub fn branches(repo: &Path) -> Vec<String> {
    git(repo, &["branch", "--format=%(refname:short)"]).lines().map(str::to_owned).collect()
}

/// Every regular file below `dir`.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| e.into_path())
        .collect()
}

/// A manifest exactly as jackin 0.6 writes it (state.md key order, nulls, two-space JSON, no
/// trailing newline).
pub fn manifest_text(id: &str, container: &str, status: &str, updated: &str) -> String {
    format!(
        r#"{{
  "version": 2,
  "instance_id": "{id}",
  "container_base": "{container}",
  "created_at": "2026-08-20T09:00:00Z",
  "updated_at": "{updated}",
  "workspace_name": "my-app",
  "workspace_label": "my-app",
  "workdir": "/workspace/my-app",
  "host_workdir_fingerprint": "sha256:0f1e2d",
  "role_key": "agent-smith",
  "role_display_name": "Agent Smith",
  "agent_runtime": "claude",
  "role_source_git": "https://github.com/example/agent-smith.git",
  "role_source_ref": null,
  "image_tag": "jackin-agent-smith:latest",
  "status": "{status}",
  "last_attach_outcome": null,
  "docker": {{
    "role_container": "{container}",
    "network": "{container}-net"
  }},
  "sessions": [],
  "role_git_sha": "8d3c1f0a9b7e6d5c4b3a29180716f5e4d3c2b1a0",
  "base_image_ref": null,
  "base_image_digest": null,
  "supported_agents": [
    "claude"
  ]
}}"#
    )
}

/// The stand-in for jackin, installed as `jackin` in `dir` (to go on the PATH of what calls
/// jackin). jackin itself cannot be installed where the tests run; the stand-in's header,
/// tests/fixtures/jackin-stand-in, says what it plays and from which part of the specification.
pub fn install_jackin_stand_in(dir: &Path) {
    fs::create_dir_all(dir).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/jackin-stand-in");
    std::os::unix::fs::symlink(script, dir.join("jackin")).unwrap();
}

/// The path of one of the tools, as cargo built it for these tests.
pub fn tool_path(tool: &str) -> &'static Path {
    // `cargo_bin!` reads the path cargo gives the test at build time, so it wants a literal name.
    match tool {
        "jackin-assess" => assert_cmd::cargo::cargo_bin!("jackin-assess"),
        "jackin-keep" => assert_cmd::cargo::cargo_bin!("jackin-keep"),
        "jackin-purge" => assert_cmd::cargo::cargo_bin!("jackin-purge"),
        "jackin-reconcile" => assert_cmd::cargo::cargo_bin!("jackin-reconcile"),
        "jackin-restore" => assert_cmd::cargo::cargo_bin!("jackin-restore"),
        "jackin-move" => assert_cmd::cargo::cargo_bin!("jackin-move"),
        "jackin-notify" => assert_cmd::cargo::cargo_bin!("jackin-notify"),
        "jackin-hosts" => assert_cmd::cargo::cargo_bin!("jackin-hosts"),
        "jackin-idle" => assert_cmd::cargo::cargo_bin!("jackin-idle"),
        other => panic!("{other} is not one of the tools"),
    }
}

/// The directory the tools were built into.
/// The source tree: the Makefile, contrib/ and the docs.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `make install` into `prefix`, with the tools the tests built.
pub fn make_install(prefix: &Path) {
    let out = Command::new("make")
        .arg("-s")
        .arg("install")
        .arg(format!("PREFIX={}", prefix.display()))
        .arg("DESTDIR=")
        .arg(format!("BIN_DIR={}", tools_dir().display()))
        .current_dir(root())
        .output()
        .unwrap();
    assert!(out.status.success(), "make install: {}", stderr(&out));
}

pub fn tools_dir() -> &'static Path {
    tool_path("jackin-assess").parent().unwrap()
}

/// A JSON file, or why it cannot be read: for checks that tally failures instead of panicking.
pub fn try_read_json(path: &Path) -> Result<Value, String> {
    let bytes = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{} is not valid JSON: {e}", path.display()))
}

pub fn read_json(path: &Path) -> Value {
    try_read_json(path).unwrap_or_else(|e| panic!("{e}"))
}

/// Writes `value` as two-space JSON, as jackin does.
pub fn write_json(path: &Path, value: &Value) {
    fs::write(path, serde_json::to_string_pretty(value).unwrap()).unwrap();
}

/// How a lock's holder is said: by program and pid where the system names it (Linux), else
/// "another process" (the portable build, a Mac's: `jackin::base::os::NAMES_LOCK_HOLDERS`).
pub fn holder_as_said(named: &str) -> String {
    if jackin::base::os::NAMES_LOCK_HOLDERS {
        named.to_owned()
    } else {
        "another process".to_owned()
    }
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// 8 characters of jackin's id alphabet, unique per call in this run and across runs.
pub fn unique_id() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    const ALPHABET: &[u8] = b"0123456789abcdefghjkmnpqrstvwxyz";
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    let mut x = nanos
        ^ ((std::process::id() as u64) << 20)
        ^ COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..8)
        .map(|_| {
            let c = ALPHABET[(x % 32) as usize] as char;
            x = (x / 32) ^ x.rotate_left(17);
            c
        })
        .collect()
}

/// The variable that hands a status writer its work: `<home>|<name>,<name>,…`.
const STATUS_WRITER: &str = "JACKIN_STATUS_WRITER";

/// An ignored test, so it never counts as a passing test: a concurrency test runs it in a process
/// of its own ([`status_writer`]) to write `restore_available` to the named sessions through the
/// library, and reads its last line.
#[test]
#[ignore = "a probe: the concurrency tests run it in a process of their own"]
fn status_writer_probe() {
    let spec = std::env::var(STATUS_WRITER).expect("run by status_writer(), with JACKIN_STATUS_WRITER set");
    let (home, names) = spec.split_once('|').unwrap();
    let store =
        jackin::state::store::Store::open(jackin::state::store::Roots { home: home.into(), config_dir: home.into() })
            .unwrap();
    let mut written = 0;
    for name in names.split(',').filter(|n| !n.is_empty()) {
        let name = jackin::state::names::InstanceName::parse(name).unwrap();
        store
            .set_status(&name, jackin::state::model::Status::RestoreAvailable, &jackin::base::time::now_rfc3339())
            .unwrap();
        written += 1;
    }
    println!("status writer: wrote {written}");
}

/// A process of this test binary that runs its `status_writer_probe` over `names` of `home`.
pub fn status_writer(home: &Path, names: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--ignored", "--exact", "common::status_writer_probe", "--nocapture"]);
    cmd.env(STATUS_WRITER, format!("{}|{}", home.display(), names.join(",")));
    cmd
}

/// Whether a [`status_writer`] process ran its probe to the end and wrote `expected` statuses
/// (a probe that was not found runs no test and exits 0: that is not a success).
pub fn status_writer_wrote(out: &Output, expected: usize) -> bool {
    out.status.success() && String::from_utf8_lossy(&out.stdout).contains(&format!("status writer: wrote {expected}\n"))
}

/// The role's source: a repository whose `main` moves on after the launch. Returns the working
/// repository, the bare one beside it (what is fetched from) and the commit at launch.
pub fn role_source(home: &Home, name: &str, image: Option<&str>) -> (PathBuf, PathBuf, String) {
    let source = home.tmp.path().join(name);
    fs::create_dir_all(&source).unwrap();
    git(&source, &["init", "-q", "-b", "main"]);
    git(&source, &["config", "user.email", "r@example.invalid"]);
    git(&source, &["config", "user.name", "Role"]);
    // The label makes each test's image its own: tests that build the same content in parallel
    // would otherwise share one image ID, and removing one test's tag would not remove it.
    let dockerfile =
        format!("FROM {}\nLABEL test.home={:?}\nCOPY marker /marker\n", docker::TEST_IMAGE, home.tmp.path());
    fs::write(source.join("Dockerfile"), dockerfile).unwrap();
    fs::write(source.join("marker"), "launched\n").unwrap();
    git(&source, &["add", "-A"]);
    git(&source, &["commit", "-q", "-m", "role at launch"]);
    let sha = git(&source, &["rev-parse", "HEAD"]);
    let bare = home.tmp.path().join(format!("{name}.git"));
    git(home.tmp.path(), &["clone", "-q", "--bare", source.to_str().unwrap(), bare.to_str().unwrap()]);
    if let Some(image) = image {
        docker::docker(&["build", "-q", "-t", image, source.to_str().unwrap()]);
    }
    fs::write(source.join("marker"), "moved on\n").unwrap();
    git(&source, &["commit", "-q", "-am", "later work"]);
    git(&source, &["push", "-q", bare.to_str().unwrap(), "main"]);
    (source, bare, sha)
}

/// A host repository whose `vendor/lib` is a submodule with its own bare origin (one commit on
/// `main`), committed and pushed. Returns the host repository and the library's origin.
pub fn host_with_submodule(home: &Home) -> (PathBuf, PathBuf) {
    let host = home.host_repo("app");
    let lib_origin = lib_origin(home);
    let add =
        ["-c", "protocol.file.allow=always", "submodule", "add", "-q", lib_origin.to_str().unwrap(), "vendor/lib"];
    git(&host, &add);
    git(&host, &["commit", "-q", "-m", "vendor the library"]);
    git(&host, &["push", "-q", "origin", "main"]);
    (host, lib_origin)
}

/// The library's bare origin, with one commit on `main`.
pub fn lib_origin(home: &Home) -> PathBuf {
    let origin = home.tmp.path().join("lib-origin.git");
    let lib = home.tmp.path().join("lib-work");
    git(home.tmp.path(), &["init", "-q", "--bare", "-b", "main", origin.to_str().unwrap()]);
    git(home.tmp.path(), &["init", "-q", "-b", "main", lib.to_str().unwrap()]);
    git(&lib, &["config", "user.email", "lib@example.invalid"]);
    git(&lib, &["config", "user.name", "Lib"]);
    commit_file(&lib, "lib.rs", "pub fn lib() {}\n", "the library");
    git(&lib, &["push", "-q", origin.to_str().unwrap(), "main"]);
    origin
}

/// A seeded generator for generated test cases: the same seed makes the same cases again, so a
/// failure that prints its seed can be replayed.
pub struct Rng(fastrand::Rng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(fastrand::Rng::with_seed(seed))
    }

    pub fn next(&mut self) -> u64 {
        self.0.u64(..)
    }

    /// A number in `0..n`.
    pub fn below(&mut self, n: usize) -> usize {
        self.0.usize(..n)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Makes the directories of `rel` below `root` one at a time, each relative to the last (no
/// whole path that long can be made), and the file at its end with `bytes`.
pub fn make_deep(root: &Path, rel: &[u8], bytes: &[u8]) {
    use rustix::fs::{mkdirat, open, openat, Mode, OFlags};
    let mut dir = open(root, OFlags::DIRECTORY, Mode::empty()).unwrap();
    let parts: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
    for name in &parts[..parts.len() - 1] {
        let _ = mkdirat(&dir, *name, Mode::from_raw_mode(0o755));
        dir = openat(&dir, *name, OFlags::DIRECTORY, Mode::empty()).unwrap();
    }
    let file = openat(&dir, *parts.last().unwrap(), OFlags::CREATE | OFlags::WRONLY, Mode::from_raw_mode(0o644));
    rustix::io::write(file.unwrap(), bytes).unwrap();
}
