//! Reconciliation (lifecycle.md, "Reconcile"): make the index and the manifests tell the truth
//! about Docker, label host-level kills honestly with their evidence, mend the index, report
//! orphans, and capture the launch recipe of every live session that has none yet.
//!
//! Three steps: [`observe`] reads the engine and the home once (one list call covers every
//! instance; only exited role containers under live rows are inspected), [`plan`] decides from
//! that alone, and [`apply`] writes, checking each decision again as it goes. jackin-restore
//! calls [`reconcile`] for its candidates before it decides anything.

mod apply;
pub mod events;
mod observe;
mod orphans;
mod plan;
mod watch;

use anyhow::Result;

use crate::engines::docker::Engine;
use crate::protocol::codes::ErrorCode;
use crate::protocol::records::{Change, Orphan, Repair};
use crate::state::names::InstanceName;
use crate::state::store::Store;

pub use crate::services::host_kill::{host_kill_sign, Ended};
pub use watch::{watch, WATCHED_EVENTS};

/// Which instances to reconcile.
#[derive(Debug, Clone)]
pub enum Selection {
    /// Every instance on the host; also the orphan scan, which only makes sense host-wide.
    All,
    /// An operator's arguments (container name, id or unique id prefix); one that names no
    /// instance is a failure of its own.
    Args(Vec<String>),
    /// Instances named by a program (jackin-restore, the event watcher); unknown ones are skipped.
    Instances(Vec<InstanceName>),
}

#[derive(Debug, Clone)]
pub struct Options {
    pub dry_run: bool,
    /// The tool named in history entries and captured recipes.
    pub tool: crate::base::tool::Tool,
}

/// What a reconciliation found and (unless a dry run) did.
#[derive(Debug, Default)]
pub struct Report {
    pub changes: Vec<Change>,
    pub repairs: Vec<Repair>,
    pub orphans: Vec<Orphan>,
    /// Instances whose launch recipe was captured on first sight.
    pub recipes_captured: Vec<String>,
    pub failures: Vec<Failure>,
}

impl Report {
    /// Whether the index or a manifest changed (or would have, in a dry run).
    pub fn changed(&self) -> bool {
        !self.changes.is_empty() || !self.repairs.is_empty()
    }
}

/// One instance that could not be reconciled; the others were.
#[derive(Debug)]
pub struct Failure {
    pub container_base: Option<String>,
    /// The `error` record's code.
    pub code: ErrorCode,
    pub error: anyhow::Error,
}

/// Reconciles the selected instances against one engine. Nothing is written before the engine
/// has answered the list calls, so an unreachable engine (exit 4) leaves every file unchanged.
pub fn reconcile(engine: &Engine, store: &Store, selection: &Selection, options: &Options) -> Result<Report> {
    let mut observation = observe::observe(engine, store, selection, options)?;
    let mut report = Report::default();
    report.repairs.extend(observation.index_rebuilt.take().map(|rebuilt| apply::index_repair(store, rebuilt)));
    report.failures.append(&mut observation.unresolved);
    let plan = plan::plan(&observation);
    apply::apply(engine, store, plan, options, &observation.now, &mut report)?;
    if observation.whole_host {
        report.orphans = orphans::find(store, &observation, &report.repairs, options.dry_run)?;
    }
    Ok(report)
}
