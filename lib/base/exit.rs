//! Exit codes of protocol.md, and errors that carry the one they should end the process with.

use std::fmt;

/// The process exit codes every tool shares (protocol.md, "Exit codes").
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Exit {
    Ok = 0,
    Findings = 1,
    Usage = 2,
    BadInput = 3,
    Unavailable = 4,
    Busy = 5,
    Partial = 6,
    Internal = 7,
    Interrupted = 130,
}

impl Exit {
    /// Every code, in order.
    pub const ALL: [Exit; 9] = [
        Exit::Ok,
        Exit::Findings,
        Exit::Usage,
        Exit::BadInput,
        Exit::Unavailable,
        Exit::Busy,
        Exit::Partial,
        Exit::Internal,
        Exit::Interrupted,
    ];

    pub fn code(self) -> i32 {
        self as i32
    }

    /// The code another run of the tools ended with (on another host); one the protocol does
    /// not have is `Internal`.
    pub fn from_code(code: i32) -> Exit {
        Exit::ALL.into_iter().find(|e| e.code() == code).unwrap_or(Exit::Internal)
    }

    /// What the code means, whichever tool ended with it: the EXIT STATUS of the help and the
    /// man pages, and the exit-code tables of docs/reference.md and docs/operator-guide.md
    /// (tests/docs checks that they say exactly this).
    pub fn meaning(self) -> &'static str {
        match self {
            Exit::Ok => "done (also: nothing to do; also when the reader of stdout went away)",
            Exit::Findings => "findings, only with --exit-code",
            Exit::Usage => {
                "usage: bad flags or arguments (a name that cannot be a session's, such as ../x), records \
                 expected on stdin but stdin is a terminal, or a file that chooses whom the tools contact or \
                 what they run (the hosts file, the Docker config, the --on-event program) that another user \
                 could have written; nothing was read"
            }
            Exit::BadInput => {
                "bad input: a line that is not JSON, a record without the envelope, a too-new schema_version, \
                 an index of another version (written by a newer jackin, never rewritten), a session jackin \
                 purged itself (its tombstone) named to assess, keep or restore, or a record keep or purge \
                 will not act on (made on another host, naming another session, or a discard of work at risk \
                 without this home's seal); nothing was done"
            }
            Exit::Unavailable => {
                "unavailable: the Docker engine, a git repository, a role's source or the jackin home cannot be \
                 reached, or a state file is corrupt; nothing was changed"
            }
            Exit::Busy => {
                "busy: a lock is held or the session is live (held by jackin, or by another tool at work on it, \
                 named in the message); nothing of it changed"
            }
            Exit::Partial => {
                "partial: the run finished, but some sessions failed or were refused, or a name is no session's \
                 (each named in an error record and on stderr)"
            }
            Exit::Internal => "internal error (a bug)",
            Exit::Interrupted => "interrupted (Ctrl-C)",
        }
    }

    /// What a script does on the code (the last column of docs/operator-guide.md's table).
    pub fn advice(self) -> &'static str {
        match self {
            Exit::Ok => "carry on",
            Exit::Findings => "act on the findings (work at risk; something changed)",
            Exit::Usage => "fix the command",
            Exit::BadInput => "fix the pipeline, or drop the name",
            Exit::Unavailable => "retry later",
            Exit::Busy => "retry later, or pass --stop for a session that still runs",
            Exit::Partial => "read the messages: a typo in a name lands here, and so does work at risk a purge refused",
            Exit::Internal => "report it",
            Exit::Interrupted => "run it again",
        }
    }

    /// An error that ends the run with this exit code.
    pub fn err(self, message: impl fmt::Display) -> anyhow::Error {
        anyhow::Error::new(Coded { exit: self, error: anyhow::anyhow!("{message}") })
    }

    /// Wraps an existing error so that it ends the run with this exit code; its text is unchanged.
    pub fn wrap(self, error: impl Into<anyhow::Error>) -> anyhow::Error {
        anyhow::Error::new(Coded { exit: self, error: error.into() })
    }

    /// The exit code an error should end the process with. The innermost explicit code wins over
    /// the kind of the underlying error, so a caller's classification is never overridden. An
    /// outside system's error carries its code from the engine that made it (engines/git: a
    /// repository that cannot be read is 4); only an I/O error is told here by its type.
    pub fn of(error: &anyhow::Error) -> Exit {
        for cause in error.chain() {
            if let Some(coded) = cause.downcast_ref::<Coded>() {
                return coded.exit;
            }
        }
        if is_broken_pipe(error) {
            return Exit::Ok;
        }
        for cause in error.chain() {
            if cause.downcast_ref::<std::io::Error>().is_some() {
                return Exit::Unavailable;
            }
        }
        Exit::Internal
    }
}

/// The reader of our stdout went away (`jackin-assess --all | head`): not an error.
pub(crate) fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// An error with the exit code it must produce. Displays exactly as the wrapped error so the
/// message an operator reads does not change with the classification.
#[derive(Debug)]
pub(crate) struct Coded {
    pub(crate) exit: Exit,
    pub(crate) error: anyhow::Error,
}

impl fmt::Display for Coded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:#}", self.error)
    }
}

impl std::error::Error for Coded {}

/// Whether `error`, or an error it wraps (through context and exit codes), is a `T`: an exit code
/// shows its error's text but not the error itself as a cause.
pub(crate) fn caused_by<T: std::error::Error + Send + Sync + 'static>(error: &anyhow::Error) -> bool {
    error
        .chain()
        .any(|cause| cause.is::<T>() || cause.downcast_ref::<Coded>().is_some_and(|c| caused_by::<T>(&c.error)))
}

/// `.or_exit(Exit::Unavailable)` on any fallible call.
pub(crate) trait OrExit<T> {
    fn or_exit(self, exit: Exit) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> OrExit<T> for Result<T, E> {
    fn or_exit(self, exit: Exit) -> anyhow::Result<T> {
        self.map_err(|e| exit.wrap(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn a_cause_is_found_inside_an_exit_code() {
        let io = std::io::Error::other("disk");
        let err = Err::<(), _>(Exit::Unavailable.wrap(io)).context("saving").unwrap_err();
        assert!(caused_by::<std::io::Error>(&err));
        assert!(!caused_by::<std::fmt::Error>(&err));
    }

    #[test]
    fn explicit_code_survives_added_context() {
        let err = Err::<(), _>(Exit::Busy.err("lock held")).context("updating the index").unwrap_err();
        assert_eq!(Exit::of(&err), Exit::Busy);
        assert_eq!(format!("{err:#}"), "updating the index: lock held");
    }

    #[test]
    fn every_code_has_a_meaning_in_order() {
        assert!(Exit::ALL.windows(2).all(|w| w[0] < w[1]));
        assert!(Exit::ALL.iter().all(|e| !e.meaning().is_empty()));
    }

    #[test]
    fn broken_pipe_is_success_and_io_is_unavailable() {
        let pipe = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::BrokenPipe));
        assert_eq!(Exit::of(&pipe), Exit::Ok);
        let missing = anyhow::Error::new(std::io::Error::from(std::io::ErrorKind::NotFound));
        assert_eq!(Exit::of(&missing), Exit::Unavailable);
        assert_eq!(Exit::of(&anyhow::anyhow!("logic")), Exit::Internal);
    }
}
