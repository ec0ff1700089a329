//! jackin-restore: list resumable sessions; resume one by the cheapest faithful tier.

use std::time::Duration;

use anyhow::Result;
use jackin::base::exit::Exit;
use jackin::base::tool::Tool;
use jackin::engines::docker::Engine;
use jackin::face::cli::RestoreArgs;
use jackin::face::driver::{self, Ctx};
use jackin::face::restoring::{self, reconcile_first};
use jackin::face::screens::{picker, Tty};
use jackin::face::settle::{self, Left};
use jackin::protocol::codes::ErrorCode;
use jackin::protocol::envelope::Record;
use jackin::state::select::Catalog;
use jackin::state::store::Store;
use jackin::tools::restore::{self, Resume, ResumeOptions, RoleSource, Waits};

fn main() {
    // https:// for tier 3's role source fetch, through libcurl (credentials: the URL, ~/.netrc, then
    // git's credential helpers after a 401). Only this tool links curl (docs/maintainers/performance.md).
    let mut http = curl::easy::Easy::new();
    let _ = http.netrc(curl::easy::NetRc::Optional);
    // SAFETY: registered once, before any libgit2 call of this process.
    unsafe { git2_curl::register(http) }
    driver::main::<RestoreArgs>(Tool::Restore.name(), run)
}

fn run(args: RestoreArgs, ctx: &mut Ctx) -> Result<Exit> {
    let store = ctx.store()?;
    // The quarantines need no engine: a discarded session's containers are gone.
    if args.quarantined {
        return emit_all(ctx, &restore::quarantined(&store)?);
    }
    if args.records || args.record.is_some() {
        return emit_all(ctx, &restore::records(&store, args.record.as_deref())?);
    }
    if args.import.is_some() {
        return jackin::face::moved::IMPORT.run_instead(Tool::Restore.name());
    }
    if let Some(which) = &args.recover {
        return emit_all(ctx, &restore::recover(&store, which, args.into.as_deref(), args.plan || args.dry_run)?);
    }
    jackin::engines::git::set_fetch_timeout(Duration::from_secs(args.fetch_timeout));
    // The picker's terminal is decided (a usage error raised) before the engine is reached.
    let tty = if args.instance.is_none() && !args.interrupted { picker_tty(&args)? } else { None };
    let engine = Engine::connect(&args.docker.endpoint()?)?;
    let catalog = ctx.catalog(&store)?;
    if args.interrupted {
        return restoring::interrupted(&args, ctx, &engine, &store, &catalog);
    }
    match &args.instance {
        None => list(&args, ctx, &engine, &store, &catalog, tty),
        Some(arg) => resume(&args, arg, ctx, &engine, &store, &catalog, None),
    }
}

/// The terminal the picker draws on, when one can and no list was asked for. A flag of the
/// picked session's resume without one would do nothing: refused before anything is read.
fn picker_tty(args: &RestoreArgs) -> Result<Option<Tty>> {
    let tty = Tty::open().filter(|tty| !looks_only(args) && tty.can_draw());
    match args.of_a_picked_session().filter(|_| tty.is_none()) {
        Some(flag) => Err(Exit::Usage.err(format_args!("{flag} resumes a session: name it, or pick it on a terminal"))),
        None => Ok(tty),
    }
}

/// Whether this run only looks: `--list`, `--plan`, `--dry-run` decide from what they observe and
/// write nothing into the home (reconciliation only reported, no role source fetched).
fn looks_only(args: &RestoreArgs) -> bool {
    args.list || args.plan || args.dry_run
}

/// The list, or on `tty` (a terminal that can draw, no list asked for) the picker.
fn list(
    args: &RestoreArgs,
    ctx: &mut Ctx,
    engine: &Engine,
    store: &Store,
    catalog: &Catalog,
    tty: Option<Tty>,
) -> Result<Exit> {
    let names = catalog.all().into_iter().map(|t| t.name).collect();
    let changes = reconcile_first(ctx, engine, store, names, looks_only(args))?;
    let source = RoleSource::for_run(looks_only(args));
    let mut candidates = restore::candidates(engine, store, &changes, &args.filters(), args.order(), source)?;
    args.retention.into_iter().for_each(|retention| restore::with_retention(&mut candidates, retention));
    let Some(tty) = tty else {
        for candidate in &candidates {
            ctx.emit(candidate)?;
        }
        return Ok(Exit::Ok);
    };
    let Some(chosen) = picker::pick(&tty, &candidates)? else { return Ok(Exit::Ok) };
    // Chosen on the picker: resumed as `jackin-restore INSTANCE --exec` would, attached on the
    // picker's terminal.
    let mut args = args.clone();
    args.exec = true;
    resume(&args, &chosen, ctx, engine, store, catalog, Some(&tty))
}

fn resume(
    args: &RestoreArgs,
    arg: &str,
    ctx: &mut Ctx,
    engine: &Engine,
    store: &Store,
    catalog: &Catalog,
    attach_on: Option<&Tty>,
) -> Result<Exit> {
    let target = match catalog.resolve(arg) {
        Ok(target) => target,
        Err(why) => return ctx.unresolved(arg, why).map(|()| Exit::Ok),
    };
    let name = target.name;
    let changes = reconcile_first(ctx, engine, store, vec![name.clone()], looks_only(args))?;
    let waits = Waits { health: Duration::from_secs(args.health_timeout) };
    let options = ResumeOptions { plan_only: args.plan || args.dry_run, yes: args.yes, as_is: args.as_is, waits };
    match restore::resume(engine, store, &name, target.row.as_ref(), &changes, options)? {
        Resume::Planned(planned, None) => ctx.emit(&planned).map(|()| Exit::Ok),
        Resume::Planned(planned, Some(why)) => {
            ctx.emit(&planned)?;
            ctx.fail(Some(name.as_str()), ErrorCode::NotReady, &anyhow::anyhow!(why)).map(|()| Exit::Partial)
        }
        Resume::Refused { code, why, exit: Exit::Busy } => {
            ctx.refuse_busy(name.as_str(), code, &why).map(|()| Exit::Busy)
        }
        Resume::Refused { code, why, exit } => ctx.fail_as(exit, Some(name.as_str()), code, &why),
        Resume::Failed(e) => ctx.fail_as(restore::failure_exit(&e), Some(name.as_str()), ErrorCode::RestoreFailed, &e),
        Resume::Resumed(resumed) if args.exec => {
            ctx.emit(&resumed)?;
            match settle::attach(ctx, args, engine, store, &name, &resumed.attach, attach_on)? {
                Left::Again => resume(args, arg, ctx, engine, store, catalog, attach_on),
                Left::Settled(exit) => Ok(exit),
            }
        }
        Resume::Resumed(resumed) => ctx.emit(&resumed).map(|()| Exit::Ok),
    }
}

fn emit_all<R: Record>(ctx: &mut Ctx, records: &[R]) -> Result<Exit> {
    records.iter().try_for_each(|r| ctx.emit(r))?;
    Ok(Exit::Ok)
}
