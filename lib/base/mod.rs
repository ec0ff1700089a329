//! Building blocks that know nothing of jackin: exit codes, time, the parallel map, disk usage.

pub(crate) mod disk_usage;
pub mod exit;
pub mod parallel;
pub mod time;
