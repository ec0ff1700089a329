//! The refs that hold commits but that libgit2's ref iteration does not give, or gives under a
//! name a bundle cannot carry: the pseudo-refs a git directory holds (`MERGE_HEAD`, …), a
//! worktree's own refs (`refs/worktree/*`, `refs/bisect/*`, `refs/rewritten/*`, kept in its
//! registration, which a purge prunes), and loose refs whose names git refuses (an escape
//! character, `..`). The agent writes these files: each is read as a file, never through a link,
//! never waiting on a FIFO, at most a few bytes.

use std::path::Path;

use git2::{Oid, Repository};

use crate::protocol::path_bytes::NameBytes;
use crate::state::store::read_agent_text;

/// The pseudo-refs that can name a commit nothing else holds (a merge, cherry-pick, revert or
/// rebase stopped half-way, a bisection). `ORIG_HEAD` and `FETCH_HEAD` are not among them: the
/// one was HEAD before (its reflog has it), the other names what a remote has.
const PSEUDO_REFS: [&str; 5] = ["MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "REBASE_HEAD", "BISECT_HEAD"];

/// A ref read as a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileRef {
    /// Its name as a person reads it (the file's name; a pseudo-ref's own).
    pub(crate) name: String,
    /// The name a bundle gives it: its own when that is a valid name under `refs/`; else
    /// `refs/jackin/pseudo/<NAME>` for a pseudo-ref and `refs/jackin/ref/<id>` for a name git
    /// refuses (saved by object id).
    pub(crate) bundle_name: String,
    pub(crate) id: Oid,
}

/// The refs of `git_dir` read as files, each naming a commit `repo` has: its pseudo-refs, and
/// its loose refs under `refs/`, all of them with `every` (a worktree's registration, whose refs
/// are all its own), else only those whose names git refuses.
pub(crate) fn file_refs(repo: &Repository, git_dir: &Path, every: bool) -> Vec<FileRef> {
    let is_commit = |id: &Oid| repo.find_commit(*id).is_ok();
    let mut found = Vec::new();
    for pseudo in PSEUDO_REFS {
        if let Some(id) = read_id(&git_dir.join(pseudo)).filter(is_commit) {
            found.push(FileRef { name: pseudo.to_owned(), bundle_name: format!("refs/jackin/pseudo/{pseudo}"), id });
        }
    }
    let walk = walkdir::WalkDir::new(git_dir.join("refs")).follow_links(false).same_file_system(true);
    for entry in walk.into_iter().flatten().filter(|e| e.file_type().is_file()) {
        let Ok(rel) = entry.path().strip_prefix(git_dir) else { continue };
        let text = std::str::from_utf8(rel.as_os_str().as_encoded_bytes()).ok();
        let valid = text.is_some_and(super::valid_ref_name);
        if valid && !every {
            continue;
        }
        let Some(id) = read_id(entry.path()).filter(is_commit) else { continue };
        let name = NameBytes::of_path(rel).text();
        let bundle_name = match (valid, text) {
            (true, Some(text)) => text.to_owned(),
            _ => format!("refs/jackin/ref/{id}"),
        };
        found.push(FileRef { name, bundle_name, id });
    }
    found
}

/// The object id a ref file names (its first line, 40 or 64 hex digits); `None` for a symbolic
/// ref, anything else, or a file that is not a regular file.
fn read_id(path: &Path) -> Option<Oid> {
    let text = read_agent_text(path, 200)?;
    let first = text.lines().next()?.trim();
    let hex = matches!(first.len(), 40 | 64) && first.bytes().all(|b| b.is_ascii_hexdigit());
    hex.then(|| Oid::from_str(first).ok()).flatten()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pseudo_refs_and_refused_names_are_read_as_files_and_nothing_else_is() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = Repository::init(tmp.path()).unwrap();
        let sig = git2::Signature::now("t", "t@example.invalid").unwrap();
        let tree = repo.treebuilder(None).unwrap().write().unwrap();
        let tree = repo.find_tree(tree).unwrap();
        let commit = repo.commit(None, &sig, &sig, "c", &tree, &[]).unwrap();
        let git_dir = repo.path().to_path_buf();
        let write = |rel: &[u8], text: String| {
            let path = git_dir.join(<std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(rel));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        };
        write(b"MERGE_HEAD", format!("{commit}\n"));
        write(b"REVERT_HEAD", "not an id\n".into());
        write(b"refs/heads/esc\x1bape", format!("{commit}\n"));
        write(b"refs/heads/fine", format!("{commit}\n"));
        write(b"refs/wip/x", format!("{commit}\n"));
        write(b"refs/heads/sym", "ref: refs/heads/fine\n".into());
        write(b"refs/heads/gone", format!("{}\n", "1".repeat(40)));
        std::os::unix::fs::symlink(git_dir.join("refs/heads/fine"), git_dir.join("CHERRY_PICK_HEAD")).unwrap();
        crate::base::testing::fifo(&git_dir.join("BISECT_HEAD"));

        let names = |every: bool| -> Vec<(String, String)> {
            let mut found: Vec<(String, String)> =
                file_refs(&repo, &git_dir, every).into_iter().map(|f| (f.name, f.bundle_name)).collect();
            found.sort();
            found
        };
        let escaped = ("refs/heads/esc\u{1b}ape".to_owned(), format!("refs/jackin/ref/{commit}"));
        let merge = ("MERGE_HEAD".to_owned(), "refs/jackin/pseudo/MERGE_HEAD".to_owned());
        assert_eq!(names(false), vec![merge.clone(), escaped.clone()], "a link, a FIFO, a symbolic ref, text: none");
        let every = names(true);
        assert!(every.contains(&("refs/wip/x".into(), "refs/wip/x".into())) && every.contains(&escaped));
        assert!(!every.iter().any(|(n, _)| n == "refs/heads/gone" || n == "refs/heads/sym"), "{every:?}");
    }
}
