//! Resuming a session (lifecycle.md, "Restore"): the same instance, container name, data dir and
//! worktrees, by the cheapest faithful tier. A failed restore never deletes anything.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use anyhow::{Context, Result};

use crate::base::exit::Exit;
use crate::engines::docker::{ContainerDetails, Engine};
use crate::engines::git::{self, Resumability};
use crate::protocol::assessment::Assessment;
use crate::protocol::envelope::Record;
use crate::protocol::identity::Identity;
use crate::protocol::records::{Candidate, Change, Restored};
use crate::state::continuity::{self, Continuity, HistoryEntry};
use crate::state::model::{IsolationKind, Manifest, Status};
use crate::state::names::InstanceName;
use crate::state::recipe::{self, ContainerRecipe, ContainerSpec, LaunchRecipe, NetworkRecipe, RECIPE_FORMAT};
use crate::state::select::Catalog;
use crate::state::store::Store;
use crate::tools::assess::{AssessOptions, Assessor};
use crate::tools::base_image;

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

/// Which tier a resume takes and the steps it will run; what stops it, if anything.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub tier: Option<u8>,
    pub(crate) steps: Vec<String>,
    /// What prevents the resume: unresolvable variables (by name), a diverged mount, an image
    /// that is gone with no source to rebuild it from.
    pub missing: Vec<String>,
    /// Variable names that cannot be resolved now (also in `missing`).
    pub(crate) missing_env: Vec<String>,
    pub(crate) drift: Vec<String>,
    /// The image the role container is created from (tiers 2 and 3).
    pub(crate) role_image: Option<String>,
    pub role: Option<ContainerDetails>,
    pub(crate) sidecar: Option<ContainerDetails>,
    /// `Config.User` of the role container (or of its recipe): who the attach command runs as.
    pub(crate) attach_user: Option<String>,
}

impl Plan {
    pub fn ready(&self) -> bool {
        self.tier.is_some() && self.missing.is_empty()
    }
}

/// What stops a resume (the preserved state is gone or unregistered), and what only drifted
/// (a worktree on another branch or a detached HEAD): (stops, drift).
pub(crate) fn divergences(store: &Store, name: &InstanceName) -> (Vec<String>, Vec<String>) {
    let isolation = match store.read_isolation(name) {
        Ok(isolation) => isolation,
        Err(e) => return (vec![format!("isolation records unreadable: {e:#}")], Vec::new()),
    };
    let (mut stops, mut drift) = (Vec::new(), Vec::new());
    for mount in isolation.mounts() {
        let state = match mount {
            Err(bad) => Resumability::Diverged(bad.reason),
            Ok(r) if r.isolation == IsolationKind::Worktree => {
                git::worktree_resumability(Path::new(&r.worktree_path), Path::new(&r.original_src), &r.scratch_branch)
            }
            Ok(r) => git::clone_resumability(Path::new(&r.worktree_path)),
        };
        match state {
            Resumability::Intact => {}
            Resumability::Drifted(note) => drift.push(note),
            Resumability::Diverged(why) => stops.push(why),
        }
    }
    (stops, drift)
}

/// Works out the tier from what Docker says now and what was captured.
pub(crate) fn plan(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    manifest: &Manifest,
    recipe: Option<&LaunchRecipe>,
) -> Result<Plan> {
    let (missing, drift) = divergences(store, name);
    let mut plan = Plan { missing, drift, ..Plan::default() };
    if let Some(recipe) = recipe.filter(|r| r.format > RECIPE_FORMAT) {
        plan.missing.push(format!(
            "the launch recipe is format {}, newer than the {RECIPE_FORMAT} this jackin-restore reads",
            recipe.format
        ));
        return Ok(plan);
    }
    let role = engine.inspect(&manifest.docker.role_container)?;
    let sidecar = match &manifest.docker.dind_container {
        Some(sidecar) => engine.inspect(sidecar)?,
        None => None,
    };
    match &role {
        Some(role) if role.state.running => {
            plan.tier = Some(0);
            plan.steps.push(format!("{} is running: nothing to start", role.name));
        }
        Some(role) => {
            plan.tier = Some(1);
            match recipe.and_then(|r| r.agent_toml.as_ref()) {
                Some(_) => plan.steps.push("rewrite agent.toml from the launch recipe".into()),
                None if store.agent_toml_path(name).exists() => {}
                None => plan.missing.push("agent.toml is gone and no launch recipe holds it".into()),
            }
            plan_resources(engine, recipe, role, &mut plan)?;
            if let Some(sidecar) = &sidecar {
                plan.steps.push(format!("start {} and wait until it is healthy", sidecar.name));
            }
            plan.steps.push(format!("start {}", role.name));
        }
        None => match recipe {
            None => plan.missing.push("no launch recipe: the session was lost before one was captured".into()),
            Some(recipe) => plan_recreate(engine, store, manifest, recipe, &mut plan)?,
        },
    }
    plan.attach_user = match &role {
        Some(role) => role.spec.user.clone(),
        None => recipe.and_then(|r| r.role.spec.user.clone()),
    };
    plan.role = role;
    plan.sidecar = sidecar;
    Ok(plan)
}

/// Tier 1: jackin's garbage collection removes the networks of roles that are not running; the
/// network (and the certs volume) come back from the recipe before the sidecar starts.
fn plan_resources(
    engine: &Engine,
    recipe: Option<&LaunchRecipe>,
    role: &ContainerDetails,
    plan: &mut Plan,
) -> Result<()> {
    if let Some(network) = &role.spec.network {
        match recipe.and_then(|r| r.network.as_ref()).filter(|n| n.name == *network) {
            Some(recorded) => plan_network(engine, recipe.map_or(RECIPE_FORMAT, |r| r.format), recorded, plan)?,
            None if engine.network_exists(network)? => {}
            None => plan.missing.push(format!("network {network} is gone and no launch recipe holds its shape")),
        }
    }
    if let Some(volume) = recipe.and_then(|r| r.certs_volume.as_ref()) {
        if !engine.volume_exists(volume)? {
            plan.steps.push(format!("create volume {volume}"));
        }
    }
    Ok(())
}

/// The recorded network: created when it is gone; one there already must not give an internal
/// session a route out.
fn plan_network(engine: &Engine, recipe_format: u32, recorded: &NetworkRecipe, plan: &mut Plan) -> Result<()> {
    match engine.network_shape(&recorded.name)? {
        None => {
            let internal = if recorded.internal { " (internal)" } else { "" };
            plan.steps.push(format!("create network {}{internal}", recorded.name));
            if recipe_format < 2 {
                plan.drift.push(format!(
                    "network {} is created from a first-format launch recipe, which did not record its driver, \
                     options or whether it was internal: the engine's defaults",
                    recorded.name
                ));
            }
        }
        Some(there) if recorded.internal && !there.internal => plan.missing.push(format!(
            "network {} was internal at launch and the one there now is not: it would give the session a route out",
            recorded.name
        )),
        Some(_) => {}
    }
    Ok(())
}

/// Creates the recorded network and certs volume when they are gone. Returns whether it created
/// the network.
fn ensure_resources(engine: &Engine, recipe: &LaunchRecipe, actions: &mut Vec<String>) -> Result<bool> {
    let mut network_created = false;
    if let Some(network) = &recipe.network {
        if !engine.network_exists(&network.name)? {
            engine.create_network(network)?;
            actions.push(format!("created network {}", network.name));
            network_created = true;
        }
    }
    if let Some(volume) = &recipe.certs_volume {
        if !engine.volume_exists(volume)? {
            engine.create_volume(volume)?;
            actions.push(format!("created volume {volume}"));
        }
    }
    Ok(network_created)
}

fn plan_recreate(
    engine: &Engine,
    store: &Store,
    manifest: &Manifest,
    recipe: &LaunchRecipe,
    plan: &mut Plan,
) -> Result<()> {
    let spec = &recipe.role.spec;
    let tag_id = engine.image_id(&spec.image)?;
    let recorded = if spec.image_id.is_empty() { None } else { engine.image_id(&spec.image_id)? };
    if tag_id.is_some() && tag_id.as_deref() == Some(spec.image_id.as_str()) {
        plan.tier = Some(2);
        plan.role_image = Some(spec.image.clone());
    } else if let Some(id) = recorded {
        plan.tier = Some(2);
        if let Some(moved_to) = tag_id {
            plan.drift.push(format!("image tag {} moved to {moved_to}; using the recorded image {id}", spec.image));
        }
        plan.role_image = Some(id);
    } else if let Some(sha) = manifest.role_git_sha.as_deref().filter(|_| !manifest.role_source_git.is_empty()) {
        match role_commit(store, manifest, sha) {
            Ok(commit) => {
                plan.tier = Some(3);
                let at = if commit == sha { commit } else { format!("{sha} ({commit})") };
                plan.steps.push(format!("build {} from {} at {at}", manifest.image_tag, manifest.role_source_git));
                plan.role_image = Some(manifest.image_tag.clone());
            }
            Err(e) => plan.missing.push(format!("the image is gone and cannot be rebuilt: {e:#}")),
        }
    } else {
        plan.missing.push(format!("image {} is gone and there is no source to rebuild it from", spec.image));
    }
    let mut bindings = match &plan.role_image {
        Some(image) => env_to_resolve(engine, recipe, &recipe.role, image)?,
        None => recipe.role.env.clone(),
    };
    if let Some(network) = &recipe.network {
        plan_network(engine, recipe.format, network, plan)?;
    }
    if let Some(volume) = &recipe.certs_volume {
        if !engine.volume_exists(volume)? {
            plan.steps.push(format!("create volume {volume}"));
        }
    }
    if let Some(sidecar) = &recipe.sidecar {
        match sidecar_image(engine, sidecar)? {
            Some(image) => bindings.extend(env_to_resolve(engine, recipe, sidecar, &image)?),
            None => plan.missing.push(format!("the sidecar image {} is gone", sidecar.spec.image)),
        }
        plan.steps.push(format!("create and start {} and wait until it is healthy", sidecar.spec.name));
    }
    if let Err(names) = recipe::resolve_env(&bindings, |n| std::env::var(n).ok(), recipe::op_read) {
        plan.missing.extend(names.iter().map(|n| format!("needs {n}")));
        plan.missing_env = names;
    }
    if recipe.agent_toml.is_some() {
        plan.steps.push("rewrite agent.toml from the launch recipe".into());
    }
    plan.steps.push(format!("create and start {}", spec.name));
    Ok(())
}

/// A session as restore decides on it: its manifest and continuity as reconcile left them (or,
/// in a dry run, would have left them), and the plan that resumes it.
pub struct Prepared {
    pub manifest: Manifest,
    pub kept: Continuity,
    pub plan: Plan,
}

pub fn prepare(engine: &Engine, store: &Store, name: &InstanceName, changes: &[Change]) -> Result<Prepared> {
    let mut manifest =
        store.read_manifest(name)?.ok_or_else(|| Exit::Partial.err(format_args!("{name}: no manifest")))?;
    let mut kept = continuity::read(store, name)?;
    as_reconciled(&mut manifest, &mut kept, changes);
    let plan = plan(engine, store, name, &manifest, kept.recipe.as_ref())?;
    Ok(Prepared { manifest, kept, plan })
}

/// In a dry run reconcile writes nothing: decide on the statuses it would have written.
fn as_reconciled(manifest: &mut Manifest, kept: &mut Continuity, changes: &[Change]) {
    if let Some(change) = changes.iter().rev().find(|c| c.identity.container_base == manifest.container_base) {
        manifest.status = change.to.clone();
        kept.cause = Some(change.cause.clone());
    }
}

/// Every session that can be resumed now, newest first, as the list shows them. `changes` are
/// what reconciliation just decided. A session whose files cannot be read is left out.
pub fn candidates(engine: &Engine, store: &Store, changes: &[Change], filters: &Filters) -> Result<Vec<Candidate>> {
    let assessor = Assessor::new(AssessOptions::default());
    let mut candidates = Vec::new();
    for target in Catalog::load(store)?.all() {
        let Ok(Some(mut manifest)) = store.read_manifest(&target.name) else { continue };
        let mut kept = continuity::read(store, &target.name).unwrap_or_default();
        as_reconciled(&mut manifest, &mut kept, changes);
        let status = Status::parse(&manifest.status);
        if !filters.admit(&manifest) || !resumable(status, true) {
            continue;
        }
        let plan = plan(engine, store, &target.name, &manifest, kept.recipe.as_ref())?;
        if !resumable(status, plan.role.is_some()) {
            continue;
        }
        let assessment = assessor.instance(store, &target.name, target.row.as_ref()).ok();
        candidates.push(candidate(&manifest, &kept, assessment.as_ref(), &plan, SystemTime::now()));
    }
    candidates.sort_by(|a, b| b.updated_at.cmp(&a.updated_at));
    Ok(candidates)
}

/// The `restored` record of a plan (`--plan`, `--dry-run`): the tier it would take, or none and why.
pub fn planned(manifest: &Manifest, plan: &Plan) -> Restored {
    Restored {
        identity: Identity::from_manifest(manifest),
        tier: plan.tier,
        missing: plan.missing.clone(),
        actions: plan.steps.clone(),
        attach: attach_argv(&manifest.docker.role_container, plan.attach_user.as_deref()),
        drift: plan.drift.clone(),
        dry_run: true,
    }
}

/// What a resume did, and what it found different from the launch on the way (tier 3's base).
#[derive(Debug, Default)]
pub struct Ran {
    pub actions: Vec<String>,
    pub drift: Vec<String>,
}

/// The `restored` record of a resume that ran.
pub fn resumed(manifest: &Manifest, plan: &Plan, ran: Ran) -> Restored {
    let mut drift = plan.drift.clone();
    drift.extend(ran.drift);
    Restored {
        tier: plan.tier,
        missing: Vec::new(),
        actions: ran.actions,
        drift,
        dry_run: false,
        ..planned(manifest, plan)
    }
}

/// How long a sidecar may take to answer its health command.
#[derive(Debug, Clone, Copy)]
pub struct Waits {
    pub health: Duration,
}

/// Runs the plan. Returns the actions taken and the drift found. Never deletes anything.
pub fn execute(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    manifest: &Manifest,
    recipe: Option<&LaunchRecipe>,
    plan: &Plan,
    waits: Waits,
) -> Result<Ran> {
    let mut actions = Vec::new();
    let mut drift = Vec::new();
    match plan.tier {
        Some(0) => actions.push("nothing to start: the session is running".to_owned()),
        Some(1) => {
            if let Some(text) = recipe.and_then(|r| r.agent_toml.as_ref()) {
                store.write_agent_toml(name, text)?;
                actions.push("rewrote agent.toml".to_owned());
            }
            let network_created = match recipe {
                Some(recipe) => ensure_resources(engine, recipe, &mut actions)?,
                None => false,
            };
            if network_created {
                for container in plan.sidecar.iter().chain(&plan.role) {
                    if let Some(network) = &container.spec.network {
                        engine.reconnect(&container.name, network, &container.spec.aliases)?;
                    }
                }
            }
            if let Some(sidecar) = &plan.sidecar {
                engine.start(&sidecar.name)?;
                let health = sidecar
                    .spec
                    .healthcheck
                    .as_deref()
                    .and_then(recipe::health_argv)
                    .or_else(|| recipe.and_then(|r| r.sidecar.as_ref()?.health.clone()))
                    .unwrap_or_else(|| vec!["docker".into(), "info".into()]);
                wait_healthy(engine, &sidecar.name, &health, waits.health)?;
                actions.push(format!("started {} (healthy)", sidecar.name));
            }
            engine.start(&manifest.docker.role_container)?;
            actions.push(format!("started {}", manifest.docker.role_container));
        }
        Some(tier @ (2 | 3)) => {
            let recipe = recipe.context("no launch recipe")?;
            let image = plan.role_image.clone().context("no image to create the role container from")?;
            if tier == 3 {
                drift.extend(build_role_image(engine, store, manifest)?);
                actions.push(format!(
                    "built {} from {} at {}",
                    manifest.image_tag,
                    manifest.role_source_git,
                    manifest.role_git_sha.as_deref().unwrap_or_default()
                ));
            }
            recreate(engine, store, name, recipe, &image, waits, &mut actions)?;
        }
        _ => anyhow::bail!("this session cannot be resumed: {}", plan.missing.join("; ")),
    }
    Ok(Ran { actions, drift })
}

/// The sidecar's image: the recorded ID, else the tag; `None` when both are gone.
fn sidecar_image(engine: &Engine, sidecar: &ContainerRecipe) -> Result<Option<String>> {
    for reference in [&sidecar.spec.image_id, &sidecar.spec.image] {
        if !reference.is_empty() && engine.image_id(reference)?.is_some() {
            return Ok(Some(reference.clone()));
        }
    }
    Ok(None)
}

/// The variables to resolve for a container created from `image`: the launch's own, never the
/// image's (real-host.md, "Environment").
fn env_to_resolve(
    engine: &Engine,
    recipe: &LaunchRecipe,
    container: &ContainerRecipe,
    image: &str,
) -> Result<Vec<recipe::EnvBinding>> {
    if recipe.format >= RECIPE_FORMAT {
        return Ok(container.env.clone());
    }
    let image_env = engine.image_defaults(image)?.unwrap_or_default().env;
    let exec_sources = recipe.agent_toml.as_deref().map(recipe::exec_binding_sources).unwrap_or_default();
    Ok(recipe::bindings_to_resolve(recipe.format, &container.env, &image_env, &exec_sources))
}

/// The shape to create: a format 1 recipe recorded the image's anonymous volumes by name too.
fn spec_to_create(
    engine: &Engine,
    recipe: &LaunchRecipe,
    container: &ContainerRecipe,
    image: &str,
) -> Result<ContainerSpec> {
    let mut spec = container.spec.clone();
    if recipe.format < RECIPE_FORMAT {
        let volumes = engine.image_defaults(image)?.unwrap_or_default().volumes;
        spec.mounts = recipe::mounts_of_launch(&spec.mounts, &volumes);
    }
    Ok(spec)
}

fn resolved_env(
    engine: &Engine,
    recipe: &LaunchRecipe,
    container: &ContainerRecipe,
    image: &str,
) -> Result<Vec<String>> {
    let bindings = env_to_resolve(engine, recipe, container, image)?;
    recipe::resolve_env(&bindings, |n| std::env::var(n).ok(), recipe::op_read).map_err(|missing| {
        Exit::Partial.err(format_args!("cannot resolve {}: nothing was started", missing.join(", ")))
    })
}

fn recreate(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    recipe: &LaunchRecipe,
    image: &str,
    waits: Waits,
    actions: &mut Vec<String>,
) -> Result<()> {
    // Every value first: a missing one must stop the restore before anything exists.
    let role_env = resolved_env(engine, recipe, &recipe.role, image)?;
    let sidecar = match &recipe.sidecar {
        Some(sidecar) => {
            let image = sidecar_image(engine, sidecar)?.unwrap_or_else(|| sidecar.spec.image.clone());
            Some((sidecar, resolved_env(engine, recipe, sidecar, &image)?, image))
        }
        None => None,
    };
    ensure_resources(engine, recipe, actions)?;
    if let Some((sidecar, env, sidecar_image)) = sidecar {
        if engine.inspect(&sidecar.spec.name)?.is_none() {
            engine.create_container(&spec_to_create(engine, recipe, sidecar, &sidecar_image)?, &sidecar_image, env)?;
        }
        engine.start(&sidecar.spec.name)?;
        let health = sidecar.health.clone().unwrap_or_else(|| vec!["docker".into(), "info".into()]);
        wait_healthy(engine, &sidecar.spec.name, &health, waits.health)?;
        actions.push(format!("recreated {} (healthy)", sidecar.spec.name));
    }
    if let Some(text) = &recipe.agent_toml {
        store.write_agent_toml(name, text)?;
        actions.push("rewrote agent.toml".to_owned());
    }
    engine.create_container(&spec_to_create(engine, recipe, &recipe.role, image)?, image, role_env)?;
    engine.start(&recipe.role.spec.name)?;
    actions.push(format!("recreated {} from {image}", recipe.role.spec.name));
    Ok(())
}

/// Runs the health command until it succeeds, backing off, up to `timeout`.
pub(crate) fn wait_healthy(engine: &Engine, container: &str, argv: &[String], timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(100);
    loop {
        let code = engine.exec_status(container, argv)?;
        if code == 0 {
            return Ok(());
        }
        if Instant::now() + delay > deadline {
            anyhow::bail!(
                "{container} did not become healthy within {}s: `{}` last exited {code}",
                timeout.as_secs(),
                argv.join(" ")
            );
        }
        std::thread::sleep(delay);
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

/// The full id of the recorded role commit. A full id is taken as it is (the build fetches it);
/// an abbreviation (jackin records 7 characters when it reused an image) is resolved in the
/// fetched source now, so that a plan never promises tier 3 on an unknown or ambiguous one.
fn role_commit(store: &Store, manifest: &Manifest, sha: &str) -> Result<String> {
    if sha.len() == 40 {
        return Ok(sha.to_owned());
    }
    let cache = store.role_source_cache(&manifest.role_source_git);
    git::role_commit(&cache, &manifest.role_source_git, sha)
}

/// Tier 3: the role's source at exactly the recorded commit, built by the engine on the recorded
/// base image when the manifest has one. Returns the drift found in the Dockerfile's base.
fn build_role_image(engine: &Engine, store: &Store, manifest: &Manifest) -> Result<Option<String>> {
    let sha = manifest.role_git_sha.as_deref().context("no role_git_sha recorded")?;
    let sha = &role_commit(store, manifest, sha)?;
    let cache = store.role_source_cache(&manifest.role_source_git);
    let mut context = git::source_tar(&cache, &manifest.role_source_git, sha)?;
    let mut drift = None;
    if let Some(base) =
        base_image::recorded_base(manifest.base_image_ref.as_deref(), manifest.base_image_digest.as_deref())
    {
        (context, drift) = base_image::pin_in_context(context, &base)?;
    }
    let labels = std::collections::BTreeMap::from([("jackin.role_git_sha".to_owned(), sha.to_owned())]);
    engine.build_image(context, &manifest.image_tag, &labels)?;
    Ok(drift)
}

/// After a successful start: `active` (manifest, then index), the isolation records back to
/// `active`, and the history.
pub fn mark_resumed(store: &Store, name: &InstanceName, manifest: &Manifest, tier: u8) -> Result<()> {
    let now = crate::base::time::now_rfc3339();
    store.set_status(name, Status::Active, &now)?;
    let mut isolation = store.read_isolation(name)?;
    if !isolation.records.is_empty() {
        isolation.set_cleanup_status("active");
        store.write_isolation(name, &isolation)?;
    }
    continuity::update(store, name, |c| {
        c.history.push(HistoryEntry {
            at: now.clone(),
            tool: "jackin-restore".into(),
            from: manifest.status.clone(),
            to: Status::Active.as_str().into(),
            cause: "resumed".into(),
            evidence: serde_json::json!({ "tier": tier }),
        });
        c.cause = None;
        c.evidence = None;
        Ok(((), true))
    })
}

/// Where jackin's agent capsule lives in a role container.
const CAPSULE: &str = "/jackin/runtime/jackin-capsule";

/// The argv that reconnects an operator to the session: jackin's capsule reconnect, as the
/// container's user (`docker attach` would reach PID 1, which is not the agent).
pub(crate) fn attach_argv(container: &str, user: Option<&str>) -> Vec<String> {
    let mut argv: Vec<String> = vec!["docker".into(), "exec".into(), "-it".into()];
    if let Some(user) = user.filter(|u| !u.is_empty()) {
        argv.extend(["--user".into(), user.into()]);
    }
    argv.extend([container.into(), CAPSULE.into()]);
    argv
}

/// `2h ago`, `3d ago`.
pub(crate) fn age(since: &str, now: SystemTime) -> String {
    let Some(then) = crate::base::time::parse_rfc3339(since) else { return "some time ago".into() };
    let secs = now.duration_since(then).map(|d| d.as_secs()).unwrap_or(0);
    match secs {
        0..=59 => "just now".into(),
        60..=3599 => format!("{}m ago", secs / 60),
        3600..=86_399 => format!("{}h ago", secs / 3600),
        _ => format!("{}d ago", secs / 86_400),
    }
}

fn cause_words(cause: Option<&str>) -> Option<&'static str> {
    match cause? {
        "killed_by_host" => Some("interrupted by host"),
        "container_exited" => Some("exited"),
        "container_removed" => Some("container removed"),
        _ => None,
    }
}

/// The `candidate` record of one resumable session.
pub(crate) fn candidate(
    manifest: &Manifest,
    continuity: &Continuity,
    assessment: Option<&Assessment>,
    plan: &Plan,
    now: SystemTime,
) -> Candidate {
    let short = format!("jk-{}", manifest.instance_id);
    let age = age(&manifest.updated_at, now);
    let when = match cause_words(continuity.cause.as_deref()) {
        Some(words) => format!("{words} {age}"),
        None => age,
    };
    let summary = assessment.map(|a| a.summary.clone()).unwrap_or_else(|| "not assessed".into());
    let label = if plan.ready() {
        format!("Resume {short} · {when} · {summary} · ready")
    } else if !plan.missing_env.is_empty() && plan.missing.len() == plan.missing_env.len() {
        format!("{short} · {when} · {summary} · needs {}", plan.missing_env.join(", "))
    } else {
        format!("{short} · {when} · {summary} · cannot resume: {}", plan.missing.join("; "))
    };
    Candidate {
        identity: Identity::from_manifest(manifest),
        status: manifest.status.clone(),
        cause: continuity.cause.clone(),
        updated_at: manifest.updated_at.clone(),
        verdict: assessment.map(|a| a.verdict.as_str().to_owned()),
        summary,
        tier: plan.tier,
        ready: plan.ready(),
        missing: plan.missing.clone(),
        label,
    }
}

/// The preserved work is shown and acknowledged on the terminal before anything starts.
pub fn acknowledge(assessment: &Assessment, yes: bool) -> Result<()> {
    if yes {
        return Ok(());
    }
    let Ok(tty) = std::fs::OpenOptions::new().read(true).write(true).open("/dev/tty") else {
        return Err(Exit::Usage.err("no terminal to show the preserved work on\n  hint: pass --yes to acknowledge it"));
    };
    let mut out = &tty;
    writeln!(out, "Preserved work of this session:\n{}\n", assessment.text())?;
    write!(out, "Press Enter to resume it, or Ctrl-C to stop: ")?;
    out.flush()?;
    let mut line = String::new();
    if BufReader::new(&tty).read_line(&mut line)? == 0 {
        return Err(Exit::Interrupted.err("not acknowledged; nothing was changed"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_read_like_people_talk() {
        let now = crate::base::time::parse_rfc3339("2026-11-29T12:00:00Z").unwrap();
        assert_eq!(age("2026-11-29T10:00:00Z", now), "2h ago");
        assert_eq!(age("2026-11-29T11:40:00Z", now), "20m ago");
        assert_eq!(age("2026-11-26T12:00:00Z", now), "3d ago");
        assert_eq!(age("nonsense", now), "some time ago");
    }

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
