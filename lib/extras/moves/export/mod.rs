//! `jackin-move export FILE INSTANCE`: a kept session written to one archive
//! (extras/moves/archive/) that `jackin-move import` makes a kept session of on another host.
//!
//! It is a quarantine-shaped save (services/saved_work: per mount, a bundle of every
//! commit only the session holds, its submodules' commits, the changed and untracked files as
//! they are) plus the session's own files: the manifest, the isolation records, the tools'
//! continuity file with the launch recipe, the agent home and `state/`. Per mount it adds the
//! base commit, where HEAD and the scratch branch were, and the host repository's remote URLs,
//! by which the other host finds its own clone. The agents' auth slots and the credentials of
//! the agent home stay out unless `--with-auth`; the recipe holds secrets' sources only. The
//! session is not changed: it stays kept here.

mod plan;

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::base::exit::Exit;
use crate::base::steps::Steps;
use crate::engines::docker::Engine;
use crate::engines::git::{self, Repo};
use crate::extras::moves::archive::{self, Staging, Writer, FORMAT};
use crate::protocol::assessment::{Assessment, MountAssessment};
use crate::protocol::identity::Identity;
use crate::protocol::path_bytes::NameBytes;
use crate::protocol::records::{Exported, MovedMount};
use crate::services::assessor::{AssessOptions, Assessor};
use crate::services::claim::SessionClaim;
use crate::services::saved_work::{save_readable, slug, SavedMount};
use crate::state::model::{IsolationKind, IsolationRecord, Status};
use crate::state::names::InstanceName;
use crate::state::store::{is_home_credential, Store, AUTH_SLOTS};
use plan::{plan, ExportStep, Seen};

/// `export.json`, the archive's account of the session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ExportFile {
    pub(crate) format: u64,
    #[serde(flatten)]
    pub(crate) identity: Identity,
    pub(crate) exported_at: String,
    /// `user@host` of the process that exported it.
    pub(crate) exported_by: String,
    /// The jackin home it was exported from: the launch recipe names its paths.
    pub(crate) home: String,
    pub(crate) with_auth: bool,
    /// The auth slots and agent-home credentials carried (with `with_auth`).
    #[serde(default)]
    pub(crate) auth: Vec<String>,
    pub(crate) verdict: String,
    pub(crate) summary: String,
    pub(crate) session_bytes: Option<u64>,
    /// One per isolation record, in the records' order.
    pub(crate) mounts: Vec<ExportedMount>,
}

/// One mount: its quarantine-shaped save (paths relative to the archive's `mounts/`) and what
/// the other host needs to make it anew.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ExportedMount {
    #[serde(flatten)]
    pub(crate) saved: SavedMount,
    pub(crate) base_commit: String,
    pub(crate) scratch_branch: String,
    /// Where the scratch branch was (a worktree's), bundled or not.
    #[serde(default)]
    pub(crate) scratch_tip: Option<String>,
    /// The branch HEAD was on (a full ref name); `None` for a detached HEAD.
    #[serde(default)]
    pub(crate) head_branch: Option<String>,
    /// The host repository's remotes (the clone's own when the host cannot be read).
    #[serde(default)]
    pub(crate) remotes: Vec<Remote>,
    /// The submodules checked out in the mount whose work tree went whole into the saved files
    /// (the parent lists a submodule with changed files, or on another commit, as one changed
    /// path) and that hold no commit only the session has (those are `saved.submodules`, with
    /// their bundles): the other host makes their git directories again, so the files read as a
    /// submodule's changes there as here.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) changed_submodules: Vec<ChangedSubmodule>,
}

/// A submodule of [`ExportedMount::changed_submodules`]: where it is, its git directory's name
/// (as a [`SavedSubmodule`](crate::services::saved_work::SavedSubmodule)'s), and the commit
/// and the branch (a full name; `None` detached) its work tree was on.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct ChangedSubmodule {
    pub(crate) path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path_bytes: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) module: Option<String>,
    pub(crate) head: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) head_branch: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Remote {
    pub(crate) name: String,
    pub(crate) url: String,
}

/// The archive's names: `export.json`, jackin's files under `instance/.jackin/`, the session's
/// directories under `instance/`, the mounts' saves under `mounts/`.
pub(crate) const EXPORT_ENTRY: &str = "export.json";
pub(crate) const MANIFEST_ENTRY: &str = "instance/.jackin/instance.json";
pub(crate) const ISOLATION_ENTRY: &str = "instance/.jackin/isolation.json";
pub(crate) const CONTINUITY_ENTRY: &str = "instance/.jackin/continuity.json";
pub(crate) const MOUNTS_ENTRY: &str = "mounts";

#[derive(Debug, Clone, Copy, Default)]
pub struct ExportOptions {
    pub with_auth: bool,
    pub dry_run: bool,
}

/// Whether a session whose status is `status` can be exported: one kept, crashed or whose setup
/// failed (a live one is refused as busy before this is asked).
pub(super) fn exportable(status: Option<Status>) -> bool {
    status.is_some_and(|s| s.is_kept() || matches!(s, Status::Crashed | Status::FailedSetup))
}

/// Writes the session `name` to `file` (see the module's doc); `steps` is told each part as it
/// is written. In purge's shape: observe (one look at the session, under its claim), plan
/// (export_plan.rs: the steps, from that alone), then walk the steps; a dry run returns the plan.
/// Refusals: a live session (busy, exit 5: its name claim held elsewhere or its role container
/// running), a `file` that exists (exit 3); a session that is not kept or whose work cannot be
/// read fails (nothing written).
pub fn export(
    store: &Store,
    engine: &Engine,
    name: &InstanceName,
    file: &Path,
    options: ExportOptions,
    steps: &dyn Steps,
) -> Result<Exported> {
    // Held for the run: no launch or resume takes the session while it is read.
    let (_claim, assessment, records) = observe(store, engine, name, options)?;
    let auth = auth_found(store, name);
    let plan = plan(&Seen {
        mounts: &assessment.mounts,
        auth: &auth,
        with_auth: options.with_auth,
        file,
        file_there: fs::symlink_metadata(file).is_ok(),
    })?;
    let mut exported = Exported {
        identity: assessment.identity.clone(),
        file: file.to_string_lossy().into_owned(),
        bytes: None,
        session_bytes: assessment.disk.map(|d| d.total()),
        parts: 0,
        mounts: Vec::new(),
        with_auth: options.with_auth,
        auth: auth.clone(),
        steps: plan.iter().map(ToString::to_string).collect(),
        notes: Vec::new(),
        dry_run: options.dry_run,
    };
    exported.notes.extend(ignored_note(&assessment.mounts));
    if options.dry_run {
        exported.mounts = assessment.mounts.iter().zip(&records).map(|(m, r)| as_assessed(m, r)).collect();
        return Ok(exported);
    }
    // Each mount, then the session's files, the agent home and the mounts' work.
    steps.planned(records.len() + 3);
    let parent = file.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let file_name = file.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| "export".into());
    let staging = Staging::new(parent.join(format!(".{file_name}.partial-{}", std::process::id())))?;
    let temp = parent.join(format!(".{file_name}.tmp.{}", std::process::id()));
    let mut run = Run {
        store,
        name,
        mounts_dir: staging.0.join(MOUNTS_ENTRY),
        temp: temp.clone(),
        writer: None,
        account: ExportFile {
            format: FORMAT,
            identity: assessment.identity.clone(),
            exported_at: crate::base::time::now_rfc3339(),
            exported_by: crate::state::continuity::operator(),
            home: store.roots.home.to_string_lossy().into_owned(),
            with_auth: options.with_auth,
            auth: if options.with_auth { auth } else { Vec::new() },
            verdict: assessment.verdict.as_str().to_owned(),
            summary: assessment.summary.clone(),
            session_bytes: exported.session_bytes,
            mounts: Vec::new(),
        },
    };
    for step in &plan {
        let done = run.step(step, &assessment.mounts, &records, &mut exported, steps);
        if let Err(e) = done {
            let _ = fs::remove_file(&temp);
            return Err(match step {
                ExportStep::SaveMount { .. } | ExportStep::Publish { .. } => e,
                _ => e.context(format!("writing {}", file.display())),
            });
        }
    }
    exported.bytes = Some(fs::metadata(file)?.len());
    Ok(exported)
}

/// What git ignores in the mounts, which no archive carries.
fn ignored_note(mounts: &[MountAssessment]) -> Option<String> {
    let ignored: usize = mounts.iter().map(|m| m.ignored).sum();
    (ignored > 0).then(|| {
        format!(
            "{ignored} entries git ignores in the mounts are not carried (build outputs, caches, .env files): \
             rebuild or copy them on the other host"
        )
    })
}

/// An export being written: the saved mounts under `mounts_dir`, the archive at `temp`.
struct Run<'a> {
    store: &'a Store,
    name: &'a InstanceName,
    mounts_dir: PathBuf,
    temp: PathBuf,
    writer: Option<Writer>,
    account: ExportFile,
}

impl Run<'_> {
    /// Carries out one step of the plan.
    fn step(
        &mut self,
        step: &ExportStep,
        mounts: &[MountAssessment],
        records: &[IsolationRecord],
        exported: &mut Exported,
        steps: &dyn Steps,
    ) -> Result<()> {
        let (store, name) = (self.store, self.name);
        match step {
            ExportStep::SaveMount { index, mount_dst, .. } => {
                steps.done(mount_dst);
                let dir_name = format!("{index}-{}", slug(mount_dst));
                let (moved, account) = save_mount(&self.mounts_dir, &dir_name, &mounts[*index], &records[*index])?;
                exported.mounts.push(moved);
                self.account.mounts.push(account);
            }
            ExportStep::WriteSessionFiles => {
                steps.done("the session's files");
                let by = format!("jackin-keep {}", env!("CARGO_PKG_VERSION"));
                let writer = self.writer.insert(Writer::create(&self.temp, &by)?);
                writer.add_bytes(Path::new(EXPORT_ENTRY), &serde_json::to_vec_pretty(&self.account)?)?;
                for (entry, path) in [
                    (MANIFEST_ENTRY, self.store.manifest_path(self.name)),
                    (ISOLATION_ENTRY, self.store.isolation_path(self.name)),
                    (CONTINUITY_ENTRY, self.store.continuity_path(self.name)),
                ] {
                    if fs::symlink_metadata(&path).is_ok() {
                        writer.add_tree(Path::new(entry), &path, &|_| false)?;
                    }
                }
            }
            ExportStep::WriteAgentHome { credentials } => {
                steps.done("the agent home");
                let writer = self.writer()?;
                writer.add_tree(Path::new("instance/home"), &store.agent_home_dir(name), &|rel| {
                    !credentials && is_home_credential(rel)
                })?;
                writer.add_tree(Path::new("instance/state"), &store.state_dir(name), &|_| false)?;
            }
            ExportStep::WriteAuthSlots { slots } => {
                let writer = self.writer()?;
                for slot in slots.iter().map(|s| s.trim_end_matches('/')) {
                    writer.add_tree(&Path::new("instance").join(slot), &store.auth_slot_dir(name, slot), &|_| false)?;
                }
            }
            ExportStep::WriteMountsWork => {
                steps.done("the mounts' work");
                let mounts_dir = self.mounts_dir.clone();
                let writer = self.writer()?;
                if mounts_dir.exists() {
                    writer.add_tree(Path::new(MOUNTS_ENTRY), &mounts_dir, &|_| false)?;
                }
            }
            ExportStep::Publish { file } => {
                let writer = self.writer.take().ok_or_else(|| anyhow::anyhow!("no archive written"))?;
                if !writer.skipped.is_empty() {
                    let names: Vec<_> =
                        writer.skipped.iter().map(|s| crate::protocol::inert::inert_name(s).into_owned()).collect();
                    exported
                        .notes
                        .push(format!("left out, neither a file, a directory nor a link: {}", names.join(", ")));
                }
                exported.parts = writer.finish().with_context(|| format!("writing {}", file.display()))?;
                publish(&self.temp, file)?;
            }
        }
        Ok(())
    }

    fn writer(&mut self) -> Result<&mut Writer> {
        self.writer.as_mut().ok_or_else(|| anyhow::anyhow!("the archive is not begun"))
    }
}

/// What an export reads before it writes anything, and its refusals: the session's claim (held
/// until the export ends), its assessment and its isolation records. A live session is busy
/// (exit 5); one that is not kept, has no manifest, or holds a mount or a record that cannot be
/// read is refused.
fn observe(
    store: &Store,
    engine: &Engine,
    name: &InstanceName,
    options: ExportOptions,
) -> Result<(SessionClaim, Assessment, Vec<IsolationRecord>)> {
    let manifest = store.read_manifest(name)?.ok_or_else(|| anyhow::anyhow!("no manifest: nothing to export"))?;
    let claim = SessionClaim::take(store, name, options.dry_run)?;
    if engine.inspect(&manifest.docker.role_container)?.is_some_and(|c| c.state.running) {
        return Err(Exit::Busy.err(format_args!(
            "the session is live (its role container {} is running): nothing exported; keep it first \
             (jackin-assess C | jackin-keep --keep --stop)",
            manifest.docker.role_container
        )));
    }
    if !exportable(manifest.known_status()) {
        anyhow::bail!("status {} is not a kept session: nothing exported", manifest.status);
    }
    // The manifest and the isolation records read once, for the export and its assessment alike.
    let isolation = store.read_isolation(name)?;
    let identity = Identity::from_manifest(&manifest);
    let assessor = Assessor::new(AssessOptions { with_diff: false, with_disk: true });
    let assessment = assessor.of_isolation(store, name, identity, Some(manifest.status.clone()), Ok(&isolation));
    let records: Vec<IsolationRecord> = isolation
        .mounts()
        .into_iter()
        .map(|r| r.map_err(|bad| anyhow::anyhow!("{}: nothing exported", bad.reason)))
        .collect::<Result<_>>()?;
    if let Some(mount) = assessment.mounts.iter().find(|m| m.error.is_some()) {
        anyhow::bail!(
            "{} cannot be read ({}): what cannot be read cannot be carried; nothing exported",
            mount.mount_dst,
            mount.error.as_deref().unwrap_or("unknown")
        );
    }
    Ok((claim, assessment, records))
}

/// A mount as the assessment sees it, for a dry run: nothing saved.
fn as_assessed(mount: &MountAssessment, record: &IsolationRecord) -> MovedMount {
    MovedMount {
        mount_dst: mount.mount_dst.clone(),
        isolation: mount.isolation.clone(),
        repository: Some(record.original_src.clone()),
        worktree: record.worktree_path.clone(),
        commits: mount.unpushed.iter().map(|r| r.commits).sum(),
        files: mount.files.len(),
        head: Repo::open(&record.worktree_path).ok().and_then(|r| r.head_commit()),
        remotes: remotes_of(record).into_iter().map(|r| r.url).collect(),
    }
}

/// Saves one mount's work under `mounts_dir/dir_name` as a purge saves it: what the record says
/// of it, and what the archive's account holds of it.
fn save_mount(
    mounts_dir: &Path,
    dir_name: &str,
    mount: &MountAssessment,
    record: &IsolationRecord,
) -> Result<(MovedMount, ExportedMount)> {
    let saved = save_readable(mounts_dir, dir_name, mount, record)
        .with_context(|| format!("saving the work of {}", mount.mount_dst))?;
    let worktree = Repo::open(&record.worktree_path)?;
    let scratch_tip = match record.isolation {
        IsolationKind::Worktree => worktree.ref_commit(&format!("refs/heads/{}", record.scratch_branch)),
        IsolationKind::Clone => None,
    };
    let remotes = remotes_of(record);
    let moved = MovedMount {
        mount_dst: mount.mount_dst.clone(),
        isolation: mount.isolation.clone(),
        repository: Some(record.original_src.clone()),
        worktree: record.worktree_path.clone(),
        commits: saved.bundle_contents.as_ref().map_or(0, |b| b.commits),
        files: saved.files.len(),
        head: saved.head.clone(),
        remotes: remotes.iter().map(|r| r.url.clone()).collect(),
    };
    let changed_submodules = changed_submodules(&worktree, &saved);
    let account = ExportedMount {
        saved,
        base_commit: record.base_commit.clone(),
        scratch_branch: record.scratch_branch.clone(),
        scratch_tip,
        head_branch: worktree.head_branch(),
        remotes,
        changed_submodules,
    };
    Ok((moved, account))
}

/// Puts the written archive at `file`, never over a file that appeared meanwhile (a link fails
/// where a rename would replace), and makes it durable.
fn publish(temp: &Path, file: &Path) -> Result<()> {
    let linked = fs::hard_link(temp, file);
    let _ = fs::remove_file(temp);
    linked.map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => {
            Exit::BadInput.err(format_args!("{} exists already: not overwritten", file.display()))
        }
        _ => anyhow::Error::new(e).context(format!("cannot create {}", file.display())),
    })?;
    archive::sync(file)
}

/// The submodules checked out in `worktree` without a bundle in `saved` whose work tree is in
/// its saved files: at or under a path saved whole ([`ExportedMount::changed_submodules`]).
fn changed_submodules(worktree: &Repo, saved: &SavedMount) -> Vec<ChangedSubmodule> {
    let wire = |path: &str, bytes: Option<&str>| NameBytes::from_wire(path.to_owned(), bytes).ok();
    let bundled: Vec<NameBytes> =
        saved.submodules.iter().filter_map(|s| wire(&s.path, s.path_bytes.as_deref())).collect();
    let saved_whole: Vec<NameBytes> =
        saved.files.iter().filter(|f| f.saved).filter_map(|f| wire(&f.path, f.path_bytes.as_deref())).collect();
    let mut changed = Vec::new();
    for submodule in git::submodules_checked_out(worktree) {
        let inside = |saved: &NameBytes| submodule.path.as_path().starts_with(saved.as_path());
        if bundled.contains(&submodule.path) || !saved_whole.iter().any(inside) {
            continue;
        }
        let Some(head) = submodule.repo.head_commit() else { continue };
        changed.push(ChangedSubmodule {
            path: submodule.path.text(),
            path_bytes: submodule.path.wire_bytes(),
            module: git::module_name(worktree, &submodule.repo),
            head,
            head_branch: submodule.repo.head_branch(),
        });
    }
    changed
}

/// The remotes a mount's host repository has; a clone's own when the host cannot be read.
fn remotes_of(record: &IsolationRecord) -> Vec<Remote> {
    let mut urls = Repo::open(&record.original_src).map(|r| r.remote_urls()).unwrap_or_default();
    if urls.is_empty() && record.isolation == IsolationKind::Clone {
        urls = Repo::open(&record.worktree_path).map(|r| r.remote_urls()).unwrap_or_default();
    }
    urls.into_iter().map(|(name, url)| Remote { name, url }).collect()
}

/// The auth slots of the instance directory and the credentials of its agent home that are
/// there, as paths relative to the instance directory.
fn auth_found(store: &Store, name: &InstanceName) -> Vec<String> {
    let mut found: Vec<String> = AUTH_SLOTS
        .iter()
        .filter(|slot| fs::symlink_metadata(store.auth_slot_dir(name, slot)).is_ok())
        .map(|s| format!("{s}/"))
        .collect();
    let home = store.agent_home_dir(name);
    let mut walk = walkdir::WalkDir::new(&home).follow_links(false).into_iter();
    while let Some(Ok(entry)) = walk.next() {
        let Ok(rel) = entry.path().strip_prefix(&home) else { continue };
        if !rel.as_os_str().is_empty() && is_home_credential(rel) {
            found.push(crate::protocol::path_bytes::NameBytes::of_path(&Path::new("home").join(rel)).text());
            if entry.file_type().is_dir() {
                walk.skip_current_dir();
            }
        }
    }
    found
}
