//! The stat check against libgit2's whole status and git's own, and each reason it gives up.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use super::{read_index, suspects, IndexWritten, Whole, MOST_SUSPECTS};
use crate::engines::git::{index_matches_head, narrow_by_stat_data, status, Narrowing};

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(["-c", "protocol.file.allow=always", "-c", "user.name=t", "-c", "user.email=t@example.com"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn write(root: &Path, path: &str, text: &str) {
    fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
    fs::write(root.join(path), text).unwrap();
}

fn set_mtime(path: &Path, when: SystemTime) {
    fs::File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
}

fn suspect_names(repo: &git2::Repository) -> Result<BTreeSet<String>, Whole> {
    let (index, written) = read_index(repo).unwrap();
    let found = suspects(repo, &index, written.unwrap())?;
    Ok(found.into_iter().map(|p| String::from_utf8(p).unwrap()).collect())
}

/// A repository whose tracked files are ten seconds old in an index written now: none of
/// them racily clean.
fn committed(root: &Path, files: &[(&str, &str)]) -> git2::Repository {
    git(root, &["init", "-q", "-b", "main"]);
    for (path, text) in files {
        write(root, path, text);
    }
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "-m", "files"]);
    let past = SystemTime::now() - Duration::from_secs(10);
    for (path, _) in files {
        set_mtime(&root.join(path), past);
    }
    git(root, &["update-index", "--refresh"]);
    git2::Repository::open(root).unwrap()
}

#[test]
fn a_clean_tree_has_no_suspects() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = committed(tmp.path(), &[("a.txt", "a\n"), ("src/lib.rs", "\n"), ("src/deep/er.rs", "\n")]);
    assert_eq!(suspect_names(&repo), Ok(BTreeSet::new()));
    fs::write(tmp.path().join("src/new.rs"), "\n").unwrap();
    // With the untracked name, the first tracked path under its directory, its witness.
    let new_and_witness = ["src/deep/er.rs", "src/new.rs"].map(str::to_owned);
    assert_eq!(suspect_names(&repo), Ok(BTreeSet::from(new_and_witness)));
    // An index no newer than a file: that file may have changed since without its stat
    // data showing it (racily clean), however exactly they match.
    let a_mtime = fs::metadata(tmp.path().join("a.txt")).unwrap().modified().unwrap();
    set_mtime(&tmp.path().join(".git/index"), a_mtime);
    let all = ["a.txt", "src/deep/er.rs", "src/lib.rs", "src/new.rs"].map(str::to_owned);
    assert_eq!(suspect_names(&repo), Ok(BTreeSet::from(all)));
}

/// A tree the stat data call clean needs no status at all (the assessment's fast path on a
/// large clean worktree); one suspect, and libgit2 is asked about it alone.
#[test]
fn a_clean_tree_is_not_asked_about() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = committed(tmp.path(), &[("a.txt", "a\n"), ("src/lib.rs", "\n")]);
    let narrowed = |repo: &git2::Repository| {
        let (index, written) = read_index(repo).unwrap();
        let mut options = git2::StatusOptions::new();
        narrow_by_stat_data(repo, &index, written, &mut options).unwrap()
    };
    assert!(!narrowed(&repo), "a clean tree needs no status");
    fs::write(tmp.path().join("src/lib.rs"), "changed\n").unwrap();
    assert!(narrowed(&repo), "a changed file is asked about");
    let state = status(&repo, false, Narrowing::ByStatData).unwrap();
    assert_eq!(state.files.iter().map(|f| f.path.as_path().to_str().unwrap()).collect::<Vec<_>>(), ["src/lib.rs"]);
}

#[test]
fn a_case_folding_repository_is_not_narrowed() {
    let tmp = tempfile::tempdir().unwrap();
    let repo = committed(tmp.path(), &[("a.txt", "a\n")]);
    git(tmp.path(), &["config", "core.ignorecase", "true"]);
    assert_eq!(suspect_names(&repo), Err(Whole::CaseFolding));
}

/// Every case of the assessment's exactness matrix, nothing staged: the stat data name
/// exactly the paths that can differ (never a skip-worktree or assume-unchanged file), and
/// libgit2's status narrowed to them equals its status of the whole tree, ignored count too.
#[test]
fn the_narrowed_status_equals_the_whole_one() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("repo");
    fs::create_dir(&root).unwrap();
    let files = [
        (".gitignore", "*.log\n!keep.log\ntarget/\n"),
        ("a-b/x.rs", "racy one\n"),
        ("a.txt", "mode\n"),
        ("a/b/c.rs", "modified\n"),
        ("a/b/d/e.rs", "kept\n"),
        ("a/b/f.rs", "deleted\n"),
        ("a0", "to a symlink\n"),
        ("deep/er/est/file.rs", "its directory goes\n"),
        ("deep/kept.rs", "kept\n"),
        ("dir/moved.rs", "its directory moved and a link to it put in its place\n"),
        ("docs/guide.md", "to a directory\n"),
        ("link", "to a regular file\n"),
        ("src/gen/.gitignore", "/out/\n"),
        ("src/lib.rs", "skip-worktree\n"),
        ("tools/run.sh", "assume-unchanged\n"),
    ];
    let repo = committed(&root, &files);
    fs::write(root.join(".git/info/exclude"), "*.excluded\n").unwrap();
    fs::write(tmp.path().join("excludes"), "*.personal\n").unwrap();
    git(&root, &["config", "core.excludesFile", tmp.path().join("excludes").to_str().unwrap()]);

    write(&root, "a/b/c.rs", "modified, longer\n");
    fs::remove_file(root.join("a/b/f.rs")).unwrap();
    fs::set_permissions(root.join("a.txt"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    fs::remove_file(root.join("a0")).unwrap();
    std::os::unix::fs::symlink("a.txt", root.join("a0")).unwrap();
    fs::remove_dir_all(root.join("deep/er")).unwrap();
    // The files under the link are the tracked ones, stat data and all: only the link tells.
    fs::rename(root.join("dir"), root.join("dir2")).unwrap();
    std::os::unix::fs::symlink("dir2", root.join("dir")).unwrap();
    fs::remove_file(root.join("docs/guide.md")).unwrap();
    write(&root, "docs/guide.md/inside.md", "x\n");
    fs::remove_file(root.join("link")).unwrap();
    write(&root, "link", "a file where a file was\n");
    for (path, text) in [
        ("a/b/new dir/été ✓.rs", "untracked, nested\n"),
        ("a-b/y.rs", "untracked\n"),
        ("z.txt", "untracked\n"),
        ("build.log", "ignored\n"),
        ("keep.log", "negated: untracked\n"),
        ("src/gen/out/x.rs", "ignored by a nested .gitignore\n"),
        ("notes.excluded", "info/exclude\n"),
        ("mine.personal", "core.excludesFile\n"),
        ("target/debug/x", "ignored directory\n"),
        ("vendored/inner.txt", "a nested repository\n"),
    ] {
        write(&root, path, text);
    }
    git(&root.join("vendored"), &["init", "-q"]);
    fs::create_dir(root.join("empty")).unwrap();
    git(&root, &["update-index", "--skip-worktree", "src/lib.rs"]);
    write(&root, "src/lib.rs", "hidden by skip-worktree\n");
    git(&root, &["update-index", "--assume-unchanged", "tools/run.sh"]);
    write(&root, "tools/run.sh", "hidden by assume-unchanged\n");
    git(&root, &["write-tree"]);
    // Racily clean: other bytes of the same size and the same mtime, the index no older.
    // Five seconds younger than the other files, so that it alone is as new as the index.
    let racy = root.join("a-b/x.rs");
    let entry_mtime = SystemTime::now() - Duration::from_secs(5);
    set_mtime(&racy, entry_mtime);
    git(&root, &["status", "--porcelain"]); // refreshes and writes the index
    fs::write(&racy, "racy One\n").unwrap();
    set_mtime(&racy, entry_mtime);
    set_mtime(&root.join(".git/index"), entry_mtime);

    let want: BTreeSet<String> = [
        "a-b/x.rs",
        "a.txt",
        "a/b/c.rs",
        "a/b/f.rs",
        "a0",
        "deep/er",
        "dir",
        "dir2",
        "docs/guide.md",
        "link",
        "a/b/new dir",
        "a-b/y.rs",
        "z.txt",
        "build.log",
        "keep.log",
        "src/gen/out",
        "src/gen/.gitignore", // the witness of src/gen/out's directory
        "notes.excluded",
        "mine.personal",
        "target",
        "vendored",
        "empty",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect();
    let repo = git2::Repository::open(repo.workdir().unwrap()).unwrap();
    assert_eq!(suspect_names(&repo), Ok(want));
    let narrowed = status(&repo, false, Narrowing::ByStatData).unwrap();
    let whole = status(&repo, false, Narrowing::None).unwrap();
    assert_eq!(narrowed.files, whole.files);
    assert_eq!(narrowed.ignored, whole.ignored);
    assert!(narrowed.ignored >= 5, "ignored entries: {}", narrowed.ignored);
    let ignored: BTreeSet<String> = crate::engines::git::ignored::ignored(&repo)
        .unwrap()
        .into_iter()
        .map(|e| e.path.display().to_string())
        .collect();
    let clean = Command::new("git").current_dir(&root).args(["clean", "-ndX"]).output().unwrap();
    let would_remove: BTreeSet<String> = String::from_utf8(clean.stdout)
        .unwrap()
        .lines()
        .filter_map(|line| line.strip_prefix("Would remove "))
        .map(|path| path.trim_end_matches('/').to_owned())
        .collect();
    assert_eq!(ignored, would_remove, "as git clean -ndX lists them");
    assert_eq!(ignored.len(), 5, "{ignored:?}");
    let listed: Vec<&str> = narrowed.files.iter().map(|f| f.path.as_path().to_str().unwrap()).collect();
    for path in ["a-b/x.rs", "a/b/new dir/été ✓.rs", "deep/er/est/file.rs", "docs/guide.md/inside.md", "keep.log"] {
        assert!(listed.contains(&path), "{path} is missing from {listed:?}");
    }
}

/// The narrowed status, checked against libgit2's whole one and against git's own lines.
fn assert_matches_git(work_tree: &Path, want: &[&str]) {
    let repo = git2::Repository::open(work_tree).unwrap();
    let narrowed = status(&repo, false, Narrowing::ByStatData).unwrap();
    assert_eq!(narrowed.files, status(&repo, false, Narrowing::None).unwrap().files);
    let lines: Vec<String> = narrowed.files.iter().map(|f| format!("{} {}", f.status, f.path)).collect();
    let cli = git(work_tree, &["status", "--porcelain=v1", "-uall"]);
    assert_eq!(lines, cli.lines().collect::<Vec<_>>());
    assert_eq!(lines, want);
}

/// Submodules: a gitlink's stat data say nothing of the commit checked out in it, so each
/// one is asked about by name; populated, changed in three ways, and unpopulated in a worktree.
#[test]
fn submodules_are_asked_about_by_name() {
    let tmp = tempfile::tempdir().unwrap();
    let sub = tmp.path().join("sub");
    fs::create_dir(&sub).unwrap();
    git(&sub, &["init", "-q", "-b", "main"]);
    fs::write(sub.join("lib.rs"), "x\n").unwrap();
    git(&sub, &["add", "-A"]);
    git(&sub, &["commit", "-q", "-m", "sub"]);
    let host = tmp.path().join("host");
    fs::create_dir(&host).unwrap();
    git(&host, &["init", "-q", "-b", "main"]);
    fs::write(host.join("a.txt"), "a\n").unwrap();
    for path in ["vendor/new-commit", "vendor/modified", "vendor/untracked", "vendor/untouched"] {
        git(&host, &["submodule", "add", "-q", sub.to_str().unwrap(), path]);
    }
    git(&host, &["add", "-A"]);
    git(&host, &["commit", "-q", "-m", "host"]);
    assert_matches_git(&host, &[]);

    fs::write(host.join("vendor/untracked/new.txt"), "untracked in the submodule\n").unwrap();
    fs::write(host.join("vendor/modified/lib.rs"), "modified in the submodule\n").unwrap();
    fs::write(host.join("vendor/new-commit/lib.rs"), "y\n").unwrap();
    git(&host.join("vendor/new-commit"), &["commit", "-q", "-am", "a commit the host does not record"]);
    assert_matches_git(&host, &[" M vendor/modified", " M vendor/new-commit", " M vendor/untracked"]);

    // A worktree of the host: its submodules are empty directories until initialised.
    let worktree = tmp.path().join("worktree");
    git(&host, &["worktree", "add", "-q", worktree.to_str().unwrap()]);
    assert_matches_git(&worktree, &[]);
}

/// A merge stopped by a conflict leaves its path at stages 1 to 3 with no stat data worth
/// comparing. The cached trees already keep the status whole (`index_matches_head`); the stat
/// check gives up on its own too, and the status is git's, conflict first.
#[test]
fn a_conflict_is_not_narrowed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    committed(root, &[("a.txt", "base\n"), ("b.txt", "b\n"), ("src/c.rs", "c\n")]);
    git(root, &["checkout", "-q", "-b", "theirs"]);
    write(root, "a.txt", "theirs\n");
    write(root, "b.txt", "b, merged cleanly\n");
    git(root, &["commit", "-q", "-am", "theirs"]);
    git(root, &["checkout", "-q", "main"]);
    write(root, "a.txt", "ours\n");
    git(root, &["commit", "-q", "-am", "ours"]);
    let merge = Command::new("git")
        .current_dir(root)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.com", "merge", "-q", "theirs"])
        .output()
        .unwrap();
    assert!(!merge.status.success(), "the merge was meant to stop on a conflict");
    write(root, "src/c.rs", "changed in the work tree\n");
    write(root, "z.txt", "untracked\n");

    let repo = git2::Repository::open(root).unwrap();
    let (mut index, written) = read_index(&repo).unwrap();
    assert!(index.has_conflicts());
    assert!(!index_matches_head(&repo, &mut index));
    assert_eq!(suspects(&repo, &index, written.unwrap()), Err(Whole::Conflict));
    assert_matches_git(root, &["UU a.txt", "M  b.txt", " M src/c.rs", "?? z.txt"]);
}

/// Past `MOST_SUSPECTS` paths, untracked names counted, the stat check gives up and the status is
/// libgit2's whole one: other bytes of the same size behind a touched file's stat data, last in
/// the index's order, are found among hundreds of files only touched.
#[test]
fn past_most_suspects_the_whole_tree_is_asked() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let paths: Vec<String> = (0..600).map(|i| format!("d{}/f{i:03}.txt", i % 6)).collect();
    let files: Vec<(&str, &str)> = paths.iter().map(|path| (path.as_str(), "same size\n")).collect();
    let repo = committed(root, &files);
    let touched = SystemTime::now() - Duration::from_secs(20);
    for path in &paths[..MOST_SUSPECTS] {
        set_mtime(&root.join(path), touched);
    }
    assert_eq!(suspect_names(&repo).map(|found| found.len()), Ok(MOST_SUSPECTS));
    write(root, "one-more.txt", "untracked\n");
    assert_eq!(suspect_names(&repo), Err(Whole::TooManySuspects));
    fs::remove_file(root.join("one-more.txt")).unwrap();

    for path in &paths[MOST_SUSPECTS..] {
        set_mtime(&root.join(path), touched);
    }
    let changed = root.join("d5/f599.txt");
    fs::write(&changed, "SAME SIZE\n").unwrap();
    set_mtime(&changed, touched);
    assert_eq!(suspect_names(&repo), Err(Whole::TooManySuspects));
    assert_matches_git(root, &[" M d5/f599.txt"]);
}

/// No work tree to list, nothing narrowed: a bare repository, and a work tree whose root went from
/// under the open repository, its git directory elsewhere and intact: there the status, given up
/// on by the stat check, fails as the whole one does.
#[test]
fn without_a_root_to_list_nothing_is_narrowed() {
    let tmp = tempfile::tempdir().unwrap();
    let bare = tmp.path().join("bare.git");
    fs::create_dir(&bare).unwrap();
    git(&bare, &["init", "-q", "--bare"]);
    let repo = git2::Repository::open(&bare).unwrap();
    assert_eq!(suspects(&repo, &repo.index().unwrap(), IndexWritten(0)), Err(Whole::NoWorkTree));

    let root = tmp.path().join("repo");
    fs::create_dir(&root).unwrap();
    let gitdir = tmp.path().join("repo.git");
    git(&root, &["init", "-q", "-b", "main", "--separate-git-dir", gitdir.to_str().unwrap()]);
    write(&root, "a.txt", "a\n");
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "a"]);
    let repo = git2::Repository::open(&root).unwrap();
    fs::rename(&root, tmp.path().join("moved")).unwrap();
    let (mut index, written) = read_index(&repo).unwrap();
    assert!(index_matches_head(&repo, &mut index), "so the status asks the stat check");
    assert_eq!(suspects(&repo, &index, written.unwrap()), Err(Whole::RootUnlisted));
    let failure = |narrowing| status(&repo, false, narrowing).err().map(|e| e.message().to_owned());
    let whole = failure(Narrowing::None);
    assert!(whole.as_ref().is_some_and(|message| message.contains("failed to open directory")), "{whole:?}");
    assert_eq!(failure(Narrowing::ByStatData), whole);
}

/// Staged changes with nothing else changed, also after a `reset --soft`: the index differs from
/// HEAD's tree, so the status compares the two (never the work tree alone, which matches the
/// index and would show nothing). An intent-to-add entry alone, which the cached trees leave
/// out, needs the whole status too, also when those trees are valid.
#[test]
fn staged_changes_and_intent_to_add_entries_are_listed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let repo = committed(root, &[("a.txt", "a\n"), ("b.txt", "b\n"), ("c.txt", "c\n")]);
    write(root, "later.txt", "added with -N\n");
    write(root, "gone.txt", "added with -N, then deleted\n");
    git(root, &["add", "-N", "later.txt", "gone.txt"]);
    fs::remove_file(root.join("gone.txt")).unwrap();
    // Also once a commit of another file has made the cached trees valid again.
    write(root, "other.txt", "committed beside them\n");
    git(root, &["add", "other.txt"]);
    git(root, &["commit", "-q", "-m", "other"]);
    let (mut index, _) = read_index(&repo).unwrap();
    assert!(!index_matches_head(&repo, &mut index), "an intent-to-add entry is not in HEAD's tree");
    // libgit2's letters, as the assessment reports them: a new index entry (an empty blob) the
    // work tree modifies or deletes; git itself shows ` A` and ` D`.
    let listed = |state: crate::engines::git::WorkState| -> Vec<String> {
        state.files.iter().map(|f| format!("{} {}", f.status, f.path)).collect()
    };
    let want = ["AD gone.txt", "AM later.txt"];
    assert_eq!(listed(status(&repo, false, Narrowing::ByStatData).unwrap()), want);
    assert_eq!(listed(status(&repo, false, Narrowing::None).unwrap()), want);

    git(root, &["rm", "-q", "--cached", "later.txt", "gone.txt"]);
    git(root, &["commit", "-q", "--allow-empty", "-m", "nothing intent-to-add"]);
    fs::remove_file(root.join("later.txt")).unwrap();
    write(root, "a.txt", "a, staged\n");
    write(root, "d.txt", "new, staged\n");
    git(root, &["add", "a.txt", "d.txt"]);
    git(root, &["rm", "-q", "b.txt"]);
    assert_matches_git(root, &["M  a.txt", "D  b.txt", "A  d.txt"]);
    // Committed and reset away (`reset --soft`): the index's cached trees are valid again and
    // name the commit's tree, not HEAD's.
    git(root, &["commit", "-q", "-m", "reset away"]);
    git(root, &["reset", "-q", "--soft", "HEAD~1"]);
    let (mut index, _) = read_index(&repo).unwrap();
    assert!(!index_matches_head(&repo, &mut index), "the index holds staged changes");
    assert_matches_git(root, &["M  a.txt", "D  b.txt", "A  d.txt"]);
}

/// A repository with no commit yet (an unborn branch): its files' diffs are against nothing.
#[test]
fn an_unborn_branch_has_diffs_against_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    git(root, &["init", "-q", "-b", "main"]);
    write(root, "first.txt", "the first line\n");
    let repo = git2::Repository::open(root).unwrap();
    let state = status(&repo, true, Narrowing::ByStatData).unwrap();
    assert_eq!(state.files.len(), 1, "{:?}", state.files);
    assert_eq!(state.files[0].status, "??");
    let diff = state.files[0].diff.as_deref().unwrap();
    assert!(diff.contains("+the first line"), "{diff}");
}

/// A tracked symbolic link whose stat data match the index is no suspect, as git's own check
/// has it; one that now points elsewhere is.
#[test]
fn a_clean_symlink_has_no_suspects_and_one_pointed_elsewhere_is_one() {
    use rustix::fs::{utimensat, AtFlags, Timespec, Timestamps, CWD};
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::os::unix::fs::symlink("a.txt", root.join("link")).unwrap();
    committed(root, &[("a.txt", "a\n")]);
    // The link's own times, as committed() sets its files' (set_modified would follow it).
    let past = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs() as i64 - 10;
    let at = Timespec { tv_sec: past, tv_nsec: 0 };
    let times = Timestamps { last_access: at, last_modification: at };
    utimensat(CWD, root.join("link"), &times, AtFlags::SYMLINK_NOFOLLOW).unwrap();
    git(root, &["update-index", "--refresh"]);
    let repo = git2::Repository::open(root).unwrap();
    assert_eq!(suspect_names(&repo), Ok(BTreeSet::new()));
    fs::remove_file(root.join("link")).unwrap();
    std::os::unix::fs::symlink("elsewhere", root.join("link")).unwrap();
    assert_eq!(suspect_names(&repo), Ok(BTreeSet::from(["link".to_owned()])));
}

/// The directories the check holds open are closed on exec: a program the tools start meanwhile
/// (a pager, `ssh`, a secret manager's client) is not handed a descriptor of the work tree.
#[test]
fn the_work_tree_s_descriptors_are_not_inherited_by_a_program_started_meanwhile() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    fs::create_dir(root.join("sub")).unwrap();
    let mut listing = super::Listing::open_root(&root).unwrap();
    let inner = listing.enter(b"sub").unwrap();
    let out = Command::new("ls").args(["-l", "/proc/self/fd"]).output().unwrap();
    let fds = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && fds.contains("/proc/"), "the listing was read: {fds}");
    assert!(!fds.contains(root.to_str().unwrap()), "a descriptor of the work tree was inherited:\n{fds}");
    drop((listing, inner));
}

/// A directory the agent swaps for a FIFO between the listing and the open is refused at once
/// (`O_DIRECTORY`); opened as a file, the open would wait for a writer, and the assessment with it.
#[test]
fn a_fifo_in_a_directorys_place_is_refused_without_waiting() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().canonicalize().unwrap();
    crate::base::testing::fifo(&root.join("pipe"));
    let (sender, receiver) = std::sync::mpsc::channel();
    let pipe = root.join("pipe");
    std::thread::spawn(move || {
        let root_refused = super::Listing::open_root(&pipe).is_none();
        let mut listing = super::Listing::open_root(&root).unwrap();
        let enter_refused = listing.enter(b"pipe").is_err();
        sender.send((root_refused, enter_refused)).unwrap();
    });
    let refused = receiver.recv_timeout(Duration::from_secs(20));
    assert_eq!(refused, Ok((true, true)), "a FIFO was opened as a directory, or waited on");
}
