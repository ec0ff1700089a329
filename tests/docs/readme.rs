//! Runs the README's commands as written, with the conventions of tests/docs/markdown.rs: every
//! `sh` block, in order, as one `bash -e -o pipefail` script, its `text` output checked, with `$C`
//! a session with unfinished work and a stopped container (the exit hook's moment) and `$D` one
//! whose work is discarded and recovered (tests/docs/two_sessions.rs); its `sh dev` blocks (the
//! demo, the tests, the install) are checked, and CI runs them itself. The hooks' tools are on
//! PATH as `make install` puts them.

use crate::common;

use std::fs;
use std::path::PathBuf;

use super::markdown::{self, Kind};
use super::two_sessions::TwoSessions;
use common::docker::{docker_quiet, engine_available};

#[test]
fn the_readmes_examples_run_as_written() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let readme = fs::read_to_string(root.join("README.md")).unwrap();
    let blocks = markdown::blocks("README.md", &readme);
    for block in blocks.iter().filter(|b| b.kind == Kind::Developer) {
        if let Err(why) = markdown::check_developer(block, &root) {
            panic!("README.md:{}: {why}", block.line);
        }
    }
    let runs: Vec<_> = blocks.into_iter().filter(|b| b.kind == Kind::Run).collect();
    let tools = ["jackin-assess", "jackin-keep", "jackin-purge", "jackin-reconcile", "jackin-restore"];
    for tool in tools {
        assert!(runs.iter().any(|b| b.heading == "## The five tools" && b.body.contains(tool)), "an example of {tool}");
    }
    assert!(runs.iter().any(|b| b.body.contains("jackin-exit-hook")), "the hook's example");
    if !engine_available("readme") {
        return;
    }

    let sessions = TwoSessions::new("rdme0000", "rdmd0000");
    let hooks = root.join("contrib/hooks");
    for block in &runs {
        let out = sessions.run_with_path(&block.body, &root, &hooks);
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        let said = format!(
            "README.md:{} ({}):\n{}\nstdout:\n{stdout}\nstderr:\n{stderr}",
            block.line, block.heading, block.body
        );
        assert_eq!(out.status.code(), Some(block.exit), "{said}");
        if let Some(expected) = &block.output {
            let expected =
                expected.replace("$C", &sessions.kept.container).replace("$D", &sessions.discarded.container);
            if let Err(line) = markdown::shows(&expected, &format!("{stdout}{stderr}")) {
                panic!("{said}\n--- the README shows a line the output does not have:\n{line}");
            }
        }
    }
    // What the blocks did: C kept, resumed, then kept again by the exit hook's trap (which frees
    // Docker: its container removed, its data kept); D's work discarded into the quarantine and
    // back.
    assert!(docker_quiet(&["inspect", &sessions.kept.container]).is_none(), "C's container is removed");
    assert!(sessions.kept.dir.exists(), "C is kept");
    let (manifest, row) = sessions.home.status(&sessions.kept.container);
    assert!(row == manifest && ["preserved_dirty", "restore_available"].contains(&row.as_str()), "{row}");
    assert!(!sessions.discarded.dir.exists(), "D was purged");
    // Back as refs outside refs/heads/, which jackin's exit check does not count (issue 65).
    let recovered = format!("refs/jackin/recovered/{}", sessions.discarded.container);
    let refs = common::git(&sessions.host, &["for-each-ref", "--format=%(refname)", "refs/jackin/recovered/"]);
    assert!(refs.lines().any(|r| r == recovered), "{refs}");
}
