//! `jackin-purge --expire-quarantine`: deleting the saved work whose time has come. Saving it is
//! the saved-work service's (services/saved_work); deleting it is purge's, the only deleter.

use std::fs;
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};

use super::remove;
use crate::protocol::codes::ResourceKind;
use crate::protocol::identity::Identity;
use crate::services::saved_work::read_receipt;
use crate::state::store::Store;

/// One quarantine or session record that expired and was deleted.
#[derive(Debug, Clone)]
pub struct Expired {
    /// `Quarantine` or `SessionRecord`: what the `purged` record says was removed.
    pub kind: ResourceKind,
    pub dir: PathBuf,
    pub identity: Option<Identity>,
    pub bytes: u64,
}

/// Deletes the quarantines whose receipt has expired; one without a receipt (a save that died
/// half-way) expires `days` after it was last modified. Then the session records whose time has
/// come, and the leftovers of records a killed purge did not finish (a day after they were last
/// written). With `dry_run`, only lists them.
pub fn expire(store: &Store, days: u64, dry_run: bool) -> Result<Vec<Expired>> {
    let now = SystemTime::now();
    let quarantine = |dir: &Path| read_receipt(dir).ok().flatten().map(|r| (r.expires_at, r.identity));
    let root = (ResourceKind::Quarantine, store.quarantine_root());
    let mut expired = expire_under(&root, quarantine, days * 86_400, now, dry_run)?;
    let record = |dir: &Path| crate::services::session_record::read(dir).map(|r| (r.expires_at, r.identity));
    let root = (ResourceKind::SessionRecord, store.records_root());
    expired.extend(expire_under(&root, record, 86_400, now, dry_run)?);
    Ok(expired)
}

/// The directories under `root` (a session's, or a `.partial-` one) whose time has come: the
/// `expires_at` that `expiry` reads in one, or for one it reads nothing in, `unfinished_secs`
/// after it was last modified.
fn expire_under(
    (kind, root): &(ResourceKind, PathBuf),
    expiry: impl Fn(&Path) -> Option<(String, Identity)>,
    unfinished_secs: u64,
    now: SystemTime,
    dry_run: bool,
) -> Result<Vec<Expired>> {
    let entries = match fs::read_dir(root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", root.display())),
    };
    let mut expired = Vec::new();
    for entry in entries {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if !(name.starts_with("jk-") || name.starts_with(".partial-jk-")) || !entry.file_type()?.is_dir() {
            continue;
        }
        let dir = entry.path();
        let found = expiry(&dir);
        let expires = match &found {
            Some((at, _)) => crate::base::time::parse_rfc3339(at),
            None => entry.metadata()?.modified().ok().map(|m| m + Duration::from_secs(unfinished_secs)),
        };
        if expires.is_some_and(|at| at <= now) {
            let bytes = if dry_run { crate::base::disk_usage::tree_bytes(&dir) } else { remove::remove_tree(&dir)? };
            expired.push(Expired { kind: *kind, dir, identity: found.map(|(_, identity)| identity), bytes });
        }
    }
    Ok(expired)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::services::saved_work::fixtures::{assessment, store_in};
    use crate::services::saved_work::{read_receipt, save, AtRisk};

    /// The receipt says the quarantine is kept `days` days from when it was saved, and a run of
    /// `--expire-quarantine` the same day leaves it.
    #[test]
    fn a_quarantine_expires_the_given_days_after_it_was_saved() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path());
        let dir = save(&store, &assessment(Vec::new()), AtRisk::Mounts(&[]), 30).unwrap();
        let receipt = read_receipt(&dir).unwrap().expect("a receipt");
        let saved = crate::base::time::parse_rfc3339(&receipt.saved_at).unwrap();
        let expires = crate::base::time::parse_rfc3339(&receipt.expires_at).unwrap();
        assert_eq!(
            expires.duration_since(saved).expect("expires after it was saved"),
            Duration::from_secs(30 * 86_400)
        );
        assert!(expire(&store, 30, false).unwrap().is_empty());
        assert!(dir.join("receipt.json").exists());
    }

    /// With no quarantine yet there is nothing to expire; a quarantine root that cannot be listed
    /// (here: a file) is an error, never "nothing expired".
    #[test]
    fn no_quarantine_expires_nothing_and_one_that_cannot_be_listed_is_an_error() {
        let tmp = tempfile::tempdir().unwrap();
        let store = store_in(tmp.path());
        assert!(expire(&store, 30, false).unwrap().is_empty());
        fs::write(store.quarantine_root(), "not a directory").unwrap();
        assert!(expire(&store, 30, false).is_err());
        assert!(expire(&store, 30, true).is_err());
    }
}
