//! Building blocks that know nothing of jackin: exit codes, time, the parallel map, disk usage,
//! progress steps, a child process waited on with a deadline, this host's name, the test-only crash points, the programs' own names (`tool.rs`), and arguments as they travel over ssh (`argv.rs`).

pub mod argv;
pub(crate) mod child;
pub(crate) mod copy;
pub mod crash;
pub(crate) mod disk_usage;
pub mod exit;
pub mod host;
pub mod os;
pub mod parallel;
pub mod perms;
pub mod steps;
#[cfg(test)]
pub(crate) mod testing;
pub mod time;
pub mod tool;
