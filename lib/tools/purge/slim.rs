//! `jackin-purge --slim`: takes back from a kept session only what git ignores in its mounts (the
//! rebuildable part, engines/git/ignored.rs), keeping the session, its work and its verdict. Never
//! a live session, never a tracked or untracked-unignored file, never outside a mount, never a
//! symlink's target.

use std::os::unix::ffi::OsStringExt;
use std::path::Path;

use anyhow::Context;

use crate::base::disk_usage::SizeWalk;
use crate::engines::git;
use crate::protocol::codes::ResourceKind;
use crate::protocol::path_bytes::NameBytes;
use crate::protocol::records::{Purged, Removed};
use crate::state::continuity::{self, Slimmed};
use crate::state::model::{IsolationRecord, Status};

use super::{identity_of, remove, Outcome, Purger, Request, Stop};
use crate::protocol::codes::ErrorCode;

impl Purger<'_> {
    /// Slims one instance: the live check of a purge's step 1, then per mount its rebuildable
    /// ignored entries removed (in a dry run, listed and measured).
    pub(crate) fn slim(&self, request: &Request) -> Outcome {
        self.try_slim(request).map(Outcome::Purged).unwrap_or_else(|stopped| *stopped)
    }

    fn try_slim(&self, request: &Request) -> Result<Purged, Stop> {
        let name = &request.target.name;
        let store = self.store;
        // Held for the whole slim: no launch or purge of this name runs meanwhile.
        let _claim = self.claim(name)?;
        let manifest = store.read_manifest(name).map_err(|e| super::stop(ErrorCode::ManifestUnreadable, e))?;
        let Some(manifest) = manifest else {
            return Err(super::stop(
                ErrorCode::NotKept,
                anyhow::anyhow!("no manifest: only a kept session can be slimmed"),
            ));
        };
        let docker = manifest.docker.clone();
        // A live session is refused, never stopped: --stop is purge's, not slim's.
        if self.role_running(name, &docker)? {
            return Err(super::live(&docker.role_container, ""));
        }
        if !manifest.known_status().is_some_and(Status::is_kept) {
            let error = anyhow::anyhow!(
                "status {} is not kept (restore_available, preserved_dirty, preserved_unpushed): nothing slimmed",
                manifest.status
            );
            return Err(super::stop(ErrorCode::NotKept, error));
        }
        let isolation = store.read_isolation(name).map_err(|e| super::stop(ErrorCode::IsolationUnreadable, e))?;
        let data_root = store.data_dir().canonicalize().map_err(|e| super::stop(ErrorCode::SlimFailed, e.into()))?;
        let mut removed = Vec::new();
        let mut freed = 0;
        for record in isolation.mounts().into_iter().flatten() {
            let (mount_removed, bytes) =
                self.slim_mount(&record, &data_root).map_err(|e| super::stop(ErrorCode::SlimFailed, e))?;
            removed.extend(mount_removed);
            freed += bytes;
        }
        if !self.options.dry_run {
            let at = crate::base::time::now_rfc3339();
            continuity::update(store, name, |c| {
                c.slimmed = Some(Slimmed { at, freed_bytes: freed });
                Ok(((), true))
            })
            .map_err(|e| super::stop(ErrorCode::SlimFailed, e.context("recording the slim")))?;
        }
        Ok(Purged {
            identity: identity_of(Some(&manifest), request.target.row.as_ref(), name),
            removed,
            freed_bytes: freed,
            quarantine: None,
            slimmed: true,
            dry_run: self.options.dry_run,
        })
    }

    /// One mount's rebuildable ignored entries, removed without following a link; the bytes freed.
    fn slim_mount(&self, record: &IsolationRecord, data_root: &Path) -> anyhow::Result<(Vec<Removed>, u64)> {
        let path = Path::new(&record.worktree_path);
        let root = match path.canonicalize() {
            Ok(root) => root,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((Vec::new(), 0)),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        if !root.starts_with(data_root) {
            anyhow::bail!("{} is outside the home's data directory: not slimmed", path.display());
        }
        let repo = git::Repo::open(&root).map_err(|e| e.context(format!("opening {}", root.display())))?;
        let entries =
            repo.ignored().map_err(|e| e.context(format!("listing what git ignores in {}", root.display())))?;
        let walk = SizeWalk::on_filesystem_of(data_root)?;
        let mut removed = Vec::new();
        let mut freed = 0;
        for entry in entries.iter().filter(|e| e.rebuildable()) {
            let Some(target) = git::inside(&root, entry) else { continue };
            // Measured as the assessment measures it (a hard-linked file once), so the bytes freed
            // are the `rebuildable` the assessment promised.
            freed += walk.bytes(&target, &|_| false);
            if !self.options.dry_run {
                remove::remove_tree(&target)?;
            }
            let mut shown = target.into_os_string().into_vec();
            if entry.is_dir {
                shown.push(b'/');
            }
            removed.push(Removed::file(ResourceKind::Ignored, &NameBytes::new(shown)));
        }
        Ok((removed, freed))
    }
}
