//! Which flags the operator typed, and the refusal of one the run would not read (issue 66): a
//! flag is either read by the mode it is given in or a usage error (exit 2, nothing read or
//! written) that names where it counts. clap's own `requires` cannot say it: clap skips a
//! `requires` whose target conflicts with a flag present (`--list --since 1h` passed).

use std::collections::BTreeSet;

use clap::parser::ValueSource;
use clap::ArgMatches;

/// The flags every mode of every tool reads (where the state is, how to say things).
const EVERY_MODE: [&str; 8] =
    ["home", "config_dir", "format", "quiet", "verbose", "host", "all_hosts", "hosts_timeout"];

/// The arguments given on the command line, by clap id; a value from the environment or a
/// default is not one the operator typed.
#[derive(Debug, Clone, Default)]
pub struct Given(BTreeSet<String>);

impl Given {
    pub(crate) fn of(matches: &ArgMatches) -> Given {
        Given(
            matches
                .ids()
                .filter(|id| matches.value_source(id.as_str()) == Some(ValueSource::CommandLine))
                .map(|id| id.as_str().to_owned())
                .collect(),
        )
    }

    pub(crate) fn has(&self, id: &str) -> bool {
        self.0.contains(id)
    }

    /// Refuses the first flag given that `mode` (e.g. "beside --records") does not read;
    /// `counts_with` names, for each flag, the form in which it counts.
    pub(crate) fn only(
        &self,
        command: clap::Command,
        mode: &str,
        reads: &[&str],
        counts_with: fn(&str) -> &'static str,
    ) -> Result<(), clap::Error> {
        // An id of no argument is a group clap names after a flattened struct (`CommonArgs`).
        let is_arg = |id: &str| command.get_arguments().any(|arg| arg.get_id().as_str() == id);
        let unread =
            self.0.iter().map(String::as_str).find(|id| !reads.contains(id) && !EVERY_MODE.contains(id) && is_arg(id));
        match unread {
            None => Ok(()),
            Some(id) => {
                let spelled = spelled(&command, id);
                let why = format!("{spelled} does nothing {mode}: it counts {}", counts_with(id));
                Err(command.clone().error(clap::error::ErrorKind::ArgumentConflict, why))
            }
        }
    }
}

/// How the operator writes the argument `id`: `--since`, or `INSTANCE` for a positional.
pub(crate) fn spelled(command: &clap::Command, id: &str) -> String {
    let arg = command.get_arguments().find(|arg| arg.get_id().as_str() == id);
    match arg.and_then(|arg| arg.get_long()) {
        Some(long) => format!("--{long}"),
        None => arg
            .and_then(|arg| arg.get_value_names())
            .and_then(|names| names.first())
            .map_or_else(|| id.to_owned(), |name| name.to_string()),
    }
}
