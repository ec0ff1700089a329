//! The library of the jackin keep & resume tools: the core the five tools share, their rooms, and
//! the extras. Its folders are its layers; each layer uses
//! only the ones listed before it, never one after:
//!
//! - `base`: exit codes, time, the parallel map: no knowledge of jackin.
//! - `state`: jackin's home on disk and its one owner of every path, file rule and name: the
//!   model of its files, the store that reads and writes them, names, config, the tools' own
//!   continuity file and launch recipes, and the resolver that turns arguments into instances.
//! - `protocol`: the JSON Lines records the tools exchange, and their text renderings.
//! - `engines`: the outside systems, behind blocking calls: git (libgit2) and Docker (bollard).
//! - `services`: what several tools share, each with one owner: the assessor, the session's
//!   claim, which Docker resources are a session's and their teardown, the launch recipe's
//!   capture, disk measurement, the saved-work format and the archive.
//! - `tools`: what each of the five programs does (assess, keep, purge, reconcile, restore), as
//!   library code over the layers below. A tool never uses another tool's internals: what two
//!   tools share is a service.
//! - `face`: what the binaries call: the command lines, the driver every tool runs under, the
//!   terminal screens.
//! - `extras`: programs of their own over the same core, which none of the five links:
//!   `jackin-move` (a kept session exported to one file, imported on another host).

pub mod base;
pub mod engines;
pub mod extras;
pub mod face;
pub mod protocol;
pub mod services;
pub mod state;
pub mod tools;
