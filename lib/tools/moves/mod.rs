//! Moving a kept session to another host, each in purge's shape (observe once, a pure plan of
//! typed steps, then walk them; a dry run prints the steps):
//! - `jackin-keep --export` writes an archive of it: export.rs observes and walks the steps
//!   export_plan.rs decides;
//! - `jackin-restore --import` checks one whole and makes it a session of this home (import.rs):
//!   import_observe.rs reads and checks the archive once, import_hosts.rs looks at this host's
//!   repositories once, import_plan.rs decides each mount and the steps, import_apply.rs walks
//!   them; with its checks (import_checks.rs) and its submodules (import_submodules.rs).
//!
//! Both save and read the saved-work format (services/saved_work) inside the archive
//! (services/archive).

pub mod export;
mod export_plan;
mod import;
mod import_apply;
mod import_checks;
mod import_hosts;
mod import_observe;
mod import_plan;
mod import_submodules;

pub use import::import;
pub use import_observe::CRASH_POINTS as IMPORT_CRASH_POINTS;
pub use import_plan::ImportOptions;
