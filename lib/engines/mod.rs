//! The outside systems, behind blocking calls: git through libgit2, Docker through bollard,
//! other hosts through the system's ssh.

pub mod docker;
pub mod endpoint;
pub mod git;
pub(crate) mod ssh;
