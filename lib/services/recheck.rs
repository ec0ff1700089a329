//! Whether an assessment still holds: nothing it looked at changed since it started, told from
//! stat data (engines/git `changed_since`), at a fraction of a second assessment's cost.
//! jackin-keep asks it before it stamps `clean_exited` on the assessment it was handed, when
//! nothing shows the agent had stopped before that assessment (tools/keep.rs).

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use crate::base::time::parse_rfc3339;
use crate::engines::git::{self, Since};
use crate::protocol::assessment::Assessment;
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// At most this many entries are looked at per repository; past it, assessing again costs no
/// more than the look.
const MOST_ENTRIES: usize = 100_000;

/// `None` when nothing the assessment looked at changed since it started; otherwise what did
/// (or what could not be told), for the caller to assess again. `assessed_at` has a second's
/// grain and is the assessment's start (services/assessor.rs): a change in that same second
/// counts as after it.
pub(crate) fn changed_since_assessed(store: &Store, name: &InstanceName, assessment: &Assessment) -> Option<String> {
    let Some(started) = parse_rfc3339(&assessment.assessed_at) else {
        return Some(format!("its assessed_at {:?} cannot be read", assessment.assessed_at));
    };
    let since = started.duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64);
    // The mounts themselves: the isolation records (or, without any, the directory they would
    // be written to).
    let isolation = store.isolation_path(name);
    let records = if isolation.exists() { isolation } else { store.meta_dir(name) };
    match std::fs::symlink_metadata(&records) {
        Ok(meta) if meta.ctime() < since => {}
        Ok(_) => return Some(format!("{} changed", records.display())),
        Err(e) => return Some(format!("{}: {e}", records.display())),
    }
    for mount in &assessment.mounts {
        let mut repos = vec![(Path::new(&mount.path), true)];
        // A clone's commits are safe when its host holds them: the host's refs count too (a
        // worktree's host refs are its own common directory's, walked with it).
        if mount.isolation == "clone" {
            repos.extend(mount.original_src.as_deref().map(|host| (Path::new(host), false)));
        }
        for (path, with_work_tree) in repos {
            match git::changed_since(path, with_work_tree, since, MOST_ENTRIES) {
                Since::Unchanged => {}
                Since::Changed(entry) => return Some(format!("{} changed", entry.display())),
                Since::TooLarge => return Some(format!("{} has more than {MOST_ENTRIES} entries", path.display())),
                Since::Unreadable(why) => return Some(why),
            }
        }
    }
    None
}
