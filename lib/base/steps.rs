//! How long work says how far it is, without knowing who shows it: the face draws a bar
//! (face/progress.rs), a quiet run shows nothing. Work whose size is only known once it has
//! started (an import learns its mounts from the archive) says so with `planned`.

pub trait Steps {
    /// The work is `total` steps in all.
    fn planned(&self, total: usize);
    /// One more step is done; `what` names it (it may be the session's text: shown inert).
    fn done(&self, what: &str);
}
