//! The guard against what libgit2's walk would skip or wait on: rule files of every kind in every
//! place, paths around PATH_MAX (generated), directories the tool cannot open; each through the
//! narrowed status, the whole one and the ignored entries of `--slim`.

use std::fs;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use rustix::fs::{self as rfs, Mode, OFlags};

use super::{check, Start, PATH_MAX};
use crate::base::testing::{fifo, returns_promptly};
use crate::engines::git::stat_check::{read_index, suspects, Whole};
use crate::engines::git::{ignored::ignored, status, GitError, Narrowing};

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

fn write(root: &Path, path: &str, text: &str) {
    fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
    fs::write(root.join(path), text).unwrap();
}

/// A repository with tracked files in the root and in `src/`, `.gitignore` ignoring `target/`.
fn repository(root: &Path) -> git2::Repository {
    git(root, &["init", "-q"]);
    write(root, ".gitignore", "target/\n");
    write(root, "a.txt", "a\n");
    write(root, "src/lib.rs", "lib\n");
    write(root, "src/.gitignore", "*.tmp\n");
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "one"]);
    git2::Repository::open(root).unwrap()
}

/// The ways a status is asked for: narrowed by the stat data, of the whole tree (a case-folding
/// repository is never narrowed), with something staged (HEAD's tree against the index too), and
/// the ignored entries `--slim` takes back.
#[derive(Debug, Clone, Copy)]
enum Asked {
    Narrowed,
    Whole,
    Staged,
    Ignored,
}

const EVERY_WAY: [Asked; 4] = [Asked::Narrowed, Asked::Whole, Asked::Staged, Asked::Ignored];

/// Asks as `how` says, on a thread of its own: `None` when it waited more than 10 s.
fn ask(root: &Path, how: Asked) -> Option<Result<usize, GitError>> {
    prepare(root, how);
    let root = root.to_path_buf();
    returns_promptly(move || read(&root, how))
}

/// Makes the repository at `root` one that is asked `how`.
fn prepare(root: &Path, how: Asked) {
    match how {
        Asked::Whole => git(root, &["config", "core.ignorecase", "true"]),
        Asked::Staged => {
            write(root, "a.txt", "staged\n");
            git(root, &["add", "a.txt"]);
        }
        Asked::Narrowed | Asked::Ignored => {}
    }
}

/// The changed files, or for `Asked::Ignored` the ignored entries, of the work tree at `root`.
fn read(root: &Path, how: Asked) -> Result<usize, GitError> {
    read_repo(&git2::Repository::open(root)?, how)
}

fn read_repo(repo: &git2::Repository, how: Asked) -> Result<usize, GitError> {
    Ok(match how {
        Asked::Ignored => ignored(repo)?.len(),
        _ => status(repo, false, Narrowing::ByStatData)?.files.len(),
    })
}

/// What the agent can leave where a rule file is read.
#[derive(Debug, Clone, Copy)]
enum Blocker {
    Fifo,
    Socket,
    /// A link to a FIFO elsewhere in the tree.
    LinkToFifo,
    /// A link to a character device of the host.
    LinkToDevice,
}

fn plant(root: &Path, path: &str, blocker: Blocker) {
    let at = root.join(path);
    fs::create_dir_all(at.parent().unwrap()).unwrap();
    let _ = fs::remove_file(&at);
    match blocker {
        Blocker::Fifo => fifo(&at),
        Blocker::Socket => drop(std::os::unix::net::UnixListener::bind(&at).unwrap()),
        Blocker::LinkToFifo => {
            let target = root.join("target/pipe");
            fs::create_dir_all(target.parent().unwrap()).unwrap();
            fifo(&target);
            std::os::unix::fs::symlink(&target, &at).unwrap();
        }
        Blocker::LinkToDevice => std::os::unix::fs::symlink("/dev/zero", &at).unwrap(),
    }
}

/// A `.gitignore` or `.gitattributes` that is not a regular file, in every place libgit2 reads
/// one below the work tree's root (an untracked one in a tracked directory, one in an untracked
/// directory some levels down, a tracked one replaced, one git is told not to look at), refuses
/// every way of asking at once, the file named. libgit2 waited on each for ever before.
#[test]
fn a_rule_file_that_is_not_a_regular_file_refuses_the_status_at_once() {
    let places = [
        ("an untracked rule file in a tracked directory", "src/deeper/.gitattributes", None),
        ("a rule file three untracked directories down", "new/a/b/.gitignore", None),
        ("a tracked rule file replaced", "src/.gitignore", None),
        ("a tracked rule file marked skip-worktree", "src/.gitignore", Some("--skip-worktree")),
        ("a tracked rule file marked assume-unchanged", "src/.gitignore", Some("--assume-unchanged")),
    ];
    let blockers = [Blocker::Fifo, Blocker::Socket, Blocker::LinkToFifo, Blocker::LinkToDevice];
    for (what, place, flag) in places {
        for blocker in blockers {
            for how in EVERY_WAY {
                let case = format!("{what} ({place}), {blocker:?}, {how:?}");
                let tmp = tempfile::tempdir().unwrap();
                let root = tmp.path();
                repository(root);
                write(root, "new/a/b/work.txt", "work\n");
                if let Some(flag) = flag {
                    git(root, &["update-index", flag, place]);
                }
                plant(root, place, blocker);
                let result = ask(root, how).unwrap_or_else(|| panic!("{case}: waited on it"));
                let error = result.err().unwrap_or_else(|| panic!("{case}: not refused"));
                assert!(error.message().starts_with(&format!("{place}: is not a regular file")), "{case}: {error}");
            }
        }
    }
}

/// Rule files that are regular files, directories, or links to regular files are read as git
/// reads them: nothing is refused, and the untracked work is found.
#[test]
fn ordinary_rule_files_refuse_nothing() {
    for how in EVERY_WAY {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        repository(root);
        write(root, "new/a/.gitignore", "*.log\n");
        write(root, "new/a/keep.txt", "work\n");
        write(root, "new/a/noise.log", "noise\n");
        fs::create_dir_all(root.join("new/b/.gitattributes")).unwrap();
        write(root, "rules/shared", "*.bak\n");
        std::os::unix::fs::symlink("../rules/shared", root.join("src/.gitattributes")).unwrap();
        let found = ask(root, how).expect("no wait").unwrap_or_else(|e| panic!("{how:?}: {e}"));
        assert!(found > 0, "{how:?}: the untracked work is found");
    }
}

/// Makes the directories of `rel` one at a time below `root` (relative to each, as no whole path
/// that long can be made) and a file at its end; `rel` ends in the file's name.
fn make_deep(root: &Path, rel: &[u8]) {
    let mut dir: OwnedFd = rfs::open(root, OFlags::DIRECTORY, Mode::empty()).unwrap();
    let parts: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
    for name in &parts[..parts.len() - 1] {
        match rfs::mkdirat(dir.as_fd(), *name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(rustix::io::Errno::EXIST) => {}
            Err(e) => panic!("mkdir: {e}"),
        }
        dir = rfs::openat(dir.as_fd(), *name, OFlags::DIRECTORY, Mode::empty()).unwrap();
    }
    let file =
        rfs::openat(dir.as_fd(), *parts.last().unwrap(), OFlags::CREATE | OFlags::WRONLY, Mode::from_raw_mode(0o644))
            .unwrap();
    rustix::io::write(&file, b"deep work\n").unwrap();
}

/// Untracked files at generated depths around PATH_MAX (`JACKIN_FUZZ_SEED` repeats a run): one
/// whose whole path the system takes is found as untracked work; one past it refuses the status
/// (libgit2 took its directory for absent: the tree read clean); one in an ignored directory is
/// neither. Every way of asking agrees.
#[test]
fn a_path_too_long_for_the_system_is_never_clean() {
    let seed = std::env::var("JACKIN_FUZZ_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    eprintln!("deep paths: seed {seed} (JACKIN_FUZZ_SEED={seed} repeats it)");
    let mut rng = fastrand::Rng::with_seed(seed);
    for case in 0..12 {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        repository(root);
        let base = root.as_os_str().len() + 1;
        let top = *rng.choice(["src/", "new/", "target/"].iter()).unwrap();
        // The whole path's length, from a little under the limit to a little over it.
        let want = PATH_MAX - 40 + rng.usize(..80);
        // Names of 45 bytes and more: libgit2 refuses a tree more than 100 directories deep on
        // its own ("directory nesting too deep"), which is not what is tried here.
        let name_len = 45 + rng.usize(..200);
        let mut rel = top.as_bytes().to_vec();
        while base + rel.len() + name_len + 1 < want {
            rel.extend(std::iter::repeat_n(b'd', name_len));
            rel.push(b'/');
        }
        rel.extend(std::iter::repeat_n(b'f', want.saturating_sub(base + rel.len()).max(1)));
        make_deep(root, &rel);
        let long = base + rel.len() >= PATH_MAX;
        let ignored_dir = top == "target/";
        for how in EVERY_WAY {
            let shown = format!("seed {seed} case {case}: {} bytes under {top}, {how:?}", base + rel.len());
            let result = ask(root, how).unwrap_or_else(|| panic!("{shown}: waited"));
            match (long && !ignored_dir, how) {
                (true, _) => {
                    let error = result.err().unwrap_or_else(|| panic!("{shown}: read as clean"));
                    assert!(error.message().contains("longer than the system's calls take"), "{shown}: {error}");
                }
                (false, Asked::Ignored) => {
                    assert_eq!(result.unwrap(), usize::from(ignored_dir), "{shown}");
                }
                (false, _) => {
                    let files = result.unwrap_or_else(|e| panic!("{shown}: {e}"));
                    let staged = usize::from(matches!(how, Asked::Staged));
                    assert_eq!(files, usize::from(!ignored_dir) + staged, "{shown}: the deep file is work");
                }
            }
        }
    }
}

/// A directory the tool cannot open is never taken for absent: an untracked one, and a tracked
/// one (which libgit2 calls deleted), refuse the walk with the directory named, from the root and
/// from the stat check's suspects; the stat check gives a tracked one to the walk of the whole
/// tree. Played with the file system user of this thread alone set to nobody, whose rights
/// root's capabilities do not override. (libgit2's own status cannot be asked on that thread: it
/// looks at the operator's `~/.gitconfig` again, which is not nobody's to read.)
#[test]
fn a_directory_that_cannot_be_opened_is_never_clean() {
    for (what, locked) in [("untracked", "new/locked"), ("tracked", "src")] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("r");
        fs::create_dir(&root).unwrap();
        let repo = repository(&root);
        write(&root, "new/locked/work.txt", "work\n");
        // Changed work in the tracked directory: a suspect however old the index is (its files
        // are suspects by their age only while they are as new as the index).
        write(&root, "src/lib.rs", "changed by the agent\n");
        let (index, written) = read_index(&repo).unwrap();
        let suspects = suspects(&repo, &index, written.unwrap()).unwrap();
        fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
        fs::set_permissions(root.join(locked), fs::Permissions::from_mode(0o000)).unwrap();
        let locked_dir = root.join(locked);
        let (denied, from_root, from_suspects, narrowed) = as_nobody(move || {
            let (index, written) = read_index(&repo).unwrap();
            (
                fs::read_dir(&locked_dir).is_err(),
                check(&repo, Start::Root(&index)),
                check(&repo, Start::Suspects(&suspects)),
                super::super::stat_check::suspects(&repo, &index, written.unwrap()),
            )
        });
        assert!(denied, "{what}: the directory is readable, the case is not played");
        for (how, result) in [("from the root", from_root), ("from the suspects", from_suspects)] {
            let error = result.err().unwrap_or_else(|| panic!("{what} {how}: read as clean"));
            assert!(
                error.message().starts_with(&format!("{locked}/: cannot be read (Permission denied")),
                "{what} {how}: {error}"
            );
        }
        if what == "tracked" {
            assert_eq!(narrowed.err(), Some(Whole::Unopenable), "{what}: not a deletion");
        }
        fs::set_permissions(root.join(locked), fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// Runs `work` on a thread whose file system user is nobody (65534) when the tests run as root:
/// the change is the thread's own (`setfsuid`), and leaves with it.
fn as_nobody<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::spawn(move || {
        // SAFETY: system calls on this process's and this thread's own credentials.
        // Linux alone has a per-thread file system user; elsewhere (the darwin type-check) the
        // test runs as it is, as it does for a user who is not root.
        #[cfg(target_os = "linux")]
        if unsafe { libc::geteuid() } == 0 {
            unsafe { libc::setfsuid(65534) };
        }
        work()
    })
    .join()
    .unwrap()
}
