//! What survives a purge in a host repository and in a clone, from repositories made here with
//! git itself: the other worktrees' detached HEADs, which worktrees are the host's, and patches
//! already in a surviving ref.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::graph::Graph;
use super::*;
use crate::base::testing::{fifo, returns_promptly};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "init.defaultBranch=main"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn commit(dir: &Path, file: &str, text: &str) -> Oid {
    commit_as(dir, file, text, file)
}

/// `commit` under `message`: the same patch as another commit, but never that commit itself,
/// whatever the clock says.
fn commit_as(dir: &Path, file: &str, text: &str, message: &str) -> Oid {
    fs::write(dir.join(file), text).unwrap();
    git(dir, &["add", file]);
    git(dir, &["commit", "-q", "-m", message]);
    Oid::from_str(&git(dir, &["rev-parse", "HEAD"])).unwrap()
}

/// A host repository with one commit on `main`.
fn host(root: &Path) -> (std::path::PathBuf, Oid) {
    let host = root.join("host");
    fs::create_dir_all(&host).unwrap();
    git(&host, &["init", "-q"]);
    let first = commit(&host, "a", "1\n");
    (host, first)
}

/// A clone of `host` beside it, as `git clone` makes one (origin, remote-tracking refs).
fn clone(host: &Path) -> std::path::PathBuf {
    let parent = host.parent().unwrap();
    git(parent, &["clone", "-q", host.to_str().unwrap(), "clone"]);
    parent.join("clone")
}

#[test]
fn only_a_worktree_whose_head_names_a_whole_commit_id_survives_as_a_detached_head() {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, first) = host(tmp.path());
    git(&host_dir, &["worktree", "add", "-q", "--detach", "../detached", "HEAD"]);
    git(&host_dir, &["worktree", "add", "-q", "-b", "b2", "../on-branch"]);
    // Registrations git would not write: an abbreviated id, an id of no commit here.
    let registrations = host_dir.join(".git/worktrees");
    for (name, head) in [("short", first.to_string()[..12].to_owned()), ("absent", "1".repeat(40))] {
        fs::create_dir_all(registrations.join(name)).unwrap();
        fs::write(registrations.join(name).join("HEAD"), format!("{head}\n")).unwrap();
    }
    let repo = Repository::open(&host_dir).unwrap();
    assert_eq!(host_refs::worktree_detached_heads(&repo), vec![(std::ffi::OsString::from("detached"), first)]);
    let refs = HostRefs::read(&host_dir).unwrap();
    let mut named = refs.named_tips();
    named.sort();
    assert_eq!(
        named,
        vec![
            ("refs/heads/b2".to_owned(), first),
            ("refs/heads/main".to_owned(), first),
            ("worktrees/detached/HEAD".to_owned(), first),
        ]
    );
}

#[test]
fn a_worktree_belongs_only_to_its_own_host() {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, _) = host(tmp.path());
    git(&host_dir, &["worktree", "add", "-q", "-b", "scratch", "../wt"]);
    let other = tmp.path().join("other");
    fs::create_dir_all(&other).unwrap();
    git(&other, &["init", "-q"]);
    commit(&other, "b", "2\n");
    let worktree = Repo::open(tmp.path().join("wt")).unwrap();
    assert!(belongs_to(&worktree, &HostRefs::read(&host_dir).unwrap()));
    assert!(!belongs_to(&worktree, &HostRefs::read(&other).unwrap()));
}

/// Two commits on the scratch branch, one of them already on `main` as the same patch (a
/// cherry-pick): one is counted at risk, the other is listed as integrated; likewise for a
/// clone whose host has the patch.
#[test]
fn a_commit_whose_patch_a_surviving_ref_holds_is_integrated_not_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, _) = host(tmp.path());
    git(&host_dir, &["worktree", "add", "-q", "-b", "scratch", "../wt"]);
    let wt = tmp.path().join("wt");
    let picked = commit(&wt, "b", "2\n");
    commit(&wt, "c", "3\n");
    // main moves on first, so the pick is another commit than `picked` whatever the clock says.
    commit(&host_dir, "m", "m\n");
    git(&host_dir, &["cherry-pick", &picked.to_string()]);
    let refs = HostRefs::read(&host_dir).unwrap();
    let unpushed = worktree_unpushed(&Repo::open(&wt).unwrap(), &refs, "scratch").unwrap();
    assert_eq!(unpushed.len(), 1, "{unpushed:?}");
    assert_eq!(
        (unpushed[0].name.as_str(), unpushed[0].commits, unpushed[0].integrated.len()),
        ("refs/heads/scratch", 1, 1)
    );

    let clone_dir = clone(&host_dir);
    // The same patch in another commit: on `picked`'s parent, but under another message, so it
    // is not `picked` itself whatever the clock says.
    git(&clone_dir, &["checkout", "-q", "-b", "work", "HEAD~2"]);
    commit_as(&clone_dir, "b", "2\n", "b, as the clone wrote it");
    // The host moves on past what the clone fetched: only the host's refs hold the patch now.
    git(&clone_dir, &["update-ref", "-d", "refs/remotes/origin/main"]);
    git(&clone_dir, &["update-ref", "-d", "refs/remotes/origin/HEAD"]);
    let clone = Repo::open(&clone_dir).unwrap();
    let (unpushed, stashes) = clone_unpushed(&clone, Some((host_dir.as_path(), &refs))).unwrap();
    let work: Vec<_> = unpushed.iter().filter(|u| u.name == "refs/heads/work").collect();
    assert_eq!(stashes, 0);
    assert_eq!(work.len(), 1, "{unpushed:?}");
    assert_eq!((work[0].commits, work[0].integrated.len()), (0, 1), "found in the host's refs: {unpushed:?}");
}

/// A clone's commits that only its reflogs hold (a reset, an amend) are at risk, but not one the
/// host repository also has (pushed to a branch of it whose remote-tracking ref is gone).
#[test]
fn a_clones_reflog_only_commit_is_at_risk_unless_the_host_has_it() {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, _) = host(tmp.path());
    let clone_dir = clone(&host_dir);
    commit(&clone_dir, "pushed", "1\n");
    git(&clone_dir, &["push", "-q", "origin", "HEAD:refs/heads/kept"]);
    git(&clone_dir, &["update-ref", "-d", "refs/remotes/origin/kept"]);
    git(&clone_dir, &["reset", "-q", "--hard", "HEAD~1"]);
    let lost = commit(&clone_dir, "reset-away", "2\n");
    git(&clone_dir, &["reset", "-q", "--hard", "HEAD~1"]);
    let refs = HostRefs::read(&host_dir).unwrap();
    let (unpushed, _) = clone_unpushed(&Repo::open(&clone_dir).unwrap(), Some((host_dir.as_path(), &refs))).unwrap();
    let counted: usize = unpushed.iter().map(|u| u.commits).sum();
    assert_eq!(counted, 1, "only {lost} is at risk: {unpushed:?}");
}

/// A branch's upstream is reported as git names it for the operator (`origin/main` for a
/// remote-tracking ref, `main` for a local one); a tag has none.
#[test]
fn an_unpushed_branch_names_its_upstream_and_a_tag_names_none() {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, _) = host(tmp.path());
    let clone_dir = clone(&host_dir);
    commit(&clone_dir, "b", "2\n");
    git(&clone_dir, &["tag", "t"]);
    let (mut unpushed, _) = clone_unpushed(&Repo::open(&clone_dir).unwrap(), None).unwrap();
    unpushed.sort_by(|a, b| a.name.cmp(&b.name));
    let named: Vec<_> = unpushed.iter().map(|u| (u.name.as_str(), u.upstream.as_deref())).collect();
    assert_eq!(named, vec![("refs/heads/main", Some("origin/main")), ("refs/tags/t", None)]);

    git(&host_dir, &["worktree", "add", "-q", "-b", "scratch", "../wt"]);
    let wt = tmp.path().join("wt");
    git(&wt, &["branch", "-q", "--set-upstream-to=main"]);
    commit(&wt, "c", "3\n");
    let refs = HostRefs::read(&host_dir).unwrap();
    let unpushed = worktree_unpushed(&Repo::open(&wt).unwrap(), &refs, "scratch").unwrap();
    let named: Vec<_> = unpushed.iter().map(|u| (u.name.as_str(), u.upstream.as_deref())).collect();
    assert_eq!(named, vec![("refs/heads/scratch", Some("main"))]);
}

/// The exit dialog's Inspect: the newest commits the upstream lacks, newest first, as `git log
/// --oneline` prints them, even where a commit's date is older than its parent's (a clock that
/// was wrong in the container).
#[test]
fn the_oneline_log_is_the_newest_commits_the_upstream_lacks_children_first() {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, _) = host(tmp.path());
    let clone_dir = clone(&host_dir);
    let dated = |file: &str, date: &str| {
        fs::write(clone_dir.join(file), file).unwrap();
        git(&clone_dir, &["add", file]);
        let out = Command::new("git")
            .current_dir(&clone_dir)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m"])
            .arg(format!("{file} message"))
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date)
            .status()
            .unwrap();
        assert!(out.success());
        git(&clone_dir, &["rev-parse", "--short", "HEAD"])
    };
    let b = dated("b", "2020-01-01T00:00:00Z");
    let c = dated("c", "2022-01-01T00:00:00Z");
    let d = dated("d", "2021-01-01T00:00:00Z");
    let log = oneline_log(&clone_dir, "refs/heads/main", Some("origin/main"), 2).unwrap();
    assert_eq!(log, vec![format!("{d} d message"), format!("{c} c message")]);
    let log = oneline_log(&clone_dir, "refs/heads/main", Some("origin/main"), 10).unwrap();
    assert_eq!(log, vec![format!("{d} d message"), format!("{c} c message"), format!("{b} b message")]);
    // Without an upstream, the whole history down to the host's first commit.
    assert_eq!(oneline_log(&clone_dir, "refs/heads/main", None, 10).unwrap().len(), 4);

    // A merge of `d` and its own parent `c` (as `git commit-tree` can make one): by date alone
    // `c` (2022) would come before its child `d` (2021).
    let full = |short: &str| git(&clone_dir, &["rev-parse", short]);
    let merge = git(&clone_dir, &["commit-tree", "HEAD^{tree}", "-p", &full(&d), "-p", &full(&c), "-m", "merge"]);
    git(&clone_dir, &["update-ref", "refs/heads/merged", &merge]);
    let log = oneline_log(&clone_dir, "refs/heads/merged", Some("origin/main"), 3).unwrap();
    let order: Vec<_> = log.iter().map(|line| line.split_once(' ').unwrap().1).collect();
    assert_eq!(order, vec!["merge", "d message", "c message"]);
}

/// A host repository and a clone of it, as a clone session's mount, in a directory of their own.
fn host_and_clone() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, _) = host(tmp.path());
    let mount = clone(&host_dir);
    (tmp, host_dir, mount)
}

/// `git submodule add` of `origin` at `path` in `dir`, committed there.
fn add_submodule(dir: &Path, origin: &Path, path: &str) {
    git(dir, &["-c", "protocol.file.allow=always", "submodule", "add", "-q", origin.to_str().unwrap(), path]);
    git(dir, &["commit", "-q", "-m", path]);
}

/// The submodules of `mount` with commits at risk: path and count.
fn submodule_commits(mount: &Path) -> Vec<(String, usize)> {
    let work = submodules::at_risk(&Repo::open(mount).unwrap()).unwrap();
    let mut found: Vec<_> = work.iter().map(|w| (w.path.clone(), w.commits())).collect();
    found.sort();
    found
}

/// A chain of submodules five deep (`s1/s2/s3/s4/s5`, each added inside the one before): the
/// commit the agent made at the bottom is at risk like one at the top. A depth limit once left
/// the fifth out, and the purge deleted its git directory with the mount's.
#[test]
fn a_commit_five_submodules_deep_is_at_risk() {
    let (_tmp, host_dir, mount) = host_and_clone();
    let mut dir = mount.clone();
    let mut path = String::new();
    for level in 1..=5 {
        let name = format!("s{level}");
        add_submodule(&dir, &host_dir, &name);
        dir = dir.join(&name);
        path = if path.is_empty() { name } else { format!("{path}/{name}") };
    }
    commit(&dir, "deep", "the agent's\n");
    // Each of the four above holds its own commit too: the one that added the next.
    let found = submodule_commits(&mount);
    assert_eq!(found.len(), 5, "{found:?}");
    assert_eq!(found.last(), Some(&(path, 1)), "{found:?}");
}

/// A submodule of a submodule removed from its parent (`git rm`): its git directory stays in
/// the parent's (`.git/modules/s1/modules/s2`), which goes with the mount, so its commit is at
/// risk. Only the mount's own `modules/` was looked through before.
#[test]
fn a_nested_submodule_left_behind_is_at_risk() {
    let (_tmp, host_dir, mount) = host_and_clone();
    add_submodule(&mount, &host_dir, "s1");
    let s1 = mount.join("s1");
    add_submodule(&s1, &host_dir, "s2");
    commit(&s1.join("s2"), "nested", "the agent's\n");
    git(&s1, &["rm", "-q", "-f", "s2"]);
    git(&s1, &["commit", "-q", "-m", "drop s2"]);
    assert!(!s1.join("s2").exists() && mount.join(".git/modules/s1/modules/s2/HEAD").is_file());
    // s1's own two (adding s2, removing it) and s2's one.
    assert_eq!(submodule_commits(&mount), [("s1".to_owned(), 2), ("s1/s2".to_owned(), 1)]);
}

/// A submodule removed with its work tree (`git rm`, or `rm -rf` and a commit): its git
/// directory stays in the mount's, with a `core.worktree` that resolves to nothing, so it did
/// not open and its commit was not counted; it is read from the git directory alone now.
#[test]
fn a_submodule_removed_with_its_work_tree_is_at_risk() {
    let (_tmp, host_dir, mount) = host_and_clone();
    add_submodule(&mount, &host_dir, "vendor/lib");
    commit(&mount.join("vendor/lib"), "fix", "the agent's\n");
    git(&mount, &["rm", "-q", "-f", "vendor/lib"]);
    assert!(!mount.join("vendor/lib").exists());
    assert_eq!(submodule_commits(&mount), [("vendor/lib".to_owned(), 1)]);
}

/// `.gitmodules` is the agent's: a path whose directory is a symlink out of the mount (to
/// another repository of the host's, with a commit at risk of its own) or back to the mount
/// itself names no submodule. Before, the first was assessed as this mount's, and the second
/// reported the mount's own commit four times over as submodules' (`loop`, `loop/loop`, ...).
#[test]
fn a_gitmodules_path_through_a_symlink_names_no_submodule() {
    let (tmp, host_dir, mount) = host_and_clone();
    commit(&mount, "own", "the mount's own commit\n");
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    git(&elsewhere, &["init", "-q"]);
    commit(&elsewhere, "other", "not this mount's\n");
    std::os::unix::fs::symlink(&elsewhere, mount.join("out")).unwrap();
    std::os::unix::fs::symlink(".", mount.join("loop")).unwrap();
    // And a path with `..` in it that comes back inside, to a repository of its own there:
    // git refuses such a path (libgit2 does not list it), so it is no submodule (the repository
    // is untracked content).
    git(&mount, &["clone", "-q", host_dir.to_str().unwrap(), "nested"]);
    commit(&mount.join("nested"), "n", "the nested repository's\n");
    fs::create_dir(mount.join("plain")).unwrap();
    let gitmodules = "[submodule \"out\"]\n\tpath = out\n\turl = ../out\n[submodule \"loop\"]\n\tpath = loop\n\turl = \
                      ../loop\n[submodule \"back\"]\n\tpath = plain/../nested\n\turl = ../nested\n";
    fs::write(mount.join(".gitmodules"), gitmodules).unwrap();
    let names: Vec<_> = submodules::checked_out(&Repo::open(&mount).unwrap()).iter().map(|s| s.path.text()).collect();
    assert!(names.is_empty(), "{names:?}");
    assert_eq!(submodule_commits(&mount), []);
}

/// What the save copies for a staged change: the index's blob and mode of a file, an
/// executable and a link (its target as the bytes); nothing for a path the index lacks or holds
/// as a gitlink. And the gitlink's commit for a submodule `git add` staged, nothing for a file.
#[test]
fn the_staged_version_of_a_path_is_the_index_entrys_blob_and_mode() {
    let (_tmp, host_dir, mount) = host_and_clone();
    fs::write(mount.join("plain"), "staged\n").unwrap();
    fs::write(mount.join("tool"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(mount.join("tool"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("plain", mount.join("link")).unwrap();
    git(&mount, &["add", "plain", "tool", "link"]);
    // The work tree moves on; the staged version is the index's.
    fs::write(mount.join("plain"), "edited after staging\n").unwrap();
    add_submodule(&mount, &host_dir, "sub");
    let sub_head = git(&mount.join("sub"), &["rev-parse", "HEAD"]);
    let repo = Repo::open(&mount).unwrap();
    assert_eq!(repo.staged(Path::new("plain")), Some((b"staged\n".to_vec(), 0o100644)));
    assert_eq!(repo.staged(Path::new("tool")), Some((b"#!/bin/sh\n".to_vec(), 0o100755)));
    assert_eq!(repo.staged(Path::new("link")), Some((b"plain".to_vec(), 0o120000)));
    assert_eq!(repo.staged(Path::new("absent")), None);
    assert_eq!(repo.staged(Path::new("sub")), None, "a gitlink has no blob");
    assert_eq!(repo.staged_gitlink(Path::new("sub")), Some(sub_head));
    assert_eq!(repo.staged_gitlink(Path::new("plain")), None);
    assert_eq!(repo.staged_gitlink(Path::new("absent")), None);
}

/// A purge's step 5 in the host repository: the scratch branch is there, is deleted, and a
/// second delete finds nothing; the other branches stay.
#[test]
fn the_scratch_branch_is_found_deleted_and_not_found_again() {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, _) = host(tmp.path());
    git(&host_dir, &["branch", "jk/scratch"]);
    let repo = Repo::open(&host_dir).unwrap();
    assert!(repo.has_branch("jk/scratch") && repo.has_branch("main"));
    assert!(!repo.has_branch("jk/other"));
    assert!(repo.delete_branch("jk/scratch").unwrap());
    assert!(!repo.has_branch("jk/scratch"));
    assert!(!repo.delete_branch("jk/scratch").unwrap(), "nothing left to delete");
    assert!(repo.has_branch("main"));
    assert!(!repo.is_bare());
    let bare = tmp.path().join("bare.git");
    git(tmp.path(), &["init", "-q", "--bare", bare.to_str().unwrap()]);
    assert!(Repo::open(&bare).unwrap().is_bare());
}

/// A worktree's registration in its host is the one whose path is the worktree's, however the
/// path is spelled (`..`, a trailing slash), or, once its directory is gone, the one of the
/// fallback name; never another worktree's, nor any without a fallback. Pruning removes that
/// registration only, and a second prune finds nothing.
#[test]
fn a_worktrees_registration_is_found_by_its_path_or_name_and_pruned_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, _) = host(tmp.path());
    git(&host_dir, &["worktree", "add", "-q", "-b", "one", "../wt-one"]);
    git(&host_dir, &["worktree", "add", "-q", "-b", "two", "../wt-two"]);
    let host = Repo::open(&host_dir).unwrap();
    let (one, two) = (tmp.path().join("wt-one"), tmp.path().join("wt-two"));
    assert_eq!(host.registration(&one, None).as_deref(), Some("wt-one"));
    assert_eq!(host.registration(&two, None).as_deref(), Some("wt-two"));
    let spelled = tmp.path().join("host/../wt-two/");
    assert_eq!(host.registration(&spelled, None).as_deref(), Some("wt-two"), "{}", spelled.display());
    let unknown = tmp.path().join("wt-three");
    assert_eq!(host.registration(&unknown, None), None);
    assert_eq!(host.registration(&unknown, Some("wt-one")).as_deref(), Some("wt-one"), "by its name");
    assert_eq!(registration_dir(&host_dir, &two, "wt-one"), Some(host_dir.join(".git/worktrees/wt-two")));
    assert_eq!(registration_dir(&host_dir, &unknown, "nope"), None);

    fs::remove_dir_all(&two).unwrap();
    assert_eq!(host.registration(&two, None).as_deref(), Some("wt-two"), "a gone directory, by its path");
    assert!(host.prune_worktree(&two, None).unwrap());
    assert!(!host_dir.join(".git/worktrees/wt-two").exists());
    assert_eq!(host.registration(&two, None), None);
    assert!(!host.prune_worktree(&two, None).unwrap(), "nothing left to prune");
    assert_eq!(host.registration(&one, None).as_deref(), Some("wt-one"), "the other one stays");
    assert!(one.join("a").is_file());
}

/// The worktree's `.git` file is only a hint to its registration: one that names another
/// worktree's registration, or a path that is no registration, or is a FIFO, is checked against
/// the host's record and the right registration is still found by its path.
#[test]
fn a_worktrees_git_file_is_a_hint_checked_against_the_host() {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, _) = host(tmp.path());
    git(&host_dir, &["worktree", "add", "-q", "-b", "one", "../wt-one"]);
    git(&host_dir, &["worktree", "add", "-q", "-b", "two", "../wt-two"]);
    let host = Repo::open(&host_dir).unwrap();
    let (one, two) = (tmp.path().join("wt-one"), tmp.path().join("wt-two"));
    let registrations = host_dir.join(".git/worktrees");
    // wt-two's file claims wt-one's registration: the hint fails its check, the scan finds wt-two.
    fs::write(two.join(".git"), format!("gitdir: {}\n", registrations.join("wt-one").display())).unwrap();
    assert_eq!(host.registration(&two, None).as_deref(), Some("wt-two"));
    assert_eq!(host.registration(&one, None).as_deref(), Some("wt-one"), "the one it claimed is still its own");
    for forged in ["gitdir: /etc\n", "gitdir: ../../..\n", "not a git file\n", ""] {
        fs::write(two.join(".git"), forged).unwrap();
        assert_eq!(host.registration(&two, None).as_deref(), Some("wt-two"), "{forged:?}");
    }
    fs::remove_file(two.join(".git")).unwrap();
    fifo(&two.join(".git"));
    assert_eq!(host.registration(&two, None).as_deref(), Some("wt-two"), "a FIFO is not read, nor waited on");
}

/// The clone's reflog-only entry (`REFLOG_ONLY`) of `unpushed`: its commits and integrated ones.
fn reflog_entry(unpushed: &[UnpushedRef]) -> Option<(usize, Vec<String>)> {
    let entry = unpushed.iter().find(|u| u.name == REFLOG_ONLY)?;
    Some((entry.commits, entry.integrated.iter().map(|i| i.commit.clone()).collect()))
}

/// A clone's reflogs are its own but those of its remote-tracking refs (what they logged came
/// from elsewhere) and the stash's (counted as stashes): a commit only the reflog of a branch
/// that is not checked out reaches is at risk, one only `origin/main`'s reflog reaches (upstream
/// moved back) is not.
#[test]
fn a_branch_reflog_is_the_sessions_and_a_remote_tracking_one_is_not() {
    let (_tmp, host_dir, mount) = host_and_clone();
    let first = git(&host_dir, &["rev-parse", "HEAD"]);
    commit(&host_dir, "upstream", "fetched, then taken back\n");
    git(&mount, &["fetch", "-q"]);
    git(&host_dir, &["reset", "-q", "--hard", &first]);
    git(&mount, &["fetch", "-q"]);
    // A commit made on the side: only `side`'s reflog (a file under logs/refs/heads/) holds it.
    let tree = git(&mount, &["rev-parse", "HEAD^{tree}"]);
    let side = git(&mount, &["commit-tree", &tree, "-p", "HEAD", "-m", "on the side"]);
    git(&mount, &["update-ref", "-m", "side", "refs/heads/side", &side]);
    git(&mount, &["update-ref", "-m", "back", "refs/heads/side", "HEAD"]);
    git(&mount, &["stash", "list"]);
    let (unpushed, stashes) = clone_unpushed(&Repo::open(&mount).unwrap(), None).unwrap();
    assert_eq!((reflog_entry(&unpushed), stashes), (Some((1, vec![])), 0), "only {side}: {unpushed:?}");
}

/// Two commits reset away, one of them on the host as the same patch: the reflog-only entry
/// counts the other and lists the first as integrated, and names only the newest of the two as
/// its tip (what a bundle names to hold both).
#[test]
fn reflog_only_commits_have_one_tip_and_the_merged_one_is_integrated() {
    let (_tmp, host_dir, mount) = host_and_clone();
    let older = commit(&mount, "b", "the agent's first\n");
    let newer = commit(&mount, "c", "the agent's second\n");
    git(&mount, &["reset", "-q", "--hard", "HEAD~2"]);
    let clone = Repo::open(&mount).unwrap();
    let surviving = [Oid::from_str(&git(&mount, &["rev-parse", "origin/main"])).unwrap()];
    let only = clone_reflog_only(&clone.repo, &Graph::default(), &surviving).unwrap();
    assert_eq!(only.tips, [newer]);
    assert_eq!(only.commits.len(), 2);
    // The host takes the first as its own commit of the same patch, under another message so
    // that it is not the agent's commit itself whatever the clock says.
    commit_as(&host_dir, "b", "the agent's first\n", "b, as the host took it");
    let refs = HostRefs::read(&host_dir).unwrap();
    let (unpushed, _) = clone_unpushed(&clone, Some((host_dir.as_path(), &refs))).unwrap();
    assert_eq!(reflog_entry(&unpushed), Some((1, vec![older.to_string()])), "{unpushed:?}");
}

/// A clone's commit the host has only as a loose object (fetched into a ref since deleted, not
/// yet collected) exists nowhere a purge leaves: at risk. One a host branch the clone never saw
/// builds on is kept by the host.
#[test]
fn a_clone_commit_the_host_holds_unreachable_is_at_risk_and_one_a_host_branch_builds_on_is_not() {
    let (_tmp, host_dir, mount) = host_and_clone();
    let agents = commit(&mount, "b", "the agent's\n");
    let clone_path = mount.to_str().unwrap();
    git(&host_dir, &["fetch", "-q", clone_path, "main:refs/heads/taken"]);
    git(&host_dir, &["update-ref", "-d", "refs/heads/taken"]);
    assert!(Repository::open(&host_dir).unwrap().find_commit(agents).is_ok(), "the host still has the object");
    let main_at_risk = |host_dir: &Path| {
        let refs = HostRefs::read(host_dir).unwrap();
        let (unpushed, _) = clone_unpushed(&Repo::open(&mount).unwrap(), Some((host_dir, &refs))).unwrap();
        unpushed.iter().filter(|u| u.name == "refs/heads/main").map(|u| u.commits).sum::<usize>()
    };
    assert_eq!(main_at_risk(&host_dir), 1, "unreachable in the host: at risk");
    // The host takes it again and builds on it: a host commit the clone does not have.
    git(&host_dir, &["fetch", "-q", clone_path, "main:refs/heads/taken"]);
    git(&host_dir, &["checkout", "-q", "taken"]);
    commit(&host_dir, "c", "the host's, on top\n");
    assert_eq!(main_at_risk(&host_dir), 0, "a host branch descends from it");
}

/// What `--slim` may take back: each ignored directory once and each ignored file, never a
/// directory that holds a file tracked despite the rule (`git add -f`). Under such a directory
/// libgit2 names only its wholly ignored subdirectories; the ignored files beside the tracked
/// ones, which git clean -dX would remove too, are not named, so they are kept.
#[test]
fn the_ignored_entries_are_never_a_directory_that_holds_a_tracked_file() {
    let tmp = tempfile::tempdir().unwrap();
    let (dir, _) = host(tmp.path());
    fs::write(dir.join(".gitignore"), "target/\nlogs/\n*.log\n").unwrap();
    let files = [
        ("target/debug/app", "bin"),
        ("build.log", "log"),
        ("logs/keep.txt", "k"),
        ("logs/run.txt", "r"),
        ("logs/old/a.txt", "a"),
        ("logs/deep/keep.txt", "k"),
        ("logs/deep/b.txt", "b"),
    ];
    for (path, text) in files {
        fs::create_dir_all(dir.join(path).parent().unwrap()).unwrap();
        fs::write(dir.join(path), text).unwrap();
    }
    // Written an hour ago, then added: the index is newer than every file, none is racy, and
    // the listing is narrowed to the untracked names (the case CI once hit by chance).
    let an_hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    for path in [".gitignore", "logs/keep.txt", "logs/deep/keep.txt"] {
        fs::File::options().write(true).open(dir.join(path)).unwrap().set_modified(an_hour_ago).unwrap();
    }
    git(&dir, &["add", ".gitignore"]);
    git(&dir, &["add", "-f", "logs/keep.txt", "logs/deep/keep.txt"]);
    git(&dir, &["commit", "-q", "-m", "ignore"]);
    let expected = [("build.log", false), ("logs/old", true), ("target", true)].map(|(p, d)| (p.to_owned(), d));
    assert_eq!(ignored_names(&dir), expected, "the index newer than the files");
    // Touched now, the tracked files are racy again and the listing takes them in.
    for path in ["logs/keep.txt", "logs/deep/keep.txt"] {
        let file = fs::File::options().write(true).open(dir.join(path)).unwrap();
        file.set_modified(std::time::SystemTime::now() + std::time::Duration::from_secs(5)).unwrap();
    }
    assert_eq!(ignored_names(&dir), expected, "tracked files newer than the index");
    // A change staged: the assessment's status compares the index with HEAD too, unnarrowed.
    fs::write(dir.join("staged.txt"), "s").unwrap();
    git(&dir, &["add", "staged.txt"]);
    assert_eq!(ignored_names(&dir), expected, "a change staged");
}

/// The ignored entries of the work tree at `dir`, sorted; the same from the assessment's own
/// status, which the disk measurement reads instead of a status of its own.
fn ignored_names(dir: &Path) -> Vec<(String, bool)> {
    let repo = Repo::open(dir).unwrap();
    let names = |entries: Vec<Ignored>| {
        let mut found: Vec<(String, bool)> =
            entries.into_iter().map(|e| (e.path.to_string_lossy().into_owned(), e.is_dir)).collect();
        found.sort();
        found
    };
    let found = names(repo.ignored().unwrap());
    assert_eq!(names(work_state(&repo, false).unwrap().ignored_entries), found, "the assessment's status");
    found
}

/// A worktree's reflogs are its HEAD's (under its registration) and its scratch branch's: a
/// commit the agent reset away there, or made on a detached HEAD and left, is at risk; one the
/// host's own `main` reset away is not the session's.
#[test]
fn a_commit_reset_away_in_a_worktree_is_at_risk_and_one_of_the_hosts_own_is_not() {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, first) = host(tmp.path());
    commit(&host_dir, "h", "the host's, reset away\n");
    git(&host_dir, &["reset", "-q", "--hard", &first.to_string()]);
    git(&host_dir, &["worktree", "add", "-q", "-b", "scratch", "../wt"]);
    let wt = tmp.path().join("wt");
    let reset = commit(&wt, "b", "the agent's, reset away\n");
    git(&wt, &["reset", "-q", "--hard", "HEAD~1"]);
    // One made on a detached HEAD and left: only the worktree's HEAD reflog holds it.
    git(&wt, &["checkout", "-q", "--detach"]);
    let detached = commit(&wt, "c", "the agent's, on a detached HEAD\n");
    git(&wt, &["checkout", "-q", "scratch"]);
    let refs = HostRefs::read(&host_dir).unwrap();
    let unpushed = worktree_unpushed(&Repo::open(&wt).unwrap(), &refs, "scratch").unwrap();
    assert_eq!(reflog_entry(&unpushed), Some((2, vec![])), "{unpushed:?}");
    let worktree = Repository::open(&wt).unwrap();
    let reflogs = worktree_reflogs(&worktree, "refs/heads/scratch");
    let logged = ReflogOnly::find(&worktree, &Graph::default(), &reflogs, &[first]).unwrap();
    let mut commits = logged.commits;
    commits.sort();
    let mut expected = [reset, detached];
    expected.sort();
    assert_eq!(commits, expected);
}

/// A reflog line naming no object here (a commit collected since, a line the agent wrote) or the
/// zero id (a ref's creation) adds nothing and is no error.
#[test]
fn a_reflog_line_naming_no_object_here_adds_nothing() {
    let (_tmp, _host_dir, mount) = host_and_clone();
    let head = git(&mount, &["rev-parse", "HEAD"]);
    let log = mount.join(".git/logs/refs/heads/main");
    let mut text = fs::read(&log).unwrap();
    text.extend(format!("{} {} t <t@example.com> 1 +0000\tgone\n", "1".repeat(40), "0".repeat(40)).bytes());
    text.extend(format!("{head} {} t <t@example.com> 1 +0000\tgone\n", "2".repeat(40)).bytes());
    fs::write(&log, text).unwrap();
    let (unpushed, _) = clone_unpushed(&Repo::open(&mount).unwrap(), None).unwrap();
    assert_eq!(reflog_entry(&unpushed), None, "{unpushed:?}");
}

/// A submodule whose git directory is in its own work tree (a repository cloned there first,
/// then `git submodule add`ed: git leaves its `.git` in place): nothing of it is under the
/// mount's `modules/`, so only `.gitmodules` leads to it, and its commit is at risk.
#[test]
fn a_submodule_with_its_git_directory_in_its_own_work_tree_is_at_risk() {
    let (_tmp, host_dir, mount) = host_and_clone();
    git(&mount, &["clone", "-q", host_dir.to_str().unwrap(), "inplace"]);
    add_submodule(&mount, &host_dir, "inplace");
    assert!(mount.join("inplace/.git").is_dir() && !mount.join(".git/modules").exists());
    commit(&mount.join("inplace"), "fix", "the agent's\n");
    assert_eq!(submodule_commits(&mount), [("inplace".to_owned(), 1)]);
    let mount_repo = Repo::open(&mount).unwrap();
    let inplace = Repo::open(mount.join("inplace")).unwrap();
    assert_eq!(submodules::module_name(&mount_repo, &inplace), None, "not under modules/");
}

/// A submodule named `libs/objects`, removed with `git rm`: its git directory is
/// `.git/modules/libs/objects`, under a directory (`libs`) that is not a git directory but holds
/// one named `objects`. It is found there, by its own `HEAD` and `objects/`.
#[test]
fn a_left_behind_submodule_named_like_a_git_directorys_folder_is_at_risk() {
    let (_tmp, host_dir, mount) = host_and_clone();
    add_submodule(&mount, &host_dir, "libs/objects");
    let mount_repo = Repo::open(&mount).unwrap();
    let sub = Repo::open(mount.join("libs/objects")).unwrap();
    assert_eq!(submodules::module_name(&mount_repo, &sub).as_deref(), Some("libs/objects"));
    commit(&mount.join("libs/objects"), "fix", "the agent's\n");
    git(&mount, &["rm", "-q", "-f", "libs/objects"]);
    assert!(mount.join(".git/modules/libs/objects/HEAD").is_file() && !mount.join(".git/modules/libs/HEAD").exists());
    assert_eq!(submodule_commits(&mount), [("libs/objects".to_owned(), 1)]);
}

/// Which submodules the assessment lists: one with a stash only, yes; one with nothing of its
/// own, or whose one commit its upstream holds as the same patch (counted 0), no.
#[test]
fn a_submodule_is_listed_for_a_stash_or_a_commit_at_risk_and_only_then() {
    let (_tmp, host_dir, mount) = host_and_clone();
    for path in ["stashed", "clean", "picked"] {
        add_submodule(&mount, &host_dir, path);
    }
    let stashed = mount.join("stashed");
    fs::write(stashed.join("a"), "the agent's, stashed\n").unwrap();
    git(&stashed, &["stash", "-q"]);
    // The upstream takes the agent's patch as a commit of its own, and the submodule fetches it.
    let picked = mount.join("picked");
    commit(&picked, "p", "the agent's, taken upstream\n");
    commit_as(&host_dir, "p", "the agent's, taken upstream\n", "p, as upstream took it");
    git(&picked, &["fetch", "-q"]);
    let work = submodules::at_risk(&Repo::open(&mount).unwrap()).unwrap();
    let listed: Vec<_> = work.iter().map(|w| (w.path.as_str(), w.stashes, w.commits())).collect();
    assert_eq!(listed, [("stashed", 1, 0)], "{work:?}");
}

/// A git directory at the `modules/` folder itself (the agent can make one there) has no
/// name under it: a recover must not take the host's whole `modules/` for it.
#[test]
fn a_git_directory_at_modules_itself_has_no_module_name() {
    let (_tmp, _host_dir, mount) = host_and_clone();
    git(&mount, &["init", "-q", "--bare", ".git/modules"]);
    let at_modules = Repo::open(mount.join(".git/modules")).unwrap();
    assert_eq!(submodules::module_name(&Repo::open(&mount).unwrap(), &at_modules), None);
}

/// What the quarantine bundles per submodule: the one with a commit at risk, at that commit;
/// none for one with nothing of its own.
#[test]
fn a_submodule_is_bundled_only_when_it_holds_a_commit_at_risk() {
    let (tmp, host_dir, mount) = host_and_clone();
    add_submodule(&mount, &host_dir, "fixed");
    add_submodule(&mount, &host_dir, "clean");
    let fix = commit(&mount.join("fixed"), "fix", "the agent's\n");
    let bundles = submodules::bundles(&Repo::open(&mount).unwrap()).unwrap();
    let named: Vec<_> = bundles.iter().map(|(s, refs)| (s.path.text(), refs.is_empty())).collect();
    assert_eq!(named, [("fixed".to_owned(), false)]);
    // Written, the bundle holds that commit.
    let (submodule, refs) = &bundles[0];
    let file = tmp.path().join("fixed.bundle");
    write_bundle(&submodule.repo, refs, &file).unwrap();
    let heads = git(&mount, &["bundle", "list-heads", file.to_str().unwrap()]);
    assert!(heads.contains(&fix.to_string()), "{heads}");
}

/// A FIFO where libgit2 opens a file by name (the rules of `info/exclude`, the work tree's own
/// `.gitignore`, the configuration, a worktree's `.git` file) is not read: the repository is not
/// opened, with the FIFO named, at once, and a status never waits on it.
#[test]
fn a_fifo_where_git_reads_a_file_is_refused_at_once() {
    let cases = [
        ("info/exclude", ".git/info/exclude"),
        ("a .gitignore", ".gitignore"),
        ("a .gitattributes", ".gitattributes"),
        ("config", ".git/config"),
        ("HEAD", ".git/HEAD"),
    ];
    for (what, place) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let repo_dir = tmp.path().join("r");
        fs::create_dir_all(&repo_dir).unwrap();
        git(&repo_dir, &["init", "-q"]);
        commit(&repo_dir, "a.txt", "a\n");
        fs::write(repo_dir.join("untracked.txt"), "work\n").unwrap();
        let at = repo_dir.join(place);
        let _ = fs::remove_file(&at);
        fifo(&at);
        let dir = repo_dir.clone();
        let result =
            returns_promptly(move || Repo::open(&dir).and_then(|r| work_state(&r, false)).map(|s| s.files.len()));
        let error = result.unwrap_or_else(|| panic!("{what}: waited on the FIFO")).expect_err(what);
        assert!(error.message().contains("is not a regular file"), "{what}: {}", error.message());
    }
    // A worktree whose `.git` file is a FIFO.
    let tmp = tempfile::tempdir().unwrap();
    fifo(&tmp.path().join("wt/.git"));
    let dir = tmp.path().join("wt");
    let result = returns_promptly(move || Repo::open(&dir).map(|_| ()));
    assert!(result.expect("a .git FIFO is not waited on").is_err());
}

/// What the configuration makes libgit2 read, and what a repository inside the work tree holds:
/// a FIFO or a host device there is refused at once, named. libgit2 waited for ever on an
/// include, an include of an include, `core.excludesFile` and `core.attributesFile`; it happens
/// not to open a conditional include whose condition fails, to read `/dev/zero` as empty, and to
/// pass over a FIFO in a submodule's or a nested repository's git directory, and those are
/// refused all the same: the check does not lean on libgit2's choices of the day.
#[test]
fn a_fifo_the_configuration_names_or_a_nested_repository_holds_is_refused_at_once() {
    type Setup = fn(&Path);
    let cases: [(&str, Setup); 9] = [
        ("include.path", |r| {
            fifo(&r.join("pipe"));
            git(r, &["config", "include.path", "../pipe"]);
        }),
        ("includeIf", |r| {
            fifo(&r.join("pipe"));
            git(r, &["config", "includeIf.gitdir:/nowhere/.path", &r.join("pipe").display().to_string()]);
        }),
        ("an include of an include", |r| {
            fifo(&r.join("sub/pipe"));
            fs::write(r.join("sub/more.config"), "[include]\n\tpath = pipe\n").unwrap();
            git(r, &["config", "include.path", "../sub/more.config"]);
        }),
        ("an include of a device", |r| {
            git(r, &["config", "include.path", "/dev/zero"]);
        }),
        ("core.excludesFile", |r| {
            fifo(&r.join("pipe"));
            git(r, &["config", "core.excludesFile", &r.join("pipe").display().to_string()]);
        }),
        ("core.attributesFile", |r| {
            fifo(&r.join("pipe"));
            git(r, &["config", "core.attributesFile", &r.join("pipe").display().to_string()]);
        }),
        ("a submodule's HEAD", |r| {
            let origin = r.parent().unwrap().join("origin");
            fs::create_dir_all(&origin).unwrap();
            git(&origin, &["init", "-q"]);
            commit(&origin, "o.txt", "o\n");
            add_submodule(r, &origin, "sub");
            let head = r.join(".git/modules/sub/HEAD");
            fs::remove_file(&head).unwrap();
            fifo(&head);
        }),
        ("a nested repository's .git", |r| fifo(&r.join("nested/.git"))),
        ("a nested repository's HEAD", |r| {
            fs::create_dir_all(r.join("nested")).unwrap();
            git(&r.join("nested"), &["init", "-q"]);
            fs::remove_file(r.join("nested/.git/HEAD")).unwrap();
            fifo(&r.join("nested/.git/HEAD"));
        }),
    ];
    for (what, setup) in cases {
        let tmp = tempfile::tempdir().unwrap();
        let repo_dir = tmp.path().join("r");
        fs::create_dir_all(&repo_dir).unwrap();
        git(&repo_dir, &["init", "-q"]);
        commit(&repo_dir, "a.txt", "a\n");
        fs::write(repo_dir.join("untracked.txt"), "work\n").unwrap();
        setup(&repo_dir);
        let dir = repo_dir.clone();
        let result =
            returns_promptly(move || Repo::open(&dir).and_then(|r| work_state(&r, true)).map(|s| s.files.len()));
        let error = result.unwrap_or_else(|| panic!("{what}: waited on it")).expect_err(what);
        assert!(error.message().contains("is not a regular file"), "{what}: {}", error.message());
    }
}

/// A submodule's new commit staged, then a `git rebase --autostash` that stops ("your local
/// changes would be overwritten by rebase") and is left so, in a worktree: git re-applies the
/// staged gitlink without invalidating the index's cached tree ids, which then say HEAD's tree.
/// The staged change is still one (`git status`: `M  sub`). Before, the shortcut that trusts the
/// cached tree saw nothing staged, the assessment listed nothing, and a recovery put HEAD's
/// gitlink in the index (the work-loss oracle's seed 1796583009145578314, history 162).
#[test]
fn a_staged_submodule_commit_the_cached_tree_hides_is_still_staged() {
    let tmp = tempfile::tempdir().unwrap();
    let (host_dir, _) = host(tmp.path());
    let sub_origin = tmp.path().join("suborigin");
    fs::create_dir_all(&sub_origin).unwrap();
    git(&sub_origin, &["init", "-q"]);
    commit(&sub_origin, "s", "s\n");
    add_submodule(&host_dir, &sub_origin, "sub");
    commit(&host_dir, "b", "2\n");
    git(&host_dir, &["worktree", "add", "-q", "-b", "scratch", "../wt"]);
    let wt = tmp.path().join("wt");
    git(&wt, &["-c", "protocol.file.allow=always", "submodule", "update", "--init", "-q"]);
    commit(&wt, "c", "3\n");
    commit(&wt.join("sub"), "inner", "the agent's\n");
    git(&wt, &["add", "-A"]);
    let rebase = ["rebase", "-q", "--autostash", "--force-rebase", "HEAD~1"];
    let stopped = Command::new("git").current_dir(&wt).args(rebase).output().unwrap();
    assert!(!stopped.status.success(), "the rebase stops");
    assert_eq!(git(&wt, &["status", "--short"]), "M  sub", "git sees the staged commit");
    assert_eq!(git(&wt, &["write-tree"]), git(&wt, &["rev-parse", "HEAD^{tree}"]), "the cached tree hides it");
    let state = work_state(&Repo::open(&wt).unwrap(), false).unwrap();
    let files: Vec<String> = state.files.iter().map(|f| format!("{} {}", f.status, f.path)).collect();
    assert_eq!(files, ["M  sub"]);
}
