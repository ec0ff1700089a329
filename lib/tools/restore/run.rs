//! Running a plan: its steps in their order, each as the plan says it, and the statuses of a
//! session resumed. Every variable is resolved before the first step, so one that cannot be
//! stops the resume before anything changes. Never deletes anything of the session's: the only
//! container it removes is one that no longer matched the launch recipe, once its replacement is
//! made and checked (`Run::replace`), and what it made itself.

use super::base_image;
use super::drift;
use super::plan::Plan;
use super::plan::{Step, Tier, ToCreate};
use crate::base::exit::Exit;
use crate::base::tool::Tool;
use crate::engines::docker::Engine;
use crate::engines::git;
use crate::protocol::evidence::{history_entry, Because, Evidence, Resumed};
use crate::services::ownership::{self, HomeRoots};
use crate::state::continuity;
use crate::state::model::Manifest;
use crate::state::model::Status;
use crate::state::names::InstanceName;
use crate::state::recipe;
use crate::state::recipe::ContainerRecipe;
use crate::state::recipe::ContainerSpec;
use crate::state::recipe::LaunchRecipe;
use crate::state::store::Store;
use anyhow::{Context, Result};
use std::time::Duration;
use std::time::Instant;

/// What a resume did (the plan's steps, in the plan's words), and what it found different from
/// the launch on the way (tier 3's base).
#[derive(Debug, Default)]
pub struct Ran {
    pub actions: Vec<String>,
    pub drift: Vec<String>,
}

/// How long a sidecar may take to answer its health command.
#[derive(Debug, Clone, Copy)]
pub struct Waits {
    pub health: Duration,
}

/// The exit code of a resume that failed: 4 (unavailable) when its role source could not be
/// fetched, since tier 3 fetches before it creates anything; 6 (partial) for a failure after
/// something may have been created.
pub fn failure_exit(error: &anyhow::Error) -> Exit {
    if git::is_fetch_failure(error) {
        Exit::Unavailable
    } else {
        Exit::Partial
    }
}

/// What the steps share as they run.
struct Run<'a> {
    engine: &'a Engine,
    store: &'a Store,
    name: &'a InstanceName,
    manifest: &'a Manifest,
    recipe: Option<&'a LaunchRecipe>,
    waits: Waits,
}

/// Runs the plan's steps, in order. Returns them as done and the drift found.
pub fn execute(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    manifest: &Manifest,
    recipe: Option<&LaunchRecipe>,
    plan: &Plan,
    waits: Waits,
) -> Result<Ran> {
    let Some(tier) = plan.tier.filter(|_| plan.missing.is_empty()) else {
        anyhow::bail!("this session cannot be resumed: {}", plan.missing.join("; "))
    };
    // Every value first: a variable that cannot be resolved stops the resume before anything
    // changes.
    let none = std::collections::BTreeMap::new();
    let literals = recipe.map_or(&none, |r| &r.config_literals);
    let mut envs = Vec::new();
    for step in &plan.steps {
        envs.push(match step {
            Step::RecreateSidecar(c)
            | Step::CreateSidecar(c)
            | Step::CreateRole(c)
            | Step::ReplaceSidecar(c)
            | Step::ReplaceRole(c) => resolved_env(c, literals)?,
            _ => Vec::new(),
        });
    }
    let run = Run { engine, store, name, manifest, recipe, waits };
    let mut ran = Ran::default();
    let mut resources_done = false;
    for (step, env) in plan.steps.iter().zip(envs) {
        let resource = matches!(step, Step::BuildRole { .. } | Step::CreateNetwork(_) | Step::CreateVolume(_));
        if tier >= Tier::Recreate && !resource && !resources_done {
            crash_point("resources");
            resources_done = true;
        }
        ran.drift.extend(run.step(step, env)?);
        ran.actions.push(step.text());
    }
    Ok(ran)
}

impl Run<'_> {
    /// Runs one step; the drift it found.
    fn step(&self, step: &Step, env: Vec<String>) -> Result<Option<String>> {
        let engine = self.engine;
        match step {
            Step::NothingToStart { .. } => {}
            Step::RewriteAgentToml => {
                let text = self.recipe.and_then(|r| r.agent_toml.as_ref()).context("no agent.toml in the recipe")?;
                self.store.write_agent_toml(self.name, text)?;
            }
            Step::CreateNetwork(network) => engine.create_network(network)?,
            Step::CreateVolume(volume) => engine.create_volume(volume)?,
            Step::Reconnect { container, network, aliases } => engine.reconnect(container, network, aliases)?,
            Step::StartSidecar { name, health } => {
                engine.start(name)?;
                wait_healthy(engine, name, health, self.waits.health)?;
            }
            Step::RecreateSidecar(sidecar) => self.bring_up_sidecar(sidecar, env)?,
            Step::CreateSidecar(sidecar) => {
                self.bring_up_sidecar(sidecar, env)?;
                crash_point("sidecar");
            }
            Step::BuildRole { commit, .. } => {
                let commit = commit.as_deref().context("the role commit was not resolved")?;
                return build_role_image(engine, self.store, self.manifest, commit);
            }
            Step::StartRole { name } => engine.start(name)?,
            Step::CreateRole(role) => {
                // A replacement killed after it removed the old container left the new one under
                // its interim name: made again here instead. A name taken already (a rerun after
                // a run killed half-way) is the one there.
                self.remove_leftover(&role.spec.name)?;
                self.create(role, self.recorded(false)?, &role.spec.name, env)?;
                crash_point("created");
                engine.start(&role.spec.name)?;
                crash_point("started");
            }
            Step::ReplaceSidecar(sidecar) => self.replace(sidecar, env, true)?,
            Step::ReplaceRole(role) => self.replace(role, env, false)?,
        }
        Ok(None)
    }

    /// The recipe of the sidecar or of the role container, which a step creates.
    fn recorded(&self, sidecar: bool) -> Result<&ContainerRecipe> {
        let recipe = self.recipe.context("no launch recipe")?;
        match sidecar {
            true => recipe.sidecar.as_ref().context("no sidecar in the launch recipe"),
            false => Ok(&recipe.role),
        }
    }

    /// Creates `new` under `name`, labelled with the fingerprint of its recipe and of the image
    /// the engine resolves its image to now (tier 3's, just built): a later tier 1 knows the
    /// container was made from this recipe (drift.rs).
    fn create(&self, new: &ToCreate, recorded: &ContainerRecipe, name: &str, env: Vec<String>) -> Result<()> {
        let mut spec = ContainerSpec { name: name.to_owned(), ..new.spec.clone() };
        // An image that is gone gets no label: the create below fails on it, in the engine's words.
        spec.made_from = self.engine.image_id(&new.image)?.map(|id| recipe::fingerprint(recorded, &id));
        self.engine.create_container(&spec, &new.image, env).map(drop)
    }

    /// Creates the sidecar from the recipe (one there already, from a run killed half-way, is
    /// taken as it is; one left under its interim name by a replacement killed after it removed
    /// the old one is made again), starts it and waits until it is healthy.
    fn bring_up_sidecar(&self, sidecar: &ToCreate, env: Vec<String>) -> Result<()> {
        let name = &sidecar.spec.name;
        self.remove_leftover(name)?;
        self.create(sidecar, self.recorded(true)?, name, env)?;
        self.engine.start(name)?;
        wait_healthy(self.engine, name, &sidecar.health, self.waits.health)
    }

    /// Replaces the container `new` names, there and no longer what its recipe makes, create
    /// before destroy: the new one is created under its interim name ([`crate::state::names::interim_container`]) and
    /// checked (its image, mounts, variable names and network are the recipe's; a sidecar is
    /// started and waited for), and only then is the old one removed (with its anonymous volumes,
    /// as purge removes one), the new one renamed to the real name and started. Until the old one
    /// is removed, a failure leaves it as it was (same ID, name and state) and removes the interim
    /// one, which holds nothing of the session yet.
    ///
    /// A rerun after a run killed at any point: before the removal the old one still drifts, and
    /// the replacement starts over (what is under the interim name goes first); after it, the
    /// session's container is gone (tier 2, or a removed sidecar) and its creation removes the
    /// interim one first; after the rename the new one is there, made from the recipe (tier 1).
    ///
    /// While both exist the role container is stopped, so nothing on the session's network
    /// resolves the name or the aliases the two share; the engine moves the name with the
    /// rename.
    fn replace(&self, new: &ToCreate, env: Vec<String>, sidecar: bool) -> Result<()> {
        let (engine, name, recorded) = (self.engine, &new.spec.name, self.recorded(sidecar)?);
        let interim = crate::state::names::interim_container(name);
        self.remove_leftover(name)?;
        self.create(new, recorded, &interim, env)?;
        crash_point("replacement-created");
        if let Err(e) = self.check_replacement(&interim, new, recorded, sidecar) {
            let removed = engine.remove_container(&interim).err().map(|r| format!(" (and removing it failed: {r:#})"));
            return Err(e.context(format!(
                "{name} was not replaced and is left as it was; the replacement {interim} is removed{}",
                removed.unwrap_or_default()
            )));
        }
        engine.remove_container(name)?;
        crash_point("replacement-old-removed");
        engine.rename(&interim, name)?;
        crash_point("replacement-renamed");
        engine.start(name)
    }

    /// Removes what a run killed half-way left under `container`'s interim name, when it is the
    /// session's own as teardown judges one (services/ownership.rs: restore made it, and it
    /// reaches into no other home). Anything else by that name is not touched, and stops the step.
    fn remove_leftover(&self, container: &str) -> Result<()> {
        let interim = crate::state::names::interim_container(container);
        let Some(left) = self.engine.inspect(&interim)? else { return Ok(()) };
        let roots = HomeRoots::of(self.store);
        match ownership::judge_details(&roots, self.name, &self.manifest.docker, &left) {
            Ok(()) => self.engine.remove_container(&interim).map(drop),
            Err(why) => anyhow::bail!("{interim} is in the way and is not this session's ({why}): left alone"),
        }
    }

    /// That the container `interim` is what `recorded` makes, and labelled so; a sidecar started
    /// and healthy too.
    fn check_replacement(
        &self,
        interim: &str,
        new: &ToCreate,
        recorded: &ContainerRecipe,
        sidecar: bool,
    ) -> Result<()> {
        let details = self.engine.inspect(interim)?.with_context(|| format!("{interim} is gone once created"))?;
        let image = self.engine.image_defaults(&details.spec.image_id)?;
        let mut differences = drift::differences(recorded, &details, image.as_ref());
        if !drift::made_from(recorded, &details) {
            differences.push("it does not carry the fingerprint of the launch recipe".into());
        }
        if !differences.is_empty() {
            anyhow::bail!("{interim} does not match the launch recipe: {}", differences.join("; "));
        }
        if sidecar {
            self.engine.start(interim)?;
            wait_healthy(self.engine, interim, &new.health, self.waits.health)?;
        }
        Ok(())
    }
}

/// The values of a container's variables, read now (never written to a file).
fn resolved_env(container: &ToCreate, literals: &std::collections::BTreeMap<String, String>) -> Result<Vec<String>> {
    recipe::resolve_env(&container.env, literals, |n| std::env::var(n).ok(), recipe::op_read).map_err(|missing| {
        Exit::Partial.err(format_args!("cannot resolve {}: nothing was started", missing.join(", ")))
    })
}

/// Runs the health command until it succeeds, backing off, up to `timeout`: the last try is at
/// the deadline, so "not healthy within N s" means N seconds were waited.
pub(crate) fn wait_healthy(engine: &Engine, container: &str, argv: &[String], timeout: Duration) -> Result<()> {
    let deadline = Instant::now() + timeout;
    let mut delay = Duration::from_millis(100);
    loop {
        let code = engine.exec_status(container, argv)?;
        if code == 0 {
            return Ok(());
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            anyhow::bail!(
                "{container} did not become healthy within {}s: `{}` last exited {code}",
                timeout.as_secs(),
                argv.join(" ")
            );
        }
        std::thread::sleep(delay.min(left));
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

/// Tier 3: the role's source at exactly the recorded commit (`sha`, resolved by the plan), built by the engine on the recorded
/// base image when the manifest has one. Returns the drift found in the Dockerfile's base.
fn build_role_image(engine: &Engine, store: &Store, manifest: &Manifest, sha: &str) -> Result<Option<String>> {
    let cache = store.role_source_cache(&manifest.role_source_git);
    let mut context = git::source_tar(&cache, &manifest.role_source_git, sha)?;
    let mut drift = None;
    if let Some(base) =
        base_image::recorded_base(manifest.base_image_ref.as_deref(), manifest.base_image_digest.as_deref())
    {
        (context, drift) = base_image::pin_in_context(context, &base)?;
    }
    let labels = std::collections::BTreeMap::from([("jackin.role_git_sha".to_owned(), sha.to_owned())]);
    // The engine's words alone ("Get https://registry-1.docker.io/v2/: no such host") name
    // neither the commit nor the base being pulled.
    let recorded: Vec<&str> = [&manifest.base_image_ref, &manifest.base_image_digest]
        .into_iter()
        .flatten()
        .map(String::as_str)
        .filter(|s| !s.is_empty())
        .collect();
    let on_base = match recorded.join("@") {
        base if base.is_empty() => String::new(),
        base => format!(" (recorded base image {base})"),
    };
    engine
        .build_image(context, &manifest.image_tag, &labels)
        .with_context(|| format!("the role source {} at {sha} does not build{on_base}", manifest.role_source_git))?;
    Ok(drift)
}

/// After a successful start: `active` (manifest, then index), the isolation records back to
/// `active`, and the history.
pub fn mark_resumed(store: &Store, name: &InstanceName, manifest: &Manifest, tier: Tier) -> Result<()> {
    let now = crate::base::time::now_rfc3339();
    store.set_status(name, Status::Active, &now)?;
    crash_point("stamped");
    let mut isolation = store.read_isolation(name)?;
    if !isolation.records.is_empty() {
        isolation.set_cleanup_status("active");
        store.write_isolation(name, &isolation)?;
    }
    continuity::update(store, name, |c| {
        let evidence = Evidence::Resumed(Resumed { tier: tier.number() });
        let because = Because::Resumed;
        c.history.push(history_entry(&now, Tool::Restore, &manifest.status, Status::Active, because, &evidence)?);
        c.cause = None;
        c.evidence = None;
        Ok(((), true))
    })
}

/// A test-only failure point of a tier 2 or 3 resume (base/crash.rs).
fn crash_point(step: &str) {
    crate::base::crash::point(crate::base::tool::Tool::Restore, CRASH_POINTS, step);
}

/// A resume's crash points, in the order a run passes them: tiers 2 and 3, then a tier-1 drift's
/// replacement (each container replaced passes its three), then the statuses (every tier).
pub const CRASH_POINTS: &[&str] = &[
    "resources",
    "sidecar",
    "created",
    "started",
    "replacement-created",
    "replacement-old-removed",
    "replacement-renamed",
    "stamped",
];
