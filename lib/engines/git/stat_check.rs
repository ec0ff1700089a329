//! Which paths of a work tree can differ from its index, told the way `git status` tells it before
//! reading any file: each tracked file's `lstat` against the stat data the index keeps, and one
//! listing of each directory that holds tracked files for the names the index does not know.
//!
//! Only a narrowing: every path it names still goes to libgit2's status, which decides. A path
//! it does not name is one whose stat data matches the index exactly and is not racily clean,
//! which git itself reports as unchanged without reading it. A tracked directory it cannot open is
//! named once. Whenever the walk meets something it cannot tell this way (a conflict, a root it
//! cannot list, `core.ignorecase`), it answers `None` and the whole work tree goes to libgit2.
//! Stats are made relative to an open directory, one path component each, where libgit2 stats
//! every file by its absolute path (docs/performance.md).

use std::ffi::CString;
use std::os::fd::{BorrowedFd, OwnedFd};
use std::path::Path;

use rustix::fs::{self as fs, AtFlags, Dir, FileType, Mode, OFlags, Stat};

use super::INTENT_TO_ADD;

/// The index's own modification time, read before the index: a file changed in the same second
/// the index was written may look unchanged by its stat data (git's "racily clean" files).
#[derive(Debug, Clone, Copy)]
pub(super) struct IndexWritten(i64);

/// The repository's index, with its modification time read first: an index rewritten in between
/// only makes its entries look racier, never cleaner.
pub(super) fn read_index(repo: &git2::Repository) -> Result<(git2::Index, Option<IndexWritten>), git2::Error> {
    let written = fs::lstat(repo.path().join("index")).ok().map(|st| IndexWritten(st.st_mtime));
    Ok((repo.index()?, written))
}

/// Past this many, a status of the whole work tree costs no more than one narrowed to them.
const MOST_SUSPECTS: usize = 512;

const STAGE_MASK: u16 = 0x3000;
const ASSUME_UNCHANGED: u16 = 0x8000;
const SKIP_WORKTREE: u16 = 1 << 14;
const GITLINK: u32 = 0o160000;
const SYMLINK: u32 = 0o120000;
const EXECUTABLE: u32 = 0o100755;

/// The paths, relative to the work tree, that may differ from the index: tracked files whose
/// stat data does not match it and untracked or ignored entries of tracked directories (a
/// directory the index does not know is named once, not walked). `None`: ask about everything.
pub(super) fn suspects(repo: &git2::Repository, index: &git2::Index, written: IndexWritten) -> Option<Vec<Vec<u8>>> {
    let workdir = repo.workdir()?;
    if repo.config().ok()?.get_bool("core.ignorecase").unwrap_or(false) {
        // The index's names and the directory's need not match byte for byte.
        return None;
    }
    let mut walk = Walk { stack: vec![Listing::open_root(workdir)?], suspects: Vec::new(), gone: None, written };
    for entry in index.iter() {
        walk.visit(&entry)?;
        if walk.suspects.len() > MOST_SUSPECTS {
            return None;
        }
    }
    while let Some(listing) = walk.stack.pop() {
        listing.unknown_names(&mut walk.suspects);
    }
    (walk.suspects.len() <= MOST_SUSPECTS).then_some(walk.suspects)
}

struct Walk {
    /// The directories from the work tree's root down to the current entry's, each open.
    stack: Vec<Listing>,
    suspects: Vec<Vec<u8>>,
    /// A tracked directory that cannot be opened (deleted, or now a file or a symlink), with its
    /// trailing `/`: named once as a suspect, its entries are not visited one by one.
    gone: Option<Vec<u8>>,
    written: IndexWritten,
}

impl Walk {
    /// The index is sorted by path, so each directory's entries come in one run, its
    /// subdirectories' runs nested inside it: a stack of open directories follows it.
    fn visit(&mut self, entry: &git2::IndexEntry) -> Option<()> {
        if entry.flags & STAGE_MASK != 0 {
            return None;
        }
        let path = entry.path.as_slice();
        if self.gone.as_ref().is_some_and(|gone| path.starts_with(gone)) {
            return Some(());
        }
        let (dir, name) = match path.iter().rposition(|&b| b == b'/') {
            Some(slash) => (&path[..=slash], &path[slash + 1..]),
            None => (&path[..0], path),
        };
        while !dir.starts_with(&self.top().prefix) {
            let done = self.stack.pop()?;
            done.unknown_names(&mut self.suspects);
        }
        while self.top().prefix.len() < dir.len() {
            let rest = &dir[self.top().prefix.len()..];
            let component = &rest[..rest.iter().position(|&b| b == b'/')?];
            match self.top_mut().enter(component) {
                Ok(child) => self.stack.push(child),
                Err(_) => {
                    let gone = [self.top().prefix.as_slice(), component].concat();
                    self.suspects.push(gone.clone());
                    self.gone = Some([gone.as_slice(), b"/"].concat());
                    return Some(());
                }
            }
        }
        let written = self.written;
        let listing = self.top_mut();
        listing.mark_known(name);
        if entry.flags & ASSUME_UNCHANGED != 0 || entry.flags_extended & SKIP_WORKTREE != 0 {
            // git never looks at these files: whatever is on disk, they are reported unchanged.
            return Some(());
        }
        let unchanged = entry.mode != GITLINK
            && entry.flags_extended & INTENT_TO_ADD == 0
            && fs::statat(listing.fd(), name, AtFlags::SYMLINK_NOFOLLOW)
                .is_ok_and(|st| matches_index(&st, entry, written));
        if !unchanged {
            self.suspects.push(path.to_vec());
        }
        Some(())
    }

    fn top(&self) -> &Listing {
        self.stack.last().expect("the root stays until the end")
    }

    fn top_mut(&mut self) -> &mut Listing {
        self.stack.last_mut().expect("the root stays until the end")
    }
}

/// git's own test (`ie_match_stat`), made stricter where that is cheaper than being exact: any
/// difference sends the file to libgit2, which reads it.
fn matches_index(st: &Stat, entry: &git2::IndexEntry, written: IndexWritten) -> bool {
    let kind_matches = match FileType::from_raw_mode(st.st_mode) {
        FileType::Symlink => entry.mode == SYMLINK,
        FileType::RegularFile => entry.mode == if st.st_mode & 0o100 != 0 { EXECUTABLE } else { 0o100644 },
        _ => false,
    };
    let racily_clean = i64::from(entry.mtime.seconds()) >= written.0;
    kind_matches
        && !racily_clean
        && st.st_mtime as i32 == entry.mtime.seconds()
        && st.st_mtime_nsec as u32 == entry.mtime.nanoseconds()
        && st.st_ctime as i32 == entry.ctime.seconds()
        && st.st_ctime_nsec as u32 == entry.ctime.nanoseconds()
        && st.st_ino as u32 == entry.ino
        && st.st_uid == entry.uid
        && st.st_gid == entry.gid
        && st.st_size as u32 == entry.file_size
}

/// One open directory of the work tree and the names in it, each marked once the index names it.
struct Listing {
    /// The directory's path in the work tree with its trailing `/`; empty for the root.
    prefix: Vec<u8>,
    dir: Dir,
    names: Vec<(CString, bool)>,
}

impl Listing {
    fn open_root(workdir: &Path) -> Option<Listing> {
        let fd = fs::open(workdir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()).ok()?;
        let mut root = Listing::read(Vec::new(), fd).ok()?;
        // The work tree's own `.git` (a directory, or the file of a worktree) is never its content.
        root.mark_known(b".git");
        Some(root)
    }

    fn enter(&mut self, name: &[u8]) -> rustix::io::Result<Listing> {
        self.mark_known(name);
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = fs::openat(self.fd(), name, flags, Mode::empty())?;
        Listing::read([self.prefix.as_slice(), name, b"/"].concat(), fd)
    }

    fn read(prefix: Vec<u8>, fd: OwnedFd) -> rustix::io::Result<Listing> {
        let mut dir = Dir::new(fd)?;
        let mut names = Vec::new();
        while let Some(entry) = dir.read() {
            let name = entry?.file_name().to_owned();
            if !matches!(name.as_bytes(), b"." | b"..") {
                names.push((name, false));
            }
        }
        names.sort_unstable();
        Ok(Listing { prefix, dir, names })
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.dir.fd().expect("a Dir always has its descriptor")
    }

    fn mark_known(&mut self, name: &[u8]) {
        if let Ok(at) = self.names.binary_search_by(|(known, _)| known.as_bytes().cmp(name)) {
            self.names[at].1 = true;
        }
    }

    /// Names on disk that the index does not hold: untracked or ignored, for libgit2 to tell.
    fn unknown_names(self, suspects: &mut Vec<Vec<u8>>) {
        for (name, known) in self.names {
            if !known {
                let mut path = self.prefix.clone();
                path.extend_from_slice(name.as_bytes());
                suspects.push(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::fs;
    use std::path::Path;
    use std::process::Command;
    use std::time::{Duration, SystemTime};

    use super::{read_index, suspects};
    use crate::engines::git::{status, Narrowing};

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

    fn suspect_names(repo: &git2::Repository) -> Option<BTreeSet<String>> {
        let (index, written) = read_index(repo).unwrap();
        let found = suspects(repo, &index, written.unwrap())?;
        Some(found.into_iter().map(|p| String::from_utf8(p).unwrap()).collect())
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
        assert_eq!(suspect_names(&repo), Some(BTreeSet::new()));
        fs::write(tmp.path().join("src/new.rs"), "\n").unwrap();
        assert_eq!(suspect_names(&repo), Some(BTreeSet::from(["src/new.rs".to_owned()])));
        // An index no newer than a file: that file may have changed since without its stat
        // data showing it (racily clean), however exactly they match.
        let a_mtime = fs::metadata(tmp.path().join("a.txt")).unwrap().modified().unwrap();
        set_mtime(&tmp.path().join(".git/index"), a_mtime);
        let all = ["a.txt", "src/deep/er.rs", "src/lib.rs", "src/new.rs"].map(str::to_owned);
        assert_eq!(suspect_names(&repo), Some(BTreeSet::from(all)));
    }

    #[test]
    fn a_case_folding_repository_is_not_narrowed() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = committed(tmp.path(), &[("a.txt", "a\n")]);
        git(tmp.path(), &["config", "core.ignorecase", "true"]);
        assert_eq!(suspect_names(&repo), None);
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
            "docs/guide.md",
            "link",
            "a/b/new dir",
            "a-b/y.rs",
            "z.txt",
            "build.log",
            "keep.log",
            "src/gen/out",
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
        assert_eq!(suspect_names(&repo), Some(want));
        let narrowed = status(&repo, false, Narrowing::ByStatData).unwrap();
        let whole = status(&repo, false, Narrowing::None).unwrap();
        assert_eq!(narrowed.files, whole.files);
        assert_eq!(narrowed.ignored, whole.ignored);
        assert!(narrowed.ignored >= 5, "ignored entries: {}", narrowed.ignored);
        let ignored: BTreeSet<String> =
            crate::engines::git::ignored(&repo).unwrap().into_iter().map(|e| e.path.display().to_string()).collect();
        let clean = Command::new("git").current_dir(&root).args(["clean", "-ndX"]).output().unwrap();
        let would_remove: BTreeSet<String> = String::from_utf8(clean.stdout)
            .unwrap()
            .lines()
            .filter_map(|line| line.strip_prefix("Would remove "))
            .map(|path| path.trim_end_matches('/').to_owned())
            .collect();
        assert_eq!(ignored, would_remove, "as git clean -ndX lists them");
        assert_eq!(ignored.len(), 5, "{ignored:?}");
        let listed: Vec<&str> = narrowed.files.iter().map(|f| f.path.as_str()).collect();
        for path in ["a-b/x.rs", "a/b/new dir/été ✓.rs", "deep/er/est/file.rs", "docs/guide.md/inside.md", "keep.log"]
        {
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
}
