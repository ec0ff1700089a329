//! No program the agent names runs on the host. The agent's container can write the host
//! repository's `.git` (its `config`, `config.worktree`, hooks, `info/attributes`) and its own
//! worktree or clone; git-the-program runs whatever those name (core.fsmonitor, hooks, filters,
//! diff and merge drivers, pagers, editors, credential helpers, gpg, ssh, upload-pack, ext::
//! remotes). The tools read git through libgit2 only. Here every program-naming setting git
//! knows is planted in every place the agent can write, each program a script that leaves a
//! marker of its own name; the real git CLI is run once to show that the plants are live; then
//! each tool runs as an operator runs it (from inside the host repository, the operator's own
//! git configuration clean), and after every run no marker may exist.

use crate::common;

use std::fs;
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use common::docker::{docker, docker_quiet, engine_available, Session, SessionOptions};
use common::records::{records, Assessment, Candidate, Decision, Purged, Restored};
use common::smart_http::SmartHttp;
use common::{commit_file, git, stderr, unique_id, Home, Instance};
use serde_json::Value;

/// Every hook git runs (githooks(5)), planted in `.git/hooks/` and in each `core.hooksPath`.
const HOOKS: &[&str] = &[
    "applypatch-msg",
    "pre-applypatch",
    "post-applypatch",
    "pre-commit",
    "pre-merge-commit",
    "prepare-commit-msg",
    "commit-msg",
    "post-commit",
    "pre-rebase",
    "post-checkout",
    "post-merge",
    "pre-push",
    "pre-receive",
    "update",
    "proc-receive",
    "post-receive",
    "post-update",
    "reference-transaction",
    "push-to-checkout",
    "pre-auto-gc",
    "post-rewrite",
    "sendemail-validate",
    "fsmonitor-watchman",
    "post-index-change",
    "p4-changelist",
    "p4-prepare-changelist",
    "p4-post-changelist",
    "p4-pre-submit",
];

/// The settings that name a program: (marker name, section, key, value). `{}` in the value is
/// the path of the setting's own program.
const PROGRAMS: &[(&str, &str, &str, &str)] = &[
    ("core.fsmonitor", "core", "fsmonitor", "{}"),
    ("core.pager", "core", "pager", "{}"),
    ("core.sshCommand", "core", "sshCommand", "{}"),
    ("core.askPass", "core", "askPass", "{}"),
    ("core.editor", "core", "editor", "{}"),
    ("core.gitProxy", "core", "gitProxy", "{}"),
    ("core.alternateRefsCommand", "core", "alternateRefsCommand", "{}"),
    ("pager.status", "pager", "status", "{}"),
    ("pager.diff", "pager", "diff", "{}"),
    ("pager.log", "pager", "log", "{}"),
    ("pager.show", "pager", "show", "{}"),
    ("pager.branch", "pager", "branch", "{}"),
    ("filter.planted.clean", "filter \"planted\"", "clean", "{}"),
    ("filter.planted.smudge", "filter \"planted\"", "smudge", "{}"),
    ("filter.planted.process", "filter \"planted\"", "process", "{}"),
    ("diff.external", "diff", "external", "{}"),
    ("diff.planted.textconv", "diff \"planted\"", "textconv", "{}"),
    ("diff.planted.command", "diff \"planted\"", "command", "{}"),
    ("difftool.planted.cmd", "difftool \"planted\"", "cmd", "{}"),
    ("merge.planted.driver", "merge \"planted\"", "driver", "{} %O %A %B"),
    ("mergetool.planted.cmd", "mergetool \"planted\"", "cmd", "{}"),
    ("credential.helper", "credential", "helper", "{}"),
    ("gpg.program", "gpg", "program", "{}"),
    ("gpg.ssh.program", "gpg \"ssh\"", "program", "{}"),
    ("gpg.x509.program", "gpg \"x509\"", "program", "{}"),
    ("uploadpack.packObjectsHook", "uploadpack", "packObjectsHook", "{}"),
    ("remote.origin.receivepack", "remote \"origin\"", "receivepack", "{}"),
    ("remote.origin.uploadpack", "remote \"origin\"", "uploadpack", "{}"),
    ("remote.planted.url", "remote \"planted\"", "url", "ext::{}"),
    ("sequence.editor", "sequence", "editor", "{}"),
    ("interactive.diffFilter", "interactive", "diffFilter", "{}"),
    ("browser.planted.cmd", "browser \"planted\"", "cmd", "{}"),
    ("alias.planted", "alias", "planted", "!{}"),
    // `git credential-<name>` for a helper that is not installed resolves to an alias.
    ("alias.credential-osxkeychain", "alias", "credential-osxkeychain", "!{}"),
    ("alias.credential-manager", "alias", "credential-manager", "!{}"),
    ("alias.credential-manager-core", "alias", "credential-manager-core", "!{}"),
    ("alias.credential-libsecret", "alias", "credential-libsecret", "!{}"),
    ("alias.credential-gnome-keyring", "alias", "credential-gnome-keyring", "!{}"),
    ("alias.credential-wincred", "alias", "credential-wincred", "!{}"),
    ("submodule.sub.update", "submodule \"sub\"", "update", "!{}"),
];

/// Settings that make git use the programs above: (section, key, value).
const SWITCHES: &[(&str, &str, &str)] = &[
    ("commit", "gpgSign", "true"),
    ("tag", "gpgSign", "true"),
    ("log", "showSignature", "true"),
    ("protocol \"ext\"", "allow", "always"),
    ("remote \"planted\"", "fetch", "+refs/heads/*:refs/remotes/planted/*"),
    ("diff", "tool", "planted"),
    ("merge", "tool", "planted"),
    ("web", "browser", "planted"),
];

/// What an included config file (`include.path`) names.
const INCLUDED: &[(&str, &str, &str, &str)] = &[
    ("core.fsmonitor", "core", "fsmonitor", "{}"),
    ("credential.helper", "credential", "helper", "{}"),
    ("diff.external", "diff", "external", "{}"),
    ("filter.planted.clean", "filter \"planted\"", "clean", "{}"),
];

/// The attributes that send every file through the planted filter, diff and merge drivers.
const ATTRIBUTES: &str = "* filter=planted diff=planted merge=planted\n";

/// The planted programs and the markers they leave: `<dir>/bin/<scope>-<setting>` creates
/// `<dir>/markers/ran-<scope>-<setting>`, so a marker names the place and the setting.
struct Plants {
    dir: PathBuf,
    planted: usize,
    /// The server a `credential.<url>.helper` is planted for.
    credential_url: String,
}

impl Plants {
    fn new(dir: &Path) -> Plants {
        fs::create_dir_all(dir.join("bin")).unwrap();
        fs::create_dir_all(dir.join("markers")).unwrap();
        Plants { dir: dir.to_path_buf(), planted: 0, credential_url: "https://localhost".into() }
    }

    fn markers(&self) -> PathBuf {
        self.dir.join("markers")
    }

    /// An executable script at `path` that leaves the marker `ran-<name>` and fails.
    fn script(&mut self, path: &Path, name: &str) {
        let marker = self.markers().join(format!("ran-{name}"));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, format!("#!/bin/sh\n: > '{}'\nexit 1\n", marker.display())).unwrap();
        fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
        self.planted += 1;
    }

    /// The program of `<scope>-<setting>`.
    fn program(&mut self, scope: &str, setting: &str) -> String {
        let path = self.dir.join("bin").join(format!("{scope}-{setting}"));
        self.script(&path, &format!("{scope}-{setting}"));
        path.to_str().unwrap().to_owned()
    }

    /// Every hook in `dir`, each leaving `ran-<scope>-<hook>`.
    fn hooks(&mut self, dir: &Path, scope: &str) {
        for hook in HOOKS {
            self.script(&dir.join(hook), &format!("{scope}-{hook}"));
        }
    }

    fn settings(&mut self, scope: &str, settings: &[(&str, &str, &str, &str)]) -> String {
        let mut text = String::new();
        for (marker, section, key, value) in settings {
            let value = value.replace("{}", &self.program(scope, marker));
            text.push_str(&format!("[{section}]\n\t{key} = {value}\n"));
        }
        text
    }

    /// A config file's text that names a program for every setting, with `core.hooksPath` at a
    /// directory of hooks of its own and an included file that names more.
    fn config_text(&mut self, scope: &str) -> String {
        let included = self.dir.join(format!("included-{scope}.config"));
        let included_text = self.settings(&format!("{scope}.included"), INCLUDED);
        fs::write(&included, included_text).unwrap();
        // First, so that the settings below are the ones git uses (the sanity check's markers).
        let mut text = format!("[include]\n\tpath = {}\n", included.display());
        text.push_str(&self.settings(scope, PROGRAMS));
        let helper = self.program(scope, "credential.url.helper");
        text.push_str(&format!("[credential \"{}\"]\n\thelper = {helper}\n", self.credential_url));
        for (section, key, value) in SWITCHES {
            text.push_str(&format!("[{section}]\n\t{key} = {value}\n"));
        }
        let hooks_path = self.dir.join(format!("hooks-{scope}"));
        self.hooks(&hooks_path, &format!("{scope}.hookspath"));
        text.push_str(&format!("[core]\n\thooksPath = {}\n", hooks_path.display()));
        text
    }

    fn append(path: &Path, text: &str) {
        let mut file = fs::OpenOptions::new().append(true).open(path).unwrap();
        file.write_all(text.as_bytes()).unwrap();
    }

    /// The host repository: its `.git/config`, the main worktree's `config.worktree` (with
    /// `extensions.worktreeConfig`), `.git/hooks/`, `info/attributes`.
    fn plant_host(&mut self, host: &Path) {
        git(host, &["config", "extensions.worktreeConfig", "true"]);
        let git_dir = host.join(".git");
        let text = self.config_text("host");
        Self::append(&git_dir.join("config"), &text);
        let text = self.config_text("host.worktree");
        fs::write(git_dir.join("config.worktree"), text).unwrap();
        self.hooks(&git_dir.join("hooks"), "host.hooks");
        fs::create_dir_all(git_dir.join("info")).unwrap();
        fs::write(git_dir.join("info/attributes"), ATTRIBUTES).unwrap();
    }

    /// A worktree session's mount: its `config.worktree` in the host repository.
    fn plant_worktree(&mut self, host: &Path, container: &str, scope: &str) {
        let text = self.config_text(scope);
        fs::write(host.join(".git/worktrees").join(container).join("config.worktree"), text).unwrap();
    }

    /// A clone session's mount: the clone's own `.git/config`, hooks and attributes.
    fn plant_clone(&mut self, clone: &Path, scope: &str) {
        let git_dir = clone.join(".git");
        let text = self.config_text(scope);
        Self::append(&git_dir.join("config"), &text);
        self.hooks(&git_dir.join("hooks"), &format!("{scope}.hooks"));
        fs::create_dir_all(git_dir.join("info")).unwrap();
        fs::write(git_dir.join("info/attributes"), ATTRIBUTES).unwrap();
    }

    /// A submodule checked out in a mount: its own config and hooks (in its git directory).
    fn plant_submodule(&mut self, git_dir: &Path, scope: &str) {
        let text = self.config_text(scope);
        Self::append(&git_dir.join("config"), &text);
        self.hooks(&git_dir.join("hooks"), &format!("{scope}.hooks"));
    }

    /// An `update` command for the submodule in the mount's `.gitmodules` (git itself refuses
    /// `!command` there).
    fn plant_gitmodules_update(&mut self, mount: &Path, scope: &str) {
        let update = self.program(scope, "gitmodules.update");
        Self::append(&mount.join(".gitmodules"), &format!("\tupdate = !{update}\n"));
    }

    /// The markers left so far, by name.
    fn found(&self) -> Vec<String> {
        let mut found: Vec<String> = fs::read_dir(self.markers())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        found.sort();
        found
    }

    fn clear(&self) {
        for entry in fs::read_dir(self.markers()).unwrap() {
            fs::remove_file(entry.unwrap().path()).unwrap();
        }
    }

    /// Fails with the programs that ran during `run`.
    fn assert_none_ran(&self, run: &str) {
        let found = self.found();
        assert!(found.is_empty(), "{run}: planted programs ran on the host: {found:?}");
    }
}

/// The operator's side of a run: a home with a clean git configuration of their own, and the
/// host repository as the directory the tools are started in.
struct Operator {
    home: PathBuf,
    cwd: PathBuf,
}

impl Operator {
    fn new(home: &Home, cwd: &Path) -> Operator {
        let dir = home.tmp.path().join("operator");
        fs::create_dir_all(dir.join(".config")).unwrap();
        fs::write(dir.join(".gitconfig"), "[user]\n\tname = Operator\n\temail = op@example.invalid\n").unwrap();
        Operator { home: dir, cwd: cwd.to_path_buf() }
    }

    /// The environment an operator's command runs in.
    fn apply(&self, cmd: &mut Command) {
        // The docker CLI's contexts stay where they are: only git's configuration is the operator's.
        if std::env::var_os("DOCKER_CONFIG").is_none() {
            if let Some(real) = std::env::var_os("HOME") {
                cmd.env("DOCKER_CONFIG", Path::new(&real).join(".docker"));
            }
        }
        cmd.current_dir(&self.cwd)
            .env("HOME", &self.home)
            .env("XDG_CONFIG_HOME", self.home.join(".config"))
            .env("GIT_TERMINAL_PROMPT", "0")
            .env_remove("GIT_CONFIG_GLOBAL")
            .env_remove("GIT_DIR")
            .env_remove("GIT_WORK_TREE")
            .env_remove("GIT_INDEX_FILE")
            .env_remove("PAGER")
            .env_remove("JACKIN_PAGER");
    }
}

/// A scene with all the plants in place, and the way to run the tools in it.
struct Scene {
    home: Home,
    host: PathBuf,
    plants: Plants,
    operator: Operator,
    runs: usize,
}

impl Scene {
    /// A host repository whose `.gitattributes` (committed and pushed) sends every file through
    /// the planted drivers.
    fn new() -> Scene {
        let home = Home::new();
        let host = home.host_repo("app");
        commit_file(&host, ".gitattributes", ATTRIBUTES, "attributes");
        git(&host, &["push", "-q", "origin", "main"]);
        let plants = Plants::new(&home.tmp.path().join("plants"));
        let operator = Operator::new(&home, &host);
        Scene { home, host, plants, operator, runs: 0 }
    }

    fn worktree_session(&mut self) -> Instance {
        let host = self.host.clone();
        self.home.instance(&unique_id(), move |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")])
    }

    fn clone_session(&mut self) -> Instance {
        let host = self.host.clone();
        self.home.instance(&unique_id(), move |h, c| vec![h.clone_record(c, &host, "/workspace/my-app")])
    }

    /// Plants everything in the host repository and in each session's mount.
    fn plant(&mut self, worktrees: &[&Instance], clones: &[&Instance]) {
        self.plants.plant_host(&self.host);
        for (n, inst) in worktrees.iter().enumerate() {
            self.plants.plant_worktree(&self.host, &inst.container, &format!("worktree{n}"));
        }
        for (n, inst) in clones.iter().enumerate() {
            self.plants.plant_clone(&inst.mount_path(0), &format!("clone{n}"));
        }
    }

    /// The real git CLI, as the operator would run it in `dir`; the markers it left.
    fn git_cli(&self, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Vec<String> {
        let mut cmd = Command::new("git");
        self.operator.apply(&mut cmd);
        cmd.current_dir(dir).args(args).envs(env.iter().copied()).stdin(Stdio::null());
        let _ = cmd.output().expect("git runs");
        self.plants.found()
    }

    /// The plants are live: the real git CLI runs them. In a worktree, `git status` runs its
    /// `config.worktree`'s core.fsmonitor, and `git diff` of a changed file the filter's process
    /// (whose failure ends git), then with that one plant silenced the diff driver's command
    /// (which git prefers to diff.external), and with `--no-ext-diff` the driver's textconv;
    /// `git status` in the host repository and in a clone runs their own core.fsmonitor. The
    /// markers are deleted after each case.
    fn show_plants_are_live(&self, worktree: &Instance, changed_file: &str, clone: Option<&Instance>) {
        let mount = worktree.mount_path(0);
        let no_process = "filter.planted.process=";
        let cases: Vec<(&Path, Vec<&str>, &str)> = vec![
            (&mount, vec!["status", "--short"], "ran-worktree0-core.fsmonitor"),
            (&mount, vec!["diff", changed_file], "ran-worktree0-filter.planted.process"),
            (&mount, vec!["-c", no_process, "diff", changed_file], "ran-worktree0-diff.planted.command"),
            (
                &mount,
                vec!["-c", no_process, "diff", "--no-ext-diff", changed_file],
                "ran-worktree0-diff.planted.textconv",
            ),
            (&self.host, vec!["status", "--short"], "ran-host.worktree-core.fsmonitor"),
        ];
        let clone_path = clone.map(|c| c.mount_path(0));
        let clone_case = clone_path.as_deref().map(|c| (c, vec!["status", "--short"], "ran-clone0-core.fsmonitor"));
        for (dir, args, marker) in cases.into_iter().chain(clone_case) {
            let found = self.git_cli(dir, &args, &[]);
            assert!(
                found.iter().any(|m| m == marker),
                "git {args:?} in {} left {found:?}, not {marker}",
                dir.display()
            );
            self.plants.clear();
        }
    }

    /// Runs `tool` with `args` (and `--format=json`) the way an operator does, without a
    /// terminal, `stdin` its input; checks that no planted program ran, then the exit code.
    fn run(&mut self, tool: &str, args: &[&str], stdin: &str, env: &[(&str, &str)], exit: i32) -> Output {
        let out = self.start(tool, args, stdin, env).wait_with_output().unwrap();
        let run = format!("{tool} {}", args.join(" "));
        self.plants.assert_none_ran(&run);
        assert_eq!(out.status.code(), Some(exit), "{run}: {}", stderr(&out));
        self.runs += 1;
        out
    }

    /// `tool` started as [`Scene::run`] starts it, its input written and closed.
    fn start(&self, tool: &str, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> std::process::Child {
        let mut cmd = self.home.detached(tool);
        self.operator.apply(&mut cmd);
        cmd.args(args).arg("--format=json").envs(env.iter().copied());
        cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        child
    }

    fn assess(&mut self, args: &[&str]) -> Output {
        self.run("jackin-assess", args, "", &[], 0)
    }
}

/// `sockets/<c>/agent.toml`, as a launch writes it.
fn with_agent_toml(home: &Home, inst: &Instance) {
    let dir = home.home.join("sockets").join(&inst.container);
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join("agent.toml"), "role = \"agent-smith\"\nworkdir = \"/workspace\"\nagents = [\"claude\"]\n")
        .unwrap();
}

/// A stopped role container with the mount bound in, as a session that just ended leaves it.
fn ended_session(home: &Home, inst: &Instance, image: Option<&str>) -> Session {
    with_agent_toml(home, inst);
    let binds = vec![(inst.mount_path(0), "/workspace/my-app")];
    Session::launch(&inst.container, SessionOptions { dind: false, running: false, binds, image, ..Default::default() })
}

fn agent_commit(mount: &Path, file: &str, message: &str) -> String {
    git(mount, &["config", "user.email", "agent@example.invalid"]);
    git(mount, &["config", "user.name", "Agent"]);
    commit_file(mount, file, &format!("// {message}\n"), message)
}

/// A submodule `sub` added to `mount` from a repository of its own, with a commit of the agent's
/// in it that no ref of its origin has: (its git directory, the commit).
fn submodule_with_work(home: &Home, mount: &Path) -> (PathBuf, String) {
    let source = home.tmp.path().join(format!("sub-{}", unique_id()));
    fs::create_dir_all(&source).unwrap();
    git(&source, &["init", "-q", "-b", "main"]);
    commit_file(&source, "lib.rs", "pub fn sub() {}\n", "submodule");
    let bare = format!("{}.git", source.display());
    git(home.tmp.path(), &["clone", "-q", "--bare", source.to_str().unwrap(), &bare]);
    git(mount, &["-c", "protocol.file.allow=always", "submodule", "add", "-q", &bare, "sub"]);
    let sub = mount.join("sub");
    let commit = agent_commit(&sub, "work.rs", "submodule work at risk");
    (PathBuf::from(git(&sub, &["rev-parse", "--absolute-git-dir"])), commit)
}

/// Whether a bundle in `quarantine` holds `commit` as one of its tips.
fn bundled(quarantine: &Path, commit: &str) -> bool {
    common::files_under(quarantine)
        .iter()
        .filter(|f| f.extension().is_some_and(|e| e == "bundle"))
        .any(|f| String::from_utf8_lossy(&fs::read(f).unwrap()).contains(commit))
}

fn lines_of(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// The line of `stdout` whose record names `container`.
fn line_of(stdout: &str, container: &str) -> String {
    let line = stdout.lines().find(|l| l.contains(&format!("\"container_base\":\"{container}\"")));
    format!("{}\n", line.unwrap_or_else(|| panic!("no record of {container} in {stdout}")))
}

/// The end of a session and the clean-up after it, each tool run as an operator runs it, on
/// worktree and clone sessions of a host repository whose every program-naming setting, hook,
/// filter and driver is planted: assess (plain, --diff, --disk, --all), keep --policy keep and
/// --policy clean, purge (by name, from keep's decision, --slim, --discard-unfinished), reconcile,
/// restore --list, --plan and a tier 2 resume.
#[test]
fn ending_and_cleaning_up_sessions_runs_no_planted_program() {
    if !engine_available("ending_and_cleaning_up_sessions_runs_no_planted_program") {
        return;
    }
    let mut scene = Scene::new();
    let wt_keep = scene.worktree_session();
    let wt_clean = scene.worktree_session();
    let wt_risk = scene.worktree_session();
    let cl_keep = scene.clone_session();
    let cl_clean = scene.clone_session();
    let cl_risk = scene.clone_session();

    // The agent's work, made before anything is planted.
    fs::write(wt_keep.mount_path(0).join("README.md"), "changed by the agent\n").unwrap();
    fs::write(wt_keep.mount_path(0).join("src/.gitattributes"), ATTRIBUTES).unwrap();
    fs::create_dir_all(wt_keep.mount_path(0).join("target/debug")).unwrap();
    fs::write(wt_keep.mount_path(0).join("target/debug/app"), vec![1u8; 64 * 1024]).unwrap();
    agent_commit(&cl_keep.mount_path(0), "src/feature.rs", "clone feature");
    fs::create_dir_all(cl_keep.mount_path(0).join("target")).unwrap();
    fs::write(cl_keep.mount_path(0).join("target/lib.rlib"), vec![2u8; 64 * 1024]).unwrap();
    let wt_commit = agent_commit(&wt_risk.mount_path(0), "src/risk.rs", "worktree work at risk");
    fs::write(wt_risk.mount_path(0).join("src/main.rs"), "fn main() { changed() }\n").unwrap();
    fs::write(wt_risk.mount_path(0).join("notes.md"), "the plan\n").unwrap();
    let cl_commit = agent_commit(&cl_risk.mount_path(0), "src/risk.rs", "clone work at risk");
    fs::write(cl_risk.mount_path(0).join("README.md"), "stashed change\n").unwrap();
    git(&cl_risk.mount_path(0), &["stash", "-q"]);
    fs::write(cl_risk.mount_path(0).join("src/main.rs"), "fn main() { changed() }\n").unwrap();
    let (wt_sub, wt_sub_commit) = submodule_with_work(&scene.home, &wt_risk.mount_path(0));
    let (cl_sub, cl_sub_commit) = submodule_with_work(&scene.home, &cl_risk.mount_path(0));
    let _keep_sessions = [ended_session(&scene.home, &wt_keep, None), ended_session(&scene.home, &cl_keep, None)];

    scene.plant(&[&wt_keep, &wt_clean, &wt_risk], &[&cl_keep, &cl_clean, &cl_risk]);
    scene.plants.plant_submodule(&wt_sub, "worktree2.sub");
    scene.plants.plant_submodule(&cl_sub, "clone2.sub");
    scene.show_plants_are_live(&wt_keep, "README.md", Some(&cl_keep));
    let found = scene.git_cli(&wt_risk.mount_path(0).join("sub"), &["status", "--short"], &[]);
    assert!(
        found.iter().any(|m| m == "ran-worktree2.sub-core.fsmonitor"),
        "git status in the submodule left {found:?}"
    );
    scene.plants.clear();

    let all = [&wt_keep, &wt_clean, &wt_risk, &cl_keep, &cl_clean, &cl_risk];
    let names: Vec<&str> = all.iter().map(|i| i.container.as_str()).collect();

    // jackin-assess, each way: the verdicts are the work's, the plants change none.
    let out = scene.assess(&names);
    let verdicts: Vec<String> = records::<Assessment>(&out.stdout).into_iter().map(|a| a.verdict).collect();
    assert_eq!(verdicts, ["dirty", "clean", "dirty", "unpushed", "clean", "dirty"], "{}", lines_of(&out));
    let out = scene.assess(&[&["--diff"], names.as_slice()].concat());
    let first: Value = serde_json::from_str(lines_of(&out).lines().next().unwrap()).unwrap();
    let readme = first["data"]["mounts"][0]["files"].as_array().unwrap().iter().find(|f| f["path"] == "README.md");
    let diff = readme.and_then(|f| f["diff"].as_str()).unwrap_or_default();
    assert!(diff.contains("+changed by the agent"), "libgit2's own diff, not diff.external: {first}");
    let out = scene.assess(&[&["--disk"], names.as_slice()].concat());
    let disks: Vec<u64> = records::<Assessment>(&out.stdout).iter().map(|a| a.disk.unwrap().ignored).collect();
    assert!(disks[0] >= 64 * 1024 && disks[3] >= 64 * 1024, "target/ is ignored: {disks:?}");
    let out = scene.assess(&["--all"]);
    assert_eq!(records::<Assessment>(&out.stdout).len(), all.len());

    // jackin-keep --policy keep: the recipe captured, the containers removed, the work kept.
    let input = scene.assess(&[&wt_keep.container, &cl_keep.container]);
    let out = scene.run("jackin-keep", &["--policy", "keep"], &lines_of(&input), &[], 0);
    let outcomes: Vec<String> = records::<Decision>(&out.stdout).into_iter().map(|d| d.outcome).collect();
    assert_eq!(outcomes, ["keep", "keep"]);
    assert_eq!(scene.home.status(&wt_keep.container).0, "preserved_dirty");
    assert_eq!(scene.home.status(&cl_keep.container).0, "preserved_unpushed");
    assert!(docker_quiet(&["inspect", &wt_keep.container]).is_none(), "keep removed the container");

    // jackin-keep --policy clean, then jackin-purge by name and from keep's decision.
    let input = scene.assess(&[&wt_clean.container, &cl_clean.container]);
    let decided = scene.run("jackin-keep", &["--policy", "clean"], &lines_of(&input), &[], 0);
    let outcomes: Vec<String> = records::<Decision>(&decided.stdout).into_iter().map(|d| d.outcome).collect();
    assert_eq!(outcomes, ["clean", "clean"]);
    let out = scene.run("jackin-purge", &[&wt_clean.container], "", &[], 0);
    assert_eq!(records::<Purged>(&out.stdout)[0].quarantine, None, "nothing at risk, nothing saved");
    let decision = line_of(&lines_of(&decided), &cl_clean.container);
    let out = scene.run("jackin-purge", &[], &decision, &[], 0);
    assert_eq!(records::<Purged>(&out.stdout).len(), 1);
    for gone in [&wt_clean, &cl_clean] {
        assert!(!gone.dir.exists() && scene.home.index_row(&gone.container).is_none(), "{} purged", gone.container);
    }

    // jackin-purge --slim on the kept ones: only what git ignores goes.
    let out = scene.run("jackin-purge", &["--slim", &wt_keep.container, &cl_keep.container], "", &[], 0);
    assert!(records::<Purged>(&out.stdout).iter().all(|p| p.slimmed && p.freed_bytes >= 64 * 1024));
    assert!(!wt_keep.mount_path(0).join("target").exists() && !cl_keep.mount_path(0).join("target").exists());
    assert!(wt_keep.mount_path(0).join("README.md").exists());

    // jackin-purge --discard-unfinished on work at risk: quarantined (bundles and files), then gone.
    let out = scene.run("jackin-purge", &["--discard-unfinished", &wt_risk.container, &cl_risk.container], "", &[], 0);
    let commits = [(&wt_commit, &wt_sub_commit), (&cl_commit, &cl_sub_commit)];
    for (purged, (commit, sub_commit)) in records::<Purged>(&out.stdout).iter().zip(commits) {
        let quarantine = PathBuf::from(purged.quarantine.as_deref().expect("the work was quarantined"));
        assert!(bundled(&quarantine, sub_commit), "the submodule's commit {sub_commit} is bundled");
        let receipt = common::state::receipt(&quarantine);
        let bundle = quarantine.join(receipt.mounts[0].bundle.as_deref().expect("a bundle"));
        let heads = fs::read(&bundle).unwrap();
        assert!(String::from_utf8_lossy(&heads).contains(commit.as_str()), "{} bundles {commit}", bundle.display());
        assert!(quarantine.join(receipt.mounts[0].files_dir.as_deref().expect("the dirty files")).is_dir());
    }
    assert!(!wt_risk.dir.exists() && !cl_risk.dir.exists());

    // jackin-reconcile, jackin-restore --list and --plan of the kept sessions.
    scene.run("jackin-reconcile", &[], "", &[], 0);
    let out = scene.run("jackin-restore", &["--list"], "", &[], 0);
    let mut listed: Vec<String> =
        records::<Candidate>(&out.stdout).into_iter().map(|c| c.identity.container_base).collect();
    listed.sort();
    let mut kept = vec![wt_keep.container.clone(), cl_keep.container.clone()];
    kept.sort();
    assert_eq!(listed, kept);
    let out = scene.run("jackin-restore", &[&wt_keep.container, "--plan"], "", &[], 0);
    let plan = records::<Restored>(&out.stdout).remove(0);
    assert_eq!(plan.tier, Some(2), "the image is there, the container is not: {plan:?}");
    // And a resume of the clone session: its clone checked, its container recreated.
    let out = scene.run("jackin-restore", &[&cl_keep.container, "--yes"], "", &[], 0);
    assert_eq!(records::<Restored>(&out.stdout)[0].tier, Some(2));
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &cl_keep.container]), "true");
    eprintln!("planted {} programs; ran {} tools; none ran a planted program", scene.plants.planted, scene.runs);
}

/// A kept-to-be worktree session whose role image exists only as the source at its recorded
/// commit, served over https by a server that asks for credentials, everything planted (the
/// credential helpers for that server too) and shown live.
struct Tier3 {
    scene: Scene,
    inst: Instance,
    image: String,
    server: SmartHttp,
    url: String,
    /// The role image and the session's Docker side, removed when the test ends however it ends
    /// (bound in this order, the container goes first).
    _image: RemovedImage,
    _session: Session,
}

/// An image tag that is removed when the test ends, however it ends (a resume builds it again).
struct RemovedImage(String);

impl Drop for RemovedImage {
    fn drop(&mut self) {
        let _ = docker_quiet(&["rmi", "-f", &self.0]);
    }
}

fn tier_3_scene() -> Tier3 {
    let mut scene = Scene::new();
    let inst = scene.worktree_session();
    let image = format!("jackin-test-role-{}:latest", inst.id);
    let removed = RemovedImage(image.clone());
    let (_, bare, sha) = common::role_source(&scene.home, "role-src", Some(&image));
    let server = SmartHttp::serve_tls_with_password(scene.home.tmp.path(), Some(("agent", "s3cret")));
    let certificate = server.certificate.clone().unwrap();
    let url = server.url_by_name(bare.file_name().unwrap().to_str().unwrap());
    scene.home.edit_manifest(&inst.container, |m| {
        m["role_source_git"] = Value::from(url.as_str());
        m["role_git_sha"] = Value::from(sha.as_str());
        m["image_tag"] = Value::from(image.as_str());
    });
    let session = ended_session(&scene.home, &inst, Some(&image));
    fs::write(inst.mount_path(0).join("README.md"), "changed by the agent\n").unwrap();
    fs::write(inst.mount_path(0).join("src/.gitattributes"), ATTRIBUTES).unwrap();

    scene.plants.credential_url = format!("https://localhost:{}", server.port);
    scene.plant(&[&inst], &[]);
    scene.show_plants_are_live(&inst, "README.md", None);
    // The planted credential helpers are live too: git asks them for the role source's server.
    let cert = certificate.to_str().unwrap();
    let found = scene.git_cli(&scene.host, &["ls-remote", &url], &[("GIT_SSL_CAINFO", cert)]);
    assert!(found.contains(&"ran-host-credential.helper".to_owned()), "git ls-remote ran: {found:?}");
    assert!(found.contains(&"ran-host-credential.url.helper".to_owned()), "git ls-remote ran: {found:?}");
    scene.plants.clear();
    Tier3 { scene, inst, image, server, url, _image: removed, _session: session }
}

/// A resume at tier 3 fetches the role's source over https from a server that asks for
/// credentials, with `credential.helper` (and every other setting) planted in the host
/// repository's config and the tools started inside it: the planted helper never runs; with no
/// helper of the operator's the resume says so (exit 6); with the operator's own helper in their
/// global config it resumes.
#[test]
fn a_tier_3_resume_runs_no_planted_program_and_no_planted_credential_helper() {
    if !engine_available("a_tier_3_resume_runs_no_planted_program_and_no_planted_credential_helper") {
        return;
    }
    let Tier3 { mut scene, inst, image, server, url, _image, _session } = tier_3_scene();
    let certificate = server.certificate.clone().unwrap();
    let cert = certificate.to_str().unwrap();
    let tls = [("SSL_CERT_FILE", cert)];
    let input = scene.assess(&[&inst.container]);
    let out = scene.run("jackin-keep", &["--policy", "keep"], &lines_of(&input), &[], 0);
    assert_eq!(records::<Decision>(&out.stdout)[0].outcome, "keep");
    docker(&["rmi", "-f", &image]);
    scene.run("jackin-reconcile", &[], "", &[], 0);
    let out = scene.run("jackin-restore", &["--list"], "", &tls, 0);
    assert_eq!(records::<Candidate>(&out.stdout)[0].tier, Some(3));
    let out = scene.run("jackin-restore", &[&inst.container, "--plan"], "", &tls, 0);
    assert_eq!(records::<Restored>(&out.stdout)[0].tier, Some(3));

    // The operator's global config names no helper: the planted one is the only one there is.
    // A fetch that fails is exit 4 (unavailable): nothing is created before it.
    let out = scene.run("jackin-restore", &[&inst.container, "--yes"], "", &tls, 4);
    assert!(stderr(&out).contains(&format!("{url} asks for credentials (HTTP 401)")), "{}", stderr(&out));
    assert!(docker_quiet(&["inspect", &inst.container]).is_none(), "nothing was started");

    // The operator's own helper, in their global config: the resume fetches, builds and starts.
    let store = scene.operator.home.join("git-credentials");
    fs::write(&store, format!("https://agent:s3cret@localhost:{}\n", server.port)).unwrap();
    let global = format!("[credential]\n\thelper = store --file={}\n", store.display());
    Plants::append(&scene.operator.home.join(".gitconfig"), &global);
    let out = scene.run("jackin-restore", &[&inst.container, "--yes"], "", &tls, 0);
    assert_eq!(records::<Restored>(&out.stdout)[0].tier, Some(3));
    assert_eq!(docker(&["exec", &inst.container, "cat", "/marker"]), "launched");
    assert!(server.refused.load(std::sync::atomic::Ordering::SeqCst) >= 2, "the server asked for credentials");
    eprintln!("planted {} programs; ran {} tools; none ran a planted program", scene.plants.planted, scene.runs);
    docker(&["rm", "-f", &inst.container]);
    docker(&["rmi", "-f", &image]);
}

/// The one program the exit dialog starts, the pager of Inspect, is the operator's (`PAGER`
/// here), never the repository's core.pager or pager.*: on a real terminal, with everything
/// planted, Inspect pages libgit2's diff through the operator's pager and no planted program runs.
#[test]
fn the_exit_dialog_pages_through_the_operators_pager_and_runs_no_planted_program() {
    if !engine_available("the_exit_dialog_pages_through_the_operators_pager_and_runs_no_planted_program") {
        return;
    }
    let mut scene = Scene::new();
    let inst = scene.worktree_session();
    let commit = agent_commit(&inst.mount_path(0), "src/feature.rs", "agent feature");
    fs::write(inst.mount_path(0).join("README.md"), "changed by the agent\n").unwrap();
    scene.plant(&[&inst], &[]);
    scene.show_plants_are_live(&inst, "README.md", None);

    let input = scene.assess(&[&inst.container]);
    let input_path = scene.home.tmp.path().join("keep-in.jsonl");
    let output_path = scene.home.tmp.path().join("keep-out.jsonl");
    fs::write(&input_path, lines_of(&input)).unwrap();
    let paged = scene.home.tmp.path().join("paged.txt");
    let keep = common::tool_path("jackin-keep");
    let mut cmd = Command::new("sh");
    // The pty starts with no size; stty gives it one before jackin-keep starts.
    cmd.arg("-c").arg("stty rows 30 cols 100 </dev/tty && exec \"$0\" \"$@\"").arg(keep);
    cmd.arg("--home").arg(&scene.home.home).arg("--config-dir").arg(&scene.home.config);
    cmd.args(["--policy=ask", "--format=json"]);
    scene.operator.apply(&mut cmd);
    cmd.env("TERM", "xterm-256color").env("PAGER", format!("cat > '{}'", paged.display()));
    cmd.env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR").env_remove("NO_COLOR");
    cmd.stdin(fs::File::open(&input_path).unwrap()).stdout(fs::File::create(&output_path).unwrap());
    let mut pty = rexpect::session::spawn_command(cmd, Some(30_000)).unwrap();
    pty.exp_string("unfinished").unwrap();
    pty.send("\r").unwrap();
    pty.flush().unwrap();
    pty.exp_string("Inspect").unwrap();
    pty.send("i").unwrap();
    pty.send("\r").unwrap();
    pty.flush().unwrap();
    pty.exp_string("Inspect").unwrap();
    pty.send("2").unwrap();
    pty.send("\r").unwrap();
    pty.flush().unwrap();
    let rest = pty.exp_eof().unwrap();
    let status = pty.process.wait().unwrap();
    scene.plants.assert_none_ran("jackin-keep --policy=ask, Inspect, Exit and keep");
    assert_eq!(status, rexpect::process::WaitStatus::Exited(pty.process.child_pid, 0), "{rest}");
    let paged = fs::read_to_string(&paged).expect("the operator's pager ran");
    assert!(paged.contains("+changed by the agent"), "libgit2's diff: {paged}");
    assert!(paged.contains(&commit[..7]), "the unpushed commit: {paged}");
    let decisions = records::<Decision>(&fs::read(&output_path).unwrap());
    assert_eq!(decisions.iter().map(|d| d.outcome.as_str()).collect::<Vec<_>>(), ["keep"]);
}

/// A worktree session with a submodule holding a commit of the agent's, everything planted, and
/// in the mount's `.gitmodules` an `update = !command` (which git itself refuses there):
/// (the scene, the session, the submodule's commit).
fn gitmodules_scene() -> (Scene, Instance, String) {
    let mut scene = Scene::new();
    let inst = scene.worktree_session();
    agent_commit(&inst.mount_path(0), "src/work.rs", "worktree work");
    let (sub, sub_commit) = submodule_with_work(&scene.home, &inst.mount_path(0));
    scene.plant(&[&inst], &[]);
    scene.plants.plant_submodule(&sub, "worktree0.sub");
    scene.plants.plant_gitmodules_update(&inst.mount_path(0), "worktree0");
    fs::write(inst.mount_path(0).join("README.md"), "changed by the agent\n").unwrap();
    scene.show_plants_are_live(&inst, "README.md", None);
    (scene, inst, sub_commit)
}

/// A submodule's `update = !command` in `.gitmodules` runs nothing either. libgit2 refuses the
/// file, so the mount cannot be verified (`unknown`): kept by the clean policy, and a discard
/// moves the whole work tree into the quarantine.
#[test]
fn a_gitmodules_update_command_runs_nothing_and_the_mount_is_unknown() {
    if !engine_available("a_gitmodules_update_command_runs_nothing_and_the_mount_is_unknown") {
        return;
    }
    let (mut scene, inst, _) = gitmodules_scene();
    let out = scene.assess(&[&inst.container]);
    let assessment = records::<Assessment>(&out.stdout).remove(0);
    assert_eq!(assessment.verdict, "unknown", "{assessment:?}");
    assert!(assessment.summary.starts_with("cannot verify: "), "{assessment:?}");
    scene.assess(&["--diff", &inst.container]);
    let out = scene.run("jackin-keep", &["--policy", "clean"], &lines_of(&out), &[], 0);
    assert_eq!(records::<Decision>(&out.stdout)[0].outcome, "keep", "what cannot be read is kept");
    let out = scene.run("jackin-purge", &["--discard-unfinished", &inst.container], "", &[], 0);
    let quarantine = PathBuf::from(records::<Purged>(&out.stdout)[0].quarantine.clone().expect("quarantined"));
    assert!(common::files_under(&quarantine).iter().any(|f| f.ends_with("tree/sub/work.rs")), "the tree moved whole");
}

/// Whether `commit` is in `quarantine`: a tip of one of its bundles, or an object of a git
/// directory in it.
fn saved_in(quarantine: &Path, commit: &str) -> bool {
    let id = git2::Oid::from_str(commit).unwrap();
    bundled(quarantine, commit)
        || walkdir::WalkDir::new(quarantine)
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_dir() && e.path().join("objects").is_dir() && e.path().join("HEAD").is_file())
            .any(|e| git2::Repository::open_bare(e.path()).is_ok_and(|r| r.find_commit(id).is_ok()))
}

/// A discard of a worktree mount that cannot be read (here: the `.gitmodules` above) moves the
/// work tree into the quarantine and bundles the scratch branch; a submodule's git directory lives
/// in the host repository, `<host>/.git/worktrees/<c>/modules/<name>`, and went with the
/// worktree's registration at step 5. It is moved into the quarantine too now.
#[test]
fn a_discard_of_an_unreadable_worktree_mount_keeps_its_submodules_commits() {
    if !engine_available("a_discard_of_an_unreadable_worktree_mount_keeps_its_submodules_commits") {
        return;
    }
    let (mut scene, inst, sub_commit) = gitmodules_scene();
    let out = scene.run("jackin-purge", &["--discard-unfinished", &inst.container], "", &[], 0);
    let quarantine = PathBuf::from(records::<Purged>(&out.stdout)[0].quarantine.clone().expect("quarantined"));
    assert!(saved_in(&quarantine, &sub_commit), "the submodule's commit {sub_commit} is nowhere in the quarantine");
}

/// A session whose `sockets/<c>/agent.toml` the agent replaced with a symbolic link to a file of
/// the operator's, and whose stopped container is there to capture the recipe from.
fn agent_toml_link_scene() -> (Scene, Instance, Session, &'static str) {
    const SECRET: &str = "operator-private-key-material";
    let mut scene = Scene::new();
    let inst = scene.worktree_session();
    let session = ended_session(&scene.home, &inst, None);
    let private = scene.operator.home.join(".ssh/id_ed25519");
    fs::create_dir_all(private.parent().unwrap()).unwrap();
    fs::write(&private, format!("{SECRET}\n")).unwrap();
    let agent_toml = scene.home.home.join("sockets").join(&inst.container).join("agent.toml");
    fs::remove_file(&agent_toml).unwrap();
    std::os::unix::fs::symlink(&private, &agent_toml).unwrap();
    (scene, inst, session, SECRET)
}

/// `sockets/<c>/agent.toml` is the agent's to write. The recipe capture (keep, and reconcile for
/// a live session) read it through a symbolic link: the operator's file it named was copied into
/// the tools' continuity file, and a resume wrote it back as `agent.toml`, where the container
/// reads it. Only a regular file is read now (state/store: `read_agent_toml`).
#[test]
fn agent_toml_is_never_read_through_a_link() {
    if !engine_available("agent_toml_is_never_read_through_a_link") {
        return;
    }
    let (scene, inst, _session, secret) = agent_toml_link_scene();
    let input = scene.start("jackin-assess", &[&inst.container], "", &[]).wait_with_output().unwrap();
    let _ = scene.start("jackin-keep", &["--policy", "keep"], &lines_of(&input), &[]).wait_with_output().unwrap();
    let _ = scene.start("jackin-restore", &[&inst.container, "--yes"], "", &[]).wait_with_output().unwrap();
    let holding: Vec<PathBuf> = common::files_under(&scene.home.home)
        .into_iter()
        .filter(|f| fs::read(f).is_ok_and(|b| String::from_utf8_lossy(&b).contains(secret)))
        .collect();
    assert!(holding.is_empty(), "the operator's file was read through agent.toml into {holding:?}");
}

/// The same read on a FIFO (or `/dev/zero`, unbounded) never returned: the exit hook's
/// `jackin-keep` hung on a session whose `agent.toml` the agent made a FIFO.
#[test]
fn a_fifo_as_agent_toml_does_not_hang_keep() {
    if !engine_available("a_fifo_as_agent_toml_does_not_hang_keep") {
        return;
    }
    let mut scene = Scene::new();
    let inst = scene.worktree_session();
    let _session = ended_session(&scene.home, &inst, None);
    let agent_toml = scene.home.home.join("sockets").join(&inst.container).join("agent.toml");
    fs::remove_file(&agent_toml).unwrap();
    assert!(Command::new("mkfifo").arg(&agent_toml).status().unwrap().success());
    let input = scene.assess(&[&inst.container]);
    let mut keep = scene.start("jackin-keep", &["--policy", "keep"], &lines_of(&input), &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while keep.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let finished = keep.try_wait().unwrap();
    if finished.is_none() {
        let _ = keep.kill();
        let _ = keep.wait();
    }
    assert!(finished.is_some(), "jackin-keep still runs after 30 s, blocked on the FIFO agent.toml");
}

/// The operator's own `credential.helper = <name>` runs as `git credential-<name>` (git2's
/// CredentialHelper, through `sh -c`). When `git-credential-<name>` is not installed (a dotfile's
/// `osxkeychain` on Linux, a removed credential manager), git resolves `credential-<name>` as an
/// alias of the repository around its working directory: started in the operator's directory, the
/// host repository, it ran the alias the agent planted there. It is started from `/` now.
#[test]
fn the_operators_credential_helper_never_runs_an_alias_of_the_repository() {
    if !engine_available("the_operators_credential_helper_never_runs_an_alias_of_the_repository") {
        return;
    }
    let Tier3 { mut scene, inst, image, server, url: _, _image, _session } = tier_3_scene();
    let certificate = server.certificate.clone().unwrap();
    let tls = [("SSL_CERT_FILE", certificate.to_str().unwrap())];
    let input = scene.assess(&[&inst.container]);
    scene.run("jackin-keep", &["--policy", "keep"], &lines_of(&input), &[], 0);
    docker(&["rmi", "-f", &image]);
    let installed = Command::new("sh").args(["-c", "command -v git-credential-osxkeychain"]).output().unwrap();
    assert!(!installed.status.success(), "git-credential-osxkeychain is installed here: the alias cannot apply");
    Plants::append(&scene.operator.home.join(".gitconfig"), "[credential]\n\thelper = osxkeychain\n");
    let out = scene.start("jackin-restore", &[&inst.container, "--yes"], "", &tls).wait_with_output().unwrap();
    scene.plants.assert_none_ran(&format!("jackin-restore {} --yes", inst.container));
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("asks for credentials (HTTP 401)"), "the helper was asked: {}", stderr(&out));
}
