//! jackin-notify's man page beyond its command line: its examples (run by
//! tests/docs/man_examples.rs). It reads nothing of jackin's: no environment, no files.

use crate::base::exit::Exit;
use crate::base::tool::Tool;
use crate::face::manual::{example, see_also, Example, Manual};

/// jackin-notify's page.
pub fn manual() -> Manual {
    Manual {
        examples: &EXAMPLES,
        environment: Vec::new(),
        files: Vec::new(),
        see_also: see_also(Tool::Notify),
        sessions: None,
    }
}

const EXAMPLES: [Example; 3] = [
    example(
        "Each status change and each expiry reconcile reports runs the program; the records pass on",
        "jackin-reconcile --warn-before 1h --format json | jackin-notify /bin/true",
        Exit::Ok,
        "",
    ),
    example(
        "A program that is not there (or that another user could change) is refused before a line is read",
        "jackin-notify /nonexistent/on-event </dev/null",
        Exit::Usage,
        "no such program",
    ),
    example(
        "A line that is not a record ends the run: the lines before it were handled",
        "printf 'not a record\\n' | jackin-notify /bin/true",
        Exit::BadInput,
        "not JSON",
    ),
];
