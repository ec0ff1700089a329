//! Resuming a session (lifecycle.md, "Restore"): the same instance, container name, data dir and
//! worktrees, by the cheapest faithful tier. A failed restore never deletes anything.

mod base_image;
mod drift;
mod list;
mod observe;
mod plan;
mod prepare;
mod quarantines;
mod records;
mod recover;
mod resume;
mod run;
mod sweep;

pub use list::{candidates, with_retention, Order};
pub use observe::RoleSource;
pub use plan::{Plan, Tier};
pub use prepare::{planned, prepare, resumable, resumed, Filters, Prepared};
pub use quarantines::quarantined;
pub use records::records;
pub use recover::recover;
pub use resume::{acknowledge, resume, Resume, ResumeOptions};
pub use run::{execute, failure_exit, mark_resumed, Ran, Waits, CRASH_POINTS};
pub use sweep::{interrupted, sweep_exit, SweepOptions};
