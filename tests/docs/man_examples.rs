//! Runs the EXAMPLES of the five man pages (`jackin::face::manual`) as written, each as one
//! `bash -e -o pipefail` script, on one home of two sessions (tests/docs/two_sessions.rs): each
//! must end with the exit code its page gives and print what it says it prints. And the
//! ENVIRONMENT the pages list is what the library reads.

use std::fs;
use std::path::Path;

use jackin::base::tool::Tool;
use jackin::face::manual::Example;

use super::two_sessions::TwoSessions;
use crate::common::docker::engine_available;

/// The order the tools' examples run in, on one home: reconcile before keep, while there is
/// something for it to find (`$D`'s container was never there); purge's discard of `$D` before
/// restore, whose `--recover` brings that work back.
const RUN_ORDER: [Tool; 9] = [
    Tool::Assess,
    Tool::Idle,
    Tool::Hosts,
    Tool::Reconcile,
    Tool::Notify,
    Tool::Keep,
    Tool::Move,
    Tool::Purge,
    Tool::Restore,
];

/// What is wrong with one example's run: `None` when it ended and printed as its page says.
fn drift(example: &Example, code: Option<i32>, stdout: &str, stderr: &str) -> Option<String> {
    if code != Some(example.exit.code()) {
        return Some(format!("exit {code:?}, the page says {}", example.exit.code()));
    }
    match example.shows {
        "" if !stdout.is_empty() => Some("it prints on stdout, the example shows nothing".to_owned()),
        "" => None,
        shows if !stdout.contains(shows) && !stderr.contains(shows) => Some(format!("its output lacks {shows:?}")),
        _ => None,
    }
}

#[test]
fn every_page_has_examples_of_its_own_tool() {
    for tool in Tool::PROGRAMS.into_iter().chain(Tool::EXTRAS) {
        let examples = jackin::extras::manual(tool).examples;
        assert!((3..=6).contains(&examples.len()), "{}: {} examples", tool.name(), examples.len());
        for example in examples {
            assert!(example.command.contains(tool.name()), "{}: {:?} does not run it", tool.name(), example.command);
        }
    }
    assert!(
        Tool::PROGRAMS.iter().chain(&Tool::EXTRAS).all(|tool| RUN_ORDER.contains(tool)),
        "every page's examples run"
    );
}

#[test]
fn the_man_pages_examples_run_as_written() {
    if !engine_available("man_examples") {
        return;
    }
    let sessions = TwoSessions::new("mane0000", "mand0000");
    // Where an example writes a file of its own (jackin-move export "$C.tar.gz").
    let dir = tempfile::tempdir().unwrap();
    let mut drifted = Vec::new();
    for tool in RUN_ORDER {
        for example in jackin::extras::manual(tool).examples {
            let out = sessions.run(example.command, dir.path());
            let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            if let Some(why) = drift(example, out.status.code(), &stdout, &stderr) {
                drifted.push(format!(
                    "man {}: {}\n  {why}\n  stdout:\n{stdout}  stderr:\n{stderr}",
                    tool.name(),
                    example.command
                ));
            }
        }
    }
    assert!(drifted.is_empty(), "examples that do not do what their page says:\n{}", drifted.join("\n"));
}

#[test]
fn the_check_sees_an_example_drift() {
    let example = Example { about: "", command: "", exit: jackin::base::exit::Exit::Ok, shows: "ready" };
    assert_eq!(drift(&example, Some(0), "Resume jk-… · ready\n", ""), None);
    assert!(drift(&example, Some(6), "Resume jk-… · ready\n", "").is_some(), "another exit code");
    assert!(drift(&example, Some(0), "jk-… · cannot resume\n", "").is_some(), "other output");
    let silent = Example { shows: "", ..example };
    assert_eq!(drift(&silent, Some(0), "", "a warning\n"), None);
    assert!(drift(&silent, Some(0), "a record\n", "").is_some(), "output where none is shown");
}

/// Every `"NAME"` string literal of the library's sources but the manual's own.
fn literals_of_the_library() -> String {
    fn read(dir: &Path, text: &mut String) {
        for entry in fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                read(&path, text);
            } else if path.extension().is_some_and(|e| e == "rs") && !path.ends_with("face/manual.rs") {
                text.push_str(&fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut text = String::new();
    read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("lib"), &mut text);
    text
}

#[test]
fn the_environment_the_pages_list_is_read_by_the_library() {
    let library = literals_of_the_library();
    for tool in Tool::PROGRAMS.into_iter().chain(Tool::EXTRAS) {
        for variable in jackin::extras::manual(tool).environment {
            // `env:NAME` stands for the variables a launch recipe names, which the recipe says.
            if variable.name.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
                let literal = format!("\"{}\"", variable.name);
                assert!(library.contains(&literal), "{}: {} is read nowhere in lib/", tool.name(), variable.name);
            }
        }
    }
}
