//! jackin's home on disk (state.md): what its files hold, where they live, how they are written,
//! what things are called, and which instances an argument names.

pub mod config;
pub mod continuity;
pub mod model;
pub mod names;
pub mod recipe;
pub mod select;
pub mod store;
pub mod word;
