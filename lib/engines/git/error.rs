//! The errors of libgit2 as the engine hands them out. The tools never see libgit2's own type:
//! they read an error's words (`message`), or pass it on as an `anyhow::Error`, which then ends a
//! run with exit 4 (a repository that cannot be read, protocol.md's "Exit codes"). That
//! classification lives here, with the only code that knows libgit2's error type, and not in
//! base/exit.rs, which knows no outside system.

use std::fmt;

use crate::base::exit::Exit;

/// An error of libgit2. Displays exactly as libgit2's own error (its message, class and code), so
/// no text a tool prints changes with the wrapping.
///
/// Not a `std::error::Error` on purpose: anyhow's blanket conversion would then take it as it is,
/// without its exit code. The only way into an `anyhow::Error` is the `From` below.
pub(crate) struct GitError(git2::Error);

impl GitError {
    /// libgit2's message alone, without its class and code: what a verdict's `error` says.
    pub(crate) fn message(&self) -> &str {
        self.0.message()
    }

    /// The error as an `anyhow::Error` (exit 4) with `context` in front, as anyhow's own
    /// `with_context` would put it.
    pub(crate) fn context(self, context: impl fmt::Display + Send + Sync + 'static) -> anyhow::Error {
        anyhow::Error::from(self).context(context)
    }
}

impl From<git2::Error> for GitError {
    fn from(error: git2::Error) -> Self {
        GitError(error)
    }
}

impl From<GitError> for anyhow::Error {
    fn from(error: GitError) -> Self {
        unavailable(error.0)
    }
}

impl fmt::Display for GitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

impl fmt::Debug for GitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.0, f)
    }
}

/// A libgit2 error as an `anyhow::Error` that ends a run with exit 4, its text unchanged.
pub(super) fn unavailable(error: git2::Error) -> anyhow::Error {
    Exit::Unavailable.wrap(error)
}

/// An `anyhow::Error` made inside the engine, where libgit2's errors met `?` as they are: one
/// with a libgit2 error among its causes ends a run with exit 4, unless it already carries a code
/// (or is a broken pipe, or an I/O error, which base/exit.rs classifies itself). Its text is
/// unchanged.
pub(super) fn classified(error: anyhow::Error) -> anyhow::Error {
    let from_libgit2 = error.chain().any(|cause| cause.is::<git2::Error>());
    if from_libgit2 && Exit::of(&error) == Exit::Internal {
        Exit::Unavailable.wrap(error)
    } else {
        error
    }
}

/// Why a file git opens by name is refused when it is a FIFO, a socket or a device: the one
/// wording of every such refusal (repo.rs, `config_files`, `walk_guard`).
pub(super) const WOULD_WAIT: &str =
    "is not a regular file (a FIFO, a socket or a device): git would wait on it; not read";

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    fn not_found() -> git2::Error {
        git2::Error::new(git2::ErrorCode::NotFound, git2::ErrorClass::Repository, "could not find repository")
    }

    #[test]
    fn a_libgit2_error_is_unavailable_and_reads_as_libgit2_words_it() {
        let words = not_found().to_string();
        let error = GitError::from(not_found()).context("opening /x");
        assert_eq!(Exit::of(&error), Exit::Unavailable);
        assert_eq!(format!("{error:#}"), format!("opening /x: {words}"));
        assert_eq!(GitError::from(not_found()).to_string(), words);
        assert_eq!(GitError::from(not_found()).message(), "could not find repository");
    }

    #[test]
    fn an_error_made_with_libgit2_inside_is_classified_and_a_code_already_there_wins() {
        let raw = Err::<(), _>(not_found()).context("fetching").unwrap_err();
        let text = format!("{raw:#}");
        let raw = classified(raw);
        assert_eq!(Exit::of(&raw), Exit::Unavailable);
        assert_eq!(format!("{raw:#}"), text);
        let coded = classified(Exit::Busy.wrap(anyhow::Error::new(not_found())));
        assert_eq!(Exit::of(&coded), Exit::Busy);
        assert_eq!(Exit::of(&classified(anyhow::anyhow!("logic"))), Exit::Internal);
    }
}
