//! A session's Docker resources and the one order they go in: the role container, the sidecar
//! (each with its anonymous volumes), the network, the certs volume. Keep frees them after the
//! launch recipe is safe on disk; purge removes them at its step 4 and its dry run lists them.
//! One owner, so the three cannot drift apart.

use anyhow::Result;

use crate::engines::docker::Engine;
use crate::services::ownership::{self, Judged, Resource};
use crate::state::model::DockerNames;
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// Removes one resource; whether it was there.
fn remove(resource: &Resource, engine: &Engine) -> Result<bool> {
    match resource {
        Resource::Container(name) => engine.remove_container(name),
        Resource::Network(name) => engine.remove_network(name),
        Resource::Volume(name) => engine.remove_volume(name),
    }
}

/// Removes the session's resources in order, each only when the engine proves it the session's
/// own (services/ownership.rs: one that is another session's or another home's stays); returns
/// those that were there. One already gone is fine.
pub(crate) fn tear_down(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    docker: &DockerNames,
) -> Result<Vec<Resource>> {
    let mut removed = Vec::new();
    for (resource, judged) in ownership::judge(engine, store, name, docker)? {
        if judged == Judged::Own && remove(&resource, engine)? {
            removed.push(resource);
        }
    }
    Ok(removed)
}

/// What [`tear_down`] would remove now, changing nothing; an engine that cannot tell reads as
/// "nothing there", for a dry run's report only.
pub(crate) fn present(engine: &Engine, store: &Store, name: &InstanceName, docker: &DockerNames) -> Vec<Resource> {
    let judged = ownership::judge(engine, store, name, docker).unwrap_or_default();
    judged.into_iter().filter(|(_, judged)| *judged == Judged::Own).map(|(resource, _)| resource).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::codes::ResourceKind;
    use crate::protocol::records::Removed;
    use crate::services::ownership::resources;

    /// Role container, sidecar, network, certs volume: a network goes only once no container
    /// uses it, and a volume once no container mounts it.
    #[test]
    fn containers_go_first_then_the_network_then_the_volume() {
        let docker = DockerNames::derived("jk-a1b2c3d4-app-agent");
        let kinds: Vec<Removed> = resources(&docker).iter().map(Resource::removed).collect();
        let pairs: Vec<(ResourceKind, &str)> = kinds.iter().map(|r| (r.kind, r.name.as_str())).collect();
        assert_eq!(
            pairs,
            [
                (ResourceKind::Container, "jk-a1b2c3d4-app-agent"),
                (ResourceKind::Container, "jk-a1b2c3d4-app-agent-dind"),
                (ResourceKind::Network, "jk-a1b2c3d4-app-agent-net"),
                (ResourceKind::Volume, "jk-a1b2c3d4-app-agent-dind-certs"),
            ]
        );
        let mut without_sidecar = docker.clone();
        without_sidecar.dind_container = None;
        without_sidecar.certs_volume = None;
        assert_eq!(resources(&without_sidecar).len(), 2);
    }
}
