//! jackin-hosts's man page beyond its command line: its examples (run by
//! tests/docs/man_examples.rs), the environment and the files it reads.

use crate::base::exit::Exit;
use crate::base::tool::Tool;
use crate::face::manual::{example, file, see_also, Example, Manual};
use crate::face::manual::{CONFIG_VARIABLE, HOME_VARIABLES};

/// jackin-hosts's page.
pub fn manual() -> Manual {
    let files = vec![
        file(
            "~/.config/jackin/jackin-tools-hosts",
            "The hosts of --all-hosts, one ssh destination a line (# for a comment); refused when another user \
             could have written it.",
        ),
        file("~/.ssh/config", "ssh's own configuration, keys and known hosts: how each host is reached."),
    ];
    let environment = vec![HOME_VARIABLES[0], CONFIG_VARIABLE, HOME_VARIABLES[1]];
    Manual { examples: &EXAMPLES, environment, files, see_also: see_also(Tool::Hosts), sessions: None }
}

const EXAMPLES: [Example; 3] = [
    example(
        "With no host named, the view runs here alone, as the tool prints it",
        "jackin-hosts jackin-assess --all --format text",
        Exit::Ok,
        "1 branch unpushed",
    ),
    example(
        "A host that cannot be reached is a row of its own, never a failure of the view",
        "jackin-hosts --host nosuchhost.invalid --hosts-timeout 5s jackin-assess --all --format json",
        Exit::Ok,
        "\"status\":\"unreachable\"",
    ),
    example(
        "A run that acts reaches one host, never several at once",
        "jackin-hosts --host a.invalid --host b.invalid jackin-purge --terminal",
        Exit::Usage,
        "name one --host",
    ),
];
