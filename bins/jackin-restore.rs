//! jackin-restore: list resumable sessions; resume one by the cheapest faithful tier.

use std::time::{Duration, SystemTime};

use anyhow::Result;
use jackin::base::exit::Exit;
use jackin::engines::docker::Engine;
use jackin::face::cli::RestoreArgs;
use jackin::face::driver::{self, Ctx};
use jackin::protocol::envelope::Record;
use jackin::protocol::records::{Change, Identity, Restored};
use jackin::state::continuity;
use jackin::state::continuity::Continuity;
use jackin::state::model::Manifest;
use jackin::state::model::Status;
use jackin::state::names::InstanceName;
use jackin::state::select::Catalog;
use jackin::tools::assess::{AssessOptions, Assessor};
use jackin::tools::reconcile;
use jackin::tools::restore::{self, Filters, Waits};

fn main() {
    // https:// for tier 3's fetch of a role source, through libcurl (credentials: ~/.netrc or the
    // URL). Only this tool links curl: its start-up would cost every hook run (docs/performance.md).
    let mut http = curl::easy::Easy::new();
    let _ = http.netrc(curl::easy::NetRc::Optional);
    // SAFETY: registered once, before any libgit2 call of this process.
    unsafe { git2_curl::register(http) }
    driver::main::<RestoreArgs>("jackin-restore", run)
}

fn run(args: RestoreArgs, ctx: &mut Ctx) -> Result<Exit> {
    let store = ctx.store()?;
    let engine = Engine::connect()?;
    let dry_run = args.plan || args.dry_run;
    let catalog = ctx.catalog(&store)?;
    let assessor = Assessor::new(AssessOptions::default());
    let Some(arg) = &args.instance else {
        let names = catalog.all().into_iter().map(|t| t.name).collect();
        let changes = reconcile_first(ctx, &engine, &store, names, dry_run)?;
        let catalog = Catalog::load(&store)?;
        let filters = Filters { workspace: args.workspace, role: args.role, agent: args.agent, workdir: args.workdir };
        let mut candidates = Vec::new();
        for target in catalog.all() {
            let Ok(Some(mut manifest)) = store.read_manifest(&target.name) else { continue };
            let mut kept = continuity::read(&store, &target.name).unwrap_or_default();
            as_reconciled(&mut manifest, &mut kept, &changes);
            let status = Status::parse(&manifest.status);
            if !filters.admit(&manifest) || !restore::resumable(status, true) {
                continue;
            }
            let plan = restore::plan(&engine, &store, &target.name, &manifest, kept.recipe.as_ref())?;
            if !restore::resumable(status, plan.role.is_some()) {
                continue;
            }
            let assessment = assessor.instance(&store, &target.name, target.row.as_ref()).ok();
            candidates.push(restore::candidate(&manifest, &kept, assessment.as_ref(), &plan, SystemTime::now()));
        }
        candidates.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
        for candidate in &candidates {
            ctx.emit(candidate)?;
        }
        return Ok(Exit::Ok);
    };

    let target = catalog.resolve(arg).map_err(|why| Exit::Partial.wrap(why))?;
    let name = target.name;
    let changes = reconcile_first(ctx, &engine, &store, vec![name.clone()], dry_run)?;
    let mut manifest =
        store.read_manifest(&name)?.ok_or_else(|| Exit::Partial.err(format_args!("{name}: no manifest")))?;
    let mut kept = continuity::read(&store, &name)?;
    as_reconciled(&mut manifest, &mut kept, &changes);
    let plan = restore::plan(&engine, &store, &name, &manifest, kept.recipe.as_ref())?;
    if !restore::resumable(Status::parse(&manifest.status), plan.role.is_some()) {
        return refuse(ctx, &name, "not_resumable", format!("status {} is not resumable", manifest.status));
    }
    let identity = Identity::from_manifest(&manifest);
    if args.plan || args.dry_run {
        ctx.emit(&Restored {
            identity,
            tier: plan.tier,
            missing: plan.missing.clone(),
            actions: plan.steps.clone(),
            attach: restore::attach_argv(&manifest.docker.role_container),
            drift: plan.drift.clone(),
            dry_run: true,
        })?;
        return Ok(if plan.ready() { Exit::Ok } else { refuse(ctx, &name, "not_ready", plan.missing.join("; "))? });
    }
    let assessment = assessor.instance(&store, &name, target.row.as_ref())?;
    restore::acknowledge(&assessment, args.yes)?;
    if !plan.ready() {
        return refuse(
            ctx,
            &name,
            "not_ready",
            format!("cannot resume, nothing was changed: {}", plan.missing.join("; ")),
        );
    }
    let waits = Waits { health: Duration::from_secs(args.health_timeout) };
    let tier = plan.tier.expect("a ready plan has a tier");
    let actions = match restore::execute(&engine, &store, &name, &manifest, kept.recipe.as_ref(), &plan, waits) {
        Ok(actions) => actions,
        Err(e) => {
            ctx.fail(Some(name.as_str()), "restore_failed", &e)?;
            return Ok(Exit::Partial);
        }
    };
    restore::mark_resumed(&store, &name, &manifest, tier)?;
    let attach = restore::attach_argv(&manifest.docker.role_container);
    ctx.emit(&Restored {
        identity,
        tier: Some(tier),
        missing: Vec::new(),
        actions,
        attach: attach.clone(),
        drift: plan.drift.clone(),
        dry_run: false,
    })?;
    if args.exec {
        use std::os::unix::process::CommandExt;
        let error = std::process::Command::new(&attach[0]).args(&attach[1..]).exec();
        return Err(anyhow::Error::new(error).context(format!("running {}", attach.join(" "))));
    }
    Ok(Exit::Ok)
}

/// Launch-time reconciliation: the statuses restore decides on are what Docker says now.
fn reconcile_first(
    ctx: &Ctx,
    engine: &Engine,
    store: &jackin::state::store::Store,
    names: Vec<InstanceName>,
    dry_run: bool,
) -> Result<Vec<Change>> {
    let options = reconcile::Options { dry_run, tool: "jackin-restore" };
    let report = reconcile::reconcile(engine, store, &reconcile::Selection::Instances(names), &options)?;
    for change in &report.changes {
        ctx.info(format_args!("{}", change.text()));
    }
    for failure in &report.failures {
        ctx.warn(format_args!("reconciling {}: {:#}", failure.container_base.as_deref().unwrap_or("?"), failure.error));
    }
    Ok(report.changes)
}

/// In a dry run reconcile writes nothing: decide on the statuses it would have written.
fn as_reconciled(manifest: &mut Manifest, kept: &mut Continuity, changes: &[Change]) {
    if let Some(change) = changes.iter().rev().find(|c| c.identity.container_base == manifest.container_base) {
        manifest.status = change.to.clone();
        kept.cause = Some(change.cause.clone());
    }
}

fn refuse(ctx: &mut Ctx, name: &InstanceName, code: &str, why: String) -> Result<Exit> {
    ctx.fail(Some(name.as_str()), code, &anyhow::anyhow!(why))?;
    Ok(Exit::Partial)
}
