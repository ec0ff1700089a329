//! How much git work a run did, counted as it is done: repositories opened, worktree
//! registrations read, commits read for a walk, walks for the commits a patch is looked for among,
//! and diffs made for a patch key. A view says it with `-v`, and a test compares the counts at two sizes to
//! prove a view's work grows with the sessions, not with their square (issue 69).

use std::sync::atomic::{AtomicU64, Ordering};

pub(super) static OPENS: AtomicU64 = AtomicU64::new(0);
pub(super) static REGISTRATIONS: AtomicU64 = AtomicU64::new(0);
pub(super) static COMMITS: AtomicU64 = AtomicU64::new(0);
pub(super) static DIFFS: AtomicU64 = AtomicU64::new(0);
pub(super) static CANDIDATE_WALKS: AtomicU64 = AtomicU64::new(0);

/// What this process has done so far, for `-v`: `N repository opens, M worktree registrations
/// read, C commits read, W candidate walks, D diffs`.
pub fn work_done() -> String {
    format!(
        "{} repository opens, {} worktree registrations read, {} commits read, {} candidate walks, {} diffs",
        OPENS.load(Ordering::Relaxed),
        REGISTRATIONS.load(Ordering::Relaxed),
        COMMITS.load(Ordering::Relaxed),
        CANDIDATE_WALKS.load(Ordering::Relaxed),
        DIFFS.load(Ordering::Relaxed)
    )
}

pub(super) fn one_more(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}
