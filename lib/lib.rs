//! The shared core of the jackin keep & resume tools: jackin's on-disk state, the record
//! protocol, the git assessment and the driver every tool runs under.

pub mod assess;
pub mod cli;
pub mod config;
pub mod continuity;
pub mod dialog;
pub mod docker;
pub mod driver;
pub mod exit;
pub mod git;
pub mod keep;
pub mod model;
pub mod names;
pub mod parallel;
pub mod purge;
pub mod recipe;
pub mod reconcile;
pub mod records;
pub mod restore;
pub mod select;
pub mod store;
pub mod time;
