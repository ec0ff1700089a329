//! The terminal screens of both tools: jackin-keep's exit dialog (`exit.rs`) and jackin-restore's
//! resume picker (`picker.rs`). They run on the
//! controlling terminal (`/dev/tty`), never stdin, which is the record pipe; crossterm reads the
//! keys there (its `use-dev-tty` feature) and ratatui draws. A terminal that cannot do more
//! (`TERM=dumb`, no `TERM`, no size) gets plain numbered text, read through the same key reader.
//!
//! While a screen is up the terminal is in raw mode, so Ctrl-C arrives as a key, and SIGINT,
//! SIGHUP and SIGTERM only raise a flag the key reader checks: a Ctrl-C or the terminal closing
//! ends the run with exit 130 and nothing changed. Outside the screens those signals keep their
//! default action.

pub mod exit;
pub mod picker;

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use anyhow::{Context, Result};
use crossterm::event::{self, Event, KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use crossterm::terminal::{self, EnterAlternateScreen, LeaveAlternateScreen};
use ratatui::backend::CrosstermBackend;
use ratatui::style::Style;
use ratatui::Terminal;

use crate::base::exit::Exit;

/// The smallest terminal the screens are drawn on; below it, numbered text.
const MIN_SIZE: (u16, u16) = (40, 12);

/// The controlling terminal.
pub struct Tty {
    file: File,
}

impl Tty {
    /// `None` when the process has no controlling terminal (a cron job, a CI run, a pipe from a
    /// daemon).
    pub fn open() -> Option<Tty> {
        OpenOptions::new().read(true).write(true).open("/dev/tty").ok().map(|file| Tty { file })
    }

    /// Screens, or numbered text: `TERM` unset, empty or `dumb`, or a terminal too small or of
    /// no known size.
    pub fn can_draw(&self) -> bool {
        let term = std::env::var("TERM").unwrap_or_default();
        if term.is_empty() || term == "dumb" {
            return false;
        }
        matches!(terminal::size(), Ok((w, h)) if w >= MIN_SIZE.0 && h >= MIN_SIZE.1)
    }

    /// Runs `command` with the terminal as its stdin, stdout and stderr: a session chosen on a
    /// screen is attached on that screen's terminal, whatever stdout is (a pipe, a file).
    pub fn hand_to(&self, command: &mut Command) -> Result<()> {
        let end = || self.file.try_clone().context("sharing the terminal with the attach command");
        command.stdin(end()?).stdout(end()?).stderr(end()?);
        Ok(())
    }
}

/// Replaces this process with the attach command `argv` (on `tty` when a screen chose the
/// session); returns only the error of a command that could not be run.
pub fn exec_attach(argv: &[String], tty: Option<&Tty>) -> anyhow::Error {
    use std::os::unix::process::CommandExt;
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]);
    if let Err(e) = tty.map_or(Ok(()), |tty| tty.hand_to(&mut command)) {
        return e;
    }
    anyhow::Error::new(command.exec()).context(format!("running {}", argv.join(" ")))
}

/// `NO_COLOR` (set and not empty) turns every style off, bold and reverse included: the screens
/// must read the same without them, so they mark the selection with `>` as well.
pub(crate) fn styled(style: Style) -> Style {
    match std::env::var_os("NO_COLOR") {
        Some(v) if !v.is_empty() => Style::default(),
        _ => style,
    }
}

pub(crate) fn interrupted() -> anyhow::Error {
    Exit::Interrupted.err("interrupted: nothing was changed")
}

/// The signal flags, installed once per process. `outside` true: the default action (the process
/// ends as it always did); false, inside a screen: only `hit` is raised.
struct Signals {
    outside: Arc<AtomicBool>,
    hit: Arc<AtomicBool>,
}

fn signals() -> Result<&'static Signals> {
    static SIGNALS: OnceLock<Signals> = OnceLock::new();
    if let Some(signals) = SIGNALS.get() {
        return Ok(signals);
    }
    let signals = Signals { outside: Arc::new(AtomicBool::new(true)), hit: Arc::new(AtomicBool::new(false)) };
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    for signal in [SIGINT, SIGHUP, SIGTERM] {
        signal_hook::flag::register_conditional_default(signal, signals.outside.clone())
            .context("installing the terminal's signal handlers")?;
        signal_hook::flag::register(signal, signals.hit.clone())
            .context("installing the terminal's signal handlers")?;
    }
    Ok(SIGNALS.get_or_init(|| signals))
}

/// What a screen reads: a key, or the terminal changing size (redraw).
pub(crate) enum Input {
    Key(KeyEvent),
    Resized,
}

/// The terminal in raw mode with the signals held, for as long as a screen or the text dialog
/// runs; put back on drop, whatever happened.
pub(crate) struct Session<'t> {
    tty: &'t Tty,
    signals: &'static Signals,
    drawing: Option<Terminal<CrosstermBackend<File>>>,
}

impl<'t> Session<'t> {
    /// `draw`: the alternate screen for ratatui; else raw mode for the numbered text.
    pub(crate) fn enter(tty: &'t Tty, draw: bool) -> Result<Session<'t>> {
        let signals = signals()?;
        signals.hit.store(false, Ordering::SeqCst);
        signals.outside.store(false, Ordering::SeqCst);
        let mut session = Session { tty, signals, drawing: None };
        terminal::enable_raw_mode().context("putting the terminal in raw mode")?;
        // Keys typed at the agent before it exited must not answer a question not yet shown.
        while event::poll(Duration::ZERO).unwrap_or(false) {
            let _ = event::read();
        }
        if draw {
            session.start_drawing()?;
        }
        Ok(session)
    }

    fn start_drawing(&mut self) -> Result<()> {
        let mut out = self.tty.file.try_clone().context("opening the terminal")?;
        crossterm::execute!(out, EnterAlternateScreen, crossterm::cursor::Hide)?;
        let mut drawing = Terminal::new(CrosstermBackend::new(out)).context("drawing on the terminal")?;
        drawing.clear()?;
        self.drawing = Some(drawing);
        Ok(())
    }

    fn stop_drawing(&mut self) {
        if let Some(mut drawing) = self.drawing.take() {
            let _ = crossterm::execute!(drawing.backend_mut(), crossterm::cursor::Show, LeaveAlternateScreen);
        }
    }

    pub(crate) fn draw(&mut self, render: impl FnOnce(&mut ratatui::Frame)) -> Result<()> {
        let drawing = self.drawing.as_mut().expect("draw is called on a drawing session");
        drawing.draw(render).context("drawing on the terminal")?;
        Ok(())
    }

    /// Text for the numbered dialog: raw mode does not turn `\n` into a new line.
    pub(crate) fn say(&mut self, text: &str) -> Result<()> {
        let mut out = &self.tty.file;
        out.write_all(text.replace('\n', "\r\n").as_bytes())?;
        out.flush()?;
        Ok(())
    }

    /// The next key or resize. Ctrl-C, Ctrl-D, a signal, or the terminal going away: interrupted.
    pub(crate) fn input(&mut self) -> Result<Input> {
        loop {
            if self.signals.hit.load(Ordering::SeqCst) {
                return Err(interrupted());
            }
            if !event::poll(Duration::from_millis(200)).map_err(|_| interrupted())? {
                continue;
            }
            match event::read().map_err(|_| interrupted())? {
                Event::Key(key) if key.kind == KeyEventKind::Release => {}
                Event::Key(key) if key.modifiers.contains(KeyModifiers::CONTROL) => match key.code {
                    KeyCode::Char('c') | KeyCode::Char('d') => return Err(interrupted()),
                    // In raw mode a typed newline is Ctrl-J; Enter is Ctrl-M.
                    KeyCode::Char('j') | KeyCode::Char('m') => {
                        return Ok(Input::Key(KeyEvent::new(KeyCode::Enter, KeyModifiers::NONE)))
                    }
                    _ => {}
                },
                Event::Key(key) => return Ok(Input::Key(key)),
                Event::Resize(..) => {
                    if let Some(drawing) = self.drawing.as_mut() {
                        drawing.autoresize()?;
                    }
                    return Ok(Input::Resized);
                }
                _ => {}
            }
        }
    }

    /// One line typed on the numbered dialog, echoed, without its newline.
    pub(crate) fn line(&mut self) -> Result<String> {
        let mut line = String::new();
        loop {
            let Input::Key(key) = self.input()? else { continue };
            match key.code {
                KeyCode::Enter => {
                    self.say("\n")?;
                    return Ok(line.trim().to_owned());
                }
                KeyCode::Backspace if line.pop().is_some() => self.say("\x08 \x08")?,
                KeyCode::Char(c) => {
                    line.push(c);
                    self.say(&c.to_string())?;
                }
                _ => {}
            }
        }
    }

    /// `text` through the operator's pager, as git chooses it: `$JACKIN_PAGER`, `$PAGER`, else
    /// `less -R`, run by `sh` on the terminal (stdout may be the record pipe). The terminal is
    /// the pager's while it runs; a Ctrl-C there is the pager's, not an interruption.
    pub(crate) fn page(&mut self, text: &str) -> Result<()> {
        let pager = ["JACKIN_PAGER", "PAGER"]
            .iter()
            .filter_map(|name| std::env::var(name).ok())
            .find(|value| !value.trim().is_empty())
            .unwrap_or_else(|| "less -R".to_owned());
        let drawing = self.drawing.is_some();
        self.stop_drawing();
        let _ = terminal::disable_raw_mode();
        // The files' own bytes, inert: `less -R` would pass their escapes to the terminal.
        let shown = show_in_pager(&pager, &crate::protocol::inert::inert_text(text), &self.tty.file);
        self.signals.hit.store(false, Ordering::SeqCst);
        terminal::enable_raw_mode().context("putting the terminal in raw mode")?;
        if drawing {
            self.start_drawing()?;
        }
        shown
    }
}

fn show_in_pager(pager: &str, text: &str, tty: &File) -> Result<()> {
    // Started from `/`: a pager that reads git's configuration (delta, `git -p`'s kin) reads the
    // operator's, never that of a repository the agent can write around the working directory.
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(pager)
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(tty.try_clone()?)
        .stderr(tty.try_clone()?)
        .spawn()
        .with_context(|| format!("starting the pager {pager:?}"))?;
    // A pager that quits before reading everything closes the pipe: not an error.
    let _ = child.stdin.take().expect("piped").write_all(text.as_bytes());
    child.wait().with_context(|| format!("waiting for the pager {pager:?}"))?;
    Ok(())
}

impl Drop for Session<'_> {
    fn drop(&mut self) {
        self.stop_drawing();
        let _ = terminal::disable_raw_mode();
        self.signals.outside.store(true, Ordering::SeqCst);
    }
}
