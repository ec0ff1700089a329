//! What a resume decides on, read once and only read: the mounts' git state, the session's two
//! containers, and what the engine and the role-source cache hold of what the recipe names.
//! `plan.rs` decides from this alone; `run.rs` walks the plan's steps without asking again.

use std::collections::BTreeMap;

use crate::base::exit::Exit;
use crate::engines::docker::ContainerDetails;
use crate::engines::docker::ContainerNames;
use crate::engines::docker::Engine;
use crate::engines::docker::ImageDefaults;
use crate::engines::git;
use crate::engines::git::Resumability;
use crate::services::ownership::{judge_details, HomeRoots};
use crate::state::model::IsolationKind;
use crate::state::model::Manifest;
use crate::state::names::InstanceName;
use crate::state::recipe::ContainerSpec;
use crate::state::recipe::LaunchRecipe;
use crate::state::recipe::NetworkRecipe;
use crate::state::recipe::RECIPE_FORMAT;
use crate::state::store::Store;
use anyhow::Result;
use std::path::Path;

/// One look at a session and at what its resume would use.
#[derive(Debug, Default)]
pub(crate) struct Observation {
    /// What stops a resume in the mounts (the preserved state is gone or unregistered).
    pub(crate) stops: Vec<String>,
    /// What only drifted there (a worktree on another branch, a detached HEAD).
    pub(crate) drift: Vec<String>,
    pub(crate) role: Option<ContainerDetails>,
    pub(crate) sidecar: Option<ContainerDetails>,
    /// Why a container by the session's name is not the session's own (another home's).
    pub(crate) foreign: Option<String>,
    pub(crate) agent_toml_there: bool,
    /// Each network the recipe or the role container names: its shape, `None` when gone.
    pub(crate) networks: BTreeMap<String, Option<NetworkRecipe>>,
    /// The certs volume the recipe names: whether it is there.
    pub(crate) volumes: BTreeMap<String, bool>,
    /// Each image reference the recipe names for a container to create: the id it resolves
    /// to, `None` when gone.
    pub(crate) images: BTreeMap<String, Option<String>>,
    /// What images give every container made from them (their own environment and volumes):
    /// a first-format recipe's images (it recorded those with the launch's), by reference, and
    /// the images a stopped session's containers run, by ID (tier 1's drift check).
    pub(crate) image_defaults: BTreeMap<String, ImageDefaults>,
    /// Tier 3's role commit: the full id, `None` when only a resume's fetch can tell, or why it
    /// cannot be had.
    pub(crate) role_commit: Option<Result<Option<String>, NoCommit>>,
}

/// Why tier 3's role commit cannot be had, and whether only reaching its source failed (a
/// retry may succeed: the refusal is exit 4, not 6).
#[derive(Debug, Clone)]
pub(crate) struct NoCommit {
    pub(crate) why: String,
    pub(crate) unreachable: bool,
}

impl Observation {
    /// The shape of `network`, `None` when it is gone (or was not looked at).
    pub(crate) fn network(&self, network: &str) -> Option<&NetworkRecipe> {
        self.networks.get(network).and_then(Option::as_ref)
    }

    pub(crate) fn volume_there(&self, volume: &str) -> bool {
        self.volumes.get(volume).copied().unwrap_or(false)
    }

    /// The id `reference` resolves to on the engine, `None` when it is gone.
    pub(crate) fn image_id(&self, reference: &str) -> Option<&str> {
        self.images.get(reference).and_then(|id| id.as_deref())
    }
}

/// The engine as a plan asks it: for each container by itself (a resume), or through one listing
/// of them all made for a view of many sessions (the list), where a container the listing did not
/// hold is gone without a call of its own.
#[derive(Clone, Copy)]
pub(crate) struct Asking<'a> {
    pub(crate) engine: &'a Engine,
    pub(crate) present: Option<&'a ContainerNames>,
    /// The host repositories the view opened once, lent to each session's look.
    pub(crate) hosts: Option<&'a git::OpenRepos>,
}

impl<'a> Asking<'a> {
    pub(crate) fn each(engine: &'a Engine) -> Self {
        Asking { engine, present: None, hosts: None }
    }

    pub(crate) fn listed(engine: &'a Engine, present: &'a ContainerNames, hosts: &'a git::OpenRepos) -> Self {
        Asking { engine, present: Some(present), hosts: Some(hosts) }
    }

    /// The container `name`, `None` when it is gone (without a call when the listing said so).
    fn inspect(&self, name: &str) -> Result<Option<ContainerDetails>> {
        match self.present {
            Some(present) if !present.has(name) => Ok(None),
            _ => self.engine.inspect(name),
        }
    }
}

/// Reads what a plan for `name` needs. What the engine is asked depends only on which
/// containers are there: a running or stopped role container needs no image, a gone one needs
/// the recorded images and, when both are gone, the role commit.
pub(crate) fn observe(
    asking: Asking<'_>,
    store: &Store,
    name: &InstanceName,
    manifest: &Manifest,
    recipe: Option<&LaunchRecipe>,
    role_source: RoleSource,
) -> Result<Observation> {
    let (stops, drift) = divergences(store, name, asking.hosts);
    let mut seen = Observation { stops, drift, ..Observation::default() };
    if recipe.is_some_and(|r| r.format > RECIPE_FORMAT) {
        return Ok(seen);
    }
    let engine = asking.engine;
    seen.role = asking.inspect(&manifest.docker.role_container)?;
    seen.sidecar = match &manifest.docker.dind_container {
        Some(sidecar) => asking.inspect(sidecar)?,
        None => None,
    };
    let roots = HomeRoots::of(store);
    for container in seen.role.iter().chain(seen.sidecar.iter()) {
        if let Err(why) = judge_details(&roots, name, &manifest.docker, container) {
            seen.foreign = Some(why.to_string());
            return Ok(seen);
        }
    }
    seen.agent_toml_there = store.agent_toml_path(name).exists();
    let role_network = seen.role.as_ref().and_then(|r| r.spec.network.clone());
    for network in role_network.iter().chain(recipe.and_then(|r| r.network.as_ref()).map(|n| &n.name)) {
        if !seen.networks.contains_key(network) {
            seen.networks.insert(network.clone(), engine.network_shape(network)?);
        }
    }
    if let Some(volume) = recipe.and_then(|r| r.certs_volume.as_ref()) {
        seen.volumes.insert(volume.clone(), engine.volume_exists(volume)?);
    }
    let Some(recipe) = recipe else { return Ok(seen) };
    let sidecar_gone = seen.sidecar.is_none() && manifest.docker.dind_container.is_some();
    // Tier 1 compares each stopped session's containers with the recipe (drift.rs), knowing what
    // their images give every container; one that drifted is made anew from the recipe's images.
    let stopped = seen.role.as_ref().is_some_and(|r| !r.state.running);
    if stopped {
        let ids: Vec<String> = seen.role.iter().chain(seen.sidecar.iter()).map(|c| c.spec.image_id.clone()).collect();
        for id in ids.into_iter().filter(|id| !id.is_empty()) {
            if let Some(defaults) = engine.image_defaults(&id)? {
                seen.image_defaults.insert(id, defaults);
            }
        }
    }
    if seen.role.is_none() || sidecar_gone || stopped {
        if let Some(sidecar) = &recipe.sidecar {
            look_up_images(engine, &mut seen, [&sidecar.spec.image_id, &sidecar.spec.image])?;
        }
    }
    if stopped {
        look_up_images(engine, &mut seen, [&recipe.role.spec.image_id, &recipe.role.spec.image])?;
    }
    if seen.role.is_none() {
        let spec = &recipe.role.spec;
        look_up_images(engine, &mut seen, [&spec.image_id, &spec.image])?;
        if role_image_there(spec, &seen).is_none() {
            seen.role_commit = tier_3_commit(store, manifest, role_source);
        }
    }
    if recipe.format < 2 {
        let references: Vec<String> = seen
            .images
            .iter()
            .filter(|(r, id)| id.is_some() && !seen.image_defaults.contains_key(*r))
            .map(|(r, _)| r.clone())
            .collect();
        for reference in references {
            let defaults = engine.image_defaults(&reference)?.unwrap_or_default();
            seen.image_defaults.insert(reference, defaults);
        }
    }
    Ok(seen)
}

fn look_up_images<'a>(
    engine: &Engine,
    seen: &mut Observation,
    references: impl IntoIterator<Item = &'a String>,
) -> Result<()> {
    for reference in references.into_iter().filter(|r| !r.is_empty()) {
        if !seen.images.contains_key(reference) {
            seen.images.insert(reference.clone(), engine.image_id(reference)?);
        }
    }
    Ok(())
}

/// The role commit tier 3 builds, when the manifest records a source to build from.
fn tier_3_commit(
    store: &Store,
    manifest: &Manifest,
    role_source: RoleSource,
) -> Option<Result<Option<String>, NoCommit>> {
    let sha = manifest.role_git_sha.as_deref().filter(|_| !manifest.role_source_git.is_empty())?;
    Some(
        role_commit(store, manifest, sha, role_source)
            .map_err(|e| NoCommit { why: format!("{e:#}"), unreachable: Exit::of(&e) == Exit::Unavailable }),
    )
}

/// The full id of the recorded role commit. A full id is taken as it is (the build fetches it);
/// an abbreviation (jackin records 7 characters when it reused an image) is resolved in the
/// role source's cache, fetched first for a resume, so that a resume never starts tier 3 on an
/// unknown or ambiguous one. `None` (only [`RoleSource::Cached`]): the cache does not hold it.
fn role_commit(store: &Store, manifest: &Manifest, sha: &str, role_source: RoleSource) -> Result<Option<String>> {
    if sha.len() == 40 {
        return Ok(Some(sha.to_owned()));
    }
    let cache = store.role_source_cache(&manifest.role_source_git);
    git::role_commit(&cache, &manifest.role_source_git, sha, role_source == RoleSource::Fetch)
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
pub(crate) fn divergences(
    store: &Store,
    name: &InstanceName,
    hosts: Option<&git::OpenRepos>,
) -> (Vec<String>, Vec<String>) {
    let isolation = match store.read_isolation(name) {
        Ok(isolation) => isolation,
        Err(e) => return (vec![format!("isolation records unreadable: {e:#}")], Vec::new()),
    };
    let (mut stops, mut drift) = (Vec::new(), Vec::new());
    for mount in isolation.mounts() {
        let state = match mount {
            Err(bad) => Resumability::Diverged(bad.reason),
            Ok(r) if r.isolation == IsolationKind::Worktree => {
                let (worktree, host) = (Path::new(&r.worktree_path), Path::new(&r.original_src));
                git::worktree_resumability(worktree, host, &r.scratch_branch, hosts)
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

/// The image tier 2 creates the role container from: the tagged image when it is still the
/// recorded one, else the recorded image by its id, with the tag's move as drift. `None` when
/// neither is there (tier 3, or nothing).
pub(super) fn role_image_there(spec: &ContainerSpec, seen: &Observation) -> Option<(String, Option<String>)> {
    let tag_id = seen.image_id(&spec.image);
    if tag_id.is_some() && tag_id == Some(spec.image_id.as_str()) {
        return Some((spec.image.clone(), None));
    }
    let recorded = Some(spec.image_id.as_str()).filter(|id| !id.is_empty()).and_then(|id| seen.image_id(id))?;
    let moved = tag_id
        .map(|moved_to| format!("image tag {} moved to {moved_to}; using the recorded image {recorded}", spec.image));
    Some((recorded.to_owned(), moved))
}
