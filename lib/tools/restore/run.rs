//! Running a plan: the resources, containers and image of each tier, the health wait, and the
//! statuses of a session resumed. Never deletes anything.

use super::plan::{env_to_resolve, role_commit, sidecar_image, RoleSource};
use super::*;
use crate::protocol::evidence::{Evidence, Resumed};

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

/// What a resume did, and what it found different from the launch on the way (tier 3's base).
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
        Some(0) => {
            let recreated = sidecar_to_recreate_if_planned(engine, recipe, plan)?;
            if let Some((recipe, _)) = &recreated {
                ensure_resources(engine, recipe, &mut actions)?;
            }
            let stopped = plan.sidecar.as_ref().filter(|s| !s.state.running);
            if recreated.is_none() && stopped.is_none() {
                actions.push("nothing to start: the session is running".to_owned());
            }
            sidecar_up(engine, recipe, recreated, stopped, waits, &mut actions)?;
        }
        Some(1) => {
            // Every value first: a variable that cannot be resolved stops the resume before
            // anything changes.
            let recreated = sidecar_to_recreate_if_planned(engine, recipe, plan)?;
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
            sidecar_up(engine, recipe, recreated, plan.sidecar.as_ref(), waits, &mut actions)?;
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

/// The shape to create: a format 1 recipe recorded the image's anonymous volumes by name too.
fn spec_to_create(
    engine: &Engine,
    recipe: &LaunchRecipe,
    container: &ContainerRecipe,
    image: &str,
) -> Result<ContainerSpec> {
    let mut spec = container.spec.clone();
    if recipe.format < 2 {
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
    recipe::resolve_env(&bindings, &recipe.config_literals, |n| std::env::var(n).ok(), recipe::op_read).map_err(
        |missing| Exit::Partial.err(format_args!("cannot resolve {}: nothing was started", missing.join(", "))),
    )
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
    let sidecar = recipe.sidecar.as_ref().map(|_| sidecar_to_recreate(engine, recipe)).transpose()?;
    ensure_resources(engine, recipe, actions)?;
    crash_point("resources");
    if let Some(sidecar) = sidecar {
        bring_up_sidecar(engine, recipe, sidecar, waits, actions)?;
        crash_point("sidecar");
    }
    if let Some(text) = &recipe.agent_toml {
        store.write_agent_toml(name, text)?;
        actions.push("rewrote agent.toml".to_owned());
    }
    engine.create_container(&spec_to_create(engine, recipe, &recipe.role, image)?, image, role_env)?;
    crash_point("created");
    engine.start(&recipe.role.spec.name)?;
    crash_point("started");
    actions.push(format!("recreated {} from {image}", recipe.role.spec.name));
    Ok(())
}

/// The recipe's sidecar, with the image to create it from and its environment resolved now.
struct SidecarToRecreate<'r> {
    recipe: &'r ContainerRecipe,
    image: String,
    env: Vec<String>,
}

fn sidecar_to_recreate<'r>(engine: &Engine, recipe: &'r LaunchRecipe) -> Result<SidecarToRecreate<'r>> {
    let sidecar = recipe.sidecar.as_ref().context("the launch recipe holds no sidecar")?;
    let image = sidecar_image(engine, sidecar)?.unwrap_or_else(|| sidecar.spec.image.clone());
    let env = resolved_env(engine, recipe, sidecar, &image)?;
    Ok(SidecarToRecreate { recipe: sidecar, image, env })
}

/// The sidecar the plan recreates from the recipe, its values resolved (before anything changes).
fn sidecar_to_recreate_if_planned<'r>(
    engine: &Engine,
    recipe: Option<&'r LaunchRecipe>,
    plan: &Plan,
) -> Result<Option<(&'r LaunchRecipe, SidecarToRecreate<'r>)>> {
    match (plan.recreate_sidecar, recipe) {
        (true, Some(recipe)) => Ok(Some((recipe, sidecar_to_recreate(engine, recipe)?))),
        (true, None) => anyhow::bail!("no launch recipe to recreate the sidecar from"),
        (false, _) => Ok(None),
    }
}

/// The sidecar up and healthy before the role container is (tier 1) or while it runs (tier 0):
/// recreated from the recipe when it was removed, else `existing` started and waited for.
fn sidecar_up(
    engine: &Engine,
    recipe: Option<&LaunchRecipe>,
    recreated: Option<(&LaunchRecipe, SidecarToRecreate)>,
    existing: Option<&ContainerDetails>,
    waits: Waits,
    actions: &mut Vec<String>,
) -> Result<()> {
    if let Some((recipe, sidecar)) = recreated {
        return bring_up_sidecar(engine, recipe, sidecar, waits, actions);
    }
    let Some(sidecar) = existing else { return Ok(()) };
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
    Ok(())
}

/// Creates the sidecar from the recipe unless it exists already (a rerun after a run killed
/// half-way), starts it and waits until it is healthy.
fn bring_up_sidecar(
    engine: &Engine,
    recipe: &LaunchRecipe,
    sidecar: SidecarToRecreate,
    waits: Waits,
    actions: &mut Vec<String>,
) -> Result<()> {
    let name = &sidecar.recipe.spec.name;
    if engine.inspect(name)?.is_none() {
        let spec = spec_to_create(engine, recipe, sidecar.recipe, &sidecar.image)?;
        engine.create_container(&spec, &sidecar.image, sidecar.env)?;
    }
    engine.start(name)?;
    let health = sidecar.recipe.health.clone().unwrap_or_else(|| vec!["docker".into(), "info".into()]);
    wait_healthy(engine, name, &health, waits.health)?;
    actions.push(format!("recreated {name} (healthy)"));
    Ok(())
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

/// Tier 3: the role's source at exactly the recorded commit, built by the engine on the recorded
/// base image when the manifest has one. Returns the drift found in the Dockerfile's base.
fn build_role_image(engine: &Engine, store: &Store, manifest: &Manifest) -> Result<Option<String>> {
    let sha = manifest.role_git_sha.as_deref().context("no role_git_sha recorded")?;
    let sha = &role_commit(store, manifest, sha, RoleSource::Fetch)?.context("the role commit was not resolved")?;
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
pub fn mark_resumed(store: &Store, name: &InstanceName, manifest: &Manifest, tier: u8) -> Result<()> {
    let now = crate::base::time::now_rfc3339();
    store.set_status(name, Status::Active, &now)?;
    crash_point("stamped");
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
            evidence: serde_json::to_value(Evidence::Resumed(Resumed { tier }))?,
        });
        c.cause = None;
        c.evidence = None;
        Ok(((), true))
    })
}

/// A test-only failure point of a tier 2 or 3 resume (base/crash.rs).
fn crash_point(step: &str) {
    crate::base::crash::point(crate::base::crash::Tool::Restore, step);
}
