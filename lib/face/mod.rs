//! What the binaries call: their command lines, the driver every tool runs under, the screens.

pub mod cli;
pub mod driver;
pub mod moves;
pub mod progress;
pub mod screens;
