//! jackin-idle's man page beyond its command line: its examples (run by
//! tests/docs/man_examples.rs), the environment and the files it reads.

use crate::base::exit::Exit;
use crate::base::tool::Tool;
use crate::face::manual::{example, file, see_also, Example, Manual, Variable};
use crate::face::manual::{CONFIG_VARIABLE, CONTINUITY, DOCKER_CONTEXTS, DOCKER_VARIABLES, HOME_VARIABLES};
use crate::face::manual::{INDEX, ISOLATION, LOCK_HOLDERS, MANIFEST, NAME_LOCK};

/// jackin-idle's page.
pub fn manual() -> Manual {
    let mut environment: Vec<Variable> = HOME_VARIABLES.to_vec();
    environment.insert(1, CONFIG_VARIABLE);
    environment.extend(DOCKER_VARIABLES);
    let files = vec![
        INDEX,
        MANIFEST,
        ISOLATION,
        CONTINUITY,
        NAME_LOCK,
        file(
            "~/.config/jackin/jackin-tools-idle.toml",
            "The idle policy, the tools' own: [workspaces.NAME] keep_after = \"4h\" (or \"off\"). jackin never reads it.",
        ),
        DOCKER_CONTEXTS,
        LOCK_HOLDERS,
    ];
    Manual { examples: &EXAMPLES, environment, files, see_also: see_also(Tool::Idle), sessions: None }
}

const EXAMPLES: [Example; 3] = [
    example(
        "Every running session and how long nobody used it (none runs here: nothing to say)",
        "jackin-idle --idle-for 4h --format text",
        Exit::Ok,
        "",
    ),
    example(
        "A dry run only looks again at what the run would keep: it needs --yes",
        "jackin-idle --dry-run",
        Exit::Usage,
        "--yes",
    ),
    example(
        "A policy that cannot be read stops the run before anything is looked at",
        "d=$(mktemp -d) && printf '[workspaces.my-app]\\nkeep_after = \"soon\"\\n' > \"$d/jackin-tools-idle.toml\" && \
jackin-idle --config-dir \"$d\"",
        Exit::Unavailable,
        "keep_after",
    ),
];
