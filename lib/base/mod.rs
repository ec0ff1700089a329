//! Building blocks that know nothing of jackin: exit codes, time, the parallel map.

pub mod exit;
pub mod parallel;
pub mod time;
