//! The wire format (protocol.md): every record the tools read and write, and its text rendering.

pub mod records;
