//! Deletions to warn of (issue 52): each quarantine or kept session that will be deleted within
//! `--warn-before` becomes an `expiring` record, once. Reconcile only reports; running the
//! operator's program for each event is `jackin-notify`'s, on the other end of a pipe
//! (extras/notify/).
//!
//! An expiry is warned about once: `<home>/events/warned.json` remembers what was warned about
//! and until when, whatever the window of a later run, until it is deleted; a deadline that moves
//! (a quarantine saved again) is a new warning.

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use anyhow::Result;

use crate::base::time::{rfc3339, seconds_until};
use crate::protocol::identity::Identity;
use crate::protocol::records::Expiring;
use crate::state::model::Status;
use crate::state::store::Store;

#[derive(Debug, Clone, Default)]
pub struct EventOptions {
    /// Warn about deletions due within this long; `None`: no expiry warnings.
    pub warn_before: Option<Duration>,
    /// The `--older-than` of the operator's retention purge: a kept clean session
    /// (`restore_available`) last updated longer ago is purged by it.
    pub retention: Option<Duration>,
    /// A dry run: warns, remembers nothing.
    pub dry_run: bool,
}

/// What will be deleted within the window and was not warned about yet; remembered as warned
/// (unless `dry_run`).
pub fn expiring(store: &Store, options: &EventOptions) -> Result<Vec<Expiring>> {
    let dry_run = options.dry_run;
    let Some(window) = options.warn_before else { return Ok(Vec::new()) };
    let now = SystemTime::now();
    let due = due(store, options.retention)?;
    let warned_path = store.warned_path();
    // A file that cannot be read costs warnings said again, never the run.
    let warned: BTreeMap<String, String> =
        crate::state::store::read_json(&warned_path).ok().flatten().unwrap_or_default();
    let mut still = BTreeMap::new();
    let mut fresh = Vec::new();
    for item in due {
        let Some(secs) = seconds_until(&item.expires_at, now) else { continue };
        let key = format!("{}:{}", item.kind, item.path);
        let was_warned = warned.get(&key) == Some(&item.expires_at);
        if secs <= window.as_secs() as i64 {
            if !was_warned {
                fresh.push(Expiring { expires_in_secs: secs, ..item.clone() });
            }
            still.insert(key, item.expires_at);
        } else if was_warned {
            // Warned by a run with a longer window: remembered until it is gone or its deadline
            // moves, so that no run says it again.
            still.insert(key, item.expires_at);
        }
    }
    if !dry_run && (still != warned || !fresh.is_empty()) {
        std::fs::create_dir_all(warned_path.parent().expect("a file in a directory"))?;
        crate::state::store::write_json_atomic(&warned_path, &still)?;
    }
    Ok(fresh)
}

/// Every quarantine with a receipt, and (with a retention) every kept clean session, with when
/// it will be deleted.
fn due(store: &Store, retention: Option<Duration>) -> Result<Vec<Expiring>> {
    let mut due = Vec::new();
    for (dir, receipt) in crate::services::saved_work::receipts(store)? {
        due.push(Expiring {
            identity: receipt.identity,
            kind: "quarantine".into(),
            path: dir.to_string_lossy().into_owned(),
            expires_at: receipt.expires_at,
            expires_in_secs: 0,
            deleted_by: "jackin-purge --expire-quarantine".into(),
        });
    }
    if let Some(retention) = retention {
        let index = store.read_index()?;
        for row in index.instances.iter().filter(|r| r.status == Status::RestoreAvailable) {
            let Some(updated) = crate::base::time::parse_rfc3339(&row.updated_at) else { continue };
            let Ok(name) = crate::state::names::InstanceName::parse(&row.container_base) else { continue };
            due.push(Expiring {
                identity: Identity::from_row(row),
                kind: "kept_session".into(),
                path: store.instance_dir(&name).to_string_lossy().into_owned(),
                expires_at: rfc3339(updated + retention),
                expires_in_secs: 0,
                deleted_by: format!("jackin-purge --older-than {}", humantime::format_duration(retention)),
            });
        }
    }
    Ok(due)
}
