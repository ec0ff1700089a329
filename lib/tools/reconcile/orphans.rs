//! Orphans (whole-host runs only): jackin's Docker resources, name locks and temp files whose
//! instance or writer is gone. Reported, never removed here: jackin-purge removes them.

use std::collections::BTreeSet;
use std::io::ErrorKind;

use anyhow::{Context, Result};

use super::observe::Observation;
use crate::protocol::codes::{OrphanKind, ResourceKind};
use crate::protocol::records::{Orphan, Repair, RepairKind};
use crate::services::home_claims::HomeClaims;
use crate::state::names::{instance_of, DockerKind, InstanceName};
use crate::state::store::{name_lock_held, name_lock_owner, temp_writer, writer_alive, Store};

/// What an orphan is judged against.
struct Scan<'a> {
    store: &'a Store,
    /// Instances with an index row or a data dir after this run's repairs.
    alive: BTreeSet<InstanceName>,
    /// Docker names some manifest records (an adopted prewarmed sidecar keeps a name that cannot
    /// be derived).
    owned: BTreeSet<String>,
    /// What of the engine provably is this home's: the engine may be shared with other homes.
    claims: HomeClaims,
    dry_run: bool,
}

impl Scan<'_> {
    fn gone(&self, instance: &InstanceName) -> bool {
        // A lock we cannot even test is treated as held: the session may be live.
        !self.alive.contains(instance) && !name_lock_held(&self.store.name_lock_path(instance)).unwrap_or(true)
    }

    fn orphan(&self, kind: ResourceKind, name: &str, reason: String) -> Orphan {
        Orphan { kind: OrphanKind::Known(kind), name: name.to_owned(), reason, dry_run: self.dry_run }
    }

    /// The orphan record of a resource of this home whose instance is gone.
    fn of_instance(&self, kind: DockerKind, name: &str, instance: Option<InstanceName>) -> Option<Orphan> {
        let instance = instance.filter(|i| self.gone(i) && self.claims.claims(self.store, kind, name, i))?;
        let kind = match kind {
            DockerKind::Container => ResourceKind::Container,
            DockerKind::Network => ResourceKind::Network,
            DockerKind::Volume => ResourceKind::Volume,
        };
        let why = format!("its instance {instance} no longer exists (no data dir, no index row)");
        Some(self.orphan(kind, name, why))
    }

    fn temp_file(&self, name: &str, pid: u32) -> Orphan {
        self.orphan(
            ResourceKind::TempFile,
            name,
            format!("temp file of an atomic write by process {pid}, which is gone"),
        )
    }
}

/// The orphans of the host, given the repairs this run made (a dropped row no longer keeps its
/// instance alive).
pub(crate) fn find(store: &Store, observation: &Observation, repairs: &[Repair], dry_run: bool) -> Result<Vec<Orphan>> {
    let dirs = &observation.catalog.dirs;
    let mut alive: BTreeSet<InstanceName> = observation.catalog.names().cloned().collect();
    for r in repairs.iter().filter(|r| r.kind == RepairKind::RowDropped) {
        if let Ok(name) = InstanceName::parse(&r.name) {
            if !dirs.contains(&name) {
                alive.remove(&name);
            }
        }
    }
    let mut owned = BTreeSet::new();
    for seen in &observation.instances {
        if let Ok(Some(m)) = &seen.manifest {
            owned.insert(m.docker.role_container.clone());
            owned.insert(m.docker.network.clone());
            owned.extend(m.docker.dind_container.clone());
            owned.extend(m.docker.certs_volume.clone());
        }
    }
    let claims = HomeClaims::new(store, &observation.containers);
    let scan = Scan { store, alive, owned, claims, dry_run };
    let mut orphans = docker_orphans(&scan, observation);
    file_orphans(&scan, dirs, &mut orphans)?;
    Ok(orphans)
}

fn docker_orphans(scan: &Scan, observation: &Observation) -> Vec<Orphan> {
    let mut orphans = Vec::new();
    for c in observation.containers.iter().filter(|c| !scan.owned.contains(&c.name)) {
        let instance = instance_of(DockerKind::Container, &c.name, &c.labels);
        orphans.extend(scan.of_instance(DockerKind::Container, &c.name, instance));
    }
    // A network or volume still used by a container that is not itself going is no orphan,
    // whichever home (or none) that container belongs to.
    let going: BTreeSet<&str> = orphans.iter().map(|o| o.name.as_str()).collect();
    let users = observation.every_container.iter().filter(|c| !going.contains(c.name.as_str()));
    let (mut networks_used, mut volumes_used) = (BTreeSet::new(), BTreeSet::new());
    for c in users {
        networks_used.extend(c.networks.iter().map(String::as_str));
        volumes_used.extend(c.volumes.iter().map(String::as_str));
    }
    for (name, labels) in &observation.networks {
        if scan.owned.contains(name) || networks_used.contains(name.as_str()) {
            continue;
        }
        orphans.extend(scan.of_instance(DockerKind::Network, name, instance_of(DockerKind::Network, name, labels)));
    }
    for (name, labels) in &observation.volumes {
        let jackins = name.ends_with("-dind-certs") || labels.get("jackin.managed").is_some_and(|v| v == "true");
        if !jackins || scan.owned.contains(name) || volumes_used.contains(name.as_str()) {
            continue;
        }
        orphans.extend(scan.of_instance(DockerKind::Volume, name, instance_of(DockerKind::Volume, name, labels)));
    }
    orphans
}

/// Unheld name locks of vanished instances, and temp files whose writer is gone: in `data/` and
/// in every instance's `.jackin/`.
fn file_orphans(scan: &Scan, dirs: &BTreeSet<InstanceName>, orphans: &mut Vec<Orphan>) -> Result<()> {
    let data = scan.store.data_dir();
    let entries = match std::fs::read_dir(&data) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e).with_context(|| format!("listing {}", data.display())),
    };
    // In name order, not the directory's: a run's records come out the same from run to run.
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let Some(file) = entry.file_name().to_str().map(str::to_owned) else { continue };
        if !entry.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        if let Some(instance) = name_lock_owner(&file) {
            if scan.gone(&instance) {
                let reason = format!("unheld name lock {file} of an instance that no longer exists");
                orphans.push(scan.orphan(ResourceKind::NameLock, instance.as_str(), reason));
            }
        } else if let Some(pid) = temp_writer(&file).filter(|&pid| !writer_alive(pid)) {
            orphans.push(scan.temp_file(&file, pid));
        }
    }
    // One directory listing per instance: at 10,000 instances the listings are most of a
    // whole-host run's disk time, so they run on every core (results stay in name order).
    let dirs: Vec<&InstanceName> = dirs.iter().collect();
    let found = crate::base::parallel::map(&dirs, |dir| {
        let Ok(entries) = std::fs::read_dir(scan.store.meta_dir(dir)) else { return Vec::new() };
        let mut entries: Vec<_> = entries.flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        let dead_writer = |entry: &std::fs::DirEntry| {
            let file = entry.file_name().to_str()?.to_owned();
            let pid = temp_writer(&file).filter(|&pid| !writer_alive(pid))?;
            entry.file_type().is_ok_and(|t| t.is_file()).then(|| (format!("{dir}/.jackin/{file}"), pid))
        };
        entries.iter().filter_map(dead_writer).collect::<Vec<_>>()
    });
    for (path, pid) in found.into_iter().flatten() {
        orphans.push(scan.temp_file(&path, pid));
    }
    Ok(())
}
