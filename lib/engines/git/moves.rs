//! What moving a kept session to another host needs of git beyond a quarantine's save and a
//! recover (extras/moves/export/, extras/moves/import/): where a work tree's HEAD is, a repository's remote
//! URLs, and making a session's mount anew on the other host (its worktree or clone on the saved
//! branch or detached commit, its refs, the commits only its reflogs reached put back in them,
//! the git directories of its submodules that held commits only the session had).

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};
use git2::{build::CheckoutBuilder, Oid};

use super::error::unavailable;
use super::Repo;

impl Repo {
    /// The branch HEAD is on (a full ref name); `None` when HEAD is detached or unborn.
    pub(crate) fn head_branch(&self) -> Option<String> {
        let head = self.repo.find_reference("HEAD").ok()?;
        let target = head.symbolic_target().ok().flatten()?.to_owned();
        (target.starts_with("refs/heads/") && self.repo.find_reference(&target).is_ok()).then_some(target)
    }

    /// The commit the ref `name` (a full name) peels to.
    pub(crate) fn ref_commit(&self, name: &str) -> Option<String> {
        Some(self.repo.find_reference(name).ok()?.peel_to_commit().ok()?.id().to_string())
    }

    /// Each remote's name and fetch URL, in the order the config gives them.
    pub(crate) fn remote_urls(&self) -> Vec<(String, String)> {
        let Ok(names) = self.repo.remotes() else { return Vec::new() };
        let names: Vec<String> = names.iter().flatten().flatten().map(str::to_owned).collect();
        names
            .into_iter()
            .filter_map(|name| {
                let url = self.repo.find_remote(&name).ok()?.url().ok()?.to_owned();
                Some((name, url))
            })
            .collect()
    }

    /// Whether this (host) repository has a worktree registered under `name`.
    pub(crate) fn has_worktree_named(&self, name: &str) -> bool {
        self.repo.find_worktree(name).is_ok() || self.repo.commondir().join("worktrees").join(name).exists()
    }

    /// Sets the ref `name` (a full name) to `id`, over what it held (a clone's own branches).
    pub(crate) fn set_ref(&self, name: &str, id: &str, why: &str) -> Result<()> {
        let oid = Oid::from_str(id)?;
        self.repo
            .reference(name, oid, true, why)
            .map_err(|e| unavailable(e).context(format!("setting {name} in {}", self.path.display())))?;
        Ok(())
    }

    /// Writes the log of `refname` anew: `older` first (oldest to newest), then the ref's own
    /// value as its newest entry. The commits only a session's reflogs reached stay reachable
    /// from a reflog alone, as they were: at risk, and bundled by a purge, not made safe by a ref.
    pub(crate) fn write_reflog(&self, refname: &str, older: &[String], why: &str) -> Result<()> {
        let tip = self.repo.refname_to_id(refname).map_err(unavailable)?;
        let signature = self.signature();
        let mut log = self.repo.reflog(refname).map_err(unavailable)?;
        while log.remove(0, false).is_ok() {}
        for id in older {
            log.append(Oid::from_str(id)?, &signature, Some(why)).map_err(unavailable)?;
        }
        log.append(tip, &signature, Some(why)).map_err(unavailable)?;
        log.write().map_err(|e| unavailable(e).context(format!("writing the log of {refname}")))?;
        Ok(())
    }

    /// Stashes as `git stash` keeps them: `refs/stash` at the newest, its log the stack, oldest
    /// first in `ids`.
    pub(crate) fn write_stashes(&self, ids: &[String], why: &str) -> Result<()> {
        let Some(newest) = ids.last() else { return Ok(()) };
        self.set_ref("refs/stash", newest, why)?;
        self.write_reflog("refs/stash", &ids[..ids.len() - 1], why)
    }

    /// HEAD detached at `id`, the work tree and index checked out to it (a worktree or clone made
    /// a moment ago: nothing of anyone's is in it).
    pub(crate) fn detach_at(&self, id: &str) -> Result<()> {
        let oid = Oid::from_str(id)?;
        self.repo.set_head_detached(oid).map_err(unavailable)?;
        self.repo.checkout_head(Some(CheckoutBuilder::new().force())).map_err(unavailable)?;
        Ok(())
    }

    /// HEAD on the branch `branch` (a full ref name), checked out (a clone made a moment ago).
    pub(crate) fn check_out_branch(&self, branch: &str) -> Result<()> {
        self.repo.set_head(branch).map_err(unavailable)?;
        self.repo.checkout_head(Some(CheckoutBuilder::new().force())).map_err(unavailable)?;
        Ok(())
    }

    /// `git clone --local` of this repository to `path` (which must not exist), its `origin`
    /// then set to `origin_url` (jackin's clone mounts: state.md), nothing checked out yet.
    pub(crate) fn clone_local_to(&self, path: &Path, origin_url: Option<&str>) -> Result<Repo> {
        if std::fs::symlink_metadata(path).is_ok() {
            anyhow::bail!("{} exists already: not overwritten", path.display());
        }
        let source = self.repo.workdir().unwrap_or_else(|| self.repo.path()).to_path_buf();
        let mut checkout = CheckoutBuilder::new();
        checkout.dry_run();
        let repo = git2::build::RepoBuilder::new()
            .with_checkout(checkout)
            .clone(&format!("file://{}", source.display()), path)
            .map_err(|e| unavailable(e).context(format!("cloning {} to {}", source.display(), path.display())))?;
        // As `git clone --local`: every object of the repository, not only what its branches
        // reach (the commits a session's build on may be reachable from its remote-tracking refs
        // alone), linked (or copied) into the clone's object store.
        link_objects(&self.repo.commondir().join("objects"), &repo.path().join("objects"))?;
        if let Some(url) = origin_url {
            repo.remote_set_url("origin", url).map_err(unavailable)?;
        }
        Ok(Repo { repo, path: path.to_path_buf() })
    }

    /// The repository's own git directory (a worktree's `<host>/.git/worktrees/<name>`).
    pub(crate) fn git_dir(&self) -> &Path {
        self.repo.path()
    }

    /// A git directory at `git_dir` (which must not exist) for the submodule whose work tree is
    /// `work_tree`, made from this git directory of the same submodule (the host repository's,
    /// `modules/<name>`) the way `git submodule update --init` makes one from its remote: every
    /// object of this one linked (or copied) into it; its `origin` this one's `origin`; as its
    /// remote-tracking refs what this one knows of that remote (its remote-tracking refs, and
    /// each of its branches where it has no remote-tracking ref of that name, as a clone of it
    /// would). The work tree's `.git` file and the git directory's `core.worktree` name each
    /// other by relative paths, as git writes them. HEAD is unborn, nothing checked out.
    pub(crate) fn submodule_git_dir_from(&self, git_dir: &Path, work_tree: &Path) -> Result<Repo> {
        if std::fs::symlink_metadata(git_dir).is_ok() {
            anyhow::bail!("{} exists already: not overwritten", git_dir.display());
        }
        let gitfile = work_tree.join(".git");
        if std::fs::symlink_metadata(&gitfile).is_ok() {
            anyhow::bail!("{} exists already: not overwritten", gitfile.display());
        }
        std::fs::create_dir_all(work_tree)?;
        let made = git2::Repository::init_bare(git_dir)
            .map_err(|e| unavailable(e).context(format!("creating {}", git_dir.display())))?;
        let to_work_tree = relative(git_dir, work_tree)?;
        let to_git_dir = relative(work_tree, git_dir)?;
        let mut config =
            made.config().map_err(unavailable)?.open_level(git2::ConfigLevel::Local).map_err(unavailable)?;
        config.set_bool("core.bare", false).map_err(unavailable)?;
        let worktree_text = to_work_tree
            .to_str()
            .ok_or_else(|| anyhow::anyhow!("{} is not a UTF-8 path: git cannot name it", work_tree.display()))?;
        config.set_str("core.worktree", worktree_text).map_err(unavailable)?;
        let mut line = b"gitdir: ".to_vec();
        line.extend_from_slice(to_git_dir.as_os_str().as_bytes());
        line.push(b'\n');
        std::fs::write(&gitfile, line).with_context(|| format!("writing {}", gitfile.display()))?;
        link_objects(&self.repo.commondir().join("objects"), &made.path().join("objects"))?;
        if let Some((_, url)) = self.remote_urls().into_iter().find(|(name, _)| name == "origin") {
            made.remote("origin", &url).map_err(unavailable)?;
        }
        let mut tracking: Vec<(String, Oid)> = Vec::new();
        let mut branches: Vec<(String, Oid)> = Vec::new();
        for reference in self.repo.references().map_err(unavailable)?.flatten() {
            let (Ok(name), Ok(commit)) = (reference.name(), reference.peel_to_commit()) else { continue };
            if name.starts_with("refs/remotes/") && !name.ends_with("/HEAD") {
                tracking.push((name.to_owned(), commit.id()));
            } else if let Some(branch) = name.strip_prefix("refs/heads/") {
                branches.push((format!("refs/remotes/origin/{branch}"), commit.id()));
            }
        }
        for (name, id) in branches {
            if !tracking.iter().any(|(n, _)| *n == name) {
                tracking.push((name, id));
            }
        }
        for (name, id) in &tracking {
            made.reference(name, *id, true, "jackin-restore --import").map_err(unavailable)?;
        }
        drop(made);
        let repo = super::repo::open_checked(work_tree)
            .map_err(|e| unavailable(e).context(format!("opening {}", work_tree.display())))?;
        Ok(Repo { repo, path: work_tree.to_path_buf() })
    }

    /// HEAD on the branch `branch` (a full ref name) or detached at `id`, and the work tree
    /// made to match: checked out whole, or, with `keep_work_tree` (its files are there as the
    /// session left them), only the index read from the commit.
    pub(crate) fn settle_head(&self, branch: Option<&str>, id: &str, keep_work_tree: bool) -> Result<()> {
        let oid = Oid::from_str(id)?;
        match branch {
            Some(branch) => self.repo.set_head(branch).map_err(unavailable)?,
            None => self.repo.set_head_detached(oid).map_err(unavailable)?,
        }
        if keep_work_tree {
            let tree = self.repo.find_commit(oid).and_then(|c| c.tree()).map_err(unavailable)?;
            let mut index = self.repo.index().map_err(unavailable)?;
            index.read_tree(&tree).map_err(unavailable)?;
            index
                .write()
                .map_err(|e| unavailable(e).context(format!("writing the index of {}", self.path.display())))?;
        } else {
            self.repo.checkout_head(Some(CheckoutBuilder::new().force())).map_err(unavailable)?;
        }
        Ok(())
    }

    fn signature(&self) -> git2::Signature<'static> {
        self.repo
            .signature()
            .ok()
            .map(|s| s.to_owned())
            .or_else(|| git2::Signature::now("jackin", "jackin@localhost").ok())
            .expect("a signature of plain ASCII")
    }
}

/// The path that leads from the directory `from` to `to`, both as they are once every link is
/// resolved (`to`'s parent must exist), as `..` and names.
fn relative(from: &Path, to: &Path) -> Result<PathBuf> {
    let from = from.canonicalize().with_context(|| format!("resolving {}", from.display()))?;
    let to = match to.canonicalize() {
        Ok(to) => to,
        Err(_) => {
            let parent = to.parent().ok_or_else(|| anyhow::anyhow!("{} has no parent", to.display()))?;
            let name = to.file_name().ok_or_else(|| anyhow::anyhow!("{} has no name", to.display()))?;
            parent.canonicalize().with_context(|| format!("resolving {}", parent.display()))?.join(name)
        }
    };
    let common = from.components().zip(to.components()).take_while(|(a, b)| a == b).count();
    let mut path = PathBuf::new();
    for _ in from.components().skip(common) {
        path.push(Component::ParentDir.as_os_str());
    }
    for part in to.components().skip(common) {
        path.push(part.as_os_str());
    }
    if path.as_os_str().is_empty() {
        path.push(OsStr::new("."));
    }
    Ok(path)
}

/// Each object file (loose objects, packs and their indexes) under `from` that `to` lacks, hard
/// linked where one filesystem holds both, else copied; links and anything but regular files are
/// left alone (the agent can write the host's object store).
fn link_objects(from: &Path, to: &Path) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(from) else { return Ok(()) };
    for entry in entries.flatten() {
        let Ok(kind) = entry.file_type() else { continue };
        let name = entry.file_name();
        let (src, dst) = (entry.path(), to.join(&name));
        if kind.is_dir() && name != "info" {
            std::fs::create_dir_all(&dst)?;
            link_objects(&src, &dst)?;
        } else if kind.is_file() && std::fs::symlink_metadata(&dst).is_err() && std::fs::hard_link(&src, &dst).is_err()
        {
            std::fs::copy(&src, &dst).with_context(|| format!("copying {}", src.display()))?;
        }
    }
    Ok(())
}

/// Whether `name` is a ref name git accepts (git-check-ref-format(1)).
pub(crate) fn valid_ref_name(name: &str) -> bool {
    git2::Reference::is_valid_name(name)
}
