//! The integration tests: one test binary, so libgit2, the Docker client and the screens are
//! linked once for all of them (27 binaries before, each linking the three). Its modules are
//! grouped by what they hold to account; `tests/common` is what they share.
//!
//! `cargo test --test tests <module path>` runs one part, e.g. `cargo test --test tests
//! tool::purge::` or `cargo test --test tests safety::`. The groups are named apart from the
//! library's own modules (`tool`, not `tools`), so a filter of one never selects the other's.

mod common;

/// The library's layers and sizes, read from the sources.
mod architecture;

/// The five tools and the moves, each through its binary: its records, exit codes and what it
/// leaves on disk.
mod tool {
    mod assess;
    mod attach;
    mod dry_runs;
    mod events;
    mod flag_walk;
    mod idle;
    mod keep;
    mod lifecycle;
    mod moves;
    mod purge;
    mod reconcile;
    mod records;
    mod recover;
    mod restore;
    mod restore_drift;
    mod scale;
    mod slim;
}

/// The agent and bad input as adversaries: what is never deleted, never run, never shown raw,
/// and what a crash at any point leaves.
mod safety {
    mod bad_input;
    mod guards;
    mod inert_text;
    mod planted_programs;
    mod reliability;
    mod restore_faults;
    mod trust;
}

/// The host around the tools: Docker engines, jackin as shipped, its files, hooks and the wire
/// format.
mod host {
    mod docker_engine;
    mod engine_choice;
    mod hooks;
    mod hosts;
    mod integrated;
    mod jackin_load;
    mod launchd;
    mod reboot;
    mod schedules;
    mod state_format;
    mod wire;
    mod wire_text;
}

/// What the documents promise, tried: the README, the operator's guide, the generated man pages
/// and completions.
mod docs {
    mod completions;
    mod exit_tables;
    mod generated_docs;
    mod man_examples;
    mod markdown;
    mod operator_guide;
    mod readme;
    mod reference_lists;
    mod session_names;
    mod two_sessions;
}
