//! Progress on long work, for people: a bar on stderr, drawn only when stderr is a terminal
//! and the work has lasted a moment (half a second), so short runs and pipes see nothing. Each
//! item's name is shown inert: a mount's name is the session's (protocol/inert.rs).

use std::time::{Duration, Instant};

/// In a debug build, how many milliseconds the work lasts before the bar is drawn, instead of
/// 500: tests/tool/moves.rs sets 0 to see the bar of a short run on a terminal, and that a pipe still
/// gets nothing. Release builds compile it away.
pub const AFTER_VARIABLE: &str = "JACKIN_PROGRESS_AFTER_MS";

/// How long the work lasts before the bar is drawn.
fn delay() -> Duration {
    #[cfg(debug_assertions)]
    if let Some(ms) = std::env::var(AFTER_VARIABLE).ok().and_then(|v| v.parse().ok()) {
        return Duration::from_millis(ms);
    }
    Duration::from_millis(500)
}

/// A progress bar over `total` items of work, each named as it is done.
pub struct Progress {
    bar: indicatif::ProgressBar,
    started: Instant,
    delay: Duration,
    shown: std::sync::atomic::AtomicBool,
    enabled: bool,
}

impl Progress {
    pub fn new(doing: &str, total: usize, quiet: bool) -> Self {
        let bar = indicatif::ProgressBar::with_draw_target(Some(total as u64), indicatif::ProgressDrawTarget::hidden());
        if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
            "{{spinner}} {doing} {{pos}}/{{len}} [{{bar:30}}] {{msg}}"
        )) {
            bar.set_style(style.progress_chars("=> "));
        }
        let enabled = !quiet && total > 1 && std::io::IsTerminal::is_terminal(&std::io::stderr());
        Progress { bar, started: Instant::now(), delay: delay(), shown: false.into(), enabled }
    }

    pub fn tick(&self, what: &str) {
        use std::sync::atomic::Ordering;
        if self.enabled && !self.shown.load(Ordering::Relaxed) && self.started.elapsed() >= self.delay {
            self.shown.store(true, Ordering::Relaxed);
            self.bar.set_draw_target(indicatif::ProgressDrawTarget::stderr());
        }
        // The name may come from a record on stdin: shown inert (protocol/inert.rs).
        self.bar.set_message(crate::protocol::inert::inert_name(what).into_owned());
        self.bar.inc(1);
    }

    /// The work turned out to be `total` items (known once it started).
    pub fn set_total(&self, total: usize) {
        self.bar.set_length(total as u64);
    }

    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl crate::base::steps::Steps for Progress {
    fn planned(&self, total: usize) {
        self.set_total(total);
    }

    fn done(&self, what: &str) {
        self.tick(what);
    }
}
