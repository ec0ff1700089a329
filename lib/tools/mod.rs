//! What each program does, over the state, the protocol and the engines.

pub(crate) mod archive;
pub mod assess;
pub mod capture;
pub(crate) mod claim;
pub(crate) mod disk;
pub mod export;
pub(crate) mod home_claims;
pub mod keep;
pub(crate) mod ownership;
pub mod purge;
pub mod reconcile;
pub mod restore;
pub(crate) mod teardown;
