//! The outside systems, behind blocking calls: git through libgit2, Docker through bollard.

pub mod docker;
pub mod endpoint;
pub mod git;
