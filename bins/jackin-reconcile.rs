//! jackin-reconcile: make the index tell the truth about Docker; label host-level kills honestly.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::Result;
use jackin::base::exit::Exit;
use jackin::base::tool::Tool;
use jackin::engines::docker::Engine;
use jackin::face::cli::ReconcileArgs;
use jackin::face::driver::{self, Ctx, OutputFormat};
use jackin::face::moved::Feed;
use jackin::protocol::codes::ErrorCode;
use jackin::protocol::records::RepairKind;
use jackin::state::store::Store;
use jackin::tools::reconcile::events::{self as event, EventOptions};
use jackin::tools::reconcile::{self, Options, Report, Selection};

const TOOL: Tool = Tool::Reconcile;

fn main() {
    driver::main::<ReconcileArgs>(TOOL.name(), run)
}

fn run(mut args: ReconcileArgs, ctx: &mut Ctx) -> Result<Exit> {
    args.check()?;
    let store = ctx.store()?;
    let options = Options { dry_run: args.dry_run, tool: TOOL };
    // The hidden --on-event: this run's records fed to jackin-notify (a dry run runs no program).
    let program = args.on_event.as_ref().filter(|_| !args.dry_run);
    let mut feed = program.map(|program| Feed::start(TOOL.name(), program, args.event_timeout)).transpose()?;
    let exit = if args.watch {
        watch(&args, ctx, &store, &options, &mut feed)
    } else {
        once(&args, ctx, &store, &options, &mut feed)
    };
    if let Some(feed) = feed {
        feed.finish();
    }
    exit
}

fn once(
    args: &ReconcileArgs,
    ctx: &mut Ctx,
    store: &Store,
    options: &Options,
    feed: &mut Option<Feed>,
) -> Result<Exit> {
    let engine = Engine::connect(&args.docker.endpoint()?)?;
    let selection = if args.instances.is_empty() { Selection::All } else { Selection::Args(args.instances.clone()) };
    let report = reconcile::reconcile(&engine, store, &selection, options)?;
    let busy = report.failures.iter().any(|failure| failure.code == ErrorCode::Busy);
    let changed = emit(ctx, store, &args.events(), report, feed)?;
    Ok(if busy {
        Exit::Busy
    } else if args.exit_code && changed {
        Exit::Findings
    } else {
        Exit::Ok
    })
}

/// Prints a report's records, then the expiries it warns of (each change and expiry fed to the
/// hidden --on-event's notifier too); returns whether anything changed. Orphans are not news: with
/// `--quiet` the text format leaves them out, so cron mails only changes.
fn emit(ctx: &mut Ctx, store: &Store, events: &EventOptions, report: Report, feed: &mut Option<Feed>) -> Result<bool> {
    let changed = report.changed();
    let expiring = event::expiring(store, events)?;
    if let Some(feed) = feed {
        report.changes.iter().for_each(|change| feed.send(change));
        expiring.iter().for_each(|item| feed.send(item));
    }
    for repair in &report.repairs {
        if repair.kind == RepairKind::IndexRebuilt {
            // Said even with --quiet: the operator's index was replaced.
            ctx.say(format_args!("warning: {}: {}", repair.name, repair.reason));
        }
        ctx.emit(repair)?;
    }
    for change in &report.changes {
        ctx.emit(change)?;
    }
    if !(ctx.quiet && ctx.format == OutputFormat::Text) {
        for orphan in &report.orphans {
            ctx.emit(orphan)?;
        }
    }
    for name in &report.recipes_captured {
        ctx.info(format_args!("{name}: launch recipe captured"));
    }
    for failure in report.failures {
        match (failure.code, failure.container_base.as_deref()) {
            (ErrorCode::Busy, Some(name)) => ctx.refuse_busy(name, failure.code, &failure.error)?,
            (code, name) => ctx.fail(name, code, &failure.error)?,
        }
    }
    for item in &expiring {
        ctx.emit(item)?;
    }
    Ok(changed)
}

/// `--watch`: until SIGTERM (exit 0) or SIGINT (exit 130). Signals only set a flag; the watcher
/// checks it between events, so a reconciliation in progress always finishes its writes.
fn watch(
    args: &ReconcileArgs,
    ctx: &mut Ctx,
    store: &Store,
    options: &Options,
    feed: &mut Option<Feed>,
) -> Result<Exit> {
    if !args.instances.is_empty() {
        return Err(Exit::Usage.err("--watch reconciles every instance; name none"));
    }
    let stop = Arc::new(AtomicBool::new(false));
    let interrupted = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted))?;
    let (quiet, verbose, events) = (ctx.quiet, ctx.verbose > 0, args.events());
    // The watcher calls one of the two at a time: both write through the one context.
    let ctx = std::cell::RefCell::new(ctx);
    reconcile::watch(
        &args.docker.endpoint()?,
        store,
        options,
        &stop,
        |report| emit(&mut ctx.borrow_mut(), store, &events, report, feed).map(|_| ()),
        |notice| {
            let routine = notice.starts_with("watching") || notice.starts_with("event: ");
            if verbose || (!quiet && !routine) {
                ctx.borrow().say(notice);
            }
        },
    )?;
    Ok(if interrupted.load(Ordering::Relaxed) { Exit::Interrupted } else { Exit::Ok })
}
