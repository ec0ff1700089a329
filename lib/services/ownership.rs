//! Whether a Docker resource that a session's files name is that session's own, in this home:
//! proved from what the engine says of the resource, never from the name alone (a manifest may
//! come from an archive, and several homes share one engine). A resource that is not provably
//! the session's is not stopped, not removed and not evidence of its status
//! (docs/threat-model.md, "Docker resources").
//!
//! The proof:
//! - every container and network carries jackin's label `jackin.managed=true`;
//! - the role container is named as the instance, and a sidecar or network whose labels name an
//!   instance (`jackin.role`) names this one (jackin's prewarmed resources name none: a manifest
//!   that adopted them owns them);
//! - no bind mount of the role container reaches another home's `data/<c>` or `sockets/<c>`: a
//!   session moved to another home on the same engine and resumed there is that home's;
//! - a certs volume (jackin labels none) is named as jackin names the instance's, or the
//!   prewarmed one;
//! - the sidecar, network and volume of a role container that is another's are another's too,
//!   and a network or volume that a container which is not the session's uses is left to it.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use anyhow::Result;

use crate::engines::docker::{ContainerDetails, Engine};
use crate::protocol::codes::ResourceKind;
use crate::protocol::records::Removed;
use crate::state::model::DockerNames;
use crate::state::names::{
    derived_certs_volume, instance_of, interim_container, interim_for, is_prewarm, DockerKind, InstanceName,
    PREWARM_PREFIX,
};
use crate::state::store::Store;

/// This home's `data/` and `sockets/`, as given and as the filesystem resolves them.
pub(crate) struct HomeRoots(Vec<PathBuf>);

impl HomeRoots {
    pub(crate) fn of(store: &Store) -> Self {
        let mut roots = Vec::new();
        for root in [store.data_dir(), store.sockets_dir()] {
            if let Ok(resolved) = std::fs::canonicalize(&root) {
                if resolved != root {
                    roots.push(resolved);
                }
            }
            roots.push(root);
        }
        HomeRoots(roots)
    }

    /// Whether a bind source is under this home's `data/` or `sockets/`.
    pub(crate) fn binds_into_home(&self, binds: &[PathBuf]) -> bool {
        binds.iter().any(|source| self.0.iter().any(|root| Path::new(source).starts_with(root)))
    }

    /// The other jackin home whose `data/<name>` or `sockets/<name>` a bind source reaches, when
    /// it is not this home's.
    pub(crate) fn other_home(&self, name: &InstanceName, binds: &[PathBuf]) -> Option<PathBuf> {
        binds.iter().filter(|source| !self.0.iter().any(|root| source.starts_with(root))).find_map(|source| {
            let parts: Vec<Component<'_>> = source.components().collect();
            parts
                .windows(2)
                .position(|w| {
                    matches!(w[0].as_os_str().to_str(), Some("data" | "sockets")) && w[1].as_os_str() == name.as_str()
                })
                .map(|at| parts[..at].iter().collect::<PathBuf>())
        })
    }
}

/// Why a container the session's files name is not the session's; `Ok` when it is.
pub(crate) fn judge_container(
    roots: &HomeRoots,
    name: &InstanceName,
    docker: &DockerNames,
    container: &str,
    labels: &BTreeMap<String, String>,
    binds: &[PathBuf],
) -> Result<(), String> {
    if labels.get("jackin.managed").map(String::as_str) != Some("true") {
        return Err(format!("{container} is not labelled as jackin's"));
    }
    let role = container == docker.role_container;
    let says = instance_of(DockerKind::Container, container, labels);
    let adopted = !role && is_prewarm(container, labels);
    if role && (container != name.as_str() || says.as_ref() != Some(name)) {
        return Err(format!("{container} is not the role container of {name}"));
    }
    if !role && !adopted && says.as_ref() != Some(name) {
        let other = says.map_or_else(|| "no instance".to_owned(), |s| s.to_string());
        return Err(format!("{container}'s labels say it is {other}'s, not {name}'s"));
    }
    if let Some(home) = roots.other_home(name, binds) {
        return Err(format!("{container} belongs to the jackin home at {}", home.display()));
    }
    Ok(())
}

/// Why a network the session's files name is not the session's (by its labels); `Ok` when it is.
pub(crate) fn judge_network(
    name: &InstanceName,
    network: &str,
    labels: &BTreeMap<String, String>,
) -> Result<(), String> {
    if labels.get("jackin.managed").map(String::as_str) != Some("true") {
        return Err(format!("the network {network} is not labelled as jackin's"));
    }
    match instance_of(DockerKind::Network, network, labels) {
        Some(says) if says == *name => Ok(()),
        None if is_prewarm(network, labels) => Ok(()),
        says => Err(format!(
            "the network {network}'s labels say it is {}'s, not {name}'s",
            says.map_or_else(|| "no instance".to_owned(), |s| s.to_string())
        )),
    }
}

/// Why a volume the session's files name is not the session's (jackin labels none: its name);
/// `Ok` when it is.
pub(crate) fn judge_volume(name: &InstanceName, volume: &str) -> Result<(), String> {
    if volume == derived_certs_volume(name.as_str()) || volume.starts_with(PREWARM_PREFIX) {
        Ok(())
    } else {
        Err(format!("the volume {volume} is not named as {name}'s certs volume"))
    }
}

/// What the engine says of one resource the session's files name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Judged {
    Absent,
    Own,
    /// Not the session's: why.
    Foreign(String),
}

/// One of a session's Docker resources.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resource {
    Container(String),
    Network(String),
    Volume(String),
}

impl Resource {
    /// As a `purged` record names it.
    pub(crate) fn removed(&self) -> Removed {
        let (kind, name) = match self {
            Resource::Container(name) => (ResourceKind::Container, name),
            Resource::Network(name) => (ResourceKind::Network, name),
            Resource::Volume(name) => (ResourceKind::Volume, name),
        };
        Removed::new(kind, name.clone())
    }
}

/// The session's resources, in the order Docker lets them go.
pub(crate) fn resources(docker: &DockerNames) -> Vec<Resource> {
    let mut resources = vec![Resource::Container(docker.role_container.clone())];
    resources.extend(docker.dind_container.clone().map(Resource::Container));
    resources.push(Resource::Network(docker.network.clone()));
    resources.extend(docker.certs_volume.clone().map(Resource::Volume));
    resources
}

/// The session's resources in teardown order, each judged from the engine.
pub(crate) fn judge(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    docker: &DockerNames,
) -> Result<Vec<(Resource, Judged)>> {
    let roots = HomeRoots::of(store);
    let containers: Vec<&str> =
        std::iter::once(docker.role_container.as_str()).chain(docker.dind_container.as_deref()).collect();
    let interims: Vec<String> = containers.iter().map(|c| interim_container(c)).collect();
    let ours: Vec<&str> = containers.iter().copied().chain(interims.iter().map(String::as_str)).collect();
    // A replacement a restore killed half-way left goes with the container it stood in for.
    let mut all = resources(docker);
    all.splice(containers.len()..containers.len(), interims.iter().cloned().map(Resource::Container));
    let mut judged: Vec<(Resource, Judged)> = Vec::new();
    for resource in all {
        let role_foreign = judged.first().and_then(|(_, j)| match j {
            Judged::Foreign(why) => Some(format!("its session's role container is not this one's ({why})")),
            _ => None,
        });
        let verdict = match (&resource, role_foreign) {
            (_, Some(why)) => Judged::Foreign(why),
            (Resource::Container(container), None) => match engine.inspect(container)? {
                None => Judged::Absent,
                Some(details) => of(judge_details(&roots, name, docker, &details)),
            },
            (Resource::Network(network), None) => match engine.network_shape(network)? {
                None => Judged::Absent,
                Some(shape) => match judge_network(name, network, &shape.labels) {
                    Err(why) => Judged::Foreign(why),
                    Ok(()) => used_by_others(engine, ("network", network), &ours)?,
                },
            },
            (Resource::Volume(volume), None) => match engine.volume_exists(volume)? {
                false => Judged::Absent,
                true => match judge_volume(name, volume) {
                    Err(why) => Judged::Foreign(why),
                    Ok(()) => used_by_others(engine, ("volume", volume), &ours)?,
                },
            },
        };
        judged.push((resource, verdict));
    }
    Ok(judged)
}

fn of(result: Result<(), String>) -> Judged {
    match result {
        Ok(()) => Judged::Own,
        Err(why) => Judged::Foreign(why),
    }
}

fn binds(details: &ContainerDetails) -> Vec<PathBuf> {
    details.spec.mounts.iter().filter(|m| m.kind == "bind").map(|m| PathBuf::from(&m.source)).collect()
}

/// A network or volume that a container other than the session's uses stays with it.
fn used_by_others(engine: &Engine, what: (&str, &str), ours: &[&str]) -> Result<Judged> {
    let others: Vec<String> =
        engine.users_of(what)?.into_iter().filter(|user| !ours.contains(&user.as_str())).collect();
    Ok(match others.is_empty() {
        true => Judged::Own,
        false => Judged::Foreign(format!("the {} {} is in use by {}", what.0, what.1, others.join(", "))),
    })
}

/// Why a container the engine describes is not the session's ([`judge_container`]). One under an
/// interim name (state/names.rs) is the session's only when restore made it from a launch recipe
/// (it carries the tools' label), and is judged as the container it stands in for.
pub(crate) fn judge_details(
    roots: &HomeRoots,
    name: &InstanceName,
    docker: &DockerNames,
    details: &ContainerDetails,
) -> Result<(), String> {
    let container = details.name.as_str();
    match interim_for(container) {
        Some(_) if details.spec.made_from.is_none() => Err(format!("{container} was not made by jackin-restore")),
        stands_in_for => judge_container(
            roots,
            name,
            docker,
            stands_in_for.unwrap_or(container),
            &details.spec.labels,
            &binds(details),
        ),
    }
}

/// The session's role container as the engine has it, when it is the session's own (else, for
/// every tool, as if it were gone).
pub(crate) fn own_role_container(
    engine: &Engine,
    store: &Store,
    name: &InstanceName,
    docker: &DockerNames,
) -> Result<Option<ContainerDetails>> {
    let Some(details) = engine.inspect(&docker.role_container)? else { return Ok(None) };
    let own = judge_details(&HomeRoots::of(store), name, docker, &details);
    Ok(own.is_ok().then_some(details))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::store::Roots;

    fn name(text: &str) -> InstanceName {
        InstanceName::parse(text).unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_container_is_the_sessions_only_by_its_labels_and_its_home() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("a/.jackin");
        std::fs::create_dir_all(&home).unwrap();
        let store = Store::open(Roots { home: home.clone(), config_dir: home.clone() }).unwrap();
        let roots = HomeRoots::of(&store);
        let c = name("jk-00000001-app-smith");
        let docker = DockerNames::derived(c.as_str());
        let role = labels(&[("jackin.managed", "true"), ("jackin.kind", "role")]);
        let sidecar = labels(&[("jackin.managed", "true"), ("jackin.kind", "dind"), ("jackin.role", c.as_str())]);
        let ours = [home.join("data").join(c.as_str()).join("home")];
        let other_home = tmp.path().join("b/.jackin");
        let theirs = [other_home.join("data").join(c.as_str()).join("home"), PathBuf::from("/srv/repo")];
        assert_eq!(judge_container(&roots, &c, &docker, c.as_str(), &role, &ours), Ok(()));
        assert_eq!(judge_container(&roots, &c, &docker, c.as_str(), &role, &[]), Ok(()), "no bind says otherwise");
        let sidecar_name = docker.dind_container.clone().unwrap();
        assert_eq!(judge_container(&roots, &c, &docker, &sidecar_name, &sidecar, &[]), Ok(()));
        let refused = [
            ("another home's", judge_container(&roots, &c, &docker, c.as_str(), &role, &theirs)),
            ("unlabelled", judge_container(&roots, &c, &docker, c.as_str(), &labels(&[]), &ours)),
            ("a sidecar of another", {
                let other = labels(&[("jackin.managed", "true"), ("jackin.kind", "dind"), ("jackin.role", "jk-2-x")]);
                judge_container(&roots, &c, &docker, &sidecar_name, &other, &[])
            }),
            ("another instance as role", {
                let forged = DockerNames { role_container: "jk-00000002-app-smith".into(), ..docker.clone() };
                judge_container(&roots, &c, &forged, "jk-00000002-app-smith", &role, &[])
            }),
        ];
        for (what, result) in refused {
            assert!(result.is_err(), "{what}: {result:?}");
        }
        let err = judge_container(&roots, &c, &docker, c.as_str(), &role, &theirs).unwrap_err();
        assert!(err.contains(other_home.to_str().unwrap()), "the other home is named: {err}");
    }

    #[test]
    fn networks_and_volumes_are_the_sessions_by_their_labels_and_names() {
        let c = name("jk-00000001-app-smith");
        let net = format!("{c}-net");
        assert_eq!(
            judge_network(&c, &net, &labels(&[("jackin.managed", "true"), ("jackin.role", c.as_str())])),
            Ok(())
        );
        assert!(judge_network(&c, &net, &labels(&[("jackin.managed", "true"), ("jackin.role", "jk-2-x")])).is_err());
        assert!(judge_network(&c, "bridge", &labels(&[])).is_err());
        let prewarm =
            labels(&[("jackin.managed", "true"), ("jackin.kind", "prewarm-dind"), ("jackin.prewarm", "true")]);
        assert_eq!(judge_network(&c, "jk-prewarm-dind-net", &prewarm), Ok(()), "an adopted prewarm");
        assert_eq!(judge_volume(&c, &format!("{c}-dind-certs")), Ok(()));
        assert_eq!(judge_volume(&c, "jk-prewarm-dind-certs"), Ok(()));
        for other in ["postgres-data", "jk-00000002-app-smith-dind-certs", "jk-00000001-app-smith"] {
            assert!(judge_volume(&c, other).is_err(), "{other}");
        }
    }
}
