//! The quarantine: before at-risk work is deleted on an explicit discard, it is saved under
//! `<home>/quarantine/<container>-<time>/` with a receipt that says what was saved, from where,
//! and how to bring it back. It expires after `--quarantine-days`.

use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use super::remove;
use crate::base::copy::copy_entry;
use crate::engines::git::{self, BundleContents};
use crate::protocol::assessment::{Assessment, Integrated, MountAssessment};
use crate::protocol::identity::Identity;
use crate::protocol::inert::{inert_name, inert_text};
use crate::protocol::path_bytes::NameBytes;
use crate::state::model::{IsolationKind, IsolationRecord, MalformedRecord};
use crate::state::store::{ensure_private_dir, write_json_atomic, Store};

/// `receipt.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Receipt {
    pub(crate) version: u64,
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) saved_at: String,
    pub(crate) expires_at: String,
    /// The verdict and summary of the assessment that found the work at risk.
    pub(crate) verdict: String,
    pub(crate) summary: String,
    pub(crate) mounts: Vec<SavedMount>,
    /// When the isolation records could not be read: the instance's whole `git/` tree, moved
    /// here (relative to the quarantine directory), since no mount in it could be assessed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) git_tree: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SavedMount {
    pub(crate) mount_dst: String,
    pub(crate) isolation: String,
    /// Where the work was: the worktree or clone directory.
    pub(crate) path: String,
    /// The host repository it was made from.
    pub(crate) original_src: Option<String>,
    /// The commit its work tree was on, which the saved files are changes to (a recover checks
    /// them out over it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) head: Option<String>,
    pub(crate) verdict: String,
    /// The bundle, relative to the quarantine directory.
    pub(crate) bundle: Option<String>,
    pub(crate) bundle_contents: Option<BundleContents>,
    /// The bundle's commits whose patch a surviving ref holds: saved all the same.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) integrated: Vec<Integrated>,
    /// The commits of submodules checked out in the mount that nothing else holds, one bundle
    /// each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) submodules: Vec<SavedSubmodule>,
    /// The staged versions the work tree no longer has, relative to the quarantine directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) index_dir: Option<String>,
    /// Dirty and untracked files as they were, relative to the quarantine directory.
    pub(crate) files_dir: Option<String>,
    pub(crate) files: Vec<SavedFile>,
    /// An unreadable mount is moved here whole: what cannot be read cannot be picked apart.
    pub(crate) tree: Option<String>,
    /// An unreadable worktree's submodules' git directories, moved here from its registration in
    /// the host repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) modules: Option<String>,
    pub(crate) note: Option<String>,
}

/// A submodule's bundle.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SavedSubmodule {
    /// Its path in the mount; one that is not UTF-8 has its bytes in `path_bytes`.
    pub(crate) path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path_bytes: Option<String>,
    /// Its git directory's name under the mount's `modules/` (git's name for the submodule; for
    /// a nested one, `<parent>/modules/<name>`): a recover looks for the same one in the host
    /// repository. Not written when that is not a plain UTF-8 path; older receipts lack it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) module: Option<String>,
    /// The commit its work tree was on.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) head: Option<String>,
    /// Relative to the quarantine directory.
    pub(crate) bundle: String,
    pub(crate) bundle_contents: BundleContents,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct SavedFile {
    pub(crate) status: String,
    /// The path as text; a path that is not UTF-8 has its bytes in `path_bytes`
    /// (protocol/path_bytes.rs), and is saved under `files/` as those bytes.
    pub(crate) path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path_bytes: Option<String>,
    /// The name a renamed file had before (`R`), which the work tree no longer has; its bytes
    /// in `orig_path_bytes` when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) orig_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) orig_path_bytes: Option<String>,
    /// False for a deletion: there is no file to save.
    pub(crate) saved: bool,
    /// Its staged version, which the work tree no longer has (`AM`, `MM`, `AD`, …), saved under
    /// `index/`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub(crate) staged: bool,
    /// A submodule's staged commit, when its index entry is a gitlink (`git add <submodule>`),
    /// which has no blob to save under `index/`: a recover stages it again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) gitlink: Option<String>,
}

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

/// Saves the at-risk work of `assessment` and returns the quarantine directory.
pub(crate) fn save(store: &Store, assessment: &Assessment, at_risk: AtRisk<'_>, days: u64) -> Result<PathBuf> {
    let root = store.quarantine_root();
    ensure_private_dir(&root)?;
    if let AtRisk::Mounts(records) = &at_risk {
        check_fits(&root, files_to_copy(assessment, records))?;
    }
    let now = SystemTime::now();
    let stamp = humantime::format_rfc3339_seconds(now).to_string().replace(['-', ':'], "");
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
                fs::rename(&git_tree, partial.join("git"))
                    .with_context(|| format!("moving {} into the quarantine", git_tree.display()))?;
                receipt.git_tree = Some("git".into());
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
    write_json_atomic(&partial.join("receipt.json"), &receipt)?;
    let mut final_dir = root.join(format!("{container}-{stamp}"));
    let mut n = 2;
    while final_dir.exists() {
        final_dir = root.join(format!("{container}-{stamp}-{n}"));
        n += 1;
    }
    // For a person who will `cat` it: inert (protocol/inert.rs), as the agent named the files.
    fs::write(partial.join("RECEIPT.txt"), inert_text(&receipt_text(&receipt, &final_dir)).as_bytes())?;
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

pub(crate) fn slug(mount_dst: &str) -> String {
    let s: String = mount_dst.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let s = s.trim_matches('-').to_owned();
    if s.is_empty() {
        "mount".into()
    } else {
        s
    }
}

fn save_mount(
    store: &Store,
    dest: &Path,
    dir_name: &str,
    mount: &MountAssessment,
    record: Option<&IsolationRecord>,
) -> Result<SavedMount> {
    let path = Path::new(&mount.path);
    let (Some(record), None) = (record, mount.error.as_ref()) else {
        let mount_dir = dest.join(dir_name);
        fs::create_dir_all(&mount_dir)?;
        let mut saved = empty_save(mount);
        // Unreadable: keep the whole directory when it is the instance's own.
        let inside = path.starts_with(store.data_dir()) && !mount.path.contains("/../");
        if let Some(record) = record.filter(|r| r.isolation == IsolationKind::Worktree) {
            save_unreadable_worktree_refs(record, &mount_dir, dir_name, &mut saved)?;
            save_unreadable_worktree_modules(record, &mount_dir, dir_name, &mut saved)?;
        }
        if inside && fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            fs::rename(path, mount_dir.join("tree")).with_context(|| format!("moving {}", path.display()))?;
            saved.tree = Some(format!("{dir_name}/tree"));
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
/// (tools/export.rs) save the same way.
pub(crate) fn save_readable(
    dest: &Path,
    dir_name: &str,
    mount: &MountAssessment,
    record: &IsolationRecord,
) -> Result<SavedMount> {
    let mount_dir = dest.join(dir_name);
    fs::create_dir_all(&mount_dir)?;
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
        let bundle_path = mount_dir.join("commits.bundle");
        if let Some(contents) = git::write_bundle(&repo, &refs, &bundle_path)? {
            saved.bundle = Some(format!("{dir_name}/commits.bundle"));
            saved.bundle_contents = Some(contents);
        }
    }
    // The submodules' commits, as they are now: their git directories go with the mount.
    for (n, (submodule, refs)) in git::submodule_bundles(&repo)?.into_iter().enumerate() {
        let name = format!("{dir_name}/submodule-{n}.bundle");
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
        let files_dir = mount_dir.join("files");
        fs::create_dir_all(&files_dir)?;
        for file in &mount.files {
            let copied = copy_changed_file(path, file.path.as_path(), &files_dir)?;
            let staged =
                staged_differs(&file.status) && save_staged(&repo, file.path.as_path(), &mount_dir.join("index"))?;
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
        saved.files_dir = Some(format!("{dir_name}/files"));
        if saved.files.iter().any(|f| f.staged) {
            saved.index_dir = Some(format!("{dir_name}/index"));
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
    mount_dir: &Path,
    dir_name: &str,
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
    let bundle_path = mount_dir.join("commits.bundle");
    if let Some(contents) = git::write_bundle(&host, &refs, &bundle_path)? {
        saved.bundle = Some(format!("{dir_name}/commits.bundle"));
        saved.bundle_contents = Some(contents);
    }
    Ok(())
}

/// A worktree git cannot read keeps its submodules' git directories in its registration in the
/// host repository (`<host>/.git/worktrees/<name>/modules/`), which step 5 prunes: moved whole
/// into the quarantine, as the work tree is, since what cannot be read cannot be bundled.
fn save_unreadable_worktree_modules(
    record: &IsolationRecord,
    mount_dir: &Path,
    dir_name: &str,
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
    fs::rename(&modules, mount_dir.join("modules")).with_context(|| format!("moving {}", modules.display()))?;
    saved.modules = Some(format!("{dir_name}/modules"));
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

fn receipt_text(receipt: &Receipt, dir: &Path) -> String {
    let d = dir.display();
    let mut t = format!(
        "jackin-purge saved the unfinished work of {} before deleting it.\n\
         Saved {}; kept until {} (then `jackin-purge --expire-quarantine` deletes it).\n\
         What was at risk: {}\n\n\
         Put it all back with one command (branches jackin/recovered/..., a new worktree):\n  \
         jackin-restore --recover {d}\n\
         or by hand, as below.\n",
        receipt.identity.container_base, receipt.saved_at, receipt.expires_at, receipt.summary
    );
    if let Some(tree) = &receipt.git_tree {
        t.push_str(&format!(
            "\nThe isolation records could not be read, so no mount could be assessed: the whole\n\
             git/ tree of the instance (every worktree and clone) was moved to {d}/{tree}/\n"
        ));
    }
    for m in &receipt.mounts {
        t.push_str(&mount_text(m, dir));
    }
    t
}

/// One mount's part of [`receipt_text`]: what was saved where, and how to bring it back by hand.
fn mount_text(m: &SavedMount, dir: &Path) -> String {
    let d = dir.display();
    let mut t = format!("\n{} ({}, was {})\n", m.mount_dst, m.isolation, m.path);
    let repo = m.original_src.as_deref().unwrap_or("<a clone of the repository>");
    if let (Some(bundle), Some(contents)) = (&m.bundle, &m.bundle_contents) {
        t.push_str(&format!("  {} commits in {d}/{bundle}\n", contents.commits));
        for (name, id) in &contents.refs {
            let origin = if contents.from_reflog.contains(name) { " (from the reflog)" } else { "" };
            t.push_str(&format!("    {name} {id}{origin}\n"));
        }
        for integrated in &m.integrated {
            let short = |id: &str| id.chars().take(12).collect::<String>();
            t.push_str(&format!(
                "    {} was integrated as {} on {}: saved all the same\n",
                short(&integrated.commit),
                short(&integrated.as_commit),
                integrated.into
            ));
        }
        t.push_str(&format!(
            "  bring them back (into {repo} or any clone that has the prerequisites):\n    \
             git bundle verify {d}/{bundle}\n    \
             git fetch {d}/{bundle} 'refs/*:refs/recovered/*'\n"
        ));
    }
    for sub in &m.submodules {
        let b = &sub.bundle;
        t.push_str(&format!(
            "  submodule {}: {} commits in {d}/{b}\n  bring them back (in the submodule of a checkout):\n    \
             git -C <your checkout>/{} fetch {d}/{b} 'refs/*:refs/recovered/*'\n",
            inert_name(&sub.path),
            sub.bundle_contents.commits,
            inert_name(&sub.path)
        ));
    }
    if let Some(files_dir) = &m.files_dir {
        t.push_str(&format!("  dirty and untracked files, as they were, in {d}/{files_dir}/\n"));
        for f in &m.files {
            let note = match (f.saved, f.staged) {
                (_, true) => " (and its staged version)",
                (true, false) => "",
                (false, false) => " (deleted: nothing to save)",
            };
            let from = f.orig_path.as_deref().map_or(String::new(), |o| format!(" (renamed from {})", inert_name(o)));
            t.push_str(&format!("    {} {}{from}{note}\n", f.status, inert_name(&f.path)));
        }
        t.push_str(&format!("  bring them back: cp -a {d}/{files_dir}/. <your checkout>/\n"));
        if let Some(index_dir) = &m.index_dir {
            t.push_str(&format!(
                "  staged versions the work tree no longer had (marked staged above) in {d}/{index_dir}/\n"
            ));
        }
    }
    if let Some(tree) = &m.tree {
        t.push_str(&format!("  the whole directory is in {d}/{tree}\n"));
    }
    if let Some(modules) = &m.modules {
        t.push_str(&format!("  its submodules' git directories are in {d}/{modules}/\n"));
    }
    if let Some(note) = &m.note {
        t.push_str(&format!("  note: {note}\n"));
    }
    t
}

/// One quarantine that expired and was deleted.
#[derive(Debug, Clone)]
pub struct Expired {
    pub dir: PathBuf,
    pub identity: Option<Identity>,
    pub bytes: u64,
}

/// Deletes the quarantines whose receipt has expired; one without a receipt (a save that died
/// half-way) expires `days` after it was last modified. With `dry_run`, only lists them.
pub fn expire(store: &Store, days: u64, dry_run: bool) -> Result<Vec<Expired>> {
    let root = store.quarantine_root();
    let entries = match fs::read_dir(&root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", root.display())),
    };
    let now = SystemTime::now();
    let mut expired = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("jk-") || name.starts_with(".partial-jk-")) || !entry.file_type()?.is_dir() {
            continue;
        }
        let dir = entry.path();
        let receipt: Option<Receipt> = crate::state::store::read_json(&dir.join("receipt.json")).ok().flatten();
        let expires = match &receipt {
            Some(r) => crate::base::time::parse_rfc3339(&r.expires_at),
            None => entry.metadata()?.modified().ok().map(|m| m + Duration::from_secs(days * 86_400)),
        };
        if expires.is_some_and(|at| at <= now) {
            let bytes = if dry_run { remove::tree_bytes(&dir) } else { remove::remove_tree(&dir)? };
            expired.push(Expired { dir, identity: receipt.map(|r| r.identity), bytes });
        }
    }
    Ok(expired)
}

#[cfg(test)]
#[path = "quarantine_tests.rs"]
mod tests;
