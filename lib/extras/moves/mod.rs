//! `jackin-move`: moving a kept session to another host, an extra of its own over the core (none
//! of the five tools links it). Each verb in purge's shape (observe once, a pure plan of typed
//! steps, then walk them; a dry run prints the steps):
//! - `export` writes an archive of a kept session (export/: mod.rs observes and walks the steps
//!   plan.rs decides);
//! - `import` checks one whole and makes it a session of this home (import/: observe.rs reads and
//!   checks the archive once, hosts.rs looks at this host's repositories once, plan.rs decides
//!   each mount and the steps, apply.rs walks them; checks.rs what an archive may hold,
//!   submodules.rs a mount's submodules).
//!
//! Both save and read the saved-work format (services/saved_work) inside the archive
//! (extras/moves/archive). cli.rs is the command line, run.rs runs a verb as the binary does.

mod archive;
pub mod cli;
pub mod export;
pub mod import;
pub mod manual;
pub mod run;
