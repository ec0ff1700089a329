//! Discarded work back with one command (`jackin-restore --quarantined`, `--recover Q`): the
//! quarantines a discard left, listed; one of them put back into each host repository without
//! touching anything that exists. The quarantine stays until it expires: a recover is undone by
//! deleting the branches and the worktree it made.
//!
//! Per saved mount, into its host repository (or, with `--into DIR`, a new repository there):
//! the bundle's pack is written into the object store; every saved ref comes back under
//! `refs/heads/jackin/recovered/<c>-saved/<its name without refs/>` with its commit; the branch
//! `jackin/recovered/<c>` is made at the commit the work tree was on; a new worktree
//! `<host>-recovered-<c>` beside the host repository is checked out on it and gets the saved
//! files, as they were (bytes, names, modes, symlinks), and loses the files the session had
//! deleted. A clone's work comes back the same way, as a worktree of the repository it was
//! cloned from. Git keeps refs as files, so `jackin/recovered/<c>` cannot also be a directory of
//! refs: the saved refs are beside it (`-saved/`), not below it.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::base::copy::copy_entry;
use crate::base::exit::Exit;
use crate::engines::git::{self, Repo};
use crate::protocol::path_bytes::NameBytes;
use crate::protocol::records::{Quarantined, QuarantinedRepository, Recovered, RecoveredRef};
use crate::state::store::{read_json, Store};
use crate::tools::purge::quarantine::{Receipt, SavedMount};

/// The quarantines of the home that finished saving, newest first.
pub fn quarantined(store: &Store) -> Result<Vec<Quarantined>> {
    let mut listed: Vec<Quarantined> =
        saved(store)?.into_iter().map(|(dir, receipt)| listing(&dir, &receipt)).collect();
    listed.sort_by(|a, b| b.saved_at.cmp(&a.saved_at).then_with(|| b.dir.cmp(&a.dir)));
    Ok(listed)
}

/// Every quarantine with a receipt (a save that died half-way has none, and holds nothing to
/// recover by).
fn saved(store: &Store) -> Result<Vec<(PathBuf, Receipt)>> {
    let root = store.quarantine_root();
    let entries = match fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", root.display())),
    };
    let mut found = Vec::new();
    for entry in entries {
        let entry = entry?;
        let dir = entry.path();
        if !entry.file_type()?.is_dir() || entry.file_name().as_encoded_bytes().starts_with(b".") {
            continue;
        }
        if let Ok(Some(receipt)) = read_json::<Receipt>(&dir.join("receipt.json")) {
            found.push((dir, receipt));
        }
    }
    Ok(found)
}

fn listing(dir: &Path, receipt: &Receipt) -> Quarantined {
    let repositories: Vec<QuarantinedRepository> = receipt
        .mounts
        .iter()
        .map(|m| QuarantinedRepository {
            mount_dst: m.mount_dst.clone(),
            isolation: m.isolation.clone(),
            repository: m.original_src.clone(),
            commits: m.bundle_contents.as_ref().map_or(0, |c| c.commits),
            files: m.files.iter().filter(|f| f.saved).count(),
            recoverable: m.original_src.as_deref().is_some_and(|src| Repo::open(src).is_ok()),
        })
        .collect();
    Quarantined {
        identity: receipt.identity.clone(),
        dir: dir.to_string_lossy().into_owned(),
        saved_at: receipt.saved_at.clone(),
        expires_at: receipt.expires_at.clone(),
        summary: receipt.summary.clone(),
        recoverable: receipt.git_tree.is_none() && repositories.iter().all(|r| r.recoverable),
        repositories,
        bytes: crate::tools::purge::remove::tree_bytes(dir),
    }
}

/// The quarantine `which` names: its directory, or a session's container name, instance id or
/// unique id prefix of 4+ characters (its newest quarantine).
fn find(store: &Store, which: &str) -> Result<(PathBuf, Receipt)> {
    let as_dir = Path::new(which);
    if as_dir.join("receipt.json").is_file() {
        let receipt = read_json::<Receipt>(&as_dir.join("receipt.json"))?
            .ok_or_else(|| Exit::BadInput.err(format_args!("{which} has no receipt")))?;
        return Ok((as_dir.to_path_buf(), receipt));
    }
    let mut matching: Vec<(PathBuf, Receipt)> = saved(store)?
        .into_iter()
        .filter(|(_, r)| {
            let id = &r.identity.instance_id;
            r.identity.container_base == which || id == which || (which.len() >= 4 && id.starts_with(which))
        })
        .collect();
    let sessions: std::collections::BTreeSet<String> =
        matching.iter().map(|(_, r)| r.identity.container_base.clone()).collect();
    if sessions.len() > 1 {
        let names: Vec<String> = sessions.into_iter().collect();
        return Err(Exit::BadInput.err(format_args!("{which:?} names quarantines of {}: give one", names.join(", "))));
    }
    matching.sort_by(|a, b| a.1.saved_at.cmp(&b.1.saved_at).then_with(|| a.0.cmp(&b.0)));
    matching.pop().ok_or_else(|| {
        Exit::BadInput.err(format_args!("no quarantine of {which:?} (jackin-restore --quarantined lists them)"))
    })
}

/// What one mount's recover makes, decided before anything is made.
struct Target {
    mount: SavedMount,
    /// The repository that receives the commits: the host, or a new one (`--into`).
    repository: PathBuf,
    new_repository: bool,
    branch: String,
    saved_prefix: String,
    worktree: PathBuf,
}

/// Puts the quarantine `which` back (see the module's doc); with `dry_run`, only says what it
/// would make. Anything it would make that exists already refuses the whole recover before
/// anything is made (exit 3).
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
        targets.push(target(mount, c, &suffix, into)?);
    }
    let mut recovered = Vec::new();
    for target in targets {
        recovered.push(apply(&dir, &receipt, target, dry_run).map_err(|e| Exit::BadInput.wrap(e))?);
    }
    Ok(recovered)
}

fn target(mount: &SavedMount, c: &str, suffix: &str, into: Option<&Path>) -> Result<Target> {
    let host = mount.original_src.as_deref().map(PathBuf::from);
    let host_repo = host.as_ref().and_then(|h| Repo::open(h).ok());
    let branch = format!("refs/heads/jackin/recovered/{c}{suffix}");
    let saved_prefix = format!("refs/heads/jackin/recovered/{c}{suffix}-saved/");
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
            return Err(Exit::BadInput.err(format_args!(
                "the host repository of {} ({}) cannot be opened: --into DIR recovers into a new repository at DIR",
                mount.mount_dst,
                mount.original_src.as_deref().unwrap_or("unknown")
            )))
        }
    };
    if fs::symlink_metadata(&worktree).is_ok() {
        return Err(Exit::BadInput.err(format_args!("{} exists already: nothing recovered", worktree.display())));
    }
    if let Some(repo) = host_repo.as_ref().filter(|_| !new_repository) {
        for name in [branch.as_str(), saved_prefix.trim_end_matches('/')] {
            if !repo.ref_name_free(name) {
                return Err(Exit::BadInput.err(format_args!(
                    "{name} exists already in {} (an earlier recover?): nothing recovered",
                    repository.display()
                )));
            }
        }
    }
    Ok(Target { mount: mount.clone(), repository, new_repository, branch, saved_prefix, worktree })
}

fn apply(dir: &Path, receipt: &Receipt, target: Target, dry_run: bool) -> Result<Recovered> {
    let mount = &target.mount;
    let mut notes = Vec::new();
    let header = match &mount.bundle {
        Some(bundle) => Some(git::read_bundle(&dir.join(bundle))?),
        None => None,
    };
    let saved_refs: Vec<(String, String)> = header.as_ref().map(|h| h.refs.clone()).unwrap_or_default();
    let refs: Vec<RecoveredRef> = saved_refs
        .iter()
        .map(|(name, id)| RecoveredRef {
            saved: name.clone(),
            as_ref: format!("{}{}", target.saved_prefix, name.strip_prefix("refs/").unwrap_or(name)),
            commit: id.clone(),
        })
        .collect();
    if let Some(index_dir) = &mount.index_dir {
        notes.push(format!(
            "staged versions the work tree no longer had are in {}/{index_dir}/ (not staged again)",
            dir.display()
        ));
    }
    if !mount.submodules.is_empty() {
        notes.push(format!(
            "{} submodule bundle(s) are not recovered: RECEIPT.txt says how to fetch them into the submodule",
            mount.submodules.len()
        ));
    }
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
        notes,
        dry_run,
    };
    if dry_run {
        return Ok(recovered);
    }
    let repo =
        if target.new_repository { Repo::init_new(&target.repository)? } else { Repo::open(&target.repository)? };
    if let (Some(header), Some(bundle)) = (&header, &mount.bundle) {
        let missing = repo.missing_commits(&header.prerequisites);
        if !missing.is_empty() && !target.new_repository {
            anyhow::bail!(
                "{} lacks {} commit(s) the bundle builds on ({}…): fetch its remote, then recover again",
                target.repository.display(),
                missing.len(),
                &missing[0][..12]
            );
        }
        if !missing.is_empty() {
            let n = missing.len();
            recovered.notes.push(format!("the history builds on {n} commit(s) this new repository lacks"));
        }
        repo.import_bundle_pack(&dir.join(bundle), header)?;
        for r in &recovered.refs {
            repo.create_ref(&r.as_ref, &r.commit, "jackin-restore --recover")?;
        }
    }
    // The commit the work tree was on: recorded since receipts say so; else the scratch branch's
    // or a detached HEAD's saved tip; else the host's HEAD.
    let scratch = saved_refs.iter().find(|(name, _)| name.starts_with("refs/heads/jackin/scratch/"));
    let detached = saved_refs.iter().find(|(name, _)| name == "refs/jackin/HEAD");
    let on = mount
        .head
        .clone()
        .or_else(|| detached.or(scratch).map(|(_, id)| id.clone()))
        .or_else(|| repo.head_commit())
        .filter(|id| repo.has_commit(id));
    let Some(on) = on else {
        anyhow::bail!(
            "{} does not have the commit the work tree was on: fetch the project's remote into it, then recover again",
            target.repository.display()
        );
    };
    repo.create_ref(&target.branch, &on, "jackin-restore --recover")?;
    if target.new_repository {
        // The files a session did not change live in commits the bundle builds on, which a new
        // repository lacks: only the saved files are written, and the note says how to get the rest.
        repo.point_head_at(&target.branch)?;
        recovered.notes.push(
            "only the saved files are written: the unchanged ones come with the project's history \
             (git fetch <its remote>, then git checkout <the base commit> -- . for what is missing)"
                .into(),
        );
    } else {
        let name = target.worktree.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        repo.add_worktree(&name, &target.worktree, &target.branch)?;
    }
    put_files_back(dir, mount, &target.worktree)?;
    Ok(recovered)
}

/// The saved files into `worktree`, each as it was, over what the checkout wrote; the files the
/// session had deleted, deleted.
fn put_files_back(dir: &Path, mount: &SavedMount, worktree: &Path) -> Result<()> {
    let files_dir = mount.files_dir.as_ref().map(|f| dir.join(f));
    for file in &mount.files {
        let name = NameBytes::from_wire(file.path.clone(), file.path_bytes.as_deref()).map_err(anyhow::Error::msg)?;
        let rel = name.as_path();
        if rel.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
            anyhow::bail!("the receipt names {:?}, not a plain relative path: not written", name.text());
        }
        let dst = worktree.join(rel);
        if let Ok(meta) = fs::symlink_metadata(&dst) {
            if meta.is_dir() {
                fs::remove_dir_all(&dst).with_context(|| format!("replacing {}", dst.display()))?;
            } else {
                fs::remove_file(&dst).with_context(|| format!("replacing {}", dst.display()))?;
            }
        }
        if !file.saved {
            continue;
        }
        let Some(files_dir) = &files_dir else { continue };
        if let Some(parent) = dst.parent() {
            fs::create_dir_all(parent)?;
        }
        copy_entry(&files_dir.join(rel), &dst)?;
    }
    Ok(())
}
