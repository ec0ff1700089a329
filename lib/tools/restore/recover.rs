//! Discarded work back with one command (`jackin-restore --recover Q`): the quarantine that Q
//! names (quarantines.rs, which also lists them) put back into each host repository without
//! touching anything that exists. The quarantine stays until it expires: a recover is undone by
//! deleting the branches, the worktree and any submodule repository it made.
//!
//! Per saved mount, into its host repository (or, with `--into DIR`, a new repository there):
//! the bundle's pack is written into the object store; every saved ref comes back under
//! `refs/jackin/recovered/<c>-saved/<its name without refs/>` with its commit; the ref
//! `refs/jackin/recovered/<c>` is made at the commit the work tree was on (not branches: jackin's
//! exit check counts every local branch; `--into`'s new repository gets them as branches under
//! `refs/heads/jackin/recovered/`); a new worktree `<host>-recovered-<c>` beside the host
//! repository is checked out at that commit (a detached HEAD) and gets the saved
//! files, as they were (bytes, names, modes, symlinks), and loses the files the session had
//! deleted; its index gets what the session had staged (`git diff --cached` and `git diff` there
//! show what they showed in the session). A clone's work comes back the same way, as a worktree
//! of the repository it was cloned from. Git keeps refs as files, so `jackin/recovered/<c>`
//! cannot also be a directory of refs: the saved refs are beside it (`-saved/`), not below it.
//!
//! Commits made inside a submodule (`submodule-<n>.bundle`) go into the host's git directory of
//! that submodule, `<host gitdir>/modules/<name>`, under the same names; where the host has none
//! (the session added the submodule, the host never checked it out) or with `--into`, into a new
//! bare repository `<worktree>-submodule-<n>.git` beside the recovered worktree.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::base::exit::Exit;
use crate::engines::git::{self, BundleHeader, IndexChange, Repo};
use crate::protocol::inert::inert_name;
use crate::protocol::path_bytes::NameBytes;
use crate::protocol::records::{Recovered, RecoveredRef, RecoveredSubmodule};
use crate::services::saved_work::{Receipt, SavedMount, SavedSubmodule};
use crate::state::store::Store;

use super::quarantines::find;
use crate::services::saved_work::put_back::{index_changes, put_files_back, PlannedChange};

/// What one mount's recover makes, decided before anything is made.
struct Target {
    mount: SavedMount,
    /// The repository that receives the commits: the host, or a new one (`--into`).
    repository: PathBuf,
    new_repository: bool,
    branch: String,
    saved_prefix: String,
    worktree: PathBuf,
    /// The bundle's header, when the mount has a bundle.
    header: Option<BundleHeader>,
    /// The commit the work tree is to be on: one the host has or the bundle brings; `None` only
    /// for a new repository (which then gets the branch when the commit is fetched).
    on: Option<String>,
    submodules: Vec<SubmoduleTarget>,
}

/// What one submodule's recover makes, decided before anything is made.
pub(super) struct SubmoduleTarget {
    saved: SavedSubmodule,
    header: BundleHeader,
    /// The git directory that receives its commits: the host's `modules/<name>`, or a new bare
    /// repository beside the recovered worktree.
    repository: PathBuf,
    new_repository: bool,
    branch: String,
    saved_prefix: String,
    /// The commit its work tree was on, when the git directory has it or the bundle brings it.
    on: Option<String>,
    /// The commits its saved ones build on that the git directory lacks (a new one lacks all).
    lacks: usize,
}

/// Puts the quarantine `which` back (see the module's doc); with `dry_run`, only says what it
/// would make. Anything it would make that exists already, or a host repository that lacks
/// what the commits build on, refuses the whole recover before anything is made (exit 3).
pub fn recover(store: &Store, which: &str, into: Option<&Path>, dry_run: bool) -> Result<Vec<Recovered>> {
    let (dir, receipt) = find(store, which)?;
    if receipt.git_tree.is_some() {
        return Err(Exit::BadInput.err(format_args!(
            "{} holds a whole git/ tree (the isolation records could not be read): recover it by hand, RECEIPT.txt says how",
            dir.display()
        )));
    }
    let c = &receipt.identity.container_base;
    let several = receipt.mounts.len() > 1;
    let mut targets = Vec::new();
    for (i, mount) in receipt.mounts.iter().enumerate() {
        let suffix = if several { format!("-{i}") } else { String::new() };
        targets.push(target(&dir, mount, c, &suffix, into)?);
    }
    let mut recovered = Vec::new();
    for target in targets {
        recovered.push(apply(&dir, &receipt, target, dry_run).map_err(|e| Exit::BadInput.wrap(e))?);
    }
    Ok(recovered)
}

/// Where a recovery into a host repository puts the work's refs: not a branch (refs/heads/), so
/// that jackin's exit check does not count it; `git checkout jackin/recovered/<c>` still finds it
/// (git looks a short name up under refs/ first).
pub(crate) const RECOVERED_ROOT: &str = "refs/jackin/recovered";

/// A refusal: nothing is made (exit 3).
fn refuse(message: std::fmt::Arguments<'_>) -> anyhow::Error {
    Exit::BadInput.err(message)
}

fn target(dir: &Path, mount: &SavedMount, c: &str, suffix: &str, into: Option<&Path>) -> Result<Target> {
    let host = mount.original_src.as_deref().map(PathBuf::from);
    let host_repo = host.as_ref().and_then(|h| Repo::open(h).ok());
    // In a host repository the work comes back outside refs/heads/: jackin's exit check calls a
    // session unpushed when any local branch of its repository holds commits on no remote, so a
    // recovered branch would keep every clean session of that repository (issue 65). A new
    // repository (--into) is nobody's session's: there it is a branch, as one expects.
    let root = if into.is_some() { "refs/heads/jackin/recovered" } else { RECOVERED_ROOT };
    let branch = format!("{root}/{c}{suffix}");
    let saved_prefix = format!("{root}/{c}{suffix}-saved/");
    let (repository, new_repository, worktree) = match (&host_repo, into) {
        (_, Some(dir)) => {
            let dir = if suffix.is_empty() { dir.to_path_buf() } else { dir.join(suffix.trim_start_matches('-')) };
            (dir.clone(), true, dir)
        }
        (Some(_), None) => {
            let host = host.clone().expect("an open host has a path");
            let name = host.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "repo".into());
            let worktree = host.with_file_name(format!("{name}-recovered-{c}{suffix}"));
            (host, false, worktree)
        }
        (None, None) => {
            return Err(refuse(format_args!(
                "the host repository of {} ({}) cannot be opened: --into DIR recovers into a new repository at DIR",
                mount.mount_dst,
                mount.original_src.as_deref().unwrap_or("unknown")
            )))
        }
    };
    if fs::symlink_metadata(&worktree).is_ok() {
        return Err(refuse(format_args!("{} exists already: nothing recovered", worktree.display())));
    }
    let header = match &mount.bundle {
        Some(bundle) => Some(git::read_bundle(&dir.join(bundle)).map_err(|e| Exit::BadInput.wrap(e))?),
        None => None,
    };
    let tips: Vec<&str> = header.iter().flat_map(|h| h.refs.iter().map(|(_, id)| id.as_str())).collect();
    // The commit the work tree was on: recorded since receipts say so; else the scratch branch's
    // or a detached HEAD's saved tip; else the host's HEAD.
    let saved_tip = |name: &dyn Fn(&str) -> bool| {
        header.iter().flat_map(|h| h.refs.iter()).find(|(n, _)| name(n)).map(|(_, id)| id.clone())
    };
    let head = mount
        .head
        .clone()
        .or_else(|| saved_tip(&|n| n == "refs/jackin/HEAD"))
        .or_else(|| saved_tip(&|n| n.starts_with("refs/heads/jackin/scratch/")));
    let on = match host_repo.as_ref().filter(|_| !new_repository) {
        Some(repo) => {
            let names = [branch.as_str(), saved_prefix.trim_end_matches('/')];
            Some(commit_in_host(repo, &repository, names, header.as_ref(), head, &tips)?)
        }
        None => head.filter(|id| tips.contains(&id.as_str())),
    };
    let mut submodules = Vec::new();
    for (n, saved) in mount.submodules.iter().enumerate() {
        let host = host_repo.as_ref().filter(|_| !new_repository);
        submodules.push(submodule_target(dir, saved, host, &worktree, n, &branch, &saved_prefix)?);
    }
    Ok(Target {
        mount: mount.clone(),
        repository,
        new_repository,
        branch,
        saved_prefix,
        worktree,
        header,
        on,
        submodules,
    })
}

/// The commit a recover into the host repository `repo` (at `repository`) checks the work tree
/// out on: the one it was on (`head`), else the host's HEAD, which the host or the bundle must
/// hold. Refused, changing nothing, when a ref of `names` exists already there or the host
/// lacks a commit the bundle builds on.
fn commit_in_host(
    repo: &Repo,
    repository: &Path,
    names: [&str; 2],
    header: Option<&BundleHeader>,
    head: Option<String>,
    tips: &[&str],
) -> Result<String> {
    for name in names {
        if !repo.ref_name_free(name) {
            return Err(refuse(format_args!(
                "{name} exists already in {} (an earlier recover?): nothing recovered",
                repository.display()
            )));
        }
    }
    let missing = header.map(|h| repo.missing_commits(&h.prerequisites)).unwrap_or_default();
    if let Some(first) = missing.first() {
        return Err(refuse(format_args!(
            "{} lacks {} commit(s) the saved commits build on ({}…): fetch its remote, then recover again; nothing recovered",
            repository.display(),
            missing.len(),
            &first[..12]
        )));
    }
    head.or_else(|| repo.head_commit()).filter(|id| repo.has_commit(id) || tips.contains(&id.as_str())).ok_or_else(
        || {
            refuse(format_args!(
                "{} does not have the commit the work tree was on: fetch the project's remote into it, then recover \
             again; nothing recovered",
                repository.display()
            ))
        },
    )
}

/// Where a submodule's commits go: into the host's git directory of that submodule
/// (`<host gitdir>/modules/<name>`), under the same names as the top repository's; without one
/// (the session added the submodule, the host never checked it out, `--into`), into a new bare
/// repository `<worktree>-submodule-<n>.git` beside the recovered worktree.
pub(super) fn submodule_target(
    dir: &Path,
    saved: &SavedSubmodule,
    host: Option<&Repo>,
    worktree: &Path,
    n: usize,
    branch: &str,
    saved_prefix: &str,
) -> Result<SubmoduleTarget> {
    let path = NameBytes::from_wire(saved.path.clone(), saved.path_bytes.as_deref()).map_err(anyhow::Error::msg)?;
    let header = git::read_bundle(&dir.join(&saved.bundle)).map_err(|e| Exit::BadInput.wrap(e))?;
    let head = saved
        .head
        .clone()
        .or_else(|| header.refs.iter().find(|(name, _)| name == "refs/jackin/HEAD").map(|(_, id)| id.clone()));
    let in_bundle = |id: &String| header.refs.iter().any(|(_, tip)| tip == id);
    let (branch, saved_prefix) = (branch.to_owned(), saved_prefix.to_owned());
    if let Some(sub) = host.and_then(|host| host.submodule_git_dir(saved.module.as_deref(), path.as_path())) {
        let repository = sub.opened_at().to_path_buf();
        for name in [branch.as_str(), saved_prefix.trim_end_matches('/')] {
            if !sub.ref_name_free(name) {
                return Err(refuse(format_args!(
                    "{name} exists already in {} (an earlier recover?): nothing recovered",
                    repository.display()
                )));
            }
        }
        let missing = sub.missing_commits(&header.prerequisites);
        if let Some(first) = missing.first() {
            return Err(refuse(format_args!(
                "{} (the submodule {}) lacks {} commit(s) its saved commits build on ({}…): fetch its remote, then \
                 recover again; nothing recovered",
                repository.display(),
                inert_name(&saved.path),
                missing.len(),
                &first[..12]
            )));
        }
        let on = head.filter(|id| sub.has_commit_object(id) || in_bundle(id));
        return Ok(SubmoduleTarget {
            saved: saved.clone(),
            header,
            repository,
            new_repository: false,
            branch,
            saved_prefix,
            on,
            lacks: 0,
        });
    }
    let mut name = worktree.as_os_str().to_owned();
    name.push(format!("-submodule-{n}.git"));
    let repository = PathBuf::from(name);
    if fs::symlink_metadata(&repository).is_ok() {
        return Err(refuse(format_args!("{} exists already: nothing recovered", repository.display())));
    }
    let on = head.filter(in_bundle);
    let lacks = header.prerequisites.len();
    Ok(SubmoduleTarget {
        saved: saved.clone(),
        header,
        repository,
        new_repository: true,
        branch,
        saved_prefix,
        on,
        lacks,
    })
}

/// Each saved ref of a bundle and the new ref that is to hold its commit.
fn renamed_refs(header: Option<&BundleHeader>, saved_prefix: &str) -> Vec<RecoveredRef> {
    header
        .iter()
        .flat_map(|h| h.refs.iter())
        .map(|(name, id)| RecoveredRef {
            saved: name.clone(),
            as_ref: format!("{saved_prefix}{}", name.strip_prefix("refs/").unwrap_or(name)),
            commit: id.clone(),
        })
        .collect()
}

fn apply(dir: &Path, receipt: &Receipt, target: Target, dry_run: bool) -> Result<Recovered> {
    let mount = &target.mount;
    let mut notes = Vec::new();
    let refs = renamed_refs(target.header.as_ref(), &target.saved_prefix);
    let (changes, staged_notes) = index_changes(dir, mount)?;
    notes.extend(staged_notes);
    let mut recovered = Recovered {
        identity: receipt.identity.clone(),
        quarantine: dir.to_string_lossy().into_owned(),
        mount_dst: mount.mount_dst.clone(),
        repository: target.repository.to_string_lossy().into_owned(),
        branch: target.branch.clone(),
        refs,
        worktree: target.worktree.to_string_lossy().into_owned(),
        files: mount.files.iter().filter(|f| f.saved).count(),
        deleted: mount.files.iter().filter(|f| !f.saved).count(),
        staged: changes.iter().filter(|c| c.counted).count(),
        submodules: target.submodules.iter().map(submodule_record).collect(),
        notes,
        dry_run,
    };
    if target.new_repository && target.on.is_none() {
        recovered.notes.push(no_commit_note(mount, &target.branch));
    }
    for sub in target.submodules.iter().filter(|s| s.on.is_none()) {
        if let Some(head) = &sub.saved.head {
            recovered.notes.push(format!(
                "the submodule {} was on {head}, which {} lacks: no branch made there (its remote has it)",
                inert_name(&sub.saved.path),
                sub.repository.display()
            ));
        }
    }
    if dry_run {
        return Ok(recovered);
    }
    let repo =
        if target.new_repository { Repo::init_new(&target.repository)? } else { Repo::open(&target.repository)? };
    if let (Some(header), Some(bundle)) = (&target.header, &mount.bundle) {
        import_commits(&repo, &dir.join(bundle), header, &mut recovered)?;
    }
    if let Some(on) = &target.on {
        repo.create_ref(&target.branch, on, "jackin-restore --recover")?;
    }
    let worktree_repo = if target.new_repository {
        // The files a session did not change live in commits the bundle builds on, which a new
        // repository lacks: only the saved files are written, and the note says how to get the rest.
        repo.point_head_at(&target.branch)?;
        recovered.notes.push(
            "only the saved files are written: the unchanged ones come with the project's history \
             (git fetch <its remote>, then git checkout <the base commit> -- <each missing file>)"
                .into(),
        );
        repo
    } else {
        let name = target.worktree.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        match target.on.as_deref() {
            Some(commit) => repo.add_worktree_detached(&name, &target.worktree, commit)?,
            None => repo.add_worktree(&name, &target.worktree, &target.branch)?,
        }
        Repo::open(&target.worktree)?
    };
    for gitfile in put_files_back(dir, mount, &target.worktree)? {
        let name = inert_name(&NameBytes::of_path(&gitfile).text()).into_owned();
        recovered.notes.push(format!(
            "{name} was left out: it linked to a submodule's git directory in the session's, which went with the \
             session"
        ));
    }
    if !changes.is_empty() {
        restage(&worktree_repo, &target, &changes, &mut recovered)?;
    }
    for sub in &target.submodules {
        recover_submodule(dir, sub)?;
    }
    Ok(recovered)
}

/// The bundle's pack written into `repo`, and every saved ref made under its recovered name.
fn import_commits(repo: &Repo, bundle: &Path, header: &BundleHeader, recovered: &mut Recovered) -> Result<()> {
    let missing = repo.missing_commits(&header.prerequisites);
    if !missing.is_empty() {
        let n = missing.len();
        recovered.notes.push(format!("the history builds on {n} commit(s) this new repository lacks"));
    }
    repo.import_bundle_pack(bundle, header)?;
    for r in &recovered.refs {
        repo.create_ref(&r.as_ref, &r.commit, "jackin-restore --recover")?;
    }
    Ok(())
}

/// The staged changes made again in the recovered worktree's index; one that cannot be is
/// named in a note and not counted.
fn restage(worktree_repo: &Repo, target: &Target, changes: &[PlannedChange], recovered: &mut Recovered) -> Result<()> {
    // A new repository's index starts empty: the commit's tree first, where it is whole here.
    let base = target.on.as_deref().filter(|_| target.new_repository);
    let list: Vec<IndexChange> = changes.iter().map(|c| c.change.clone()).collect();
    let done = worktree_repo.restage(base, &list)?;
    if base.is_some() && !done.tree_read {
        recovered.notes.push(
            "the index holds only the staged changes: the commit's tree is in the history this new repository lacks"
                .into(),
        );
    }
    for (change, why) in &done.failed {
        if changes.iter().any(|c| c.counted && c.change == *change) {
            recovered.staged -= 1;
        }
        let name = inert_name(&NameBytes::of_path(change.path()).text()).into_owned();
        recovered.notes.push(format!("{name}: its staged change could not be made again ({why})"));
    }
    Ok(())
}

pub(super) fn submodule_record(sub: &SubmoduleTarget) -> RecoveredSubmodule {
    RecoveredSubmodule {
        path: sub.saved.path.clone(),
        path_bytes: sub.saved.path_bytes.clone(),
        repository: sub.repository.to_string_lossy().into_owned(),
        new_repository: sub.new_repository,
        branch: sub.on.as_ref().map(|_| sub.branch.clone()),
        refs: renamed_refs(Some(&sub.header), &sub.saved_prefix),
        lacks: sub.lacks,
    }
}

/// A submodule's bundle into its git directory: the pack, each saved ref under the `-saved/`
/// names, the branch at the commit its work tree was on.
pub(super) fn recover_submodule(dir: &Path, sub: &SubmoduleTarget) -> Result<()> {
    let repo = if sub.new_repository { Repo::init_bare_new(&sub.repository)? } else { Repo::open(&sub.repository)? };
    repo.import_bundle_pack(&dir.join(&sub.saved.bundle), &sub.header)?;
    for r in renamed_refs(Some(&sub.header), &sub.saved_prefix) {
        repo.create_ref(&r.as_ref, &r.commit, "jackin-restore --recover")?;
    }
    if let Some(on) = &sub.on {
        repo.create_ref(&sub.branch, on, "jackin-restore --recover")?;
    }
    Ok(())
}

/// A new repository without the commit the work tree was on: its HEAD names the branch, which
/// the operator makes once the commit is fetched.
fn no_commit_note(mount: &SavedMount, branch: &str) -> String {
    let short = branch.strip_prefix("refs/heads/").unwrap_or(branch);
    match &mount.head {
        Some(head) => format!(
            "the work tree was on {head}, which is in the project's history, not in the bundle: HEAD names {short}; \
             git fetch <its remote>, then git branch {short} {head}"
        ),
        None => format!("the commit the work tree was on is not known: HEAD names {short}, which does not exist yet"),
    }
}
