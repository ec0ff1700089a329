//! Capturing a session's launch recipe from the engine and the socket dir, before anything
//! tears its containers down (lifecycle.md, "The launch recipe").

use std::collections::BTreeMap;

use anyhow::Result;

use crate::engines::docker::{ContainerDetails, Engine};
use crate::state::model::DockerNames;
use crate::state::names::InstanceName;
use crate::state::recipe::{
    env_bindings, exec_binding_sources, health_argv, ContainerRecipe, LaunchRecipe, NetworkRecipe,
};
use crate::state::store::Store;

fn container_recipe(
    details: ContainerDetails,
    sources: &BTreeMap<String, String>,
    default_health: Option<Vec<String>>,
) -> ContainerRecipe {
    let health = details.spec.healthcheck.as_deref().and_then(health_argv).or(default_health);
    ContainerRecipe { env: env_bindings(&details.env, sources), spec: details.spec, health }
}

/// Captures the recipe of a session whose role container exists; `None` when it does not.
pub fn capture(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    docker: &DockerNames,
    captured_by: &str,
) -> Result<Option<LaunchRecipe>> {
    let Some(role) = engine.inspect(&docker.role_container)? else { return Ok(None) };
    let agent_toml = store.read_agent_toml(name)?;
    let sources = agent_toml.as_deref().map(exec_binding_sources).unwrap_or_default();
    let sidecar = match &docker.dind_container {
        Some(sidecar) => engine.inspect(sidecar)?,
        None => None,
    };
    let network = role.spec.network.as_ref().map(|network| NetworkRecipe {
        name: network.clone(),
        labels: BTreeMap::from([
            ("jackin.managed".to_owned(), "true".to_owned()),
            ("jackin.role".to_owned(), name.to_string()),
        ]),
    });
    let docker_info = Some(vec!["docker".to_owned(), "info".to_owned()]);
    Ok(Some(LaunchRecipe {
        captured_at: crate::base::time::now_rfc3339(),
        captured_by: captured_by.to_owned(),
        role: container_recipe(role, &sources, None),
        sidecar: sidecar.map(|s| container_recipe(s, &sources, docker_info)),
        network,
        certs_volume: docker.certs_volume.clone(),
        agent_toml,
    }))
}
