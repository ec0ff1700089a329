//! `jackin-restore --quarantined` and `--recover`: discarded work back with one command, byte for
//! byte, from quarantines made by real discards of real sessions.

use crate::common;

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::docker::engine_available;
use common::{commit_file, git, stderr, unique_id, Home, Instance};
use serde_json::Value;

fn restore(home: &Home, args: &[&str]) -> Output {
    home.cmd("jackin-restore").args(args).arg("--format=json").output().unwrap()
}

fn lines(out: &Output) -> Vec<Value> {
    String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str::<Value>(l).unwrap()).collect()
}

/// Every file of a work tree but `.git`: (path bytes, what it is: the bytes, `link -> target`,
/// and the executable bit).
fn work_tree(root: &Path) -> Vec<(Vec<u8>, String, bool)> {
    let mut found = Vec::new();
    for entry in walkdir::WalkDir::new(root).min_depth(1).sort_by_file_name() {
        let entry = entry.unwrap();
        let rel = entry.path().strip_prefix(root).unwrap();
        if rel.starts_with(".git") || entry.file_type().is_dir() {
            continue;
        }
        let meta = fs::symlink_metadata(entry.path()).unwrap();
        let what = if meta.file_type().is_symlink() {
            format!("link -> {}", fs::read_link(entry.path()).unwrap().display())
        } else {
            String::from_utf8_lossy(&fs::read(entry.path()).unwrap()).into_owned()
        };
        found.push((rel.as_os_str().as_bytes().to_vec(), what, meta.permissions().mode() & 0o111 != 0));
    }
    found
}

fn refs_of(repo: &Path) -> Vec<(String, String)> {
    git(repo, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .map(|l| {
            let (name, id) = l.split_once(' ').unwrap();
            (name.to_owned(), id.to_owned())
        })
        .collect()
}

/// A worktree session: a dirty tracked file, an untracked file with a name that is not UTF-8 and
/// the exec bit, a symlink, a deleted file, two commits.
fn worktree_session(home: &mut Home, host: &Path) -> (Instance, Vec<String>) {
    let host = host.to_path_buf();
    let inst = home.instance(&unique_id(), move |h, c| vec![h.worktree_record(c, &host, "/workspace/app")]);
    let wt = inst.mount_path(0);
    let commits = vec![
        commit_file(&wt, "src/feature.rs", "fn feature() {}\n", "add the feature"),
        commit_file(&wt, "src/feature.rs", "fn feature() -> u8 { 1 }\n", "feature returns one"),
    ];
    fs::write(wt.join("README.md"), "changed by the agent\n").unwrap();
    let tool = wt.join(OsStr::from_bytes(b"tool-\xff.sh"));
    fs::write(&tool, "#!/bin/sh\necho hi\n").unwrap();
    fs::set_permissions(&tool, fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("src/feature.rs", wt.join("latest")).unwrap();
    fs::remove_file(wt.join("src/main.rs")).unwrap();
    (inst, commits)
}

/// The worktree session above, discarded by `jackin-purge --discard-unfinished`: its work tree
/// as it was (`before`) and its commits.
struct Discarded {
    home: Home,
    host: PathBuf,
    inst: Instance,
    commits: Vec<String>,
    before: Vec<(Vec<u8>, String, bool)>,
}

fn discarded_worktree_session() -> Discarded {
    let mut home = Home::new();
    let host = home.host_repo("app");
    let (inst, commits) = worktree_session(&mut home, &host);
    let before = work_tree(&inst.mount_path(0));
    let purged = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(purged.status.code(), Some(0), "{}", stderr(&purged));
    assert!(!inst.dir.exists());
    Discarded { home, host, inst, commits, before }
}

#[test]
fn a_discarded_worktree_session_comes_back_byte_for_byte() {
    if !engine_available("a_discarded_worktree_session_comes_back_byte_for_byte") {
        return;
    }
    let Discarded { home, host, inst, commits, before } = discarded_worktree_session();

    let listed = restore(&home, &["--quarantined"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let listed = lines(&listed);
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["type"], "quarantine");
    let q = &listed[0]["data"];
    assert_eq!(q["container_base"], inst.container.as_str());
    assert_eq!((q["recoverable"].as_bool(), q["repositories"][0]["commits"].as_u64()), (Some(true), Some(2)));
    assert_eq!(q["repositories"][0]["files"], 3, "README.md, the tool, the link: {q}");

    // A dry run says what it would make and makes nothing.
    let snapshot = common::snapshot_of(home.tmp.path());
    let planned = restore(&home, &["--recover", &inst.id, "--dry-run"]);
    assert_eq!(planned.status.code(), Some(0), "{}", stderr(&planned));
    let planned = lines(&planned);
    assert_eq!(planned[0]["data"]["dry_run"], true);
    assert_eq!(common::snapshot_of(home.tmp.path()), snapshot, "a dry run changed nothing");

    let out = restore(&home, &["--recover", &inst.container]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recovered = &lines(&out)[0]["data"];
    let branch = format!("refs/jackin/recovered/{}", inst.container);
    assert_eq!(recovered["branch"], branch.as_str());
    let worktree = PathBuf::from(recovered["worktree"].as_str().unwrap());
    assert_eq!(worktree, host.with_file_name(format!("app-recovered-{}", inst.container)));
    // Every commit with its id; the saved refs beside the branch.
    assert_eq!(git(&host, &["rev-parse", &branch]), commits[1]);
    let refs = refs_of(&host);
    let saved = format!("refs/jackin/recovered/{}-saved/heads/jackin/scratch/{}", inst.container, inst.container);
    assert!(refs.contains(&(saved, commits[1].clone())), "{refs:?}");
    assert_eq!(git(&worktree, &["rev-list", "--reverse", "HEAD", "--not", "origin/main"]), commits.join("\n"));
    // No branch of the host holds it (jackin's exit check counts every local branch, issue 65):
    // the worktree's HEAD is detached at it, and its short name still finds it.
    let branches = git(&host, &["for-each-ref", "--format=%(refname)", "refs/heads/"]);
    assert!(!branches.contains("jackin/recover"), "{branches}");
    assert!(git_fails(&worktree, &["symbolic-ref", "-q", "HEAD"]), "a detached HEAD");
    assert_eq!(git(&host, &["rev-parse", &format!("jackin/recovered/{}", inst.container)]), commits[1]);
    // The files as they were: bytes, names, modes, links; the deleted file deleted.
    assert_eq!(work_tree(&worktree), before);

    // A second recover refuses and changes nothing.
    let snapshot = common::snapshot_of(home.tmp.path());
    let again = restore(&home, &["--recover", &inst.container]);
    assert_eq!(again.status.code(), Some(3), "{}", stderr(&again));
    assert!(stderr(&again).contains("exists already"), "{}", stderr(&again));
    assert_eq!(common::snapshot_of(home.tmp.path()), snapshot);
    // The quarantine stays until it expires.
    assert_eq!(home.quarantines().len(), 1);
}

/// A clone session's local branch, tag and stash come back under the recovered branch's
/// `-saved/` refs with their ids, and its work tree in a new worktree of the repository it was
/// cloned from.
#[test]
fn a_discarded_clone_session_comes_back_with_its_branches_tags_and_stash() {
    if !engine_available("a_discarded_clone_session_comes_back_with_its_branches_tags_and_stash") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let h = host.clone();
    let inst = home.instance(&unique_id(), move |home, c| vec![home.clone_record(c, &h, "/workspace/app")]);
    let clone = inst.mount_path(0);
    let on_main = commit_file(&clone, "main-work.rs", "main\n", "work on main");
    git(&clone, &["checkout", "-q", "-b", "feature"]);
    let feature = commit_file(&clone, "feature.rs", "feature\n", "a feature");
    git(&clone, &["tag", "v1-experiment"]);
    fs::write(clone.join("stashed.txt"), "stashed\n").unwrap();
    git(&clone, &["stash", "push", "-q", "-u", "-m", "half done"]);
    let stash = git(&clone, &["rev-parse", "refs/stash"]);
    git(&clone, &["checkout", "-q", "main"]);
    fs::write(clone.join("README.md"), "dirty in the clone\n").unwrap();
    let before = work_tree(&clone);
    let purged = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(purged.status.code(), Some(0), "{}", stderr(&purged));

    let out = restore(&home, &["--recover", &inst.id]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recovered = &lines(&out)[0]["data"];
    let prefix = format!("refs/jackin/recovered/{}-saved/", inst.container);
    let refs = refs_of(&host);
    for (saved, id) in [("heads/main", &on_main), ("heads/feature", &feature), ("stashes/stash-0", &stash)] {
        assert!(refs.contains(&(format!("{prefix}{saved}"), id.clone())), "{saved}: {refs:?}");
    }
    let tag = refs.iter().find(|(name, _)| *name == format!("{prefix}tags/v1-experiment")).expect("the tag");
    assert_eq!(git(&host, &["rev-parse", &format!("{}^{{commit}}", tag.0)]), feature);
    let worktree = PathBuf::from(recovered["worktree"].as_str().unwrap());
    assert_eq!(git(&worktree, &["rev-parse", "HEAD"]), on_main, "on the commit the clone was on");
    assert_eq!(work_tree(&worktree), before);
}

/// With the host repository moved away, a recover needs `--into DIR` (exit 3, nothing changed
/// without it), and with it makes a new repository there holding the commits and the files.
#[test]
fn a_quarantine_whose_host_repository_is_gone_needs_into() {
    if !engine_available("a_quarantine_whose_host_repository_is_gone_needs_into") {
        return;
    }
    let Discarded { home, host, inst, commits, before } = discarded_worktree_session();
    fs::rename(&host, home.tmp.path().join("app-moved")).unwrap();

    let listed = lines(&restore(&home, &["--quarantined"]));
    assert_eq!(listed[0]["data"]["recoverable"], false);
    let snapshot = common::snapshot_of(home.tmp.path());
    let refused = restore(&home, &["--recover", &inst.container]);
    assert_eq!(refused.status.code(), Some(3), "{}", stderr(&refused));
    assert!(stderr(&refused).contains("--into"), "{}", stderr(&refused));
    assert_eq!(common::snapshot_of(home.tmp.path()), snapshot);

    let into = home.tmp.path().join("rescued");
    let out = restore(&home, &["--recover", &inst.container, "--into", into.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let branch = format!("refs/heads/jackin/recovered/{}", inst.container);
    assert_eq!(git(&into, &["rev-parse", &branch]), commits[1]);
    assert_eq!(git(&into, &["symbolic-ref", "HEAD"]), branch);
    assert_eq!(git(&into, &["show", &format!("{}:src/feature.rs", commits[1])]), "fn feature() -> u8 { 1 }");
    // Only the saved files: the unchanged ones are in the history the new repository lacks.
    let changed: [&[u8]; 3] = [b"README.md", b"latest", b"tool-\xff.sh"];
    let saved: Vec<_> = before.into_iter().filter(|(name, _, _)| changed.contains(&name.as_slice())).collect();
    assert_eq!(work_tree(&into), saved);
    let notes = lines(&out)[0]["data"]["notes"].to_string();
    assert!(notes.contains("git fetch"), "{notes}");
}

/// git's output as bytes (names that are not UTF-8 stay as they are), which must succeed.
/// Whether git fails with `args` in `dir` (a question whose answer is the exit code).
fn git_fails(dir: &Path, args: &[&str]) -> bool {
    !std::process::Command::new("git").args(args).current_dir(dir).output().unwrap().status.success()
}

fn git_bytes(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = std::process::Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?} in {}: {}", dir.display(), String::from_utf8_lossy(&out.stderr));
    out.stdout
}

/// What `git diff --cached`, `git diff`, `git status` and the index say in a work tree: a
/// recovered worktree must say the same as the session's did.
fn staging_of(dir: &Path) -> Vec<(&'static str, Vec<u8>)> {
    [
        ("diff --cached", &["diff", "--cached", "--binary"][..]),
        ("diff", &["diff", "--binary"][..]),
        ("status", &["status", "--porcelain", "-z", "--untracked-files=all"][..]),
        ("ls-files -s", &["ls-files", "-s", "-z"][..]),
    ]
    .into_iter()
    .map(|(what, args)| (what, git_bytes(dir, args)))
    .collect()
}

/// Staged versions come back staged: a new file staged and then removed (`AD`, under a name
/// that is not UTF-8 too), a file staged and edited again (`MM`), a link staged and pointed
/// elsewhere (`AM`), an executable staged and its bit taken off (`AM`), a new file staged as it
/// is (`A `), a staged deletion (`D `) and a staged rename edited again (`RM`). In the recovered
/// worktree the index holds what the session's held and the work tree what its work tree held,
/// so `git diff --cached`, `git diff` and `git status` say what they said in the session. A dry
/// run says how many and changes nothing.
#[test]
fn staged_versions_come_back_staged() {
    if !engine_available("staged_versions_come_back_staged") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let h = host.clone();
    let inst = home.instance(&unique_id(), move |home, c| vec![home.worktree_record(c, &h, "/workspace/app")]);
    let wt = inst.mount_path(0);
    commit_file(&wt, "doomed.txt", "to be deleted\n", "a file the agent deletes later");
    let stage = |name: &OsStr| {
        let out = std::process::Command::new("git").arg("add").arg("--").arg(name).current_dir(&wt).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    };
    for name in [OsStr::new("only-staged.rs"), OsStr::from_bytes(b"caf\xe9-staged.txt")] {
        fs::write(wt.join(name), "fn staged_only() {}\n").unwrap();
        stage(name);
        fs::remove_file(wt.join(name)).unwrap();
    }
    fs::write(wt.join("README.md"), "staged version\n").unwrap();
    stage(OsStr::new("README.md"));
    fs::write(wt.join("README.md"), "edited after staging\n").unwrap();
    std::os::unix::fs::symlink("README.md", wt.join("link")).unwrap();
    stage(OsStr::new("link"));
    fs::remove_file(wt.join("link")).unwrap();
    std::os::unix::fs::symlink("src/entry.rs", wt.join("link")).unwrap();
    fs::write(wt.join("tool.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(wt.join("tool.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    stage(OsStr::new("tool.sh"));
    fs::set_permissions(wt.join("tool.sh"), fs::Permissions::from_mode(0o644)).unwrap();
    fs::write(wt.join("added.rs"), "fn added() {}\n").unwrap();
    stage(OsStr::new("added.rs"));
    git(&wt, &["rm", "-q", "doomed.txt"]);
    git(&wt, &["mv", "src/main.rs", "src/entry.rs"]);
    fs::write(wt.join("src/entry.rs"), "fn main() { println!(\"renamed\"); }\n").unwrap();
    let status = git(&wt, &["status", "--porcelain"]);
    for line in ["AD only-staged.rs", "MM README.md", "AM link", "AM tool.sh", "A  added.rs", "D  doomed.txt"] {
        assert!(status.lines().any(|l| l == line), "{line:?} in {status}");
    }
    assert!(status.contains("RM src/main.rs -> src/entry.rs"), "{status}");
    let session = staging_of(&wt);
    let purged = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(purged.status.code(), Some(0), "{}", stderr(&purged));

    let snapshot = common::snapshot_of(home.tmp.path());
    let planned = restore(&home, &["--recover", &inst.container, "--dry-run"]);
    assert_eq!(planned.status.code(), Some(0), "{}", stderr(&planned));
    // Each of the eight staged changes above (the rename's old name going is part of it).
    assert_eq!(lines(&planned)[0]["data"]["staged"], 8, "{}", String::from_utf8_lossy(&planned.stdout));
    assert_eq!(common::snapshot_of(home.tmp.path()), snapshot, "a dry run changed nothing");
    let text =
        home.cmd("jackin-restore").args(["--recover", &inst.container, "--dry-run", "--format=text"]).output().unwrap();
    assert!(String::from_utf8_lossy(&text.stdout).contains("8 staged"), "{}", String::from_utf8_lossy(&text.stdout));

    let out = restore(&home, &["--recover", &inst.container]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recovered = &lines(&out)[0]["data"];
    assert_eq!(recovered["staged"], 8, "{recovered}");
    assert!(recovered["notes"].as_array().is_none_or(|n| n.is_empty()), "{recovered}");
    let worktree = PathBuf::from(recovered["worktree"].as_str().unwrap());
    for ((what, theirs), (_, ours)) in session.iter().zip(staging_of(&worktree)) {
        assert_eq!(
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(theirs),
            "{what} in the recovered worktree differs from the session's"
        );
    }
}

fn as_agent(repo: &Path) {
    git(repo, &["config", "user.email", "agent@example.invalid"]);
    git(repo, &["config", "user.name", "Agent"]);
}

/// Commits made inside a worktree session's submodule (on its detached HEAD, and on a branch of
/// its own) come back into the host's git directory of that submodule, under the names the top
/// repository's get: `jackin/recovered/<c>` at the commit the submodule was on, every saved ref
/// under `-saved/`. The host's own checkout of the submodule sees them; the text says where they
/// went and the command that shows them, which works. The recovered worktree has the submodule's
/// files without the `.git` file that linked them to the session's git directory (git works
/// there), the staged bump staged, and the operator guide's way to work on them with git works.
/// A ref there that exists already refuses the whole recover (exit 3) and changes nothing, even
/// with the top repository's names free.
#[test]
fn submodule_commits_come_back_into_the_hosts_submodule_git_directory() {
    if !engine_available("submodule_commits_come_back_into_the_hosts_submodule_git_directory") {
        return;
    }
    let mut home = Home::new();
    let (host, _) = common::host_with_submodule(&home);
    let h = host.clone();
    let inst = home.instance(&unique_id(), move |home, c| vec![home.worktree_record(c, &h, "/workspace/app")]);
    let mount = inst.mount_path(0);
    git(&mount, &["-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init"]);
    let sub = mount.join("vendor/lib");
    as_agent(&sub);
    git(&sub, &["checkout", "-q", "-b", "fix"]);
    let on_branch = commit_file(&sub, "fix.rs", "pub fn fix() {}\n", "a fix on a branch");
    git(&sub, &["checkout", "-q", "--detach"]);
    let detached = commit_file(&sub, "lib.rs", "pub fn lib() -> u8 { 42 }\n", "the agent's change");
    fs::write(sub.join("lib.rs"), "pub fn lib() -> u8 { 43 }\n").unwrap();
    git(&mount, &["add", "vendor/lib"]);
    let staged_bump = git_bytes(&mount, &["diff", "--cached"]);
    assert!(String::from_utf8_lossy(&staged_bump).contains(&format!("+Subproject commit {detached}")));
    let purged = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(purged.status.code(), Some(0), "{}", stderr(&purged));
    let modules = host.join(".git/modules/vendor/lib");
    assert_ne!(git(&host, &["-C", "vendor/lib", "rev-parse", "HEAD"]), detached, "only the session had it");

    let snapshot = common::snapshot_of(home.tmp.path());
    let planned = restore(&home, &["--recover", &inst.container, "--dry-run"]);
    assert_eq!(planned.status.code(), Some(0), "{}", stderr(&planned));
    let planned = &lines(&planned)[0]["data"]["submodules"][0];
    assert_eq!(planned["repository"].as_str().map(PathBuf::from), Some(modules.clone()), "{planned}");
    assert_eq!(common::snapshot_of(home.tmp.path()), snapshot, "a dry run changed nothing");

    let out = home.cmd("jackin-restore").args(["--recover", &inst.container, "--format=text"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let branch = format!("jackin/recovered/{}", inst.container);
    let saved = format!("refs/jackin/recovered/{}-saved/", inst.container);
    assert_eq!(git(&modules, &["rev-parse", &branch]), detached, "{text}");
    assert_eq!(git(&modules, &["rev-parse", &format!("{saved}jackin/HEAD")]), detached);
    assert_eq!(git(&modules, &["rev-parse", &format!("{saved}heads/fix")]), on_branch);
    assert_eq!(git(&host.join("vendor/lib"), &["rev-parse", &branch]), detached, "the host's checkout sees them");
    assert!(text.contains("submodule vendor/lib: ref jackin/recovered/"), "{text}");
    // The submodule's files as the session left them, without the `.git` file that linked to
    // its git directory in the session's (gone with it); the bump staged as it was; git works.
    let worktree = host.with_file_name(format!("app-recovered-{}", inst.container));
    assert_eq!(fs::read_to_string(worktree.join("vendor/lib/lib.rs")).unwrap(), "pub fn lib() -> u8 { 43 }\n");
    assert!(!worktree.join("vendor/lib/.git").exists());
    assert!(text.contains("vendor/lib/.git was left out"), "{text}");
    assert_eq!(git_bytes(&worktree, &["diff", "--cached"]), staged_bump);
    git(&worktree, &["status"]);
    // The operator guide's way to work on them with git.
    let lib = worktree.join("vendor/lib");
    fs::rename(&lib, worktree.join("vendor/lib.saved")).unwrap();
    let modules_path = modules.to_str().unwrap();
    let update = ["submodule", "update", "-q", "--init", "--reference", modules_path, "vendor/lib"];
    git(&worktree, &[&["-c", "protocol.file.allow=always"][..], &update[..]].concat());
    let refspec = "refs/jackin/recovered/*:refs/jackin/recovered/*";
    git(&lib, &["fetch", "-q", modules.to_str().unwrap(), refspec]);
    git(&lib, &["checkout", "-q", &branch]);
    let mut copy = std::process::Command::new("cp");
    assert!(copy.args(["-a", "vendor/lib.saved/.", "vendor/lib/"]).current_dir(&worktree).status().unwrap().success());
    fs::remove_dir_all(worktree.join("vendor/lib.saved")).unwrap();
    assert_eq!(git(&lib, &["rev-parse", "HEAD"]), detached);
    assert_eq!(git(&lib, &["status", "--porcelain"]), "M lib.rs");
    // The command the text gives shows the submodule's commit.
    let next = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("next: "))
        .find(|l| l.contains("--git-dir"))
        .unwrap_or_else(|| panic!("no next step for the submodule: {text}"));
    let shown = std::process::Command::new("sh").args(["-c", next]).output().unwrap();
    assert!(String::from_utf8_lossy(&shown.stdout).contains("the agent's change"), "{next}: {shown:?}");

    // The top repository's work undone, the submodule's left: the recover refuses.
    git(&host, &["worktree", "remove", "--force", worktree.to_str().unwrap()]);
    for (name, _) in refs_of(&host).into_iter().filter(|(n, _)| n.starts_with("refs/jackin/recovered/")) {
        git(&host, &["update-ref", "-d", &name]);
    }
    let snapshot = common::snapshot_of(home.tmp.path());
    let again = restore(&home, &["--recover", &inst.container]);
    assert_eq!(again.status.code(), Some(3), "{}", stderr(&again));
    assert!(stderr(&again).contains("modules/vendor/lib"), "{}", stderr(&again));
    assert_eq!(common::snapshot_of(home.tmp.path()), snapshot, "a refused recover changed nothing");
}

/// A submodule the session added itself (a clone), which the host has no git directory of: its
/// commits go into a new bare repository beside the recovered worktree, which the record names,
/// and which a checkout of the submodule fetches them from as the text says. A second recover
/// refuses (exit 3) and changes nothing.
#[test]
fn submodule_commits_without_a_host_git_directory_go_into_a_new_repository() {
    if !engine_available("submodule_commits_without_a_host_git_directory_go_into_a_new_repository") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let lib_origin = common::lib_origin(&home);
    let h = host.clone();
    let inst = home.instance(&unique_id(), move |home, c| vec![home.clone_record(c, &h, "/workspace/app")]);
    let clone = inst.mount_path(0);
    let add =
        ["-c", "protocol.file.allow=always", "submodule", "add", "-q", lib_origin.to_str().unwrap(), "vendor/lib"];
    git(&clone, &add);
    git(&clone, &["commit", "-q", "-m", "vendor the library"]);
    let sub = clone.join("vendor/lib");
    as_agent(&sub);
    let commit = commit_file(&sub, "lib.rs", "pub fn lib() -> u8 { 7 }\n", "the agent's change");
    let purged = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(purged.status.code(), Some(0), "{}", stderr(&purged));
    assert!(!host.join(".git/modules").exists());

    let snapshot = common::snapshot_of(home.tmp.path());
    let text = home.cmd("jackin-restore").args(["--recover", &inst.container, "--dry-run", "--format=text"]).output();
    let text = String::from_utf8_lossy(&text.unwrap().stdout).into_owned();
    let worktree = host.with_file_name(format!("app-recovered-{}", inst.container));
    let repository = PathBuf::from(format!("{}-submodule-0.git", worktree.display()));
    assert!(text.contains(&format!("into a new repository {}", repository.display())), "{text}");
    assert_eq!(common::snapshot_of(home.tmp.path()), snapshot, "a dry run changed nothing");

    let out = home.cmd("jackin-restore").args(["--recover", &inst.container, "--format=json"]).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let recovered = &lines(&out)[0]["data"];
    assert_eq!(recovered["worktree"].as_str().map(PathBuf::from), Some(worktree));
    let sub_record = &recovered["submodules"][0];
    assert_eq!(sub_record["repository"].as_str().map(PathBuf::from), Some(repository.clone()), "{recovered}");
    assert_eq!(sub_record["new_repository"], true);
    let branch = format!("jackin/recovered/{}", inst.container);
    assert_eq!(git(&repository, &["rev-parse", &branch]), commit);
    // A checkout of the submodule gets them as the text says: the new repository first gets
    // what they build on from the submodule's remote.
    assert_eq!(sub_record["lacks"], 1, "{recovered}");
    let fresh = home.tmp.path().join("lib-checkout");
    git(home.tmp.path(), &["clone", "-q", lib_origin.to_str().unwrap(), fresh.to_str().unwrap()]);
    let (origin, repo) = (lib_origin.to_str().unwrap(), repository.to_str().unwrap());
    git(&repository, &["fetch", "-q", origin, "refs/heads/*:refs/remotes/origin/*"]);
    git(&fresh, &["fetch", "-q", repo, "refs/jackin/recovered/*:refs/jackin/recovered/*"]);
    assert_eq!(git(&fresh, &["rev-parse", &branch]), commit);

    let snapshot = common::snapshot_of(home.tmp.path());
    let again = restore(&home, &["--recover", &inst.container]);
    assert_eq!(again.status.code(), Some(3), "{}", stderr(&again));
    assert_eq!(common::snapshot_of(home.tmp.path()), snapshot);
}
