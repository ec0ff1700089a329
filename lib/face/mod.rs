//! What the binaries call: their command lines (and the rest of their man pages: `manual`), the driver
//! every tool runs under, the screens.

pub mod cli;
pub mod driver;
pub mod manual;
pub mod moved;
pub mod progress;
pub mod restoring;
pub mod screens;
pub mod settle;
