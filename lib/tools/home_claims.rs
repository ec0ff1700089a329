//! Which of jackin's Docker resources on a shared engine belong to this home (real-host.md, "One
//! engine, several homes"). jackin's labels do not name a home, so only proof counts: a role
//! container whose bind mounts reach into this home's `data/` or `sockets/`, and the sidecar,
//! network and volume of an instance whose role container does or whose name appears here.
//! Everything else is another home's: never reported as an orphan, never removed as one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::engines::docker::ContainerBrief;
use crate::state::names::{instance_of, DockerKind, InstanceName};
use crate::state::store::Store;

pub(crate) struct HomeClaims {
    /// This home's `data/` and `sockets/`, as given and as the filesystem resolves them.
    roots: Vec<PathBuf>,
    /// Instances whose role container bind-mounts something under one of the roots.
    bound: BTreeSet<InstanceName>,
}

impl HomeClaims {
    /// Judged over the engine's list of jackin's containers.
    pub(crate) fn new(store: &Store, managed: &[ContainerBrief]) -> Self {
        let mut roots = Vec::new();
        for root in [store.data_dir(), store.sockets_dir()] {
            if let Ok(resolved) = std::fs::canonicalize(&root) {
                if resolved != root {
                    roots.push(resolved);
                }
            }
            roots.push(root);
        }
        let mut claims = HomeClaims { roots, bound: BTreeSet::new() };
        for container in managed {
            let instance = instance_of(DockerKind::Container, &container.name, &container.labels);
            if let Some(instance) = instance.filter(|i| i.as_str() == container.name) {
                if claims.binds_into_home(&container.binds) {
                    claims.bound.insert(instance);
                }
            }
        }
        claims
    }

    fn binds_into_home(&self, binds: &[PathBuf]) -> bool {
        binds.iter().any(|source| self.roots.iter().any(|root| Path::new(source).starts_with(root)))
    }

    /// Whether this Docker resource of `instance` provably is this home's. A role container
    /// proves it by its own bind mounts; the rest by their instance's role container, or by the
    /// instance's name lock or data dir in this home.
    pub(crate) fn claims(&self, store: &Store, kind: DockerKind, name: &str, instance: &InstanceName) -> bool {
        if self.bound.contains(instance) {
            return true;
        }
        let role_container = kind == DockerKind::Container && name == instance.as_str();
        !role_container
            && (std::fs::symlink_metadata(store.name_lock_path(instance)).is_ok()
                || std::fs::symlink_metadata(store.instance_dir(instance)).is_ok())
    }
}
