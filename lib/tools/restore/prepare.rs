//! The session as restore decides on it: its manifest and continuity as reconcile left them (or
//! would have), the recipe's sources as jackin's config gives them now, and the plan; the records
//! a plan and a resume print; which statuses resume at all; the attach command; the list's
//! filters. What the other files of restore share, beside them rather than above them.

use anyhow::Result;

use super::observe::Asking;
use super::observe::RoleSource;
use super::plan::{plan, Plan, Tier};
use super::run::Ran;
use crate::base::exit::Exit;
use crate::engines::docker::Engine;
use crate::protocol::identity::Identity;
use crate::protocol::records::{Change, Restored};
use crate::state::continuity::{self, Continuity};
use crate::state::model::{Manifest, Status};
use crate::state::names::InstanceName;
use crate::state::recipe;
use crate::state::store::Store;

/// `--workspace`, `--role`, `--agent`, `--workdir`.
#[derive(Debug, Clone, Default)]
pub struct Filters {
    pub workspace: Option<String>,
    pub role: Option<String>,
    pub agent: Option<String>,
    pub workdir: Option<String>,
}

impl Filters {
    pub(crate) fn admit(&self, m: &Manifest) -> bool {
        let matches = |want: &Option<String>, have: Option<&str>| want.as_deref().is_none_or(|w| have == Some(w));
        matches(&self.workspace, m.workspace_name.as_deref().or(Some(&m.workspace_label)))
            && matches(&self.role, Some(&m.role_key))
            && matches(&self.agent, Some(&m.agent_runtime))
            && matches(&self.workdir, Some(&m.workdir))
    }
}

/// Whether a status can be resumed at all; `active`/`running` only with a container to go to.
pub fn resumable(status: Option<Status>, has_container: bool) -> bool {
    match status {
        Some(Status::RestoreAvailable | Status::PreservedDirty | Status::PreservedUnpushed) => true,
        Some(Status::Crashed | Status::FailedSetup) => true,
        Some(Status::Active | Status::Running) => has_container,
        _ => false,
    }
}

/// A session as restore decides on it: its manifest and continuity as reconcile left them (or,
/// in a dry run, would have left them), and the plan that resumes it. A dry run prepares with
/// [`RoleSource::Cached`], so that it writes nothing.
pub struct Prepared {
    pub manifest: Manifest,
    pub kept: Continuity,
    pub plan: Plan,
}

pub fn prepare(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    changes: &[Change],
    role_source: RoleSource,
    as_is: bool,
) -> Result<Prepared> {
    let mut manifest =
        store.read_manifest(name)?.ok_or_else(|| Exit::Partial.err(format_args!("{name}: no manifest")))?;
    let mut kept = continuity::read(store, name)?;
    as_reconciled(&mut manifest, &mut kept, changes);
    let distrusted = trust_sources(store, &manifest, &mut kept)?;
    let mut plan = plan(Asking::each(engine), store, name, &manifest, kept.recipe.as_ref(), role_source, as_is)?;
    plan.drift.extend(distrusted);
    Ok(Prepared { manifest, kept, plan })
}

/// The recipe's variables read only the sources jackin's config gives them now
/// ([`recipe::distrust_sources`]), and the text the config gives its literals, in memory; what
/// was changed, as drift.
pub(crate) fn trust_sources(store: &Store, manifest: &Manifest, kept: &mut Continuity) -> Result<Vec<String>> {
    let Some(recipe) = kept.recipe.as_mut() else { return Ok(Vec::new()) };
    let launch = crate::state::config::launch_env(
        &store.roots.config_dir,
        manifest.workspace_name.as_deref(),
        &manifest.role_key,
    )?;
    let changed = recipe::distrust_sources(recipe, &launch.sources);
    recipe.config_literals = launch.literals;
    Ok(changed)
}

/// In a dry run reconcile writes nothing: decide on the statuses it would have written.
pub(super) fn as_reconciled(manifest: &mut Manifest, kept: &mut Continuity, changes: &[Change]) {
    if let Some(change) = changes.iter().rev().find(|c| c.identity.container_base == manifest.container_base) {
        manifest.status = change.to.clone();
        kept.cause = Some(crate::state::continuity::CauseKind::from(change.cause).into());
    }
}

/// The `restored` record of a plan (`--plan`, `--dry-run`): the tier it would take, or none and why.
pub fn planned(manifest: &Manifest, plan: &Plan) -> Restored {
    Restored {
        identity: Identity::from_manifest(manifest),
        tier: plan.tier.map(Tier::number),
        missing: plan.missing.clone(),
        actions: plan.actions(),
        attach: attach_argv(&manifest.docker.role_container, plan.attach_user.as_deref()),
        drift: plan.drift.clone(),
        dry_run: true,
    }
}

/// The `restored` record of a resume that ran.
pub fn resumed(manifest: &Manifest, plan: &Plan, ran: Ran) -> Restored {
    let mut drift = plan.drift.clone();
    drift.extend(ran.drift);
    Restored { missing: Vec::new(), actions: ran.actions, drift, dry_run: false, ..planned(manifest, plan) }
}

/// Where jackin's agent capsule lives in a role container.
const CAPSULE: &str = "/jackin/runtime/jackin-capsule";

/// The argv that reconnects an operator to the session. Where jackin is installed (a `jackin` on
/// PATH), its own `jackin hardline C`: jackin's finalizer runs when that attach returns and
/// settles the session as jackin's own exit does (its exit policy, its row and manifest), where
/// the capsule reconnect alone would leave the row `active` after a clean exit, to be called a
/// crash later (issue 65). Elsewhere jackin's capsule reconnect, as the container's user
/// (`docker attach` would reach PID 1, which is not the agent).
pub(crate) fn attach_argv(container: &str, user: Option<&str>) -> Vec<String> {
    if jackin_installed() {
        return vec!["jackin".into(), "hardline".into(), container.into()];
    }
    let mut argv: Vec<String> = vec!["docker".into(), "exec".into(), "-it".into()];
    if let Some(user) = user.filter(|u| !u.is_empty()) {
        argv.extend(["--user".into(), user.into()]);
    }
    argv.extend([container.into(), CAPSULE.into()]);
    argv
}

/// Whether a `jackin` program is on PATH: the operator's launcher, whose attach the tools hand
/// the session back to. Looked up once per process: a sweep plans many sessions.
fn jackin_installed() -> bool {
    use std::os::unix::fs::PermissionsExt;
    static INSTALLED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *INSTALLED.get_or_init(|| {
        let Some(path) = std::env::var_os("PATH") else { return false };
        std::env::split_paths(&path).filter(|dir| dir.is_absolute()).any(|dir| {
            std::fs::metadata(dir.join("jackin")).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_kept_crashed_and_live_sessions_resume() {
        assert!(resumable(Some(Status::RestoreAvailable), false));
        assert!(resumable(Some(Status::Crashed), false));
        assert!(resumable(Some(Status::FailedSetup), false));
        assert!(!resumable(Some(Status::Active), false));
        assert!(resumable(Some(Status::Running), true));
        assert!(!resumable(Some(Status::CleanExited), true));
        assert!(!resumable(None, true));
    }
}
