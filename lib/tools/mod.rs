//! What each program does, over the state, the protocol, the engines and the shared services.
//! Each tool is a room of its own: none uses another's internals (tests/architecture.rs).

pub mod assess;
pub mod keep;
pub mod purge;
pub mod reconcile;
pub mod restore;
