//! `jackin-idle`: running sessions nobody uses, found, and with `--yes` kept to resume later (issue
//! 67), an extra of its own over the core: it decides from what it observes (watch.rs), keeps as
//! jackin-keep keeps (services/keeping.rs) under the session's claim after a second look (act.rs),
//! and only for workspaces whose policy asks for it (policy.rs) or with `--idle-for`. Every check
//! records the CPU count it read in the tools' own file (`continuity.json`), for the next check to
//! tell how busy the session was in between; `--dry-run` writes nothing.

pub mod act;
pub mod cli;
pub mod manual;
pub mod policy;
pub mod watch;

use std::time::Instant;

use anyhow::Result;

use crate::base::exit::Exit;
use crate::base::time::rfc3339;
use crate::engines::docker::Engine;
use crate::face::driver::Ctx;
use crate::protocol::codes::ErrorCode;
use crate::protocol::envelope::Record;
use crate::protocol::records::IdleCheck;
use crate::state::model::Manifest;
use act::Acted;
use cli::IdleArgs;
use policy::IdlePolicy;
use watch::{Seen, Window};

/// Looks at every running session of this home; with `--yes`, keeps the idle ones. Exit 6 when a
/// session could not be looked at or kept (the others were).
pub fn run(args: &IdleArgs, ctx: &mut Ctx) -> Result<Exit> {
    let store = ctx.store()?;
    let policy = IdlePolicy::read(&store.roots.config_dir)?;
    let engine = Engine::connect(&args.docker.endpoint()?)?;
    let catalog = ctx.catalog(&store)?;
    let window = |manifest: &Manifest| match args.idle_for {
        Some(length) => Some(Window { length, policy: "--idle-for".into() }),
        None => {
            let workspace = manifest.workspace_name.as_deref();
            policy
                .window(workspace)
                .map(|length| Window { length, policy: format!("workspace {}", workspace.unwrap_or("")) })
        }
    };
    let mut running = Vec::new();
    for target in catalog.all() {
        match watch::running(&engine, &store, &target.name) {
            Ok(Some(session)) => running.push(session),
            Ok(None) => {}
            Err(e) => ctx.fail(Some(target.name.as_str()), ErrorCode::InspectFailed, &e)?,
        }
    }
    let manifests: Vec<&Manifest> = running.iter().map(|r| &r.manifest).collect();
    let cpu = watch::cpu_times(&engine, &manifests).map_err(|e| Exit::Unavailable.wrap(e))?;
    let sampled = Instant::now();
    for (session, cpu_ns) in running.into_iter().zip(cpu) {
        let name = session.name.clone();
        let seen = match watch::observe(&store, session, (cpu_ns, sampled), window, args.dry_run) {
            Ok(seen) => seen,
            Err(e) => {
                ctx.fail(Some(name.as_str()), ErrorCode::InspectFailed, &e)?;
                continue;
            }
        };
        let record = check_record(&seen, args.dry_run);
        if !args.yes {
            ctx.emit(&record)?;
            continue;
        }
        if !seen.idle() {
            // Silent on a quiet day: a schedule's run says only what it did.
            ctx.info(record.text());
            continue;
        }
        match act::keep_idle(&engine, &store, &seen, args.dry_run) {
            Ok(Acted::Kept(change)) => ctx.emit(&*change)?,
            Ok(Acted::Left(why)) => ctx.emit(&IdleCheck { action: Some("left".into()), why, ..record })?,
            Err(e) => ctx.fail(Some(name.as_str()), ErrorCode::KeepFailed, &e)?,
        }
    }
    Ok(Exit::Ok)
}

/// The `idle` record of what a check saw.
fn check_record(seen: &Seen, dry_run: bool) -> IdleCheck {
    IdleCheck {
        identity: seen.identity(),
        idle: seen.idle(),
        window_secs: seen.window.as_ref().map(|w| w.length.as_secs()),
        policy: seen.window.as_ref().map_or_else(|| "none".to_owned(), |w| w.policy.clone()),
        why: seen.why(),
        clients: seen.clients,
        lock_held_by: seen.lock_held_by.clone(),
        started_at: seen.started_at.map(rfc3339),
        cpu_quiet_since: Some(rfc3339(seen.cpu_quiet_since)),
        last_file_change: seen.last_file_change.map(rfc3339),
        last_attached: seen.last_attached.map(rfc3339),
        action: None,
        dry_run,
    }
}
