//! The ctime walk against real repositories: each kind of change the agent can make after an
//! assessment started is seen, and nothing is seen when nothing changed.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

use super::{changed_since, Since};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// A host repository with a commit, and a linked worktree of it with a tracked file in a
/// subdirectory and an ignored build directory, as a jackin worktree session has.
fn host_and_worktree(root: &Path) -> (PathBuf, PathBuf) {
    let host = root.join("host");
    fs::create_dir_all(host.join("src")).unwrap();
    git(&host, &["init", "-q", "-b", "main"]);
    fs::write(host.join("src/lib.rs"), "fn main() {}\n").unwrap();
    fs::write(host.join(".gitignore"), "target/\n").unwrap();
    git(&host, &["add", "-A"]);
    git(&host, &["commit", "-q", "-m", "one"]);
    let worktree = root.join("wt");
    git(&host, &["worktree", "add", "-q", "-b", "jackin/scratch/x", worktree.to_str().unwrap()]);
    fs::create_dir_all(worktree.join("target/debug")).unwrap();
    fs::write(worktree.join("target/debug/out"), "built\n").unwrap();
    (host, worktree)
}

/// A moment after everything made so far: a few clock ticks on, since the kernel stamps
/// ctimes from a clock that may lag this one by a tick.
fn next_moment() -> SystemTime {
    std::thread::sleep(Duration::from_millis(30));
    let now = SystemTime::now();
    std::thread::sleep(Duration::from_millis(30));
    now
}

type Change = (&'static str, fn(&Path, &Path));

/// Each change the agent can make in a session, and where it lands.
const CHANGES: [Change; 10] = [
    ("edit a tracked file", |_, wt| fs::write(wt.join("src/lib.rs"), "changed\n").unwrap()),
    ("add an untracked file", |_, wt| fs::write(wt.join("src/new.rs"), "\n").unwrap()),
    ("write in an ignored directory", |_, wt| fs::write(wt.join("target/debug/out"), "again\n").unwrap()),
    ("remove a tracked file", |_, wt| fs::remove_file(wt.join("src/lib.rs")).unwrap()),
    ("chmod a file", |_, wt| fs::set_permissions(wt.join("src/lib.rs"), fs::Permissions::from_mode(0o755)).unwrap()),
    ("edit and set the mtime back", |_, wt| {
        fs::write(wt.join("src/lib.rs"), "hidden\n").unwrap();
        let past = SystemTime::now() - Duration::from_secs(3600);
        fs::File::options().write(true).open(wt.join("src/lib.rs")).unwrap().set_modified(past).unwrap();
    }),
    ("commit", |_, wt| {
        fs::write(wt.join("src/lib.rs"), "committed\n").unwrap();
        git(wt, &["commit", "-qam", "two"]);
    }),
    ("stage", |_, wt| git(wt, &["add", "-A"])),
    ("create a branch in the shared repository", |host, _| git(host, &["branch", "elsewhere"])),
    ("stash", |_, wt| {
        fs::write(wt.join("src/lib.rs"), "stashed\n").unwrap();
        git(wt, &["stash", "-q"]);
    }),
];

#[test]
fn every_change_after_the_moment_is_seen_and_nothing_before_it() {
    let tmp = tempfile::tempdir().unwrap();
    let sessions: Vec<_> = (0..CHANGES.len()).map(|i| host_and_worktree(&tmp.path().join(i.to_string()))).collect();
    let clone = tmp.path().join("clone");
    git(tmp.path(), &["clone", "-q", sessions[0].0.to_str().unwrap(), clone.to_str().unwrap()]);
    let since = next_moment();
    for (_, worktree) in &sessions {
        assert_eq!(changed_since(worktree, true, since, 10_000), Since::Unchanged, "{}", worktree.display());
    }
    assert_eq!(changed_since(&clone, true, since, 10_000), Since::Unchanged);
    for ((what, change), (host, worktree)) in CHANGES.iter().zip(&sessions) {
        change(host, worktree);
        assert!(matches!(changed_since(worktree, true, since, 10_000), Since::Changed(_)), "{what} was not seen");
    }
    // A clone's git directory is its own: a commit there moves its refs.
    fs::write(clone.join("src/lib.rs"), "in the clone\n").unwrap();
    git(&clone, &["commit", "-qam", "clone"]);
    assert!(matches!(changed_since(&clone, true, since, 10_000), Since::Changed(_)));
}

#[test]
fn objects_alone_are_no_change_and_the_walk_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let (host, worktree) = host_and_worktree(tmp.path());
    let since = next_moment();
    // An object no ref names (what `git hash-object -w` leaves) is no work.
    fs::write(tmp.path().join("blob"), "loose\n").unwrap();
    git(&host, &["hash-object", "-w", tmp.path().join("blob").to_str().unwrap()]);
    assert_eq!(changed_since(&worktree, true, since, 10_000), Since::Unchanged);
    assert_eq!(changed_since(&worktree, true, since, 3), Since::TooLarge);
}

#[test]
fn what_cannot_be_looked_at_is_said() {
    let tmp = tempfile::tempdir().unwrap();
    let (_, worktree) = host_and_worktree(tmp.path());
    assert!(matches!(
        changed_since(&tmp.path().join("gone"), true, SystemTime::UNIX_EPOCH, 10_000),
        Since::Unreadable(_)
    ));
    // A link is never followed: what it leads to is not the work tree's.
    let elsewhere = tmp.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, worktree.join("link")).unwrap();
    let since = next_moment();
    fs::write(elsewhere.join("f"), "x").unwrap();
    assert_eq!(changed_since(&worktree, true, since, 10_000), Since::Unchanged);
    fs::remove_file(worktree.join("link")).unwrap();
    assert_eq!(changed_since(&worktree, true, since, 10_000), Since::Changed(worktree.clone()));
}

/// `git status` takes the index's lock and lets it go (jackin's exit check in the worktree, an
/// operator's prompt in the host repository): names come and go at the top of a git directory,
/// and nothing changed. A name gone from the common directory that held the host's branches
/// is a change.
#[test]
fn a_status_run_is_no_change_and_a_common_directory_losing_its_refs_is_one() {
    let tmp = tempfile::tempdir().unwrap();
    let (host, worktree) = host_and_worktree(tmp.path());
    git(&host, &["pack-refs", "--all"]);
    // A second after the files, so the status runs find nothing racily clean to write back.
    std::thread::sleep(Duration::from_millis(1100));
    git(&worktree, &["status", "--porcelain"]);
    git(&host, &["status", "--porcelain"]);
    let since = next_moment();
    git(&worktree, &["status", "--porcelain"]);
    git(&host, &["status", "--porcelain"]);
    let common = host.join(".git");
    let stamp = |p: &Path| crate::base::time::ctime(&fs::symlink_metadata(p).unwrap());
    assert!(stamp(&common) >= since, "the status runs moved the common directory's ctime");
    assert_eq!(changed_since(&worktree, true, since, 10_000), Since::Unchanged);

    fs::remove_file(common.join("packed-refs")).unwrap();
    assert_eq!(changed_since(&worktree, true, since, 10_000), Since::Changed(common.clone()));
}
