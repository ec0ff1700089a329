//! What a purge run acts on, in input order: the decisions and orphans on stdin, the instances
//! named on the command line, or the ones a selection (`--terminal`, retention) picks from the
//! catalog. Everything is checked before anything is deleted.

use std::time::Duration;

use anyhow::Result;

use crate::base::exit::Exit;
use crate::protocol::envelope::{InputRecord, Record};
use crate::protocol::records::{Decision, Orphan, Outcome};
use crate::state::model::Status;
use crate::state::names::InstanceName;
use crate::state::select::{Catalog, Target, Unresolved};
use crate::state::store::Store;

use super::orphans;
use crate::protocol::codes::ErrorCode;
use crate::services::provenance::{self, Refusal};
use crate::services::seal::Sealer;

/// One instance to purge and why.
#[derive(Debug, Clone)]
pub struct Request {
    pub target: Target,
    /// Its decision record allowed discarding work at risk.
    pub(crate) discard: bool,
    /// Its decision record says the work is saved whatever `--no-quarantine` says (a clean-up
    /// chosen in the container).
    pub(crate) quarantine_required: bool,
    /// Picked by status or age (`failed_setup` under `--terminal`, retention): purged only when
    /// verified clean, else left alone.
    pub(crate) only_if_clean: bool,
}

impl Request {
    /// A request by name or by status: nothing discarded.
    fn plain(target: Target) -> Request {
        Request { target, discard: false, quarantine_required: false, only_if_clean: false }
    }
}

/// What a run does, in input order. (A few per run: boxing `Request` would buy nothing.)
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub enum Item<'a> {
    PassThrough(&'a InputRecord),
    Instance(Request),
    Orphan(Orphan),
    Unresolved { arg: String, why: Unresolved },
}

impl Item<'_> {
    pub fn is_work(&self) -> bool {
        matches!(self, Item::Instance(_) | Item::Orphan(_))
    }
}

/// The work named by records on stdin. Checked whole before anything is deleted: a `decision` or
/// `orphan` that does not parse, or names something that is not a jackin name, is bad input; one
/// this host does not observe as it claims is refused (`Err`, every refusal): made on another
/// host, naming a session whose `instance_id` here is another, or asking to discard work at risk
/// without the seal of this home's keep on a session still as keep left it (services/provenance.rs,
/// services/seal.rs).
pub fn items_from_records<'a>(
    records: &'a [InputRecord],
    catalog: &Catalog,
    store: &Store,
    sealer: &Sealer,
) -> Result<Result<Vec<Item<'a>>, Vec<Refusal>>> {
    let mut items = Vec::new();
    let mut refusals = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for record in records {
        match record.kind.as_str() {
            Decision::TYPE => {
                let decision: Decision = record.parse()?;
                InstanceName::parse(&decision.identity.container_base).map_err(|e| {
                    Exit::BadInput.err(format_args!("line {}: bad decision record: {e:#}", record.line_no))
                })?;
                if decision.outcome != Outcome::Clean || decision.dry_run {
                    items.push(Item::PassThrough(record));
                    continue;
                }
                if let Err(refusal) = discard_proved(record, &decision, store, sealer) {
                    refusals.push(refusal);
                    continue;
                }
                let name = decision.identity.container_base.clone();
                if seen.contains(&name) {
                    continue;
                }
                seen.push(name.clone());
                let request = |target| Request {
                    target,
                    discard: decision.discard_unfinished,
                    quarantine_required: decision.quarantine_required,
                    only_if_clean: false,
                };
                // A `purged` row is finished like any other purge (lifecycle.md: a rerun after a
                // crash at any step finishes the job, and after step 7 only that row is left).
                items.push(Item::Instance(match catalog.resolve_including_tombstones(&name) {
                    Ok(target) => request(target),
                    // Nothing of it is left: a rerun after a finished purge.
                    Err(_) => request(Target { name: InstanceName::parse(&name)?, row: None }),
                }));
            }
            Orphan::TYPE => {
                let orphan: Orphan = record.parse()?;
                orphans::check_name(&orphan).map_err(|e| {
                    Exit::BadInput.err(format_args!("line {}: bad orphan record: {e:#}", record.line_no))
                })?;
                if let Err(refusal) = provenance::made_here(record) {
                    refusals.push(refusal);
                } else if orphan.dry_run {
                    items.push(Item::PassThrough(record));
                } else {
                    items.push(Item::Orphan(orphan));
                }
            }
            _ => items.push(Item::PassThrough(record)),
        }
    }
    Ok(if refusals.is_empty() { Ok(items) } else { Err(refusals) })
}

/// A clean decision is this host's, about the session of its name here; and when it discards
/// work at risk, this home's keep made it (its seal) and the session is still as keep left it
/// (the status keep wrote, at the time it wrote it). A decision that asks only for what
/// `jackin-purge C` would do by name (delete what is not at risk) needs no seal.
fn discard_proved(record: &InputRecord, decision: &Decision, store: &Store, sealer: &Sealer) -> Result<(), Refusal> {
    provenance::made_here(record)?;
    let manifest = provenance::same_session(store, record, &decision.identity)?;
    if !decision.discard_unfinished {
        return Ok(());
    }
    let unproven = |why: String| {
        let error = anyhow::anyhow!("line {} (decision record): asks to discard work at risk, but {why}; nothing deleted (jackin-purge --discard-unfinished C discards it on your word)", record.line_no);
        Refusal { container_base: Some(decision.identity.container_base.clone()), code: ErrorCode::Unproven, error }
    };
    if !sealer.decision_holds(decision) {
        return Err(unproven(
            "it carries no seal of this home's jackin-keep (typed, changed, or made elsewhere)".into(),
        ));
    }
    let as_keep_left = |status: &str, at: &str| {
        decision.status.as_deref() == Some(status) && decision.stamped_at.as_deref() == Some(at)
    };
    let Some(m) = manifest else { return Ok(()) };
    if as_keep_left(m.status.as_str(), &m.updated_at) {
        return Ok(());
    }
    // A rerun after a purge that stamped the session: its mark found it as keep left it.
    let name = InstanceName::parse(&decision.identity.container_base).map_err(|e| unproven(format!("{e:#}")))?;
    let mark = store.read_purge_mark(&name);
    let marked = mark.as_ref().and_then(|mark| mark.session.as_ref().map(|found| (found, &mark.started_at)));
    match marked {
        Some((found, stamped))
            if as_keep_left(found.status.as_str(), &found.updated_at) && *stamped == m.updated_at =>
        {
            Ok(())
        }
        _ => Err(unproven(format!(
            "the session changed since jackin-keep decided: its status is {} since {}, not {} since {}",
            m.status,
            m.updated_at,
            decision.status.as_deref().unwrap_or("-"),
            decision.stamped_at.as_deref().unwrap_or("-")
        ))),
    }
}

/// The instances named on the command line. A `purged` row without a data directory, jackin's
/// tombstone or what a purge that stopped after step 7 left, is finished: named, it is the
/// operator's to remove; selections by status leave it to jackin's prune.
pub fn items_from_args(args: &[String], catalog: &Catalog, store: &Store) -> Vec<Item<'static>> {
    let mut items: Vec<Item> = Vec::new();
    for arg in args {
        let item = match catalog.resolve_including_tombstones(arg) {
            Ok(target) => Item::Instance(Request::plain(target)),
            // A full name with leftovers (a lock, a socket dir, an import's unpacking directory)
            // but no row or data dir: finish it.
            Err(why) => match InstanceName::parse(arg) {
                Ok(name)
                    if store.name_lock_path(&name).exists()
                        || store.socket_dir(&name).exists()
                        || !store.import_staging_dirs(&name).is_empty() =>
                {
                    Item::Instance(Request::plain(Target { name, row: None }))
                }
                _ => Item::Unresolved { arg: arg.clone(), why },
            },
        };
        let duplicate = matches!(&item, Item::Instance(r) if items.iter().any(|i| matches!(i, Item::Instance(o) if o.target.name == r.target.name)));
        if !duplicate {
            items.push(item);
        }
    }
    items
}

/// Retention of kept instances per (workspace, role, agent): beyond the newest `keep_last`, and
/// older than `older_than`; when both are given, both must hold.
#[derive(Debug, Clone, Copy, Default)]
pub struct Selection {
    pub terminal: bool,
    pub older_than: Option<Duration>,
    pub keep_last: Option<usize>,
}

pub fn items_from_catalog(catalog: &Catalog, selection: Selection) -> Vec<Item<'static>> {
    items_from_catalog_at(catalog, selection, std::time::SystemTime::now())
}

/// [`items_from_catalog`] as of `now`: a row is older than `--older-than` only once the whole
/// age has passed.
fn items_from_catalog_at(catalog: &Catalog, selection: Selection, now: std::time::SystemTime) -> Vec<Item<'static>> {
    let mut targets = catalog.all();
    // Newest first, whatever order the index file is in, so retention ranks each group right.
    targets.sort_by(|a, b| {
        let at = |t: &Target| t.row.as_ref().map(|r| r.updated_at.clone()).unwrap_or_default();
        at(b).cmp(&at(a))
    });
    let mut picked: Vec<Request> = Vec::new();
    let mut groups: std::collections::BTreeMap<(Option<String>, String, String), usize> = Default::default();
    for target in targets {
        let Some(row) = &target.row else { continue };
        let Some(status) = row.known_status() else { continue };
        if selection.terminal && (status.is_terminal() || status == Status::FailedSetup) {
            picked.push(Request { only_if_clean: status == Status::FailedSetup, ..Request::plain(target) });
            continue;
        }
        if !status.is_kept() || (selection.older_than.is_none() && selection.keep_last.is_none()) {
            continue;
        }
        let rank =
            groups.entry((row.workspace_name.clone(), row.role_key.clone(), row.agent_runtime.clone())).or_default();
        *rank += 1;
        let beyond_last = selection.keep_last.is_none_or(|n| *rank > n);
        let old = selection
            .older_than
            .is_none_or(|age| crate::base::time::parse_rfc3339(&row.updated_at).is_some_and(|at| at + age < now));
        // Retention purges only what is clean: a kept session that still holds work is left
        // alone and said, not refused, so a daily timer does not fail every day over it.
        if beyond_last && old {
            picked.push(Request { only_if_clean: true, ..Request::plain(target) });
        }
    }
    picked.into_iter().map(Item::Instance).collect()
}

/// The kept instances (for `--slim --kept` and `--slim-older-than`), newest first; with
/// `older_than` (the retention a cron runs every day), only those last updated longer ago than
/// that and not slimmed since: a session is slimmed once after each time it is kept.
pub fn items_kept(catalog: &Catalog, store: &Store, older_than: Option<Duration>) -> Vec<Item<'static>> {
    items_kept_at(catalog, store, older_than, std::time::SystemTime::now())
}

/// [`items_kept`] as of `now`.
fn items_kept_at(
    catalog: &Catalog,
    store: &Store,
    older_than: Option<Duration>,
    now: std::time::SystemTime,
) -> Vec<Item<'static>> {
    let mut targets = catalog.all();
    targets.sort_by(|a, b| {
        let at = |t: &Target| t.row.as_ref().map(|r| r.updated_at.clone()).unwrap_or_default();
        at(b).cmp(&at(a))
    });
    targets
        .into_iter()
        .filter(|target| {
            let Some(row) = &target.row else { return false };
            let kept = row.known_status().is_some_and(Status::is_kept);
            let updated = crate::base::time::parse_rfc3339(&row.updated_at);
            let due = match older_than {
                None => true,
                Some(age) => updated.is_some_and(|at| at + age < now) && !slimmed_since(store, &target.name, updated),
            };
            kept && due
        })
        .map(|target| Item::Instance(Request::plain(target)))
        .collect()
}

/// Whether the session's last slim came after `updated` (its last keep, or any later change).
fn slimmed_since(store: &Store, name: &InstanceName, updated: Option<std::time::SystemTime>) -> bool {
    let Ok(continuity) = crate::state::continuity::read(store, name) else { return false };
    let slimmed = continuity.slimmed.and_then(|s| crate::base::time::parse_rfc3339(&s.at));
    matches!((slimmed, updated), (Some(slimmed), Some(updated)) if slimmed >= updated)
}

#[cfg(test)]
#[path = "select_tests.rs"]
mod tests;
