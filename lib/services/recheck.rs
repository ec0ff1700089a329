//! Whether an assessment still holds: nothing it looked at changed since it started, told from
//! stat data (engines/git `changed_since`), at a fraction of a second assessment's cost.
//! jackin-keep asks it before it stamps `clean_exited` on the assessment it was handed, when
//! nothing shows the agent had stopped before that assessment (tools/keep/stands.rs).

use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

use crate::base::time::parse_rfc3339;
use crate::engines::git::{self, Since};
use crate::protocol::assessment::Assessment;
use crate::state::model::IsolationKind;
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// At most this many entries are looked at per repository; past it, assessing again costs no
/// more than the look.
const MOST_ENTRIES: usize = 100_000;

/// The kernel stamps a ctime from a clock that may lag the one `assessed_at` was read from by a
/// tick (4 ms at 250 Hz, 10 ms at 100 Hz): a change this long before the assessment started
/// counts as after it.
const CLOCK_TICK_MARGIN: Duration = Duration::from_millis(50);

/// `None` when nothing the assessment looked at changed since it started; otherwise what did
/// (or what could not be told), for the caller to assess again. `assessed_at` is the
/// assessment's start (services/assessor.rs), to the microsecond (an older one, to the second,
/// makes a change in that second count as after it).
pub(crate) fn changed_since_assessed(store: &Store, name: &InstanceName, assessment: &Assessment) -> Option<String> {
    let Some(started) = parse_rfc3339(&assessment.assessed_at) else {
        return Some(format!("its assessed_at {:?} cannot be read", assessment.assessed_at));
    };
    let since = started.checked_sub(CLOCK_TICK_MARGIN).unwrap_or(UNIX_EPOCH);
    // The mounts themselves: the isolation records (or, without any, the directory they would
    // be written to).
    let isolation = store.isolation_path(name);
    let records = if isolation.exists() { isolation } else { store.meta_dir(name) };
    match std::fs::symlink_metadata(&records) {
        Ok(meta) if crate::base::time::ctime(&meta) < since => {}
        Ok(_) => return Some(format!("{} changed", records.display())),
        Err(e) => return Some(format!("{}: {e}", records.display())),
    }
    for mount in &assessment.mounts {
        let mut repos = vec![(Path::new(&mount.path), true)];
        // A clone's commits are safe when its host holds them: the host's refs count too (a
        // worktree's host refs are its own common directory's, walked with it).
        if mount.isolation == IsolationKind::Clone {
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
