//! `jackin-move export` and `jackin-move import` as the binary runs them (export/, import/), with
//! their progress on a terminal and their records or errors.

use std::path::Path;

use anyhow::Result;

use crate::base::exit::Exit;
use crate::engines::docker::Engine;
use crate::extras::moves::cli::{ExportArgs, ImportArgs};
use crate::extras::moves::export::{self, ExportOptions};
use crate::extras::moves::import::{self, ImportOptions};
use crate::face::driver::Ctx;
use crate::face::progress::Progress;
use crate::protocol::codes::ErrorCode;

/// `jackin-move export FILE INSTANCE`.
pub fn export(args: &ExportArgs, ctx: &mut Ctx) -> Result<Exit> {
    let file: &Path = &args.file;
    let store = ctx.store()?;
    let catalog = ctx.catalog(&store)?;
    let arg = args.instance.as_str();
    let name = match catalog.resolve(arg) {
        Ok(target) => target.name,
        Err(why) => return ctx.unresolved(arg, why).map(|()| Exit::Ok),
    };
    let engine = Engine::connect(&args.docker.endpoint()?)?;
    // Its length is known once the export has read the session's mounts.
    let progress = Progress::new("exporting", 3, ctx.quiet);
    let options = ExportOptions { with_auth: args.with_auth, dry_run: args.dry_run };
    let exported = export::export(&store, &engine, &name, file, options, &progress);
    progress.finish();
    match exported {
        Ok(record) => {
            if record.with_auth && !record.auth.is_empty() {
                ctx.warn(format_args!(
                    "{}: the archive holds the agents' credentials ({}): keep it as you keep them",
                    name,
                    record.auth.join(", ")
                ));
            }
            ctx.emit(&record)?;
            Ok(Exit::Ok)
        }
        Err(e) => settle(ctx, name.as_str(), ErrorCode::ExportFailed, e),
    }
}

/// `jackin-move import FILE`.
pub fn import(args: &ImportArgs, ctx: &mut Ctx) -> Result<Exit> {
    let file: &Path = &args.file;
    let store = ctx.store()?;
    let options = ImportOptions { dry_run: args.dry_run, repos: args.repo.clone() };
    // Its length is known once the archive says how many mounts it holds.
    let progress = Progress::new("importing", 3, ctx.quiet);
    let imported = import::import(&store, file, &options, &progress);
    progress.finish();
    match imported {
        Ok(imported) => {
            ctx.emit(&imported)?;
            Ok(Exit::Ok)
        }
        // A refusal is a record too, as export's is, with its own exit code: busy (5), a damaged
        // or clashing archive (3), a state directory out of reach (4), a failure half-way (6).
        Err(e) => match Exit::of(&e) {
            Exit::Ok | Exit::Usage | Exit::Interrupted | Exit::Internal => Err(e),
            Exit::Busy => ctx.fail_as(Exit::Busy, None, ErrorCode::Busy, &e),
            exit => ctx.fail_as(exit, None, ErrorCode::ImportFailed, &e),
        },
    }
}

/// A failed move: a live session is busy (exit 5), an error that carries its own code ends the
/// run with it, anything else is this instance's failure (exit 6).
fn settle(ctx: &mut Ctx, name: &str, code: ErrorCode, e: anyhow::Error) -> Result<Exit> {
    match Exit::of(&e) {
        Exit::Busy => {
            ctx.refuse_busy(name, ErrorCode::Live, &e)?;
            Ok(Exit::Busy)
        }
        Exit::Usage | Exit::BadInput | Exit::Unavailable | Exit::Interrupted => Err(e),
        _ => ctx.fail(Some(name), code, &e).map(|()| Exit::Ok),
    }
}
