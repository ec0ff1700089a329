//! jackin-move's man page beyond its command line: its examples (run by
//! tests/docs/man_examples.rs), the environment and the files it reads.

use crate::base::exit::Exit;
use crate::base::tool::Tool;
use crate::face::manual::{example, file, see_also, Example, Manual, Variable};
use crate::face::manual::{variable, CONFIG, CONFIG_VARIABLE, CONTINUITY, DOCKER_CONTEXTS, DOCKER_VARIABLES};
use crate::face::manual::{HOME_VARIABLES, INDEX, ISOLATION, LOCK_HOLDERS, MANIFEST, MOUNTS, NAME_LOCK};

/// jackin-move's page.
pub fn manual() -> Manual {
    let mut environment: Vec<Variable> = HOME_VARIABLES.to_vec();
    environment.insert(1, CONFIG_VARIABLE);
    environment.extend(DOCKER_VARIABLES);
    environment
        .push(variable("USER", "Who exported the session (user@host in the archive; LOGNAME when USER is not set)."));
    let files = vec![
        INDEX,
        MANIFEST,
        ISOLATION,
        MOUNTS,
        CONTINUITY,
        NAME_LOCK,
        file("~/.jackin/imports/", "Where import unpacks an archive before it is moved into data/."),
        CONFIG,
        DOCKER_CONTEXTS,
        LOCK_HOLDERS,
    ];
    Manual { examples: &EXAMPLES, environment, files, see_also: see_also(Tool::Move), sessions: None }
}

const EXAMPLES: [Example; 3] = [
    example(
        "What an archive of the kept session would hold, written nowhere",
        "jackin-move export --dry-run \"$C.tar.gz\" \"$C\" --format text",
        Exit::Ok,
        "would export",
    ),
    example(
        "One archive of the kept session, for jackin-move import on another host",
        "jackin-move export \"$C.tar.gz\" \"$C\" --format text",
        Exit::Ok,
        "exported to",
    ),
    example(
        "On the host it came from, the session is there already: refused, nothing written",
        "jackin-move import --dry-run \"$C.tar.gz\" --format text",
        Exit::BadInput,
        "already",
    ),
];
