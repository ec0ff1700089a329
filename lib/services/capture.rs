//! Capturing a session's launch recipe from the engine and the socket dir, before anything
//! tears its containers down (lifecycle.md, "The launch recipe").

use std::collections::BTreeMap;

use anyhow::Result;

use crate::engines::docker::{ContainerDetails, Engine};
use crate::state::config::launch_env;
use crate::state::model::Manifest;
use crate::state::names::InstanceName;
use crate::state::recipe::{
    added_by_launch, env_bindings, health_argv, less_engine_defaults, mounts_of_launch, ContainerRecipe,
    EngineDefaults, LaunchRecipe, NetworkRecipe, RECIPE_FORMAT,
};
use crate::state::store::Store;

/// The container's recipe: its environment less what its image sets (real-host.md, "Environment").
/// Its `HostConfig` less the engine's defaults (`defaults`) too: what the launch chose.
fn container_recipe(
    engine: &Engine,
    details: ContainerDetails,
    sources: &BTreeMap<String, String>,
    defaults: &EngineDefaults,
    default_health: Option<Vec<String>>,
) -> Result<ContainerRecipe> {
    let health = details.spec.healthcheck.as_deref().and_then(health_argv).or(default_health);
    // The container holds its image, so the image is there; by ID, as the tag may have moved.
    let image = engine.image_defaults(&details.spec.image_id)?.unwrap_or_default();
    let env = env_bindings(&added_by_launch(&details.env, &image.env), sources);
    let mut spec = details.spec;
    spec.mounts = mounts_of_launch(&spec.mounts, &image.volumes);
    if let Some(host_config) = spec.host_config.as_mut() {
        less_engine_defaults(host_config, defaults);
    }
    Ok(ContainerRecipe { env, spec, health })
}

/// Captures the recipe of a session whose role container exists; `None` when it does not. A
/// variable's source is its own name in the restoring environment unless jackin's config gives
/// it another; `agent.toml`'s `exec_bindings` are the agent's to rewrite, so they give none.
pub fn capture(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    manifest: &Manifest,
    captured_by: &str,
) -> Result<Option<LaunchRecipe>> {
    let docker = &manifest.docker;
    // Only the session's own role container is its recipe (services/ownership.rs).
    let Some(role) = crate::services::ownership::own_role_container(engine, store, name, docker)? else {
        return Ok(None);
    };
    let agent_toml = store.read_agent_toml(name)?;
    let sources = launch_env(&store.roots.config_dir, manifest.workspace_name.as_deref(), &manifest.role_key)?.sources;
    let sidecar = match &docker.dind_container {
        Some(sidecar) => engine.inspect(sidecar)?,
        None => None,
    };
    let network = match role.spec.network.as_deref() {
        Some(network) => Some(engine.network_shape(network)?.unwrap_or_else(|| NetworkRecipe {
            id: None,
            // Gone already (jackin's garbage collection): its shape is unknown, so the labels jackin
            // gives it and the engine's defaults.
            name: network.to_owned(),
            labels: BTreeMap::from([
                ("jackin.managed".to_owned(), "true".to_owned()),
                ("jackin.role".to_owned(), name.to_string()),
            ]),
            driver: None,
            internal: false,
            options: BTreeMap::new(),
        })),
        None => None,
    };
    // An engine that does not say what it defaults to keeps those fields as the launch had them.
    let defaults = engine.launch_defaults().unwrap_or_default();
    let docker_info = Some(vec!["docker".to_owned(), "info".to_owned()]);
    Ok(Some(LaunchRecipe {
        format: RECIPE_FORMAT,
        captured_at: crate::base::time::now_rfc3339(),
        captured_by: captured_by.to_owned(),
        role: container_recipe(engine, role, &sources, &defaults, None)?,
        sidecar: sidecar.map(|s| container_recipe(engine, s, &sources, &defaults, docker_info)).transpose()?,
        network,
        certs_volume: docker.certs_volume.clone(),
        agent_toml,
        config_literals: BTreeMap::new(),
    }))
}
