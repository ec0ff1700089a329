//! Which tier a resume takes and the steps it runs, decided from one observation (observe.rs)
//! alone: no engine call here, so a `--plan` and the resume after it decide alike, and the tests
//! below play each branch without Docker. `run.rs` walks the steps as they are.

use super::drift::{self, Drifted, Replacing};
use super::observe::RoleSource;
use super::observe::{role_image_there, Observation};
use crate::base::exit::Exit;
use crate::engines::docker::ContainerDetails;
use crate::state::model::Manifest;
use crate::state::names::InstanceName;
use crate::state::recipe;
use crate::state::recipe::ContainerRecipe;
use crate::state::recipe::ContainerSpec;
use crate::state::recipe::LaunchRecipe;
use crate::state::recipe::NetworkRecipe;
use crate::state::recipe::RECIPE_FORMAT;
use crate::state::store::Store;
use anyhow::Result;

/// The rung of the restore ladder (lifecycle.md, "Restore"): the cheapest that is faithful.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// 0: the role container runs: attach (a stopped or removed sidecar brought back first).
    Running,
    /// 1: the role container is there, stopped: start it.
    Restart,
    /// 2: the role container is gone and its image is there: created from the launch recipe.
    Recreate,
    /// 3: the image is gone too: built from the role's source at the recorded commit first.
    Rebuild,
}

impl Tier {
    /// Its number, as `restored`, `candidate` and the history give it.
    pub fn number(self) -> u8 {
        match self {
            Tier::Running => 0,
            Tier::Restart => 1,
            Tier::Recreate => 2,
            Tier::Rebuild => 3,
        }
    }
}

/// A container a step creates: its recorded shape, the image, the variables to resolve when the
/// step runs (a plan never holds their values), and the command that says it is ready.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ToCreate {
    pub(crate) spec: ContainerSpec,
    pub(crate) image: String,
    pub(crate) env: Vec<recipe::EnvBinding>,
    pub(crate) health: Vec<String>,
}

/// One step of a resume, in the order it runs. `--plan` prints each one's [`Step::text`], and a
/// resume reports the same words for each step it ran.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Tier 0 with everything up.
    NothingToStart {
        role: String,
    },
    RewriteAgentToml,
    CreateNetwork(NetworkRecipe),
    CreateVolume(String),
    /// Tier 1: a stopped container joined again to its network, made anew the step before.
    Reconnect {
        container: String,
        network: String,
        aliases: Vec<String>,
    },
    /// A sidecar that is there, started and waited for.
    StartSidecar {
        name: String,
        health: Vec<String>,
    },
    /// A sidecar removed under a kept session (tiers 0 and 1), made again from the recipe.
    RecreateSidecar(Box<ToCreate>),
    /// Tiers 2 and 3: the sidecar created from the recipe, started and waited for.
    CreateSidecar(Box<ToCreate>),
    /// Tier 3: the role image built from its source; `commit` is the full id of `sha`, `None`
    /// when only a resume's fetch can tell it.
    BuildRole {
        image: String,
        url: String,
        sha: String,
        commit: Option<String>,
    },
    StartRole {
        name: String,
    },
    CreateRole(Box<ToCreate>),
    /// Tier 1 turned 2: a stopped sidecar or role container that no longer matches the launch
    /// recipe, replaced by one made from it (run.rs: the new one created and checked before the
    /// old one is removed).
    ReplaceSidecar(Box<ToCreate>),
    ReplaceRole(Box<ToCreate>),
}

impl Step {
    /// What the step does, in the words `--plan` and the resume's `actions` use.
    pub(crate) fn text(&self) -> String {
        match self {
            Step::NothingToStart { role } => format!("{role} is running: nothing to start"),
            Step::RewriteAgentToml => "rewrite agent.toml from the launch recipe".into(),
            Step::CreateNetwork(network) => {
                format!("create network {}{}", network.name, if network.internal { " (internal)" } else { "" })
            }
            Step::CreateVolume(volume) => format!("create volume {volume}"),
            Step::Reconnect { container, network, .. } => format!("connect {container} to network {network} again"),
            Step::StartSidecar { name, .. } => format!("start {name} and wait until it is healthy"),
            Step::RecreateSidecar(sidecar) => format!(
                "recreate {} from the launch recipe (it was removed) and wait until it is healthy",
                sidecar.spec.name
            ),
            Step::CreateSidecar(sidecar) => {
                format!("create and start {} and wait until it is healthy", sidecar.spec.name)
            }
            Step::BuildRole { image, url, sha, commit } => match commit {
                Some(commit) if commit == sha => format!("build {image} from {url} at {sha}"),
                Some(commit) => format!("build {image} from {url} at {sha} ({commit})"),
                None => format!(
                    "build {image} from {url} at {sha}, resolved at resume (the role-source cache does not hold it, \
                     and only a resume fetches)"
                ),
            },
            Step::StartRole { name } => format!("start {name}"),
            Step::CreateRole(role) => format!("create and start {}", role.spec.name),
            Step::ReplaceSidecar(sidecar) => format!(
                "replace {} with one made from the launch recipe, healthy before the old one is removed",
                sidecar.spec.name
            ),
            Step::ReplaceRole(role) => format!(
                "replace {} with one made from the launch recipe, checked before the old one is removed, and start it",
                role.spec.name
            ),
        }
    }
}

/// Which tier a resume takes and the steps it will run; what stops it, if anything.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    pub tier: Option<Tier>,
    pub(crate) steps: Vec<Step>,
    /// What prevents the resume: unresolvable variables (by name), a diverged mount, an image
    /// that is gone with no source to rebuild it from.
    pub missing: Vec<String>,
    /// Variable names that cannot be resolved now (also in `missing`).
    pub(crate) missing_env: Vec<String>,
    /// What only the resume can find out, because it needs the network: a short `role_git_sha`
    /// that the role-source cache does not hold (a dry run never fetches). Nothing here stops
    /// the resume, but a plan with any of it does not say it is ready.
    pub(crate) at_resume: Vec<String>,
    /// How many of `missing` only failed to be reached (the role's source did not answer): when
    /// that is all of them, a retry may succeed, and the refusal is exit 4 rather than 6.
    pub(crate) unreachable: usize,
    pub(crate) drift: Vec<String>,
    pub role: Option<ContainerDetails>,
    /// `Config.User` of the role container (or of its recipe): who the attach command runs as.
    pub(crate) attach_user: Option<String>,
}

impl Plan {
    /// Whether the resume can go ahead, as far as what was observed tells: a tier, nothing
    /// missing and nothing left to the resume to find out.
    pub fn ready(&self) -> bool {
        self.tier.is_some() && self.missing.is_empty() && self.at_resume.is_empty()
    }

    /// Whether the plan can be stated as it will run: a tier and nothing known that stops it.
    /// What only the resume can find out (`at_resume`) is in its steps, and does not stop
    /// `--plan`: only the resume itself can fail on it.
    pub fn stated(&self) -> bool {
        self.tier.is_some() && self.missing.is_empty()
    }

    /// The exit code of a resume this plan stops: 4 (unavailable, retry later) when everything
    /// that stops it only could not be reached, else 6 (refused).
    pub fn refusal_exit(&self) -> Exit {
        if !self.missing.is_empty() && self.unreachable == self.missing.len() {
            Exit::Unavailable
        } else {
            Exit::Partial
        }
    }

    /// Why the plan is not ready: what is missing, then what only the resume can find out.
    pub fn not_ready(&self) -> String {
        self.missing.iter().chain(&self.at_resume).cloned().collect::<Vec<_>>().join("; ")
    }

    /// The steps, in the words `--plan` prints and the resume reports.
    pub(crate) fn actions(&self) -> Vec<String> {
        self.steps.iter().map(Step::text).collect()
    }
}

/// Observes the session and decides. With [`RoleSource::Cached`] it only reads.
pub(crate) fn plan(
    asking: super::observe::Asking<'_>,
    store: &Store,
    name: &InstanceName,
    manifest: &Manifest,
    recipe: Option<&LaunchRecipe>,
    role_source: RoleSource,
    as_is: bool,
) -> Result<Plan> {
    let seen = super::observe::observe(asking, store, name, manifest, recipe, role_source)?;
    Ok(decide(manifest, recipe, seen, as_is))
}

/// The tier and its steps, from the observation alone. `as_is` (`--as-is`): a stopped container
/// that no longer matches its launch recipe is started as it is, and the drift said.
pub(crate) fn decide(manifest: &Manifest, recipe: Option<&LaunchRecipe>, mut seen: Observation, as_is: bool) -> Plan {
    let mut plan =
        Plan { missing: std::mem::take(&mut seen.stops), drift: std::mem::take(&mut seen.drift), ..Plan::default() };
    if let Some(recipe) = recipe.filter(|r| r.format > RECIPE_FORMAT) {
        plan.missing.push(format!(
            "the launch recipe is format {}, newer than the {RECIPE_FORMAT} this jackin-restore reads",
            recipe.format
        ));
        return plan;
    }
    // A container by the session's name that is another's (another home's, the same session
    // moved there and resumed) is neither started nor attached to, nor replaced.
    if let Some(why) = &seen.foreign {
        plan.missing.push(format!("{why}: not this session's, so not started, attached to or replaced"));
        return plan;
    }
    match (&seen.role, recipe) {
        (Some(role), _) if role.state.running => plan_running(manifest, recipe, role, &seen, &mut plan),
        (Some(role), _) => plan_restart(manifest, recipe, role, &seen, &mut plan, as_is),
        (None, None) => plan.missing.push("no launch recipe: the session was lost before one was captured".into()),
        (None, Some(recipe)) => plan_recreate(manifest, recipe, &seen, &mut plan),
    }
    plan.attach_user = match &seen.role {
        Some(role) => role.spec.user.clone(),
        None => recipe.and_then(|r| r.role.spec.user.clone()),
    };
    plan.role = seen.role;
    plan
}

/// Tier 0. The agent's Docker-in-Docker is part of the session as it was: a sidecar that stopped
/// under a running session (it crashed, someone stopped it) is started again, one that was
/// removed comes back from the recipe, as tier 1 would do.
fn plan_running(
    manifest: &Manifest,
    recipe: Option<&LaunchRecipe>,
    role: &ContainerDetails,
    seen: &Observation,
    plan: &mut Plan,
) {
    plan.tier = Some(Tier::Running);
    match (&seen.sidecar, &manifest.docker.dind_container) {
        (Some(sidecar), _) if !sidecar.state.running => plan.steps.push(start_sidecar(sidecar, recipe)),
        (None, Some(gone)) => {
            plan_resources(recipe, role, seen, plan, Replacing::default());
            plan_sidecar_gone(recipe, gone, seen, plan);
        }
        _ => plan.steps.push(Step::NothingToStart { role: role.name.clone() }),
    }
}

/// Tier 1: agent.toml back, the network and volume jackin's garbage collection may have taken,
/// the sidecar, then the role container. A container that no longer matches the launch recipe
/// (drift.rs) is not started stale: it is replaced from the recipe, and the plan is tier 2;
/// `--as-is` starts it as it is. Either way the drift is said.
fn plan_restart(
    manifest: &Manifest,
    recipe: Option<&LaunchRecipe>,
    role: &ContainerDetails,
    seen: &Observation,
    plan: &mut Plan,
    as_is: bool,
) {
    plan.tier = Some(Tier::Restart);
    let drifted = recipe.map(|r| Drifted::of(r, role, seen)).unwrap_or_default();
    let replace = drifted.noted(&mut plan.drift, as_is);
    match recipe.and_then(|r| r.agent_toml.as_ref()) {
        Some(_) => plan.steps.push(Step::RewriteAgentToml),
        None if seen.agent_toml_there => {}
        None => plan.missing.push("agent.toml is gone and no launch recipe holds it".into()),
    }
    plan_resources(recipe, role, seen, plan, replace);
    match (&seen.sidecar, &manifest.docker.dind_container, recipe.and_then(|r| Some((r, r.sidecar.as_ref()?)))) {
        (Some(_), _, Some((recipe, recorded))) if replace.sidecar => {
            let image = sidecar_image(recorded, seen);
            let health = recorded.health.clone().unwrap_or_else(docker_info);
            let create = image.map(|image| to_create(recipe, recorded, image, seen, health));
            plan_replacement(recipe, recorded, create, plan, |c| Step::ReplaceSidecar(Box::new(c)));
        }
        (Some(sidecar), _, _) => plan.steps.push(start_sidecar(sidecar, recipe)),
        (None, Some(gone), _) => plan_sidecar_gone(recipe, gone, seen, plan),
        (None, None, _) => {}
    }
    match recipe.filter(|_| replace.role) {
        Some(recipe) => {
            let image = role_image_there(&recipe.role.spec, seen).map(|(image, moved)| {
                plan.drift.extend(moved);
                image
            });
            let create = image.map(|image| to_create(recipe, &recipe.role, image, seen, Vec::new()));
            plan_replacement(recipe, &recipe.role, create, plan, |c| Step::ReplaceRole(Box::new(c)));
        }
        None => plan.steps.push(Step::StartRole { name: role.name.clone() }),
    }
}

/// Tier 1 turned 2: the container there that no longer matches `recorded` is replaced by
/// `create`, made from the recipe (its variables resolved when the step runs); `None` when the
/// recipe's image is gone too.
fn plan_replacement(
    recipe: &LaunchRecipe,
    recorded: &ContainerRecipe,
    create: Option<ToCreate>,
    plan: &mut Plan,
    step: fn(ToCreate) -> Step,
) {
    plan.tier = Some(Tier::Recreate);
    let Some(create) = create else {
        plan.missing.push(format!(
            "{} no longer matches its launch recipe, whose image {} is gone too: `--as-is` starts it as it is",
            recorded.spec.name, recorded.spec.image
        ));
        return;
    };
    plan_env(&create.env, &recipe.config_literals, plan);
    plan.steps.push(step(create));
}

/// Starting a sidecar that is there: its own healthcheck says when it is ready, else the
/// recipe's, else `docker info`.
fn start_sidecar(sidecar: &ContainerDetails, recipe: Option<&LaunchRecipe>) -> Step {
    let health = sidecar
        .spec
        .healthcheck
        .as_deref()
        .and_then(recipe::health_argv)
        .or_else(|| recipe.and_then(|r| r.sidecar.as_ref()?.health.clone()))
        .unwrap_or_else(docker_info);
    Step::StartSidecar { name: sidecar.name.clone(), health }
}

fn docker_info() -> Vec<String> {
    vec!["docker".into(), "info".into()]
}

/// Tiers 0 and 1: jackin's garbage collection removes the networks of roles that are not
/// running; the network (and the certs volume) come back from the recipe before the sidecar
/// starts, and the stopped containers are joined to the network made anew.
fn plan_resources(
    recipe: Option<&LaunchRecipe>,
    role: &ContainerDetails,
    seen: &Observation,
    plan: &mut Plan,
    replacing: Replacing,
) {
    // A role container replaced comes back on the recipe's network, whichever the one there is on.
    let network = match recipe.filter(|_| replacing.role) {
        Some(recipe) => recipe.role.spec.network.as_ref(),
        None => role.spec.network.as_ref(),
    };
    if let Some(network) = network {
        match recipe.and_then(|r| r.network.as_ref()).filter(|n| n.name == *network) {
            Some(recorded) => plan_network(recipe.map_or(RECIPE_FORMAT, |r| r.format), recorded, seen, plan),
            None if seen.network(network).is_some() => {}
            None => plan.missing.push(format!("network {network} is gone and no launch recipe holds its shape")),
        }
    }
    if let Some(volume) = recipe.and_then(|r| r.certs_volume.as_ref()) {
        if !seen.volume_there(volume) {
            plan.steps.push(Step::CreateVolume(volume.clone()));
        }
    }
    let made_anew: Vec<String> = plan
        .steps
        .iter()
        .filter_map(|s| match s {
            Step::CreateNetwork(n) => Some(n.name.clone()),
            _ => None,
        })
        .collect();
    let staying = seen.sidecar.iter().filter(|_| !replacing.sidecar).chain(Some(role).filter(|_| !replacing.role));
    for container in staying.clone().filter(|c| !c.state.running) {
        if let Some(why) = drift::not_its_network(container, seen, &made_anew) {
            plan.missing.push(why);
        }
    }
    for container in staying.filter(|c| !c.state.running) {
        if let Some(network) = container.spec.network.as_ref().filter(|n| made_anew.contains(n)) {
            plan.steps.push(Step::Reconnect {
                container: container.name.clone(),
                network: network.clone(),
                aliases: container.spec.aliases.clone(),
            });
        }
    }
}

/// Tier 0 or 1 whose sidecar was removed (`docker rm`, a prune) while the role container stayed: the
/// sidecar takes the next tier by itself, created again from the launch recipe (on the network and
/// with the certs volume `plan_resources` brings back) and waited for before the role container
/// starts. A session never comes back without its Docker-in-Docker unsaid: when the recipe cannot
/// recreate the sidecar, that is what stops the resume.
fn plan_sidecar_gone(recipe: Option<&LaunchRecipe>, name: &str, seen: &Observation, plan: &mut Plan) {
    let recorded = recipe.and_then(|r| Some((r, r.sidecar.as_ref().filter(|s| s.spec.name == name)?)));
    let Some((recipe, sidecar)) = recorded else {
        plan.missing.push(format!(
            "sidecar {name} is gone and no launch recipe holds it: the session would come back without \
             Docker-in-Docker"
        ));
        return;
    };
    let create = sidecar_to_create(recipe, sidecar, seen);
    match sidecar_image(sidecar, seen) {
        Some(_) => plan_env(&create.env, &recipe.config_literals, plan),
        None => plan.missing.push(format!("sidecar {name} is gone and so is its image {}", sidecar.spec.image)),
    }
    plan.steps.push(Step::RecreateSidecar(Box::new(create)));
    plan.drift.push(format!(
        "sidecar {name} was removed: recreated from the launch recipe; what its \
         Docker-in-Docker kept in the removed container and its anonymous volumes does not come back"
    ));
}

/// Every variable of `bindings` that cannot be resolved now, by name and source, in `missing`.
fn plan_env(
    bindings: &[recipe::EnvBinding],
    config_literals: &std::collections::BTreeMap<String, String>,
    plan: &mut Plan,
) {
    if let Err(names) = recipe::resolve_env(bindings, config_literals, |n| std::env::var(n).ok(), recipe::op_read) {
        for name in &names {
            match bindings.iter().find(|b| &b.name == name) {
                Some(binding) => {
                    plan.missing.push(format!("needs {name} (from {})", recipe::source_to_supply(binding)))
                }
                None => plan.missing.push(format!("needs {name}")),
            }
        }
        plan.missing_env.extend(names);
    }
}

/// The recorded network: created when it is gone; one there already must be the session's (the
/// labels and driver the launch gave it) and must not give an internal session a route out.
fn plan_network(recipe_format: u32, recorded: &NetworkRecipe, seen: &Observation, plan: &mut Plan) {
    match seen.network(&recorded.name) {
        None => {
            plan.steps.push(Step::CreateNetwork(recorded.clone()));
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
        Some(there) if !drift::network_is_recipes(recorded, there) => plan.missing.push(format!(
            "network {} there now is not the session's (its labels or driver are not the launch's): not \
                 joined; remove it (docker network rm {}) and the resume makes the session's from the launch recipe",
            recorded.name, recorded.name
        )),
        Some(_) => {}
    }
}

/// Tiers 2 and 3: the role image (built first for tier 3), the network and volume, the sidecar,
/// agent.toml, then the role container. Every variable of both containers must resolve.
fn plan_recreate(manifest: &Manifest, recipe: &LaunchRecipe, seen: &Observation, plan: &mut Plan) {
    let image = plan_role_image(manifest, recipe, seen, plan);
    let mut bindings = match &image {
        Some(image) => env_to_resolve(recipe, &recipe.role, image, seen),
        None => recipe.role.env.clone(),
    };
    if let Some(network) = &recipe.network {
        plan_network(recipe.format, network, seen, plan);
    }
    if let Some(volume) = recipe.certs_volume.as_ref().filter(|v| !seen.volume_there(v)) {
        plan.steps.push(Step::CreateVolume(volume.clone()));
    }
    match (&recipe.sidecar, &manifest.docker.dind_container) {
        (Some(sidecar), _) => {
            let create = sidecar_to_create(recipe, sidecar, seen);
            match sidecar_image(sidecar, seen) {
                Some(_) => bindings.extend(create.env.iter().cloned()),
                None => plan.missing.push(format!("the sidecar image {} is gone", sidecar.spec.image)),
            }
            plan.steps.push(Step::CreateSidecar(Box::new(create)));
        }
        (None, Some(sidecar)) => plan.missing.push(format!(
            "sidecar {sidecar} is not in the launch recipe (it was gone when the recipe was captured): the \
             session would come back without Docker-in-Docker"
        )),
        (None, None) => {}
    }
    plan_env(&bindings, &recipe.config_literals, plan);
    if recipe.agent_toml.is_some() {
        plan.steps.push(Step::RewriteAgentToml);
    }
    let image = image.unwrap_or_else(|| recipe.role.spec.image.clone());
    plan.steps.push(Step::CreateRole(Box::new(to_create(recipe, &recipe.role, image, seen, Vec::new()))));
}

/// Tier 2's image or tier 3's build of the role from its recorded source commit; what is missing
/// when neither can be had.
fn plan_role_image(manifest: &Manifest, recipe: &LaunchRecipe, seen: &Observation, plan: &mut Plan) -> Option<String> {
    let spec = &recipe.role.spec;
    if let Some((image, moved)) = role_image_there(spec, seen) {
        plan.tier = Some(Tier::Recreate);
        plan.drift.extend(moved);
        return Some(image);
    }
    let (url, image) = (&manifest.role_source_git, &manifest.image_tag);
    match (&seen.role_commit, manifest.role_git_sha.as_deref()) {
        (Some(Ok(commit)), Some(sha)) => {
            plan.tier = Some(Tier::Rebuild);
            plan.steps.push(Step::BuildRole {
                image: image.clone(),
                url: url.clone(),
                sha: sha.to_owned(),
                commit: commit.clone(),
            });
            if commit.is_none() {
                // Only a fetch can tell which commit the abbreviation names, or that it names
                // none or more than one: the resume's, not a plan's.
                plan.at_resume.push(format!(
                    "role_git_sha {sha} is resolved at resume: the role-source cache does not hold it, and only a \
                     resume fetches {url}"
                ));
            }
            Some(image.clone())
        }
        (Some(Err(e)), _) => {
            plan.unreachable += usize::from(e.unreachable);
            plan.missing.push(format!("the image is gone and cannot be rebuilt: {}", e.why));
            None
        }
        _ => {
            plan.missing.push(format!("image {} is gone and there is no source to rebuild it from", spec.image));
            None
        }
    }
}

/// The sidecar's image: the recorded ID, else the tag; `None` when both are gone.
fn sidecar_image(sidecar: &ContainerRecipe, seen: &Observation) -> Option<String> {
    [&sidecar.spec.image_id, &sidecar.spec.image]
        .into_iter()
        .find(|reference| !reference.is_empty() && seen.image_id(reference).is_some())
        .cloned()
}

/// The recipe's sidecar as a step creates it: from its image when there (else its tag, and the
/// plan says the image is gone).
fn sidecar_to_create(recipe: &LaunchRecipe, sidecar: &ContainerRecipe, seen: &Observation) -> ToCreate {
    let image = sidecar_image(sidecar, seen).unwrap_or_else(|| sidecar.spec.image.clone());
    to_create(recipe, sidecar, image, seen, sidecar.health.clone().unwrap_or_else(docker_info))
}

/// `recorded` as a step creates it from `image`.
fn to_create(
    recipe: &LaunchRecipe,
    recorded: &ContainerRecipe,
    image: String,
    seen: &Observation,
    health: Vec<String>,
) -> ToCreate {
    ToCreate {
        spec: spec_to_create(recipe, recorded, &image, seen),
        env: env_to_resolve(recipe, recorded, &image, seen),
        health,
        image,
    }
}

/// The shape to create: a format 1 recipe recorded the image's anonymous volumes by name too.
fn spec_to_create(
    recipe: &LaunchRecipe,
    container: &ContainerRecipe,
    image: &str,
    seen: &Observation,
) -> ContainerSpec {
    let mut spec = container.spec.clone();
    if recipe.format < 2 {
        let volumes = seen.image_defaults.get(image).map(|d| d.volumes.as_slice()).unwrap_or_default();
        spec.mounts = recipe::mounts_of_launch(&spec.mounts, volumes);
    }
    spec
}

/// The variables to resolve for a container created from `image`: the launch's own, never the
/// image's (real-host.md, "Environment").
fn env_to_resolve(
    recipe: &LaunchRecipe,
    container: &ContainerRecipe,
    image: &str,
    seen: &Observation,
) -> Vec<recipe::EnvBinding> {
    if recipe.format >= 2 {
        return container.env.clone();
    }
    let image_env = seen.image_defaults.get(image).map(|d| d.env.as_slice()).unwrap_or_default();
    recipe::bindings_to_resolve(recipe.format, &container.env, image_env)
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
