//! What several tools share, each rule with one owner, below the tools that use it.

pub mod assessor;
pub mod capture;
pub(crate) mod claim;
pub(crate) mod disk;
pub(crate) mod home_claims;
pub mod host_kill;
pub(crate) mod keeping;
pub(crate) mod ownership;
pub mod provenance;
pub(crate) mod recheck;
pub(crate) mod saved_work;
pub mod seal;
pub mod session_record;
pub(crate) mod teardown;
