//! Which of jackin's Docker resources on a shared engine belong to this home (real-host.md, "One
//! engine, several homes"). jackin's labels do not name a home, so only proof counts: a role
//! container whose bind mounts reach into this home's `data/` or `sockets/`, and the sidecar,
//! network and volume of an instance whose role container does or whose name appears here.
//! Everything else is another home's: never reported as an orphan, never removed as one.

use std::collections::BTreeSet;

use crate::engines::docker::ContainerBrief;
use crate::services::ownership::HomeRoots;
use crate::state::names::{instance_of, DockerKind, InstanceName};
use crate::state::store::Store;

pub(crate) struct HomeClaims {
    /// This home's `data/` and `sockets/`.
    roots: HomeRoots,
    /// Instances whose role container bind-mounts something under one of the roots.
    bound: BTreeSet<InstanceName>,
}

impl HomeClaims {
    /// Judged over the engine's list of jackin's containers.
    pub(crate) fn new(store: &Store, managed: &[ContainerBrief]) -> Self {
        let mut claims = HomeClaims { roots: HomeRoots::of(store), bound: BTreeSet::new() };
        for container in managed {
            let instance = instance_of(DockerKind::Container, &container.name, &container.labels);
            if let Some(instance) = instance.filter(|i| i.as_str() == container.name) {
                if claims.roots.binds_into_home(&container.binds) {
                    claims.bound.insert(instance);
                }
            }
        }
        claims
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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::fs;
    use std::path::PathBuf;

    use super::*;
    use crate::state::store::Roots;

    fn container(name: &str, binds: &[PathBuf]) -> ContainerBrief {
        ContainerBrief {
            id: name.into(),
            name: name.into(),
            labels: BTreeMap::from([("jackin.managed".to_owned(), "true".to_owned())]),
            state: "exited".into(),
            binds: binds.to_vec(),
            networks: Vec::new(),
            volumes: Vec::new(),
        }
    }

    fn name(text: &str) -> InstanceName {
        InstanceName::parse(text).unwrap()
    }

    /// A home whose `data/` is a link to where the files really are, as on a host that keeps
    /// them on another disk: Docker reports a bind by the path it was given, either one.
    #[test]
    fn only_proof_makes_a_resource_this_homes() {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        fs::create_dir_all(home.join("sockets")).unwrap();
        fs::create_dir_all(tmp.path().join("disk/data")).unwrap();
        std::os::unix::fs::symlink(tmp.path().join("disk/data"), home.join("data")).unwrap();
        let store = Store::open(Roots { home: home.clone(), config_dir: home.clone() }).unwrap();
        let other_home = tmp.path().join("other/data");
        let managed = [
            // Bound into this home's data/, by the link and by the resolved path; into sockets/.
            container("jk-00000001-app-smith", &[home.join("data/jk-00000001-app-smith/home")]),
            container("jk-00000002-app-smith", &[tmp.path().join("disk/data/jk-00000002-app-smith/home")]),
            container("jk-00000003-app-smith", &[home.join("sockets/jk-00000003-app-smith")]),
            // Another home's, and one binding a path that only begins like this home's.
            container("jk-00000004-app-smith", &[other_home.join("jk-00000004-app-smith/home")]),
            container("jk-00000005-app-smith", &[tmp.path().join("home/database")]),
            // A sidecar binding into this home proves nothing for its instance.
            container("jk-00000006-app-smith-dind", &[home.join("data/jk-00000006-app-smith")]),
        ];
        let claims = HomeClaims::new(&store, &managed);
        // Instances 4 and 7 have a name lock here, 8 a data directory; 9 nothing.
        for id in ["00000004", "00000007"] {
            fs::write(store.name_lock_path(&name(&format!("jk-{id}-app-smith"))), "").unwrap();
        }
        fs::create_dir_all(store.instance_dir(&name("jk-00000008-app-smith"))).unwrap();

        let container_claimed = |n: &str| claims.claims(&store, DockerKind::Container, n, &name(n));
        let sidecar_claimed = |n: &str| claims.claims(&store, DockerKind::Container, &format!("{n}-dind"), &name(n));
        let network_claimed = |n: &str| claims.claims(&store, DockerKind::Network, &format!("{n}-net"), &name(n));
        for n in ["jk-00000001-app-smith", "jk-00000002-app-smith", "jk-00000003-app-smith"] {
            assert!(container_claimed(n) && sidecar_claimed(n) && network_claimed(n), "{n}: its binds prove it");
        }
        // A role container is proved by its own binds alone: a lock of the same name here does
        // not make another home's container this one's. Its sidecar and network it does.
        assert!(!container_claimed("jk-00000004-app-smith"), "another home's role container");
        assert!(sidecar_claimed("jk-00000004-app-smith") && network_claimed("jk-00000004-app-smith"));
        assert!(!container_claimed("jk-00000005-app-smith"), "home/database is not under home/data");
        assert!(!container_claimed("jk-00000006-app-smith") && !network_claimed("jk-00000006-app-smith"));
        assert!(sidecar_claimed("jk-00000007-app-smith") && network_claimed("jk-00000007-app-smith"), "a lock");
        assert!(sidecar_claimed("jk-00000008-app-smith") && network_claimed("jk-00000008-app-smith"), "a data dir");
        assert!(!container_claimed("jk-00000008-app-smith"), "a data dir does not prove a role container");
        assert!(!sidecar_claimed("jk-00000009-app-smith") && !network_claimed("jk-00000009-app-smith"));
    }
}
