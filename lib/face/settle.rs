//! `jackin-restore C --exec` (and the picker) where jackin is not installed: the tools' own
//! attach, which settles the session when the operator leaves it, as jackin's exit does (issue
//! 65). jackin's `hardline` runs its finalizer around its attach; the capsule reconnect alone
//! runs none, and a clean exit left the row `active`, for the next reconcile to call a crash.
//!
//! The attach runs as a child. When it returns, the engine says how the session was left:
//! - still running 3 s later (the operator detached): nothing to settle, as jackin leaves a detach;
//! - exited 0 (the agent exited): `jackin-assess C | jackin-keep --stop | jackin-purge --stop`,
//!   the exit policy applied as jackin's exit hook applies it, and "Return to agent" resumes the
//!   session and attaches again;
//! - exited otherwise, or gone: left to reconcile, which records it as crashed with its exit
//!   code (jackin's finalizer settles only a clean exit either).
//!
//! The three tools run as processes of their own (the programs beside this one): each keeps its
//! own job, claim and records, and this tool reads only keep's decisions.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::base::exit::Exit;
use crate::base::tool::Tool;
use crate::engines::docker::{Engine, RunState};
use crate::face::cli::RestoreArgs;
use crate::face::driver::{Ctx, OutputFormat};
use crate::face::screens::{self, Tty};
use crate::protocol::envelope;
use crate::protocol::records::{Decision, Outcome};
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// What became of the session, said on stderr (not under `--quiet`): the operator has just left
/// it and looks at the terminal.
fn tell(ctx: &Ctx, message: std::fmt::Arguments) {
    if !ctx.quiet {
        ctx.say(message);
    }
}

/// How the operator left an attached session.
#[derive(Debug)]
pub enum Left {
    /// "Return to agent" in keep's dialog: resume it and attach again.
    Again,
    /// Settled (or left as jackin leaves it), with the code this run ends with.
    Settled(Exit),
}

/// Attaches to the session with `argv` (on `tty` when a screen chose it) and settles it when the
/// attach returns. jackin's own `jackin hardline C` replaces this process instead: its finalizer
/// settles the session.
pub fn attach(
    ctx: &Ctx,
    args: &RestoreArgs,
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    argv: &[String],
    tty: Option<&Tty>,
) -> Result<Left> {
    if argv.first().map(String::as_str) == Some("jackin") {
        return Err(screens::exec_attach(argv, tty));
    }
    let mut command = Command::new(&argv[0]);
    command.args(&argv[1..]);
    if let Some(tty) = tty {
        tty.hand_to(&mut command)?;
    }
    // The attach's own status is the agent's or the docker CLI's: the engine says how it ended.
    let attach = command
        .status()
        .map_err(|e| Exit::Unavailable.wrap(e))
        .with_context(|| format!("running {}", argv.join(" ")))?;
    match state_once_settled(engine, name)? {
        // An attach that failed (no terminal, a docker CLI error) left it running too: said, and
        // the run is partial (resumed, never attached).
        Some(state) if state.running && !attach.success() => {
            let code = attach.code().map_or("a signal".to_owned(), |c| format!("exit {c}"));
            ctx.say(format_args!("{name}: the attach ended with {code}; the session runs on"));
            Ok(Left::Settled(Exit::Partial))
        }
        Some(state) if state.running => {
            tell(ctx, format_args!("{name}: left running (detached); jackin-restore {name} --exec attaches again"));
            Ok(Left::Settled(Exit::Ok))
        }
        Some(state) if state.exit_code == Some(0) => settle(ctx, args, store, name),
        Some(state) => {
            let code = state.exit_code.map_or("unknown".to_owned(), |c| c.to_string());
            tell(ctx, format_args!("{name}: the agent ended with exit {code}; jackin-reconcile records it as crashed"));
            Ok(Left::Settled(Exit::Ok))
        }
        None => {
            tell(ctx, format_args!("{name}: its container is gone; jackin-reconcile records it"));
            Ok(Left::Settled(Exit::Ok))
        }
    }
}

/// How long a container may run on after the attach returned before the run calls it a detach:
/// the agent's exit ends the attach a moment before the container's main process ends.
const EXIT_GRACE: Duration = Duration::from_secs(3);

/// The role container's state once it stopped, or once [`EXIT_GRACE`] passed with it running.
fn state_once_settled(engine: &Engine, name: &InstanceName) -> Result<Option<RunState>> {
    let deadline = Instant::now() + EXIT_GRACE;
    loop {
        let state = engine.inspect(name.as_str())?.map(|details| details.state);
        if !state.as_ref().is_some_and(|s| s.running) || Instant::now() >= deadline {
            return Ok(state);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `jackin-assess C | jackin-keep --stop | jackin-purge --stop` over this run's home, config and
/// engine. Keep's decisions are read here before purge gets them: a "Return to agent" ends the
/// settling with nothing changed, and purge is not run.
fn settle(ctx: &Ctx, args: &RestoreArgs, store: &Store, name: &InstanceName) -> Result<Left> {
    let mut assess = tool(Tool::Assess, ctx, args, store)
        .arg(name.as_str())
        .arg("--format=json")
        .stdout(Stdio::piped())
        .spawn()
        .context("running jackin-assess")?;
    let assessed = assess.stdout.take().context("jackin-assess's output")?;
    let kept = tool(Tool::Keep, ctx, args, store)
        .args(["--format=json", "--stop"])
        .stdin(assessed)
        .stdout(Stdio::piped())
        .output()
        .context("running jackin-keep")?;
    let assess_status = assess.wait().context("waiting for jackin-assess")?;
    let decisions = envelope::read_all(&kept.stdout[..]).context("jackin-keep's decisions")?;
    let back = decisions
        .iter()
        .filter(|record| record.kind == "decision")
        .any(|record| record.parse::<Decision>().is_ok_and(|d| d.outcome == Outcome::Return));
    if back && assess_status.success() && kept.status.success() {
        tell(ctx, format_args!("{name}: back to the agent"));
        return Ok(Left::Again);
    }
    let format = match ctx.format {
        OutputFormat::Json => "--format=json",
        OutputFormat::Text => "--format=text",
    };
    let mut purge = tool(Tool::Purge, ctx, args, store)
        .args(["--stop", format])
        .stdin(Stdio::piped())
        .spawn()
        .context("running jackin-purge")?;
    let mut input = purge.stdin.take().context("jackin-purge's input")?;
    input.write_all(&kept.stdout).context("handing keep's decisions to jackin-purge")?;
    drop(input);
    let purged = purge.wait().context("waiting for jackin-purge")?;
    // The first tool that failed, with its own code, as the exit hook reports it.
    let first_failure = [assess_status, kept.status, purged].into_iter().find(|status| !status.success());
    Ok(Left::Settled(first_failure.map_or(Exit::Ok, |status| Exit::from_code(status.code().unwrap_or(130)))))
}

/// One of the tools, run over this run's home, config directory and engine: the program beside
/// this one (they are installed together), else the one on PATH.
fn tool(which: Tool, ctx: &Ctx, args: &RestoreArgs, store: &Store) -> Command {
    let beside = std::env::current_exe().ok().and_then(|me| Some(me.parent()?.join(which.name())));
    let program = beside.filter(|path| path.is_file()).unwrap_or_else(|| PathBuf::from(which.name()));
    let mut command = Command::new(program);
    command.arg("--home").arg(&store.roots.home).arg("--config-dir").arg(&store.roots.config_dir);
    if let Some(host) = &args.docker.docker_host {
        command.args(["--docker-host", host]);
    }
    if ctx.quiet {
        command.arg("--quiet");
    }
    command
}
