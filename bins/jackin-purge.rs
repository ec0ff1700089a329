//! jackin-purge: the one program that deletes a finished session, in a crash-safe order.

use anyhow::Result;
use jackin::base::exit::Exit;
use jackin::base::tool::Tool;
use jackin::engines::docker::Engine;
use jackin::face::cli::PurgeArgs;
use jackin::face::driver::{self, Ctx};
use jackin::face::progress::Progress;
use jackin::protocol::identity::Identity;
use jackin::protocol::records::{Purged, PurgedReport, Removed};
use jackin::services::seal::Sealer;
use jackin::state::select::Catalog;
use jackin::state::store::Store;
use jackin::tools::purge::{self, expire, Item, Outcome, Purger, Selection};

fn main() {
    driver::main::<PurgeArgs>(Tool::Purge.name(), run)
}

fn run(args: PurgeArgs, ctx: &mut Ctx) -> Result<Exit> {
    args.check()?;
    let slim = args.slims();
    let selection = Selection { terminal: args.terminal, older_than: args.older_than, keep_last: args.keep_last };
    let from_catalog = selection.terminal || selection.older_than.is_some() || selection.keep_last.is_some();
    let from_stdin = args.instances.is_empty() && !from_catalog && !args.expire_quarantine && !slim;
    let records = if from_stdin {
        ctx.read_stdin_records("pipe decisions into it (jackin-assess \"$C\" | jackin-keep | jackin-purge), or name instances, or use --terminal")?
    } else {
        Vec::new()
    };

    let store = ctx.store()?;
    let catalog = ctx.catalog(&store)?;
    let items = if from_stdin {
        match purge::items_from_records(&records, &catalog, &store, &Sealer::read(&store))? {
            Ok(items) => items,
            Err(refusals) => return ctx.refuse_input(refusals),
        }
    } else if !args.instances.is_empty() {
        purge::items_from_args(&args.instances, &catalog, &store)
    } else if slim {
        purge::items_kept(&catalog, &store, args.slim_older_than)
    } else {
        purge::items_from_catalog(&catalog, selection)
    };

    if !args.dry_run && !slim {
        // Finish what an earlier run moved into the trash and did not get to delete.
        if let Err(e) = purge::remove::empty_trash(&store) {
            ctx.warn(format_args!("emptying the trash: {e:#}"));
        }
    }
    let outcomes = purge_items(&args, ctx, &store, &catalog, &items)?;
    let mut tally = Tally::default();
    for (item, outcome) in items.iter().zip(outcomes) {
        tally.report(ctx, item, outcome)?;
    }
    if args.expire_quarantine {
        expire(&args, ctx, &store, &mut tally)?;
    }
    // Said only when something went (or would): a quiet day's cron run prints nothing.
    if ctx.format == driver::OutputFormat::Text && !ctx.quiet && tally.purged + tally.expired.len() > 0 {
        ctx.line(&purge::total_line(tally.purged, &tally.expired, tally.freed, args.dry_run, slim))?;
    }
    Ok(if tally.busy > 0 { Exit::Busy } else { Exit::Ok })
}

/// Purges the instances and orphans among `items`, in parallel; `None` for the rest.
fn purge_items(
    args: &PurgeArgs,
    ctx: &Ctx,
    store: &Store,
    catalog: &Catalog,
    items: &[Item<'_>],
) -> Result<Vec<Option<Outcome>>> {
    let work = items.iter().filter(|i| i.is_work()).count();
    if work == 0 {
        return Ok(items.iter().map(|_| None).collect());
    }
    let engine = Engine::connect(&args.docker.endpoint()?)?;
    let options = args.options();
    let progress = Progress::new(if options.slim { "slimming" } else { "purging" }, work, ctx.quiet);
    let purger = Purger::new(store, &engine, catalog, options).with_records(args.records());
    let outcomes = purger.items(items, |item| progress.tick(item_name(item)));
    progress.finish();
    Ok(outcomes)
}

/// What the run did, for its closing line and its exit code.
#[derive(Default)]
struct Tally {
    purged: usize,
    expired: Vec<jackin::protocol::codes::ResourceKind>,
    freed: u64,
    busy: usize,
}

impl Tally {
    fn report(&mut self, ctx: &mut Ctx, item: &Item<'_>, outcome: Option<Outcome>) -> Result<()> {
        match (item, outcome) {
            (Item::PassThrough(record), _) => ctx.pass_through(record),
            (Item::Unresolved { arg, why }, _) => ctx.unresolved(arg, why.clone()),
            (_, Some(Outcome::Purged(record))) => {
                self.purged += 1;
                self.freed += record.freed_bytes;
                ctx.emit(&PurgedReport(&record))
            }
            (_, Some(Outcome::Skipped(why))) => {
                ctx.warn(why);
                Ok(())
            }
            (_, Some(Outcome::Refused { code, error, busy: true })) => {
                self.busy += 1;
                ctx.refuse_busy(item_name(item), code, &error)
            }
            (_, Some(Outcome::Refused { code, error, .. })) => ctx.fail(Some(item_name(item)), code, &error),
            (_, None) => Ok(()),
        }
    }
}

/// `--expire-quarantine`: each expired quarantine or session record as a `purged` record.
fn expire(args: &PurgeArgs, ctx: &mut Ctx, store: &Store, tally: &mut Tally) -> Result<()> {
    for expired in expire::expire(store, args.options().quarantine_days, args.dry_run)? {
        tally.expired.push(expired.kind);
        let name = expired.dir.to_string_lossy().into_owned();
        let identity = expired.identity.unwrap_or_else(|| Identity::of_name(&name, ""));
        tally.freed += expired.bytes;
        ctx.emit(&PurgedReport(&Purged {
            identity,
            removed: vec![Removed::new(expired.kind, name)],
            freed_bytes: expired.bytes,
            quarantine: None,
            slimmed: false,
            dry_run: args.dry_run,
        }))?;
    }
    Ok(())
}

fn item_name<'a>(item: &'a Item<'_>) -> &'a str {
    match item {
        Item::Instance(request) => request.target.name.as_str(),
        Item::Orphan(orphan) => &orphan.name,
        Item::Unresolved { arg, .. } => arg,
        Item::PassThrough(record) => record.container_base().unwrap_or(""),
    }
}
