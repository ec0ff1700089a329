//! `jackin-restore --quarantined` and `--recover`: discarded work back with one command, byte for
//! byte, from quarantines made by real discards of real sessions.

mod common;

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
    let branch = format!("refs/heads/jackin/recovered/{}", inst.container);
    assert_eq!(recovered["branch"], branch.as_str());
    let worktree = PathBuf::from(recovered["worktree"].as_str().unwrap());
    assert_eq!(worktree, host.with_file_name(format!("app-recovered-{}", inst.container)));
    // Every commit with its id; the saved refs beside the branch.
    assert_eq!(git(&host, &["rev-parse", &branch]), commits[1]);
    let refs = refs_of(&host);
    let saved = format!("refs/heads/jackin/recovered/{}-saved/heads/jackin/scratch/{}", inst.container, inst.container);
    assert!(refs.contains(&(saved, commits[1].clone())), "{refs:?}");
    assert_eq!(git(&worktree, &["rev-list", "--reverse", "HEAD", "--not", "origin/main"]), commits.join("\n"));
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
    let prefix = format!("refs/heads/jackin/recovered/{}-saved/", inst.container);
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
