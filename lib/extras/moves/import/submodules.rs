//! The submodules of an imported mount: what the archive says of each (a bundle of the commits
//! only the session had, or changed files saved with the mount's), planned against this host's
//! git directory of it before anything is written, then made in the mount's git directory with
//! its work tree checked out.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

use super::checks::{self, check_tips, plain, refuse};
use super::hosts::{bundle_header, HostView, SubmoduleView};
use crate::engines::git::{BundleHeader, Repo, DETACHED_HEAD};
use crate::extras::moves::export::ChangedSubmodule;
use crate::protocol::path_bytes::NameBytes;
use crate::services::saved_work::SavedSubmodule;

/// What an import's refs and reflogs say made them.
pub(super) const WHY: &str = "jackin-restore --import";

/// The tips of `tips` named `<prefix><n>`, oldest first (the highest `n` is the oldest: a
/// bundle numbers a reflog's entries newest first).
pub(super) fn numbered(tips: &[(String, String)], prefix: &str) -> Vec<String> {
    let mut found: Vec<(usize, String)> =
        tips.iter().filter_map(|(n, id)| Some((n.strip_prefix(prefix)?.parse().ok()?, id.clone()))).collect();
    found.sort_by_key(|b| std::cmp::Reverse(b.0));
    found.into_iter().map(|(_, id)| id).collect()
}

/// What one submodule's import makes: its git directory in the mount's, as the session had it
/// (where its assessment finds it, at risk as it was, its changed files changed), made from this
/// host's git directory of that submodule (which the commits build on), the bundle's commits and
/// refs in it, its HEAD where it was and its work tree checked out.
#[derive(Debug)]
pub(super) struct SubmodulePlan {
    /// The bundle of its commits only the session had (its name under the archive's `mounts/`)
    /// and what it holds; `None` for a submodule that held changed files only.
    pub(super) bundle: Option<(String, BundleHeader)>,
    /// Its path in the mount.
    pub(super) path: PathBuf,
    /// Its git directory's name under the mount's git directory's `modules/`.
    pub(super) module: PathBuf,
    /// This host's git directory of it (`<repository>/.git/modules/<name>`).
    pub(super) source: PathBuf,
    /// The commit its work tree was on; the branch it was on (a full name), `None` detached.
    pub(super) head: String,
    pub(super) head_branch: Option<String>,
}

/// What the archive says of a submodule of a mount: the save of one that held commits only the
/// session had, or one whose changed files were saved with the mount's.
#[derive(Clone, Copy)]
pub(super) enum SubmoduleSave<'a> {
    Bundled(&'a SavedSubmodule),
    Changed(&'a ChangedSubmodule),
}

/// A submodule's part of a mount's plan, from what `host` (this host's repository) showed of its
/// git directory of it (`seen`, looked up only for a plain path and name): refused (nothing
/// written) when it has none, or one that lacks what its commits build on or the commit its work
/// tree was on.
pub(super) fn plan_submodule(
    host: &HostView,
    dst: &str,
    save: SubmoduleSave<'_>,
    seen: Option<&SubmoduleView>,
    bundles: &BTreeMap<String, BundleHeader>,
    file: &Path,
) -> Result<SubmodulePlan> {
    let (text, bytes, module_name) = match save {
        SubmoduleSave::Bundled(s) => (&s.path, s.path_bytes.as_deref(), s.module.as_deref()),
        SubmoduleSave::Changed(c) => (&c.path, c.path_bytes.as_deref(), c.module.as_deref()),
    };
    let name = NameBytes::from_wire(text.clone(), bytes)
        .map_err(|e| refuse(file, format_args!("{dst}: a submodule's path: {e}")))?;
    let shown = crate::protocol::inert::inert_name(text).into_owned();
    let path = name.as_path().to_path_buf();
    if !plain(&path) {
        return Err(refuse(file, format_args!("{dst}: the submodule {shown} is not at a plain relative path")));
    }
    let module = module_name.map(PathBuf::from).unwrap_or_else(|| path.clone());
    if !plain(&module) {
        return Err(refuse(
            file,
            format_args!("{dst}: the submodule {shown} has a git directory name that is not plain"),
        ));
    }
    let Some((seen, source_dir)) = seen.and_then(|s| Some((s, s.source.clone()?))) else {
        let (held, needs) = match save {
            SubmoduleSave::Bundled(_) => ("commits only the session has", "for them to build on"),
            SubmoduleSave::Changed(_) => ("changed files", "for its work tree to be checked out from"),
        };
        return Err(refuse(
            file,
            format_args!(
                "{dst}: the submodule {shown} holds {held}, and {} has no git directory of it {needs}: `git -C {} \
                 submodule update --init {shown}` makes one (for a submodule the session added, `git clone --bare \
                 <its URL> {}`)",
                host.path.display(),
                host.path.display(),
                host.git_dir.join("modules").join(&module).display()
            ),
        ));
    };
    let (bundle, head, head_branch) = match save {
        SubmoduleSave::Bundled(saved) => bundled_submodule(seen, &source_dir, saved, bundles, (dst, &shown), file)?,
        SubmoduleSave::Changed(changed) => {
            let branch = changed.head_branch.clone().filter(|b| checks::branch(b));
            (None, changed.head.clone(), branch)
        }
    };
    let in_bundle = bundle.as_ref().is_some_and(|(_, header)| header.refs.iter().any(|(_, id)| *id == head));
    if !(in_bundle || seen.has.contains(&head)) {
        return Err(refuse(
            file,
            format_args!(
                "{dst}: {} (the submodule {shown}) does not have the commit its work tree was on ({}): fetch its \
                 remote first",
                source_dir.display(),
                &head[..12.min(head.len())]
            ),
        ));
    }
    Ok(SubmodulePlan { bundle, path, module, source: source_dir, head, head_branch })
}

/// A submodule's bundle (its name in the archive and its verified header) when it has one, the
/// commit its work tree was on, and the branch there.
type SubmoduleCommits = (Option<(String, BundleHeader)>, String, Option<String>);

/// A bundled submodule's part of its plan: the bundle verified in staging, the commit its work
/// tree was on, and the branch there (none for a detached HEAD). Refused when this host's git
/// directory of it (`seen`, at `source_dir`) lacks what the bundle builds on. `at` is the mount
/// and the submodule as messages name them.
fn bundled_submodule(
    seen: &SubmoduleView,
    source_dir: &Path,
    saved: &SavedSubmodule,
    bundles: &BTreeMap<String, BundleHeader>,
    at: (&str, &str),
    file: &Path,
) -> Result<SubmoduleCommits> {
    let (dst, shown) = at;
    let header = bundle_header(bundles, &saved.bundle)
        .cloned()
        .ok_or_else(|| refuse(file, format_args!("{dst}: the bundle {} is not in the archive", saved.bundle)))?;
    check_tips(&header.refs, dst, file)?;
    if let Some(first) = seen.missing.first() {
        return Err(refuse(
            file,
            format_args!(
                "{dst}: {} (the submodule {shown}) lacks {} commit(s) its commits build on ({}…): fetch its \
                 remote first",
                source_dir.display(),
                seen.missing.len(),
                &first[..12.min(first.len())]
            ),
        ));
    }
    let detached = header.refs.iter().find(|(n, _)| n == DETACHED_HEAD).map(|(_, id)| id.clone());
    let head = saved
        .head
        .clone()
        .or_else(|| detached.clone())
        .ok_or_else(|| refuse(file, format_args!("{dst}: no commit recorded for the submodule {shown}")))?;
    let head_branch = match detached {
        Some(_) => None,
        None => header.refs.iter().find(|(n, id)| n.starts_with("refs/heads/") && *id == head).map(|(n, _)| n.clone()),
    };
    Ok((Some((saved.bundle.clone(), header)), head, head_branch))
}

/// Makes a submodule's git directory in the mount's `git_dir` and checks its work tree out
/// ([`SubmodulePlan`]): over the saved files when the session's were saved (they are as it left
/// them), whole otherwise.
pub(super) fn make_submodule(mount: &Path, git_dir: &Path, sub: &SubmodulePlan, mounts_dir: &Path) -> Result<()> {
    let work_tree = mount.join(&sub.path);
    // The saved files are the agent's: a link among them must not lead the submodule's `.git`
    // file out of the mount.
    let mut at = mount.to_path_buf();
    for part in sub.path.components() {
        at.push(part);
        if fs::symlink_metadata(&at).is_ok_and(|m| !m.is_dir()) {
            anyhow::bail!("{} is not a directory: the submodule {} is not made", at.display(), sub.path.display());
        }
    }
    let saved_files = fs::read_dir(&work_tree).is_ok_and(|mut d| d.next().is_some());
    let source = Repo::open(&sub.source)?;
    let repo = source.submodule_git_dir_from(&git_dir.join("modules").join(&sub.module), &work_tree)?;
    let Some((bundle, header)) = &sub.bundle else {
        // Changed files only: its branch, which no commit of the session's is on, where it was.
        if let Some(branch) = &sub.head_branch {
            repo.set_ref(branch, &sub.head, WHY)?;
        }
        return repo.settle_head(sub.head_branch.as_deref(), &sub.head, saved_files);
    };
    repo.import_bundle_pack(&mounts_dir.join(bundle), header)?;
    let tips = &header.refs;
    for (refname, id) in tips.iter().filter(|(n, _)| checks::shared_ref(n)) {
        repo.set_ref(refname, id, WHY)?;
    }
    repo.write_stashes(&numbered(tips, "refs/stashes/stash-"), WHY)?;
    repo.settle_head(sub.head_branch.as_deref(), &sub.head, saved_files)?;
    let reflog = numbered(tips, "refs/jackin/reflog/");
    if !reflog.is_empty() {
        repo.write_reflog("HEAD", &reflog, WHY)?;
    }
    Ok(())
}
