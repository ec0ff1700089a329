//! Which tier a resume takes, from what Docker says now and what was captured; what stops it.

use super::*;
use crate::services::ownership::{judge_details, HomeRoots};

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
    /// What only the resume can find out, because it needs the network: a short `role_git_sha`
    /// that the role-source cache does not hold (a dry run never fetches). Nothing here stops
    /// the resume, but a plan with any of it does not say it is ready.
    pub(crate) at_resume: Vec<String>,
    pub(crate) drift: Vec<String>,
    /// The image the role container is created from (tiers 2 and 3).
    pub(crate) role_image: Option<String>,
    pub role: Option<ContainerDetails>,
    pub(crate) sidecar: Option<ContainerDetails>,
    /// Tier 1 whose sidecar is gone: it is created again from the launch recipe before the role
    /// container starts.
    pub(crate) recreate_sidecar: bool,
    /// `Config.User` of the role container (or of its recipe): who the attach command runs as.
    pub(crate) attach_user: Option<String>,
}

impl Plan {
    /// Whether the resume can go ahead, as far as what was observed tells: a tier, nothing
    /// missing and nothing left to the resume to find out.
    pub fn ready(&self) -> bool {
        self.tier.is_some() && self.missing.is_empty() && self.at_resume.is_empty()
    }

    /// Why the plan is not ready: what is missing, then what only the resume can find out.
    pub fn not_ready(&self) -> String {
        self.missing.iter().chain(&self.at_resume).cloned().collect::<Vec<_>>().join("; ")
    }
}

/// How a plan learns the full id of an abbreviated `role_git_sha` (tier 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleSource {
    /// A resume: the role source is fetched into the home's cache when the cache does not hold
    /// the commit yet.
    Fetch,
    /// A dry run (`--plan`, `--dry-run`, `--list`): only a cache already there is read; nothing
    /// is created, fetched or written, and what the cache does not hold is resolved at resume.
    Cached,
}

impl RoleSource {
    /// A run that only looks (`dry_run`: `--list`, `--plan`, `--dry-run`) reads the cache alone.
    pub fn for_run(dry_run: bool) -> Self {
        if dry_run {
            RoleSource::Cached
        } else {
            RoleSource::Fetch
        }
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

/// Works out the tier from what Docker says now and what was captured. With
/// [`RoleSource::Cached`] it only reads.
pub(crate) fn plan(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    manifest: &Manifest,
    recipe: Option<&LaunchRecipe>,
    role_source: RoleSource,
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
    // A container by the session's name that is another's (another home's, the same session
    // moved there and resumed) is neither started nor attached to, nor replaced.
    let roots = HomeRoots::of(store);
    for container in role.iter().chain(sidecar.iter()) {
        if let Err(why) = judge_details(&roots, name, &manifest.docker, container) {
            plan.missing.push(format!("{why}: not this session's, so not started, attached to or replaced"));
            return Ok(plan);
        }
    }
    match &role {
        Some(role) if role.state.running => {
            plan.tier = Some(0);
            // The agent's Docker-in-Docker is part of the session as it was: a sidecar that
            // stopped under a running session (it crashed, someone stopped it) is started again,
            // one that was removed comes back from the recipe, as tier 1 would do.
            match (&sidecar, &manifest.docker.dind_container) {
                (Some(sidecar), _) if !sidecar.state.running => {
                    plan.steps.push(format!("{} is running", role.name));
                    plan.steps.push(format!("start {} and wait until it is healthy", sidecar.name));
                }
                (None, Some(gone)) => {
                    plan.steps.push(format!("{} is running", role.name));
                    plan_sidecar_gone(engine, recipe, gone, &mut plan)?;
                }
                _ => plan.steps.push(format!("{} is running: nothing to start", role.name)),
            }
        }
        Some(role) => {
            plan.tier = Some(1);
            match recipe.and_then(|r| r.agent_toml.as_ref()) {
                Some(_) => plan.steps.push("rewrite agent.toml from the launch recipe".into()),
                None if store.agent_toml_path(name).exists() => {}
                None => plan.missing.push("agent.toml is gone and no launch recipe holds it".into()),
            }
            plan_resources(engine, recipe, role, &mut plan)?;
            match (&sidecar, &manifest.docker.dind_container) {
                (Some(sidecar), _) => plan.steps.push(format!("start {} and wait until it is healthy", sidecar.name)),
                (None, Some(gone)) => plan_sidecar_gone(engine, recipe, gone, &mut plan)?,
                (None, None) => {}
            }
            plan.steps.push(format!("start {}", role.name));
        }
        None => match recipe {
            None => plan.missing.push("no launch recipe: the session was lost before one was captured".into()),
            Some(recipe) => plan_recreate(engine, store, manifest, recipe, role_source, &mut plan)?,
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

/// Tier 0 or 1 whose sidecar was removed (`docker rm`, a prune) while the role container stayed: the
/// sidecar takes the next tier by itself, created again from the launch recipe (on the network and
/// with the certs volume `plan_resources` brings back) and waited for before the role container
/// starts. A session never comes back without its Docker-in-Docker unsaid: when the recipe cannot
/// recreate the sidecar, that is what stops the resume.
fn plan_sidecar_gone(engine: &Engine, recipe: Option<&LaunchRecipe>, name: &str, plan: &mut Plan) -> Result<()> {
    let recorded = recipe.and_then(|r| Some((r, r.sidecar.as_ref().filter(|s| s.spec.name == name)?)));
    let Some((recipe, sidecar)) = recorded else {
        plan.missing.push(format!(
            "sidecar {name} is gone and no launch recipe holds it: the session would come back without \
             Docker-in-Docker"
        ));
        return Ok(());
    };
    match sidecar_image(engine, sidecar)? {
        Some(image) => {
            let bindings = env_to_resolve(engine, recipe, sidecar, &image)?;
            plan_env(&bindings, &recipe.config_literals, plan);
        }
        None => plan.missing.push(format!("sidecar {name} is gone and so is its image {}", sidecar.spec.image)),
    }
    plan.recreate_sidecar = true;
    plan.steps.push(format!("recreate {name} from the launch recipe (it was removed) and wait until it is healthy"));
    plan.drift.push(format!(
        "sidecar {name} was removed: recreated from the launch recipe; what its \
         Docker-in-Docker kept in the removed container and its anonymous volumes does not come back"
    ));
    Ok(())
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

fn plan_recreate(
    engine: &Engine,
    store: &Store,
    manifest: &Manifest,
    recipe: &LaunchRecipe,
    role_source: RoleSource,
    plan: &mut Plan,
) -> Result<()> {
    let spec = &recipe.role.spec;
    plan_role_image(engine, store, manifest, recipe, role_source, plan)?;
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
    match (&recipe.sidecar, &manifest.docker.dind_container) {
        (Some(sidecar), _) => {
            match sidecar_image(engine, sidecar)? {
                Some(image) => bindings.extend(env_to_resolve(engine, recipe, sidecar, &image)?),
                None => plan.missing.push(format!("the sidecar image {} is gone", sidecar.spec.image)),
            }
            plan.steps.push(format!("create and start {} and wait until it is healthy", sidecar.spec.name));
        }
        (None, Some(sidecar)) => plan.missing.push(format!(
            "sidecar {sidecar} is not in the launch recipe (it was gone when the recipe was captured): the \
             session would come back without Docker-in-Docker"
        )),
        (None, None) => {}
    }
    plan_env(&bindings, &recipe.config_literals, plan);
    if recipe.agent_toml.is_some() {
        plan.steps.push("rewrite agent.toml from the launch recipe".into());
    }
    plan.steps.push(format!("create and start {}", spec.name));
    Ok(())
}

/// Tier 2's image or tier 3's build of the role: the tagged image when it is still the recorded
/// one, else the recorded image by its id (the tag's move is drift), else a build from the
/// role's recorded source commit; what is missing when none is there.
fn plan_role_image(
    engine: &Engine,
    store: &Store,
    manifest: &Manifest,
    recipe: &LaunchRecipe,
    role_source: RoleSource,
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
        let (url, image) = (&manifest.role_source_git, &manifest.image_tag);
        match role_commit(store, manifest, sha, role_source) {
            Ok(Some(commit)) => {
                plan.tier = Some(3);
                let at = if commit == sha { commit } else { format!("{sha} ({commit})") };
                plan.steps.push(format!("build {image} from {url} at {at}"));
                plan.role_image = Some(image.clone());
            }
            Ok(None) => {
                // Only a fetch can tell which commit the abbreviation names, or that it names
                // none or more than one: the resume's, not a plan's.
                plan.tier = Some(3);
                plan.steps.push(format!(
                    "build {image} from {url} at {sha}, resolved at resume (the role-source cache does not \
                     hold it, and only a resume fetches)"
                ));
                plan.at_resume.push(format!(
                    "role_git_sha {sha} is resolved at resume: the role-source cache does not hold it, and only a \
                     resume fetches {url}"
                ));
                plan.role_image = Some(image.clone());
            }
            Err(e) => plan.missing.push(format!("the image is gone and cannot be rebuilt: {e:#}")),
        }
    } else {
        plan.missing.push(format!("image {} is gone and there is no source to rebuild it from", spec.image));
    }
    Ok(())
}

/// The full id of the recorded role commit. A full id is taken as it is (the build fetches it);
/// an abbreviation (jackin records 7 characters when it reused an image) is resolved in the
/// role source's cache, fetched first for a resume, so that a resume never starts tier 3 on an
/// unknown or ambiguous one. `None` (only [`RoleSource::Cached`]): the cache does not hold it.
pub(super) fn role_commit(
    store: &Store,
    manifest: &Manifest,
    sha: &str,
    role_source: RoleSource,
) -> Result<Option<String>> {
    if sha.len() == 40 {
        return Ok(Some(sha.to_owned()));
    }
    let cache = store.role_source_cache(&manifest.role_source_git);
    git::role_commit(&cache, &manifest.role_source_git, sha, role_source == RoleSource::Fetch)
}

/// The sidecar's image: the recorded ID, else the tag; `None` when both are gone.
pub(super) fn sidecar_image(engine: &Engine, sidecar: &ContainerRecipe) -> Result<Option<String>> {
    for reference in [&sidecar.spec.image_id, &sidecar.spec.image] {
        if !reference.is_empty() && engine.image_id(reference)?.is_some() {
            return Ok(Some(reference.clone()));
        }
    }
    Ok(None)
}

/// The variables to resolve for a container created from `image`: the launch's own, never the
/// image's (real-host.md, "Environment").
pub(super) fn env_to_resolve(
    engine: &Engine,
    recipe: &LaunchRecipe,
    container: &ContainerRecipe,
    image: &str,
) -> Result<Vec<recipe::EnvBinding>> {
    if recipe.format >= 2 {
        return Ok(container.env.clone());
    }
    let image_env = engine.image_defaults(image)?.unwrap_or_default().env;
    Ok(recipe::bindings_to_resolve(recipe.format, &container.env, &image_env))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_only_the_resume_can_tell_keeps_a_plan_from_being_ready() {
        let plan = Plan { tier: Some(3), ..Plan::default() };
        assert!(plan.ready());
        let left = Plan { at_resume: vec!["role_git_sha abc1234 is resolved at resume".into()], ..plan };
        assert!(!left.ready());
        assert_eq!(left.not_ready(), "role_git_sha abc1234 is resolved at resume");
        let both = Plan { missing: vec!["needs TOKEN".into()], ..left };
        assert_eq!(both.not_ready(), "needs TOKEN; role_git_sha abc1234 is resolved at resume");
    }
}
