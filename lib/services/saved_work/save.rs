//! Saving at-risk work into the saved-work format (mod.rs): a purge's quarantine before a
//! discard deletes, and one mount at a time for an export.

use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};

use super::{slug, MountLayout, Receipt, SavedFile, SavedMount, SavedSubmodule, GIT_TREE, RECEIPT, RECEIPT_TEXT};
use crate::base::copy::copy_entry;
use crate::engines::git;
use crate::protocol::assessment::{Assessment, MountAssessment};
use crate::protocol::inert::inert_text;
use crate::protocol::path_bytes::NameBytes;
use crate::state::model::{IsolationKind, IsolationRecord, MalformedRecord};
use crate::state::store::{ensure_private_dir, write_json_atomic, Store};

/// Whether a change's staged version differs from what its work tree holds (`git status`'s X is
/// a staged change and Y a change after it): then the index holds the only copy of that version.
fn staged_differs(status: &str) -> bool {
    let mut letters = status.chars();
    let (x, y) = (letters.next().unwrap_or(' '), letters.next().unwrap_or(' '));
    matches!(x, 'A' | 'M' | 'R' | 'T') && matches!(y, 'M' | 'D' | 'T')
}

/// Whether a change was staged at all (`git status`'s X: new, changed, renamed, type changed).
fn staged_change(status: &str) -> bool {
    matches!(status.chars().next(), Some('A' | 'M' | 'R' | 'T'))
}

/// Writes the staged version of `rel` under `index_dir`, a link as a link, the mode kept.
fn save_staged(repo: &git::Repo, rel: &Path, index_dir: &Path) -> Result<bool> {
    use std::os::unix::fs::PermissionsExt;
    let Some((bytes, mode)) = repo.staged(rel) else { return Ok(false) };
    let dst = index_dir.join(rel);
    if let Some(parent) = dst.parent() {
        fs::create_dir_all(parent)?;
    }
    if mode == 0o120000 {
        std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&bytes), &dst)?;
    } else {
        fs::write(&dst, &bytes).with_context(|| format!("saving the staged {}", dst.display()))?;
        fs::set_permissions(&dst, fs::Permissions::from_mode(if mode & 0o111 != 0 { 0o755 } else { 0o644 }))?;
    }
    Ok(true)
}

/// What a quarantine saves: the at-risk mounts the isolation records describe, or, when those
/// records cannot be read, the instance's whole `git/` tree.
pub(crate) enum AtRisk<'a> {
    Mounts(&'a [Result<IsolationRecord, MalformedRecord>]),
    UnreadableRecords { git_tree: PathBuf },
}

/// A quarantine's time in its directory name: `20261204T101500Z`.
fn stamp(at: SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string().replace(['-', ':'], "")
}

/// The directory a save of `container` at `stamp` makes (a `-2`, `-3`… is added when two saves
/// fall in the same second).
fn quarantine_dir(store: &Store, container: &str, stamp: &str) -> PathBuf {
    store.quarantine_root().join(format!("{container}-{stamp}"))
}

/// Where a save of `container` now would put the work: what a dry run of a discard names.
pub(crate) fn quarantine_dir_now(store: &Store, container: &str) -> PathBuf {
    quarantine_dir(store, container, &stamp(SystemTime::now()))
}

/// Saves the at-risk work of `assessment` and returns the quarantine directory.
pub(crate) fn save(store: &Store, assessment: &Assessment, at_risk: AtRisk<'_>, days: u64) -> Result<PathBuf> {
    let root = store.quarantine_root();
    ensure_private_dir(&root)?;
    if let AtRisk::Mounts(records) = &at_risk {
        check_fits(&root, files_to_copy(assessment, records))?;
    }
    let now = SystemTime::now();
    let stamp = stamp(now);
    let container = &assessment.identity.container_base;
    let partial = root.join(format!(".partial-{container}-{stamp}-{}", std::process::id()));
    fs::DirBuilder::new()
        .mode(0o700)
        .create(&partial)
        .with_context(|| format!("cannot create {}", partial.display()))?;
    let mut receipt = Receipt {
        version: 1,
        identity: assessment.identity.clone(),
        saved_at: crate::base::time::rfc3339(now),
        expires_at: crate::base::time::rfc3339(now + Duration::from_secs(days * 86_400)),
        verdict: assessment.verdict.as_str().to_owned(),
        summary: assessment.summary.clone(),
        mounts: Vec::new(),
        git_tree: None,
    };
    let records = match at_risk {
        AtRisk::Mounts(records) => records,
        AtRisk::UnreadableRecords { git_tree } => {
            if fs::symlink_metadata(&git_tree).is_ok_and(|m| m.is_dir()) {
                fs::rename(&git_tree, partial.join(GIT_TREE))
                    .with_context(|| format!("moving {} into the quarantine", git_tree.display()))?;
                receipt.git_tree = Some(GIT_TREE.into());
            }
            &[]
        }
    };
    for (i, mount) in assessment.mounts.iter().enumerate() {
        if receipt.git_tree.is_some() {
            break;
        }
        if !mount.saved_on_discard() {
            continue;
        }
        let record = records.get(i).and_then(|r| r.as_ref().ok());
        let dir_name = format!("{i}-{}", slug(&mount.mount_dst));
        let saved = save_mount(store, &partial, &dir_name, mount, record)
            .with_context(|| format!("quarantining {}", mount.mount_dst))?;
        receipt.mounts.push(saved);
    }
    write_json_atomic(&partial.join(RECEIPT), &receipt)?;
    let mut final_dir = quarantine_dir(store, container, &stamp);
    let mut n = 2;
    while final_dir.exists() {
        final_dir = quarantine_dir(store, container, &format!("{stamp}-{n}"));
        n += 1;
    }
    // For a person who will `cat` it: inert (protocol/inert.rs), as the agent named the files.
    fs::write(partial.join(RECEIPT_TEXT), inert_text(&super::text::receipt_text(&receipt, &final_dir)).as_bytes())?;
    fs::rename(&partial, &final_dir).with_context(|| format!("cannot name {}", final_dir.display()))?;
    fs::File::open(&root)?.sync_all()?;
    Ok(final_dir)
}

/// The changed files [`save_mount`] will copy: per at-risk mount it can read, each file's path.
fn files_to_copy(assessment: &Assessment, records: &[Result<IsolationRecord, MalformedRecord>]) -> Vec<PathBuf> {
    let readable = |i: usize| records.get(i).is_some_and(|r| r.is_ok());
    assessment
        .mounts
        .iter()
        .enumerate()
        .filter(|(i, m)| m.saved_on_discard() && m.error.is_none() && readable(*i))
        .flat_map(|(_, m)| m.files.iter().map(move |f| Path::new(&m.path).join(&f.path)))
        .collect()
}

/// Room kept free beyond the files' blocks: for the bundles, the receipt and the directories,
/// and so that a save does not fill the filesystem to its last block.
const FIT_MARGIN: u64 = 1 << 20;

/// Refuses, before anything is written or deleted, a save whose files will not fit on the
/// quarantine's filesystem: their allocated blocks (a sparse file's holes stay holes in the copy,
/// so its apparent size would refuse what fits) and a margin, against the space a process that is
/// not root may still use there. Else the copy would stop at ENOSPC half-way.
fn check_fits(root: &Path, files: Vec<PathBuf>) -> Result<()> {
    let needed: u64 = files.iter().map(|path| allocated_bytes(path)).sum();
    if needed == 0 {
        return Ok(());
    }
    let fs = rustix::fs::statvfs(root).with_context(|| format!("cannot read the free space of {}", root.display()))?;
    fits(needed, fs.f_bavail.saturating_mul(fs.f_frsize), root)
}

/// Refuses files that take `needed` bytes on disk when `free` bytes are fewer than they want:
/// those bytes, a twentieth more (the copies' directories and their rounding to blocks) and the
/// margin. Exactly as many fit.
fn fits(needed: u64, free: u64, root: &Path) -> Result<()> {
    let wanted = needed.saturating_add(needed / 20).saturating_add(FIT_MARGIN);
    if wanted > free {
        anyhow::bail!(
            "the quarantine does not fit: its files take {needed} bytes on disk, {wanted} with the margin, and {} has \
             {free} bytes free; nothing was deleted",
            root.display()
        );
    }
    Ok(())
}

/// The bytes on disk of what [`copy_entry`] copies from `path`: its allocated blocks, every
/// entry at least one page (a directory, a link, an empty file), links never followed.
fn allocated_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = fs::symlink_metadata(path) else { return 0 };
    let own = meta.blocks().saturating_mul(512).max(4096);
    if !meta.is_dir() {
        return own;
    }
    let entries = fs::read_dir(path).into_iter().flatten().flatten();
    own.saturating_add(entries.map(|entry| allocated_bytes(&entry.path())).sum())
}

fn save_mount(
    store: &Store,
    dest: &Path,
    dir_name: &str,
    mount: &MountAssessment,
    record: Option<&IsolationRecord>,
) -> Result<SavedMount> {
    let path = Path::new(&mount.path);
    let layout = MountLayout { dir_name };
    let (Some(record), None) = (record, mount.error.as_ref()) else {
        let mount_dir = layout.dir(dest);
        fs::create_dir_all(&mount_dir)?;
        let mut saved = empty_save(mount);
        // Unreadable: keep the whole directory when it is the instance's own.
        let inside = path.starts_with(store.data_dir()) && !mount.path.contains("/../");
        if let Some(record) = record.filter(|r| r.isolation == IsolationKind::Worktree) {
            save_unreadable_worktree_refs(record, dest, layout, &mut saved)?;
            save_unreadable_worktree_modules(record, dest, layout, &mut saved)?;
        }
        if inside && fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            let tree = layout.tree();
            fs::rename(path, dest.join(&tree)).with_context(|| format!("moving {}", path.display()))?;
            saved.tree = Some(tree);
            saved.note = Some("could not be read; the whole directory was moved here".into());
        } else {
            let what = if saved.bundle.is_some() { "only its commits were saved" } else { "nothing saved" };
            saved.note = Some(format!("could not be read, {what}: {}", mount.error.as_deref().unwrap_or("unknown")));
        }
        return Ok(saved);
    };
    save_readable(dest, dir_name, mount, record)
}

/// A receipt's entry for `mount` with nothing saved yet.
fn empty_save(mount: &MountAssessment) -> SavedMount {
    SavedMount {
        mount_dst: mount.mount_dst.clone(),
        isolation: mount.isolation.clone(),
        path: mount.path.clone(),
        original_src: mount.original_src.clone(),
        head: None,
        verdict: mount.verdict.as_str().to_owned(),
        bundle: None,
        bundle_contents: None,
        integrated: mount.integrated().cloned().collect(),
        submodules: Vec::new(),
        index_dir: None,
        files_dir: None,
        files: Vec::new(),
        tree: None,
        modules: None,
        note: None,
    }
}

/// Saves the work of a mount git can read under `dest/dir_name` (the paths the receipt gives are
/// relative to `dest`), never moving or changing anything of the mount: the commits only the
/// session holds (the at-risk tips against what survives a purge) as a bundle, its submodules'
/// as bundles of their own, and the changed and untracked files as they are, with the staged
/// versions the work tree no longer has. A purge's quarantine and an export
/// (extras/moves/export/) save the same way.
pub(crate) fn save_readable(
    dest: &Path,
    dir_name: &str,
    mount: &MountAssessment,
    record: &IsolationRecord,
) -> Result<SavedMount> {
    let layout = MountLayout { dir_name };
    fs::create_dir_all(layout.dir(dest))?;
    let mut saved = empty_save(mount);
    let path = Path::new(&mount.path);
    let repo = git::Repo::open(path)?;
    saved.head = repo.head_commit();
    // The at-risk tips against what survives the purge: the engine knows both (engines/git).
    let host_path = Path::new(&record.original_src);
    let refs = match record.isolation {
        IsolationKind::Worktree => git::worktree_bundle(&repo, host_path, &record.scratch_branch, &mount.unpushed)?,
        IsolationKind::Clone => git::clone_bundle(&repo, Some(host_path), &mount.unpushed)?,
    };
    if !refs.is_empty() {
        let bundle = layout.bundle();
        if let Some(contents) = git::write_bundle(&repo, &refs, &dest.join(&bundle))? {
            saved.bundle = Some(bundle);
            saved.bundle_contents = Some(contents);
        }
    }
    // The submodules' commits, as they are now: their git directories go with the mount.
    for (n, (submodule, refs)) in git::submodule_bundles(&repo)?.into_iter().enumerate() {
        let name = layout.submodule_bundle(n);
        if let Some(contents) = git::write_bundle(&submodule.repo, &refs, &dest.join(&name))? {
            saved.submodules.push(SavedSubmodule {
                path: submodule.path.text(),
                path_bytes: submodule.path.wire_bytes(),
                module: git::module_name(&repo, &submodule.repo),
                head: submodule.repo.head_commit(),
                bundle: name,
                bundle_contents: contents,
            });
        }
    }
    if !mount.files.is_empty() {
        let (files, index) = (layout.files(), layout.index());
        let files_dir = dest.join(&files);
        fs::create_dir_all(&files_dir)?;
        for file in &mount.files {
            let copied = copy_changed_file(path, file.path.as_path(), &files_dir)?;
            let staged = staged_differs(&file.status) && save_staged(&repo, file.path.as_path(), &dest.join(&index))?;
            let gitlink = staged_change(&file.status).then(|| repo.staged_gitlink(file.path.as_path())).flatten();
            saved.files.push(SavedFile {
                status: file.status.clone(),
                path: file.path.text(),
                path_bytes: file.path.wire_bytes(),
                orig_path: file.orig_path.as_ref().map(NameBytes::text),
                orig_path_bytes: file.orig_path.as_ref().and_then(NameBytes::wire_bytes),
                saved: copied,
                staged,
                gitlink,
            });
        }
        saved.files_dir = Some(files);
        if saved.files.iter().any(|f| f.staged) {
            saved.index_dir = Some(index);
        }
    }
    Ok(saved)
}

/// A worktree git cannot read whose host repository still opens: the directory moved whole holds
/// none of its commits (they live in the host), so what the purge deletes from the host, the
/// scratch branch and the registration's detached HEAD, is bundled against every ref and HEAD
/// that survives there. Nothing when the host repository cannot be read (its commits are gone
/// with it, not deleted by the purge).
fn save_unreadable_worktree_refs(
    record: &IsolationRecord,
    dest: &Path,
    layout: MountLayout<'_>,
    saved: &mut SavedMount,
) -> Result<()> {
    let host_path = Path::new(&record.original_src);
    let worktree_path = Path::new(&record.worktree_path);
    let Some((host, refs)) = git::host_bundle(host_path, worktree_path, &record.scratch_branch, &record.container_name)
    else {
        return Ok(());
    };
    if refs.is_empty() {
        return Ok(());
    }
    let bundle = layout.bundle();
    if let Some(contents) = git::write_bundle(&host, &refs, &dest.join(&bundle))? {
        saved.bundle = Some(bundle);
        saved.bundle_contents = Some(contents);
    }
    Ok(())
}

/// A worktree git cannot read keeps its submodules' git directories in its registration in the
/// host repository (`<host>/.git/worktrees/<name>/modules/`), which step 5 prunes: moved whole
/// into the quarantine, as the work tree is, since what cannot be read cannot be bundled.
fn save_unreadable_worktree_modules(
    record: &IsolationRecord,
    dest: &Path,
    layout: MountLayout<'_>,
    saved: &mut SavedMount,
) -> Result<()> {
    let registration = git::registration_dir(
        Path::new(&record.original_src),
        Path::new(&record.worktree_path),
        &record.container_name,
    );
    let Some(modules) = registration.map(|dir| dir.join("modules")) else { return Ok(()) };
    if !fs::symlink_metadata(&modules).is_ok_and(|m| m.is_dir()) {
        return Ok(());
    }
    let moved = layout.modules();
    fs::rename(&modules, dest.join(&moved)).with_context(|| format!("moving {}", modules.display()))?;
    saved.modules = Some(moved);
    Ok(())
}

/// Copies one changed file (as `git status` named it) into `files_dir`, a symlink as a link.
/// Returns false when there is no file (a deletion). A path that would leave the mount, or that
/// runs through a symlinked directory, is refused.
fn copy_changed_file(mount: &Path, rel_path: &Path, files_dir: &Path) -> Result<bool> {
    if rel_path.components().any(|c| !matches!(c, Component::Normal(_))) {
        anyhow::bail!("refusing to copy {:?}: not a plain relative path", NameBytes::of_path(rel_path).text());
    }
    let mut walked = mount.to_path_buf();
    let parts: Vec<_> = rel_path.components().collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        walked.push(part);
        if !fs::symlink_metadata(&walked).is_ok_and(|m| m.is_dir()) {
            return Ok(false);
        }
    }
    let src = mount.join(rel_path);
    let dst = files_dir.join(rel_path);
    // Saved already, inside a directory saved whole: a directory where a tracked file was is
    // listed as that file's deletion and again as each untracked entry in it.
    if fs::symlink_metadata(&dst).is_ok() {
        return Ok(true);
    }
    if let Some(parent) = dst.parent() {
        fs::create_dir_all(parent)?;
    }
    copy_entry(&src, &dst)
}

#[cfg(test)]
pub(crate) mod tests;
