//! Bringing a quarantine's commits back (tools/restore/recover.rs decides where): a bundle read
//! without git, its pack written into a repository's object store, refs and a worktree made
//! without touching anything that exists, and the session's staged changes put into the new
//! worktree's index.
//!
//! A v2 (or v3) bundle is a text header (gitformat-bundle(5)), `# v2 git bundle`, then for v3
//! `@capability` lines, one `-<oid> <subject>` line per prerequisite, one `<oid> <refname>` line
//! per ref, an empty line; the pack follows.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};
use git2::{IndexEntry, IndexTime, ObjectType, Oid, Repository, WorktreeAddOptions};

use super::error::unavailable;
use super::Repo;

/// What a bundle's header says.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BundleHeader {
    /// Commits the bundle builds on: a repository must have them for the history to be whole.
    pub(crate) prerequisites: Vec<String>,
    /// `(refname, oid)` of each ref, in the bundle's order.
    pub(crate) refs: Vec<(String, String)>,
    /// Where the pack starts.
    pack_at: u64,
}

#[cfg(test)]
impl BundleHeader {
    /// A header as a bundle's would read, for plans decided without a bundle file.
    pub(crate) fn for_tests(prerequisites: Vec<String>, refs: Vec<(String, String)>) -> Self {
        BundleHeader { prerequisites, refs, pack_at: 0 }
    }
}

/// Reads the header of the bundle at `path`.
pub(crate) fn read_bundle(path: &Path) -> Result<BundleHeader> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    read_bundle_header(&mut BufReader::new(file), &path.display().to_string())
}

/// Reads a bundle's header from `reader` (left where the pack starts), `label` naming the
/// bundle in the errors.
pub(crate) fn read_bundle_header(reader: &mut impl BufRead, label: &str) -> Result<BundleHeader> {
    let mut line = Vec::new();
    let mut at = 0u64;
    let mut next = |reader: &mut dyn BufRead, line: &mut Vec<u8>| -> Result<bool> {
        line.clear();
        let n = reader.read_until(b'\n', line)?;
        at += n as u64;
        Ok(n > 0 && line.last() == Some(&b'\n'))
    };
    if !next(reader, &mut line)? || !(line == b"# v2 git bundle\n" || line == b"# v3 git bundle\n") {
        anyhow::bail!("{label} is not a git bundle (v2 or v3)");
    }
    let mut header = BundleHeader { prerequisites: Vec::new(), refs: Vec::new(), pack_at: 0 };
    loop {
        if !next(reader, &mut line)? {
            anyhow::bail!("{label} ends inside its header");
        }
        let text = String::from_utf8_lossy(&line[..line.len() - 1]).into_owned();
        if text.is_empty() {
            break;
        }
        if text.starts_with('@') {
            continue;
        }
        let (id, rest) = text.split_once(' ').unwrap_or((&text, ""));
        match id.strip_prefix('-') {
            Some(prerequisite) => header.prerequisites.push(checked(prerequisite, label)?),
            None => header.refs.push((rest.to_owned(), checked(id, label)?)),
        }
    }
    header.pack_at = at;
    Ok(header)
}

fn checked(id: &str, label: &str) -> Result<String> {
    Oid::from_str(id).map(|oid| oid.to_string()).map_err(|_| anyhow::anyhow!("{label}: {id:?} is not an object id"))
}

impl Repo {
    /// A new repository at `path` (which must not exist), with a work tree.
    pub(crate) fn init_new(path: &Path) -> Result<Repo> {
        if std::fs::symlink_metadata(path).is_ok() {
            anyhow::bail!("{} exists already: not overwritten", path.display());
        }
        let repo =
            Repository::init(path).map_err(|e| unavailable(e).context(format!("creating {}", path.display())))?;
        Ok(Repo { repo, path: path.to_path_buf() })
    }

    /// The commits of `ids` this repository does not have.
    pub(crate) fn missing_commits(&self, ids: &[String]) -> Vec<String> {
        let Ok(odb) = self.repo.odb() else { return ids.to_vec() };
        ids.iter().filter(|id| !Oid::from_str(id).is_ok_and(|oid| odb.exists(oid))).cloned().collect()
    }

    /// Writes the pack of the bundle at `path` (whose header is `header`) into this repository's
    /// object store, indexed; no ref changes.
    pub(crate) fn import_bundle_pack(&self, path: &Path, header: &BundleHeader) -> Result<()> {
        let mut file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
        std::io::Seek::seek(&mut file, std::io::SeekFrom::Start(header.pack_at))?;
        let odb = self.repo.odb().map_err(unavailable)?;
        let mut writer = odb.packwriter().map_err(unavailable)?;
        let mut buffer = vec![0; 1 << 16];
        loop {
            let n = file.read(&mut buffer)?;
            if n == 0 {
                break;
            }
            writer.write_all(&buffer[..n]).with_context(|| format!("writing the pack of {}", path.display()))?;
        }
        writer.commit().map_err(|e| unavailable(e).context(format!("indexing the pack of {}", path.display())))?;
        Ok(())
    }

    /// Checks the bundle at `path` (whose header is `header`) before anything of it reaches this
    /// repository: its pack is indexed into a scratch repository at `scratch` (which must not
    /// exist), whose objects fall back on this repository's, so every object is inflated and
    /// hashed; then every commit between the bundle's refs and its prerequisites is read with
    /// every tree and blob it names (a gitlink excepted). An error says what is missing or
    /// damaged; nothing of this repository changes.
    pub(crate) fn verify_bundle(&self, path: &Path, header: &BundleHeader, scratch: &Path) -> Result<()> {
        let scratch_repo = Repo::init_bare_new(scratch)?;
        let own_objects = self.repo.path().join("objects");
        let odb = scratch_repo.repo.odb().map_err(unavailable)?;
        odb.add_disk_alternate(own_objects.to_str().unwrap_or_default()).map_err(unavailable)?;
        scratch_repo.import_bundle_pack(path, header)?;
        let repo = &scratch_repo.repo;
        let mut walk = repo.revwalk().map_err(unavailable)?;
        for (refname, id) in &header.refs {
            let oid = Oid::from_str(id)?;
            let object = repo.find_object(oid, None).map_err(|e| {
                unavailable(e).context(format!("{}: its ref {refname} names an object it lacks", path.display()))
            })?;
            if object.kind() == Some(ObjectType::Commit) {
                walk.push(oid).map_err(unavailable)?;
            }
        }
        for id in &header.prerequisites {
            walk.hide(Oid::from_str(id)?).map_err(unavailable)?;
        }
        let mut seen = std::collections::HashSet::new();
        for commit in walk {
            let commit =
                commit.map_err(|e| unavailable(e).context(format!("{}: a commit is missing", path.display())))?;
            let commit = repo.find_commit(commit).map_err(unavailable)?;
            let mut trees = vec![commit.tree_id()];
            while let Some(tree_id) = trees.pop() {
                if !seen.insert(tree_id) {
                    continue;
                }
                let tree = repo
                    .find_tree(tree_id)
                    .map_err(|e| unavailable(e).context(format!("{}: a tree is missing or damaged", path.display())))?;
                for entry in tree.iter() {
                    match entry.kind() {
                        Some(ObjectType::Tree) => trees.push(entry.id()),
                        Some(ObjectType::Blob) if seen.insert(entry.id()) && !odb.exists(entry.id()) => {
                            anyhow::bail!("{}: the blob {} is missing", path.display(), entry.id());
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(())
    }

    /// Whether the ref `name` (a full name) exists.
    pub(crate) fn has_ref(&self, name: &str) -> bool {
        self.repo.find_reference(name).is_ok()
    }

    /// Whether `name` (a full ref name) can be created here: a valid name, and neither it nor a
    /// ref whose name is a directory of it or below it exists (git keeps refs as files).
    pub(crate) fn ref_name_free(&self, name: &str) -> bool {
        if !git2::Reference::is_valid_name(name) || self.has_ref(name) {
            return false;
        }
        let Ok(names) = self
            .repo
            .references()
            .map(|refs| refs.flatten().filter_map(|r| r.name().ok().map(str::to_owned)).collect::<Vec<_>>())
        else {
            return false;
        };
        !names
            .iter()
            .any(|existing| existing.starts_with(&format!("{name}/")) || name.starts_with(&format!("{existing}/")))
    }

    /// Creates the ref `name` at `id`, never over one that exists.
    pub(crate) fn create_ref(&self, name: &str, id: &str, why: &str) -> Result<()> {
        let oid = Oid::from_str(id)?;
        self.repo
            .reference(name, oid, false, why)
            .map_err(|e| unavailable(e).context(format!("creating {name} in {}", self.path.display())))?;
        Ok(())
    }

    /// Whether `id` names a commit this repository has whole enough to check out.
    pub(crate) fn has_commit(&self, id: &str) -> bool {
        Oid::from_str(id).is_ok_and(|oid| self.repo.find_commit(oid).is_ok_and(|c| c.tree().is_ok()))
    }

    /// The commit HEAD is on, when there is one.
    pub(crate) fn head_commit(&self) -> Option<String> {
        self.repo.head().ok()?.peel_to_commit().ok().map(|c| c.id().to_string())
    }

    /// Adds the worktree `name` at `path` (which must not exist) on the local branch `branch`
    /// (a full ref name), checked out.
    pub(crate) fn add_worktree(&self, name: &str, path: &Path, branch: &str) -> Result<()> {
        let reference = self.repo.find_reference(branch).map_err(unavailable)?;
        let mut options = WorktreeAddOptions::new();
        options.reference(Some(&reference));
        self.repo
            .worktree(name, path, Some(&options))
            .map_err(|e| unavailable(e).context(format!("adding the worktree {}", path.display())))?;
        Ok(())
    }

    /// Adds the worktree `name` at `path` (which must not exist) with a detached HEAD at
    /// `commit`, checked out. libgit2 adds a worktree on a branch only: one is made for the add
    /// (`refs/heads/jackin/recovering/<name>`) and deleted once the worktree's HEAD is detached,
    /// so no branch is left behind.
    pub(crate) fn add_worktree_detached(&self, name: &str, path: &Path, commit: &str) -> Result<()> {
        let oid = Oid::from_str(commit)?;
        let temporary = format!("refs/heads/jackin/recovering/{name}");
        let mut reference = self
            .repo
            .reference(&temporary, oid, false, "jackin-restore --recover: the worktree's checkout")
            .map_err(|e| unavailable(e).context(format!("creating {temporary} in {}", self.path.display())))?;
        let mut options = WorktreeAddOptions::new();
        options.reference(Some(&reference));
        let added = self.repo.worktree(name, path, Some(&options));
        let detached = added.and_then(|_| git2::Repository::open(path)?.set_head_detached(oid));
        let deleted = reference.delete();
        detached.map_err(|e| unavailable(e).context(format!("adding the worktree {}", path.display())))?;
        deleted.map_err(|e| unavailable(e).context(format!("deleting {temporary}")))?;
        Ok(())
    }

    /// Points this (new) repository's HEAD at the local branch `branch` (a full ref name), with
    /// nothing checked out: its commits may build on ones it does not have.
    pub(crate) fn point_head_at(&self, branch: &str) -> Result<()> {
        self.repo.set_head(branch).map_err(|e| unavailable(e).context(format!("pointing HEAD at {branch}")))?;
        Ok(())
    }
}

/// One change to a recovered work tree's index, made to match the session's.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum IndexChange {
    /// The entry as the work tree holds it (`git add <path>`): the session's index held what
    /// its work tree held.
    AsInWorkTree(PathBuf),
    /// A staged version the work tree no longer had: a blob of the bytes of `source` (a link's
    /// target when `mode` is a link's, `0o120000`) with `mode`.
    Blob { path: PathBuf, source: PathBuf, mode: u32 },
    /// A submodule's commit at `path` (a gitlink): what `git add <submodule>` had staged.
    Gitlink { path: PathBuf, id: String },
    /// No entry at `path` (`git rm --cached`): a deletion the session had staged.
    Removed(PathBuf),
}

impl IndexChange {
    pub(crate) fn path(&self) -> &Path {
        match self {
            IndexChange::AsInWorkTree(path)
            | IndexChange::Blob { path, .. }
            | IndexChange::Gitlink { path, .. }
            | IndexChange::Removed(path) => path,
        }
    }
}

/// What [`Repo::restage`] did.
#[derive(Debug, Default)]
pub(crate) struct Restaged {
    /// Whether the index was first read from the base commit's tree.
    pub(crate) tree_read: bool,
    /// The changes that could not be made (a submodule, a file gone meanwhile), with why.
    pub(crate) failed: Vec<(IndexChange, String)>,
}

impl Repo {
    /// The path it was opened at.
    pub(crate) fn opened_at(&self) -> &Path {
        &self.path
    }

    /// A new bare repository at `path` (which must not exist): a submodule's commits without a
    /// git directory of the host's to go into.
    pub(crate) fn init_bare_new(path: &Path) -> Result<Repo> {
        if std::fs::symlink_metadata(path).is_ok() {
            anyhow::bail!("{} exists already: not overwritten", path.display());
        }
        let repo =
            Repository::init_bare(path).map_err(|e| unavailable(e).context(format!("creating {}", path.display())))?;
        Ok(Repo { repo, path: path.to_path_buf() })
    }

    /// The git directory this repository keeps for its submodule at `path` (`modules/<name>`),
    /// opened: by `module`, the name the receipt recorded; else by the name `.gitmodules` gives
    /// that path, or the path itself (git's name for a submodule added there). `None` when
    /// there is none.
    pub(crate) fn submodule_git_dir(&self, module: Option<&str>, path: &Path) -> Option<Repo> {
        let mut names: Vec<PathBuf> = module.map(PathBuf::from).into_iter().collect();
        if let Ok(submodules) = self.repo.submodules() {
            let named = submodules.iter().filter(|s| s.path() == path);
            names.extend(named.map(|s| PathBuf::from(std::ffi::OsStr::from_bytes(s.name_bytes()))));
        }
        names.push(path.to_path_buf());
        let modules = self.repo.path().join("modules");
        // The agent could write the host's git directory: a link there could lead the commits
        // into another repository of the operator's. Only a directory that is under `modules/`
        // once every link is resolved is taken.
        let inside = self.repo.path().canonicalize().ok()?.join("modules");
        names
            .into_iter()
            .filter(|name| !name.as_os_str().is_empty() && name.components().all(|c| matches!(c, Component::Normal(_))))
            .map(|name| modules.join(name))
            .filter(|dir| std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir()))
            .filter(|dir| dir.canonicalize().is_ok_and(|real| real.starts_with(&inside) && real != inside))
            .find_map(|dir| Some(Repo { repo: super::repo::open_checked(&dir).ok()?, path: dir }))
    }

    /// Whether this repository holds the commit `id` (its tree need not be here).
    pub(crate) fn has_commit_object(&self, id: &str) -> bool {
        Oid::from_str(id).is_ok_and(|oid| self.repo.find_commit(oid).is_ok())
    }

    /// Makes this work tree's index the session's: first, with `base`, the tree of that commit
    /// (a new repository's, whose index is empty; `tree_read` false when the tree is not whole
    /// here), then each of `changes`, the deletions first (a renamed file's old name may be
    /// staged anew). Written once, at the end.
    pub(crate) fn restage(&self, base: Option<&str>, changes: &[IndexChange]) -> Result<Restaged> {
        let mut index = self.repo.index().map_err(unavailable)?;
        let mut done = Restaged::default();
        if let Some(base) = base {
            let tree = Oid::from_str(base).ok().and_then(|oid| self.repo.find_commit(oid).ok()?.tree().ok());
            done.tree_read = tree.is_some_and(|tree| index.read_tree(&tree).is_ok());
            if !done.tree_read {
                index.clear().map_err(unavailable)?;
            }
        }
        let (removals, additions): (Vec<&IndexChange>, Vec<&IndexChange>) =
            changes.iter().partition(|c| matches!(c, IndexChange::Removed(_)));
        for change in removals.into_iter().chain(additions) {
            let made = match change {
                IndexChange::Removed(path) => index.remove_path(path).map_err(anyhow::Error::from),
                IndexChange::AsInWorkTree(path) => index.add_path(path).map_err(anyhow::Error::from),
                IndexChange::Blob { path, source, mode } => self
                    .staged_entry(path, source, *mode)
                    .and_then(|entry| index.add(&entry).map_err(anyhow::Error::from)),
                IndexChange::Gitlink { path, id } => Oid::from_str(id)
                    .and_then(|id| index.add(&entry(path, 0o160000, id, 0)))
                    .map_err(anyhow::Error::from),
            };
            if let Err(e) = made {
                done.failed.push((change.clone(), format!("{e:#}")));
            }
        }
        index.write().map_err(|e| unavailable(e).context(format!("writing the index of {}", self.path.display())))?;
        Ok(done)
    }

    /// The index entry of a staged version saved at `source`: its bytes written as a blob as
    /// they are (streamed, no filter: they are the blob's bytes already), its mode.
    fn staged_entry(&self, path: &Path, source: &Path, mode: u32) -> Result<IndexEntry> {
        let (id, len) = if mode == 0o120000 {
            let target = std::fs::read_link(source).with_context(|| format!("reading {}", source.display()))?;
            let bytes = target.as_os_str().as_bytes();
            (self.repo.blob(bytes)?, bytes.len() as u64)
        } else {
            let mut file = File::open(source).with_context(|| format!("reading {}", source.display()))?;
            let len = file.metadata()?.len();
            let odb = self.repo.odb()?;
            let mut writer = odb.writer(usize::try_from(len)?, ObjectType::Blob)?;
            std::io::copy(&mut file, &mut writer).with_context(|| format!("reading {}", source.display()))?;
            (writer.finalize()?, len)
        };
        Ok(entry(path, mode, id, len))
    }
}

/// An index entry without stat data, so git compares the work tree's file by its content.
pub(super) fn entry(path: &Path, mode: u32, id: Oid, len: u64) -> IndexEntry {
    let never = IndexTime::new(0, 0);
    IndexEntry {
        ctime: never,
        mtime: never,
        dev: 0,
        ino: 0,
        mode,
        uid: 0,
        gid: 0,
        file_size: len as u32,
        id,
        flags: 0,
        flags_extended: 0,
        path: path.as_os_str().as_bytes().to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A submodule's git directory is looked for under the host's `modules/` only: not through
    /// a link (there or in a directory above it), not by a name that climbs out.
    #[test]
    fn a_submodule_git_directory_is_taken_only_inside_modules() {
        let tmp = tempfile::tempdir().unwrap();
        let host_path = tmp.path().join("host");
        let host = Repo { repo: Repository::init(&host_path).unwrap(), path: host_path };
        let modules = host.repo.path().join("modules");
        std::fs::create_dir_all(modules.join("vendor")).unwrap();
        Repository::init_bare(modules.join("vendor/lib")).unwrap();
        let elsewhere = tmp.path().join("elsewhere");
        Repository::init_bare(elsewhere.join("lib")).unwrap();
        std::os::unix::fs::symlink(elsewhere.join("lib"), modules.join("linked")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, modules.join("via")).unwrap();
        let found = host.submodule_git_dir(Some("vendor/lib"), Path::new("x")).map(|r| r.path);
        assert_eq!(found, Some(modules.join("vendor/lib")));
        let by_path = host.submodule_git_dir(None, Path::new("vendor/lib")).map(|r| r.path);
        assert_eq!(by_path, Some(modules.join("vendor/lib")), "git's name for a submodule is its path");
        for name in ["linked", "via/lib", "../../elsewhere/lib", "vendor"] {
            assert!(host.submodule_git_dir(Some(name), Path::new(name)).is_none(), "{name}");
        }
    }

    #[test]
    fn a_bundle_header_is_read_and_anything_else_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("b.bundle");
        let a = "a".repeat(40);
        let b = "b".repeat(40);
        std::fs::write(&path, format!("# v2 git bundle\n-{a} the base\n{b} refs/heads/feature\n\nPACK")).unwrap();
        let header = read_bundle(&path).unwrap();
        assert_eq!(header.prerequisites, [a]);
        assert_eq!(header.refs, [("refs/heads/feature".to_owned(), b)]);
        assert_eq!(header.pack_at, std::fs::metadata(&path).unwrap().len() - 4);
        std::fs::write(&path, "# v9 git bundle\n").unwrap();
        assert!(read_bundle(&path).is_err());
        std::fs::write(&path, "# v2 git bundle\nnot-an-id refs/heads/x\n\n").unwrap();
        assert!(read_bundle(&path).is_err());
        std::fs::write(&path, "# v2 git bundle\n").unwrap();
        assert!(read_bundle(&path).is_err(), "no end of header");
    }
}
