//! The one driver every bin calls: parse, run, print the error once, exit with protocol.md's code.

use std::cell::RefCell;
use std::io::{IsTerminal, Write};
use std::panic::{self, AssertUnwindSafe};
use std::rc::Rc;

use anyhow::Result;

use crate::base::exit::{is_broken_pipe, Exit};
use crate::face::cli::{CommonArgs, Format, Given, ToolArgs};
use crate::protocol::codes::ErrorCode;
use crate::protocol::envelope::{self, InputRecord, Record};
use crate::protocol::inert::inert_text;
use crate::protocol::records::ErrorRecord;
use crate::services::provenance::Refusal;
use crate::state::select::{Catalog, Unresolvable, Unresolved};
use crate::state::store::{Roots, Store};

/// Parses the tool's arguments, runs it and exits. `run` returns the exit code for a finished
/// run; per-instance failures reported through [`Ctx::fail`] turn it into 6 (partial).
pub fn main<A: ToolArgs>(tool: &'static str, run: fn(A, &mut Ctx) -> Result<Exit>) -> ! {
    let argv = match crate::base::argv::decoded_args(std::env::args_os().collect()) {
        Ok(argv) => argv,
        Err(why) => {
            eprintln!("{tool}: error: {why}");
            std::process::exit(Exit::Usage.code())
        }
    };
    let parsed = A::command().try_get_matches_from(argv).and_then(|matches| {
        let mut args = A::from_arg_matches(&matches).and_then(A::resolved)?;
        args.refuse_unread(&Given::of(&matches))?;
        Ok(args)
    });
    let args = match parsed {
        Ok(args) => args,
        Err(e) => {
            // An argument our own value parser refused reads as every other error of the tools.
            // Shown inert: an argument may carry a name the agent chose (protocol/inert.rs).
            match std::error::Error::source(&e).and_then(|why| why.downcast_ref::<Unresolved>()) {
                Some(why) => eprintln!("{tool}: error: {}", inert_text(&why.to_string())),
                None if e.use_stderr() => eprint!("{}", inert_text(&e.render().to_string())),
                // --help and --version: our own words, in clap's colours.
                None => drop(e.print()),
            }
            std::process::exit(if e.use_stderr() { Exit::Usage.code() } else { 0 })
        }
    };
    let mut ctx = Ctx::new(tool, args.common());
    ctx.dry_run = args.dry_run();
    let outcome = panic::catch_unwind(AssertUnwindSafe(|| run_here_and_there(tool, args, &mut ctx, run)));
    // `-v`: what the run cost, on every tool alike (a view's counts prove it linear, issue 69).
    ctx.info(format_args!(
        "{} engine API calls, {}",
        crate::engines::docker::api_calls_in_process(),
        crate::engines::git::work_done()
    ));
    let exit = match outcome {
        Ok(Ok(exit)) => ctx.final_exit(exit),
        Ok(Err(e)) if is_broken_pipe(&e) => Exit::Ok,
        Ok(Err(e)) => {
            ctx.say(format_args!("error: {e:#}"));
            Exit::of(&e)
        }
        // The panic hook has printed the message; a panic is a bug by definition.
        Err(_) => Exit::Internal,
    };
    let _ = ctx.out.flush();
    std::process::exit(exit.code())
}

/// The run; with the hidden `--host` or `--all-hosts` of a tool, `jackin-hosts` runs it instead
/// (face/moved.rs).
fn run_here_and_there<A: ToolArgs>(
    tool: &'static str,
    args: A,
    ctx: &mut Ctx,
    run: fn(A, &mut Ctx) -> Result<Exit>,
) -> Result<Exit> {
    let common = args.common();
    if common.host.is_empty() && !common.all_hosts {
        return run(args, ctx);
    }
    crate::face::moved::hosts_instead(tool)
}

/// What a tool's run can use: its output, its diagnostics, its roots. Records and text go to
/// `out` and diagnostics to `err`, stdout and stderr in a process; a test may hand in its own.
pub struct Ctx {
    pub(crate) tool: &'static str,
    pub format: OutputFormat,
    pub quiet: bool,
    pub verbose: u8,
    /// A dry run: every record says so, `error` records included.
    pub(crate) dry_run: bool,
    common: CommonArgs,
    failures: usize,
    /// Arguments that named jackin's tombstones.
    tombstones: usize,
    out: Box<dyn Write>,
    err: RefCell<Box<dyn Write>>,
}

/// The format after `auto` was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    Json,
    Text,
}

impl Ctx {
    /// A run of a process: records on stdout, diagnostics on stderr.
    pub(crate) fn new(tool: &'static str, common: &CommonArgs) -> Self {
        let format = match common.format {
            Format::Json => OutputFormat::Json,
            Format::Text => OutputFormat::Text,
            Format::Auto if std::io::stdout().is_terminal() => OutputFormat::Text,
            Format::Auto => OutputFormat::Json,
        };
        Self::with_output(tool, common, format, Box::new(std::io::stdout()), Box::new(std::io::stderr()))
    }

    /// A run whose output and diagnostics go to the given writers, in the given format.
    pub(crate) fn with_output(
        tool: &'static str,
        common: &CommonArgs,
        format: OutputFormat,
        out: Box<dyn Write>,
        err: Box<dyn Write>,
    ) -> Self {
        Ctx {
            tool,
            format,
            quiet: common.quiet,
            verbose: common.verbose,
            dry_run: false,
            common: common.clone(),
            failures: 0,
            tombstones: 0,
            out,
            err: RefCell::new(err),
        }
    }

    /// A run in this process that keeps what it writes, for tests of a tool's `run`.
    pub fn capturing(tool: &'static str, common: &CommonArgs, format: OutputFormat) -> (Self, Captured) {
        let captured = Captured::default();
        let ctx =
            Self::with_output(tool, common, format, Box::new(captured.out.clone()), Box::new(captured.err.clone()));
        (ctx, captured)
    }

    pub(crate) fn roots(&self) -> Result<Roots> {
        Roots::resolve(self.common.home.clone(), self.common.config_dir.clone())
    }

    /// The jackin home, which must exist.
    /// The jackin home; one whose index a newer jackin wrote is refused here, so that no tool
    /// acts on a home it does not understand.
    pub fn store(&self) -> Result<Store> {
        let store = Store::open(self.roots()?)?;
        store.refuse_newer_index()?;
        Ok(store)
    }

    /// Every instance the host knows; index rows whose name could never be a path are skipped,
    /// and said so once.
    pub fn catalog(&self, store: &Store) -> Result<Catalog> {
        let catalog = Catalog::load(store)?;
        for bad in &catalog.invalid_rows {
            self.warn(format_args!("the index has a row with an invalid name {bad:?}; skipped"));
        }
        Ok(catalog)
    }

    pub fn emit<R: Record>(&mut self, record: &R) -> Result<()> {
        let line = match self.format {
            OutputFormat::Json => envelope::to_line(record)?,
            OutputFormat::Text => record.text(),
        };
        self.line(&line)
    }

    /// One line of output: a record already rendered, or a closing total for people. Text for
    /// people is written inert (protocol/inert.rs); a JSON line as it is.
    pub fn line(&mut self, line: &str) -> Result<()> {
        match self.format {
            OutputFormat::Text => writeln!(self.out, "{}", inert_text(line))?,
            OutputFormat::Json => writeln!(self.out, "{line}")?,
        }
        self.out.flush()?;
        Ok(())
    }

    /// A record this tool does not handle goes on exactly as it came; in the text format, a
    /// record of a type the tools know is shown in its text form (the operator at the end of a
    /// pipe reads keep's decision as keep would have printed it), any other as its JSON line.
    pub fn pass_through(&mut self, record: &InputRecord) -> Result<()> {
        let text = match self.format {
            OutputFormat::Text => crate::protocol::text_of(record),
            OutputFormat::Json => None,
        };
        let line = text.unwrap_or_else(|| record.line.clone());
        self.line(&line)
    }

    /// One instance failed: say so on stderr and as an `error` record, and carry on; the run
    /// will exit 6.
    pub fn fail(&mut self, container_base: Option<&str>, code: ErrorCode, error: &anyhow::Error) -> Result<()> {
        self.failures += 1;
        self.report(container_base, code, error)
    }

    /// An instance that failed with its own exit code (`exit`): an `error` record, and the run
    /// ends with `exit` rather than 6 (e.g. 4 when what it needed could not be reached before it
    /// changed anything). Returns `exit`.
    pub fn fail_as(
        &mut self,
        exit: Exit,
        container_base: Option<&str>,
        code: ErrorCode,
        error: &anyhow::Error,
    ) -> Result<Exit> {
        if exit == Exit::Partial {
            self.failures += 1;
        }
        self.report(container_base, code, error)?;
        Ok(exit)
    }

    /// An argument or record that names no instance: an `error` record with the resolver's
    /// reason as its code (`bad_name`, `unknown_instance`, `ambiguous`); the run will exit 6. A
    /// name of jackin's tombstone (`tombstone`) is refused as input: exit 3 unless worse happened.
    pub fn unresolved(&mut self, arg: &str, why: Unresolved) -> Result<()> {
        if why.code == Unresolvable::Tombstone {
            self.tombstones += 1;
            return self.report(Some(arg), why.code.into(), &why.into());
        }
        self.fail(Some(arg), why.code.into(), &why.into())
    }

    /// A session left alone because it is live or locked: said like a failure, but it makes the
    /// run exit 5 (busy, retry later) instead of 6, which the caller decides.
    pub fn refuse_busy(&mut self, container_base: &str, code: ErrorCode, error: &anyhow::Error) -> Result<()> {
        self.report(Some(container_base), code, error)
    }

    /// Input records refused as claims this host does not observe (services/provenance.rs):
    /// each an `error` record; the run ends with exit 3 before it changed anything.
    pub fn refuse_input(&mut self, refusals: Vec<Refusal>) -> Result<Exit> {
        for refusal in refusals {
            self.report(refusal.container_base.as_deref(), refusal.code, &refusal.error)?;
        }
        Ok(Exit::BadInput)
    }

    fn report(&mut self, container_base: Option<&str>, code: ErrorCode, error: &anyhow::Error) -> Result<()> {
        match container_base {
            Some(c) => self.say(format_args!("error: {c}: {error:#}")),
            None => self.say(format_args!("error: {error:#}")),
        }
        self.emit(&self.error_record(container_base, code, format!("{error:#}")))
    }

    /// The `error` record this run writes about `container_base` (or the run, without one).
    pub(crate) fn error_record(&self, container_base: Option<&str>, code: ErrorCode, message: String) -> ErrorRecord {
        ErrorRecord {
            tool: self.tool.to_owned(),
            container_base: container_base.map(str::to_owned),
            code,
            message,
            dry_run: self.dry_run,
        }
    }

    /// A line on the diagnostics stream, after the tool's name; a failing stderr is ignored,
    /// as `eprintln!` would not.
    pub fn say(&self, message: impl std::fmt::Display) {
        let message = message.to_string();
        let _ = writeln!(self.err.borrow_mut(), "{}: {}", self.tool, inert_text(&message));
    }

    pub fn warn(&self, message: impl std::fmt::Display) {
        if !self.quiet {
            self.say(format_args!("warning: {message}"));
        }
    }

    pub fn info(&self, message: impl std::fmt::Display) {
        if self.verbose > 0 {
            self.say(message);
        }
    }

    /// Every record on stdin, checked before the caller acts on any. A terminal on stdin means
    /// the operator forgot the pipe: usage, with a hint.
    pub fn read_stdin_records(&self, hint: &str) -> Result<Vec<InputRecord>> {
        let stdin = std::io::stdin();
        if stdin.is_terminal() {
            return Err(
                Exit::Usage.err(format_args!("records expected on stdin, but stdin is a terminal\n  hint: {hint}"))
            );
        }
        envelope::read_all(stdin.lock()).map_err(|e| {
            if Exit::of(&e) == Exit::BadInput {
                e
            } else {
                Exit::BadInput.wrap(e)
            }
        })
    }

    /// The exit code of a finished run: 6 when instances failed and nothing worse happened.
    pub fn final_exit(&self, exit: Exit) -> Exit {
        if self.failures > 0 && exit < Exit::Partial {
            Exit::Partial
        } else if self.tombstones > 0 && exit < Exit::BadInput {
            Exit::BadInput
        } else {
            exit
        }
    }
}

/// What a capturing [`Ctx`] wrote: its output and its diagnostics.
#[derive(Debug, Clone, Default)]
pub struct Captured {
    out: SharedBuffer,
    err: SharedBuffer,
}

impl Captured {
    pub fn out(&self) -> String {
        String::from_utf8_lossy(&self.out.0.borrow()).into_owned()
    }

    pub fn err(&self) -> String {
        String::from_utf8_lossy(&self.err.0.borrow()).into_owned()
    }
}

#[derive(Debug, Clone, Default)]
struct SharedBuffer(Rc<RefCell<Vec<u8>>>);

impl Write for SharedBuffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.borrow_mut().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
