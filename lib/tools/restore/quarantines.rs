//! The quarantines a discard left (`jackin-restore --quarantined`), and the one a `--recover Q`
//! names: a quarantine directory, or a session's name, id or unique id prefix (its newest).
//! Putting the work back is recover.rs.

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::base::exit::Exit;
use crate::engines::git::Repo;
use crate::protocol::records::{Quarantined, QuarantinedRepository};
use crate::services::saved_work::{read_receipt, Receipt, RECEIPT};
use crate::state::store::Store;

/// The quarantines of the home that finished saving, newest first.
pub fn quarantined(store: &Store) -> Result<Vec<Quarantined>> {
    let mut listed: Vec<Quarantined> = crate::services::saved_work::receipts(store)?
        .into_iter()
        .map(|(dir, receipt)| listing(&dir, &receipt))
        .collect();
    listed.sort_by(|a, b| b.saved_at.cmp(&a.saved_at).then_with(|| b.dir.cmp(&a.dir)));
    Ok(listed)
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
        expires_in_secs: crate::base::time::seconds_until(&receipt.expires_at, std::time::SystemTime::now()),
        summary: receipt.summary.clone(),
        recoverable: receipt.git_tree.is_none() && repositories.iter().all(|r| r.recoverable),
        repositories,
        bytes: crate::base::disk_usage::tree_bytes(dir),
    }
}

/// The quarantine `which` names: its directory, or a session's container name, instance id or
/// unique id prefix of 4+ characters (its newest quarantine).
/// A directory is taken as given but made absolute (the `recovered` records name it).
pub(super) fn find(store: &Store, which: &str) -> Result<(PathBuf, Receipt)> {
    let as_dir = Path::new(which);
    if as_dir.join(RECEIPT).is_file() {
        // A receipt names the repositories a recovery writes branches into: only this home's
        // quarantines (made by its own purge) are taken on their word, never a directory
        // elsewhere (another home's, or one the agent made to look like one).
        let root = std::fs::canonicalize(store.quarantine_root()).ok();
        let parent = std::fs::canonicalize(as_dir).ok().and_then(|dir| dir.parent().map(Path::to_path_buf));
        if root.is_none() || parent != root {
            return Err(Exit::BadInput.err(format_args!(
                "{which} is not a quarantine of this home ({}): nothing recovered (jackin-restore --quarantined \
                 lists them; give --home for another home's)",
                store.quarantine_root().display()
            )));
        }
        let receipt =
            read_receipt(as_dir)?.ok_or_else(|| Exit::BadInput.err(format_args!("{which} has no receipt")))?;
        return Ok((crate::state::store::absolute(as_dir)?, receipt));
    }
    let mut matching: Vec<(PathBuf, Receipt)> = crate::services::saved_work::receipts(store)?
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
        Exit::Partial.err(format_args!("no quarantine of {which:?} (jackin-restore --quarantined lists them)"))
    })
}
