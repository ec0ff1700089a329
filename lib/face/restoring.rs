//! What jackin-restore's loop calls beyond one resume: the reconciliation every run starts with,
//! and `--interrupted`, the resume of every interrupted session at once.

use std::time::Duration;

use anyhow::Result;

use crate::base::exit::Exit;
use crate::base::tool::Tool;
use crate::engines::docker::Engine;
use crate::face::cli::RestoreArgs;
use crate::face::driver::{Ctx, OutputFormat};
use crate::protocol::envelope::Record;
use crate::protocol::records::{Change, Interrupted, SweepOutcome};
use crate::state::names::InstanceName;
use crate::state::select::Catalog;
use crate::state::store::Store;
use crate::tools::reconcile;
use crate::tools::restore::{self, ResumeOptions, SweepOptions, Waits};

/// Launch-time reconciliation: the statuses restore decides on are what Docker says now.
pub fn reconcile_first(
    ctx: &Ctx,
    engine: &Engine,
    store: &Store,
    names: Vec<InstanceName>,
    dry_run: bool,
) -> Result<Vec<Change>> {
    let options = reconcile::Options { dry_run, tool: Tool::Restore };
    let report = reconcile::reconcile(engine, store, &reconcile::Selection::Instances(names), &options)?;
    for change in &report.changes {
        ctx.info(format_args!("{}", change.text()));
    }
    for failure in &report.failures {
        ctx.warn(format_args!("reconciling {}: {:#}", failure.container_base.as_deref().unwrap_or("?"), failure.error));
    }
    Ok(report.changes)
}

/// `--interrupted`: every session reconciliation finds interrupted, resumed (or, with `--plan`,
/// planned), one `interrupted` record each, and in text a closing line.
pub fn interrupted(
    args: &RestoreArgs,
    ctx: &mut Ctx,
    engine: &Engine,
    store: &Store,
    catalog: &Catalog,
) -> Result<Exit> {
    let plan_only = args.plan || args.dry_run;
    // Several sessions at once, with nobody to show each one's preserved work to: the operator
    // acknowledges them all up front, or only looks.
    if !plan_only && !args.yes {
        return Err(Exit::Usage.err(
            "--interrupted resumes every interrupted session without asking\n  hint: pass --yes to acknowledge \
             their preserved work, or --plan to see what it would do",
        ));
    }
    // Read before anything is written: a window that does not parse changes nothing.
    let since = window(args.since)?;
    let jobs = usize::from(args.jobs.unwrap_or(DEFAULT_JOBS));
    let names = catalog.all().into_iter().map(|t| t.name).collect();
    let changes = reconcile_first(ctx, engine, store, names, plan_only)?;
    let waits = Waits { health: Duration::from_secs(args.health_timeout) };
    let resume = ResumeOptions { plan_only, yes: true, as_is: args.as_is, waits };
    let options = SweepOptions { filters: args.filters(), since, jobs, resume };
    let records = restore::interrupted(engine, store, catalog, &changes, options)?;
    for record in &records {
        ctx.emit(record)?;
    }
    if ctx.format == OutputFormat::Text && !ctx.quiet {
        ctx.line(&total_line(&records, plan_only))?;
    }
    Ok(restore::sweep_exit(&records))
}

/// How many sessions a sweep resumes at a time unless `--jobs` says: resuming mostly waits (on
/// the engine, on a sidecar's health command), so more than the cores.
const DEFAULT_JOBS: u16 = 4;

/// The window of a sweep: `--since`, else `JACKIN_INTERRUPTED_SINCE` (the boot unit's setting),
/// else 24 hours.
fn window(since: Option<Duration>) -> Result<Duration> {
    if let Some(since) = since {
        return Ok(since);
    }
    match std::env::var("JACKIN_INTERRUPTED_SINCE") {
        Ok(text) if !text.is_empty() => crate::face::cli::duration(&text).map_err(|e| {
            Exit::Usage.err(format_args!("JACKIN_INTERRUPTED_SINCE={text:?} is not a duration (24h, 3d): {e}"))
        }),
        _ => Ok(Duration::from_secs(24 * 3600)),
    }
}

/// The closing line of a sweep in text: how many, and what became of them.
fn total_line(records: &[Interrupted], plan_only: bool) -> String {
    let count = |outcome| records.iter().filter(|r| r.outcome == outcome).count();
    let (done, verb) = match plan_only {
        true => (count(SweepOutcome::WouldResume), "would resume"),
        false => (count(SweepOutcome::Resumed), "resumed"),
    };
    format!(
        "{} interrupted: {done} {verb}, {} not resumed, {} left alone",
        records.len(),
        count(SweepOutcome::NotResumed),
        count(SweepOutcome::LeftAlone)
    )
}
