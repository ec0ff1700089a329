//! Orphans reported by jackin-reconcile: jackin's Docker resources, name locks and temp files
//! whose instance no longer exists. Each is checked again before it goes; jackin's other files
//! (`instances.json.lock`, `*.repo.lock`, `<slug>.locks/`, `caffeinate.*`, `prewarm-*`) can never
//! match the names accepted here.

use std::path::{Component, Path, PathBuf};

use anyhow::Result;

use super::{refused, Outcome, Purger};
use crate::base::exit::Exit;
use crate::engines::docker::ContainerBrief;
use crate::protocol::codes::{ErrorCode, ResourceKind};
use crate::protocol::identity::Identity;
use crate::protocol::path_bytes::NameBytes;
use crate::protocol::records::{Orphan, Purged, Removed};
use crate::services::home_claims::HomeClaims;
use crate::state::names::{
    instance_id_of, instance_of, is_docker_name, is_of_instance, is_prewarm, is_valid_name, DockerKind, InstanceName,
    PREWARM_PREFIX,
};
use crate::state::store::{name_lock_held, name_lock_owner, temp_writer, writer_alive, NameLock, NameLockTry, Store};

/// What the engine showed of jackin's containers when this run checked its first orphan: before
/// it removed any, so a sidecar is still judged by its role container.
pub(crate) struct EngineSnapshot {
    claims: HomeClaims,
    managed: Vec<ContainerBrief>,
}

impl EngineSnapshot {
    pub(crate) fn take(store: &Store, engine: &crate::engines::docker::Engine) -> Result<Self> {
        let managed = engine.list_managed()?;
        Ok(EngineSnapshot { claims: HomeClaims::new(store, &managed), managed })
    }
}

/// When an orphan's turn comes, in a run that removes orphans in stages: containers (0), then the
/// networks and volumes they used (1: never removed while a container still uses them), then name
/// locks and temp files (2: a name lock is the proof that a network or volume is this home's).
pub(crate) fn stage(orphan: &Orphan) -> usize {
    match orphan.kind.known() {
        Some(ResourceKind::Container) => 0,
        Some(ResourceKind::Network | ResourceKind::Volume) => 1,
        _ => 2,
    }
}

fn lock_instance(name: &str) -> Option<InstanceName> {
    let file = if name.starts_with('/') { Path::new(name).file_name()?.to_str()? } else { name };
    name_lock_owner(file).or_else(|| InstanceName::parse(file).ok())
}

/// A temp file orphan's path relative to `data/`: a file there, or in `<c>/.jackin/`.
fn temp_relative(name: &str, data: Option<&Path>) -> Option<PathBuf> {
    let path = Path::new(name);
    let rel = if path.is_absolute() { path.strip_prefix(data?).ok()? } else { path };
    let parts: Vec<&str> = rel
        .components()
        .map(|c| match c {
            Component::Normal(p) => p.to_str(),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let ok = match parts.as_slice() {
        [file] => temp_writer(file).is_some(),
        [instance, ".jackin", file] => is_valid_name(instance) && temp_writer(file).is_some(),
        _ => false,
    };
    ok.then(|| rel.to_path_buf())
}

/// Checked with the rest of the input, before anything acts: a name that could not be one of
/// jackin's is bad input. An unknown kind is not: it is refused on its own when its turn comes.
pub(crate) fn check_name(orphan: &Orphan) -> Result<()> {
    let ok = match orphan.kind.known() {
        Some(ResourceKind::Container | ResourceKind::Network | ResourceKind::Volume) => is_docker_name(&orphan.name),
        Some(ResourceKind::NameLock) => lock_instance(&orphan.name).is_some(),
        Some(ResourceKind::TempFile) => {
            Path::new(&orphan.name).is_absolute() || temp_relative(&orphan.name, None).is_some()
        }
        _ => true,
    };
    if ok {
        Ok(())
    } else {
        Err(anyhow::anyhow!("{:?} is not a name jackin gives a {}", orphan.name, orphan.kind))
    }
}

fn identity(name: &str) -> Identity {
    Identity::of_name(name, instance_id_of(name).unwrap_or_default())
}

fn prewarm_refused(orphan: &Orphan) -> Outcome {
    let why =
        anyhow::anyhow!("{} {} is jackin's prewarmed sidecar or its resource; left alone", orphan.kind, orphan.name);
    refused(ErrorCode::NotOrphan, why)
}

impl Purger<'_> {
    pub(crate) fn orphan(&self, orphan: &Orphan) -> Outcome {
        match self.orphan_inner(orphan) {
            Ok(Ok(removed)) => Outcome::Purged(Purged {
                identity: identity(&orphan.name),
                removed,
                freed_bytes: 0,
                quarantine: None,
                slimmed: false,
                dry_run: self.options.dry_run,
            }),
            Ok(Err(outcome)) => outcome,
            Err(e) => refused(ErrorCode::PurgeFailed, e),
        }
    }

    /// The instance id the name belongs to still has an index row or a data dir: not an orphan.
    fn owner_exists(&self, name: &str) -> bool {
        let Some(id) = instance_id_of(name) else { return false };
        let row = self.catalog.index.instances.iter().any(|r| is_of_instance(&r.container_base, id));
        let dir = std::fs::read_dir(self.store.data_dir()).is_ok_and(|entries| {
            entries.flatten().any(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                is_of_instance(&n, id) && !n.ends_with(".lock") && e.file_type().is_ok_and(|t| t.is_dir())
            })
        });
        row || dir
    }

    /// Another home's resource on the shared engine, or one a container still uses: refused.
    fn not_this_homes(&self, orphan: &Orphan) -> Result<Option<Outcome>> {
        let snapshot = match self.snapshot.get_or_init(|| EngineSnapshot::take(self.store, self.engine)) {
            Ok(snapshot) => snapshot,
            Err(e) => anyhow::bail!("{e:#}"),
        };
        let kind = match orphan.kind.known() {
            Some(ResourceKind::Container) => DockerKind::Container,
            Some(ResourceKind::Network) => DockerKind::Network,
            _ => DockerKind::Volume,
        };
        let listed = snapshot.managed.iter().find(|c| c.name == orphan.name);
        let labels = listed.map(|c| c.labels.clone()).unwrap_or_default();
        if kind == DockerKind::Container && listed.is_none() && self.engine.inspect(&orphan.name)?.is_none() {
            // Gone already: the removal below finds nothing to remove.
            return Ok(None);
        }
        let instance = instance_of(kind, &orphan.name, &labels);
        if !instance.is_some_and(|i| snapshot.claims.claims(self.store, kind, &orphan.name, &i)) {
            let why = anyhow::anyhow!(
                "{} {} is not provably this home's (no bind mount of its instance under {} or {}, no name here); \
                 another jackin home may share this engine, so it is left alone",
                orphan.kind,
                orphan.name,
                self.store.data_dir().display(),
                self.store.sockets_dir().display()
            );
            return Ok(Some(refused(ErrorCode::NotOrphan, why)));
        }
        if kind != DockerKind::Container {
            let users = self.engine.users_of((&orphan.kind.to_string(), orphan.name.as_str()))?;
            if !users.is_empty() {
                let why = anyhow::anyhow!(
                    "{} {} is still used by {}; left alone",
                    orphan.kind,
                    orphan.name,
                    users.join(", ")
                );
                return Ok(Some(refused(ErrorCode::NotOrphan, why)));
            }
        }
        Ok(None)
    }

    fn orphan_inner(&self, orphan: &Orphan) -> Result<Result<Vec<Removed>, Outcome>> {
        let dry = self.options.dry_run;
        let removed = |kind: ResourceKind, name: &str| vec![Removed::new(kind, name)];
        let docker =
            matches!(orphan.kind.known(), Some(ResourceKind::Container | ResourceKind::Network | ResourceKind::Volume));
        if docker && orphan.name.starts_with(PREWARM_PREFIX) {
            return Ok(Err(prewarm_refused(orphan)));
        }
        if docker && self.owner_exists(&orphan.name) {
            return Ok(Err(refused(
                ErrorCode::NotOrphan,
                anyhow::anyhow!("{} {}: its instance still exists; left alone", orphan.kind, orphan.name),
            )));
        }
        if docker {
            if let Some(refusal) = self.not_this_homes(orphan)? {
                return Ok(Err(refusal));
            }
        }
        match orphan.kind.known() {
            Some(ResourceKind::Container) => {
                let Some(details) = self.engine.inspect(&orphan.name)? else { return Ok(Ok(Vec::new())) };
                if is_prewarm(&orphan.name, &details.spec.labels) {
                    return Ok(Err(prewarm_refused(orphan)));
                }
                if details.spec.labels.get("jackin.managed").map(String::as_str) != Some("true") {
                    return Ok(Err(refused(
                        ErrorCode::NotJackin,
                        anyhow::anyhow!("container {} is not labelled as jackin's; left alone", orphan.name),
                    )));
                }
                if details.state.running && !self.options.stop {
                    let e =
                        Exit::Busy.err(format_args!("container {} is running (--stop stops it first)", orphan.name));
                    return Ok(Err(Outcome::Refused { code: ErrorCode::Live, error: e, busy: true }));
                }
                if dry || self.engine.remove_container(&orphan.name)? {
                    return Ok(Ok(removed(ResourceKind::Container, &orphan.name)));
                }
                Ok(Ok(Vec::new()))
            }
            Some(ResourceKind::Network) => {
                let gone = if dry {
                    self.engine.network_exists(&orphan.name)?
                } else {
                    self.engine.remove_network(&orphan.name)?
                };
                Ok(Ok(if gone { removed(ResourceKind::Network, &orphan.name) } else { Vec::new() }))
            }
            Some(ResourceKind::Volume) => {
                let gone = if dry {
                    self.engine.volume_exists(&orphan.name)?
                } else {
                    self.engine.remove_volume(&orphan.name)?
                };
                Ok(Ok(if gone { removed(ResourceKind::Volume, &orphan.name) } else { Vec::new() }))
            }
            Some(ResourceKind::NameLock) => self.orphan_lock(orphan),
            Some(ResourceKind::TempFile) => self.orphan_temp(orphan),
            _ => Ok(Err(refused(
                ErrorCode::UnknownOrphanKind,
                anyhow::anyhow!("orphan kind {:?} is not one this purge knows; left alone", orphan.kind.to_string()),
            ))),
        }
    }

    fn orphan_lock(&self, orphan: &Orphan) -> Result<Result<Vec<Removed>, Outcome>> {
        let store: &Store = self.store;
        let Some(name) = lock_instance(&orphan.name) else { anyhow::bail!("not a name lock: {:?}", orphan.name) };
        let path = store.name_lock_path(&name);
        if Path::new(&orphan.name).is_absolute() && Path::new(&orphan.name) != path {
            return Ok(Err(refused(
                ErrorCode::NotOrphan,
                anyhow::anyhow!("{} is not a name lock of this jackin home", orphan.name),
            )));
        }
        if std::fs::symlink_metadata(store.instance_dir(&name)).is_ok()
            || self.catalog.index.row(name.as_str()).is_some()
        {
            return Ok(Err(refused(
                ErrorCode::NotOrphan,
                anyhow::anyhow!("{name} still has a data dir or an index row; its lock stays"),
            )));
        }
        let meta = std::fs::symlink_metadata(&path).ok();
        if meta.as_ref().is_some_and(|m| m.is_dir()) {
            return Ok(Err(refused(
                ErrorCode::NotOrphan,
                anyhow::anyhow!("{} is a directory; left alone", path.display()),
            )));
        }
        let busy = || {
            let e = Exit::Busy.err(format_args!("{} is held by another process", path.display()));
            Ok(Err(Outcome::Refused { code: ErrorCode::Busy, error: e, busy: true }))
        };
        let removed = || Ok(Ok(vec![Removed::file(ResourceKind::NameLock, &NameBytes::of_path(&path))]));
        if self.options.dry_run {
            return match meta {
                None => Ok(Ok(Vec::new())),
                Some(_) if name_lock_held(&path)? => busy(),
                Some(_) => removed(),
            };
        }
        // Unlinked while this run holds it, as purge's step 7 does: a launcher that takes the
        // name between a look and an unlink would otherwise lose the lock it holds. A lock that
        // is gone already (or goes before the hold) is not looked at apart: the hold makes a
        // new file, which goes again when the hold ends, and nothing was removed.
        match NameLock::try_take(&path)? {
            NameLockTry::Held(_) => busy(),
            NameLockTry::Taken(lock) if lock.created() => Ok(Ok(Vec::new())),
            NameLockTry::Taken(mut lock) => match lock.unlink()? {
                true => removed(),
                false => Ok(Ok(Vec::new())),
            },
        }
    }

    fn orphan_temp(&self, orphan: &Orphan) -> Result<Result<Vec<Removed>, Outcome>> {
        let data = self.store.data_dir();
        let Some(rel) = temp_relative(&orphan.name, Some(&data)) else {
            return Ok(Err(refused(
                ErrorCode::NotOrphan,
                anyhow::anyhow!("{} is not a temp file under {}", orphan.name, data.display()),
            )));
        };
        let path = data.join(&rel);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            Err(_) => return Ok(Ok(Vec::new())),
        };
        if !meta.is_file() {
            return Ok(Err(refused(
                ErrorCode::NotOrphan,
                anyhow::anyhow!("{} is not a regular file; left alone", path.display()),
            )));
        }
        let pid = rel.file_name().and_then(|f| f.to_str()).and_then(temp_writer).unwrap_or_default();
        if writer_alive(pid) {
            let e = Exit::Busy.err(format_args!("{}: its writer (pid {pid}) is still running", path.display()));
            return Ok(Err(Outcome::Refused { code: ErrorCode::Busy, error: e, busy: true }));
        }
        if !self.options.dry_run {
            std::fs::remove_file(&path)?;
        }
        Ok(Ok(vec![Removed::file(ResourceKind::TempFile, &NameBytes::of_path(&path))]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names() {
        assert!(temp_relative("jk-a/.jackin/instance.json.tmp.1.2", None).is_some());
        assert!(temp_relative("../x.tmp.1.2", None).is_none());
        assert!(temp_relative("jk-a/home/x.tmp.1.2", None).is_none());
        assert!(lock_instance("instances.json").is_none());
        assert!(lock_instance("jk-abc.repo.lock").is_none());
        assert_eq!(lock_instance("jk-abcd-x.lock").unwrap().as_str(), "jk-abcd-x");
        assert_eq!(lock_instance("/home/u/.jackin/data/jk-abcd-x.lock").unwrap().as_str(), "jk-abcd-x");
        let data = Path::new("/h/data");
        let inside = temp_relative("/h/data/jk-abcd-x/.jackin/instance.json.tmp.1.2", Some(data));
        assert_eq!(inside, Some(PathBuf::from("jk-abcd-x/.jackin/instance.json.tmp.1.2")));
        assert_eq!(
            temp_relative("/h/data/instances.json.tmp.7.0", Some(data)),
            Some(PathBuf::from("instances.json.tmp.7.0"))
        );
        assert_eq!(temp_relative("/elsewhere/instances.json.tmp.7.0", Some(data)), None);
        assert_eq!(temp_relative("/h/data/../data/instances.json.tmp.7.0", Some(data)), None, "never climbs");
        assert_eq!(temp_relative("/h/data/instances.json.tmp.7.0", None), None, "absolute needs the data dir");
        assert_eq!(temp_relative("BAD/.jackin/instance.json.tmp.1.2", None), None, "not an instance's directory");
        assert_eq!(temp_relative("jk-abcd-x/.jackin/notes.txt", None), None, "not a temp file");
        assert_eq!(temp_relative("notes.txt", None), None);
    }

    fn orphan(kind: &str, name: &str) -> Orphan {
        serde_json::from_value(serde_json::json!({"kind": kind, "name": name, "reason": "r"})).unwrap()
    }

    /// Containers go first, then the networks and volumes they used, then the locks that prove
    /// a network or volume is this home's; a kind this version does not know waits for the end.
    #[test]
    fn orphans_go_in_stages() {
        let stages: Vec<usize> = [
            ("container", "jk-abcd-x"),
            ("network", "jk-abcd-x-net"),
            ("volume", "jk-abcd-x-dind-certs"),
            ("name_lock", "jk-abcd-x.lock"),
            ("temp_file", "instances.json.tmp.1.2"),
            ("socket", "jk-abcd-x"),
        ]
        .iter()
        .map(|(kind, name)| stage(&orphan(kind, name)))
        .collect();
        assert_eq!(stages, [0, 1, 1, 2, 2, 2]);
    }

    /// A name that could not be one jackin gives is bad input before anything acts; an unknown
    /// kind is not (it is refused on its own, later).
    #[test]
    fn only_names_jackin_gives_pass_the_input_check() {
        for (kind, name) in [
            ("container", "jk-abcd-x"),
            ("network", "jk-abcd-x-net"),
            ("volume", "jk-abcd-x-dind-certs"),
            ("name_lock", "jk-abcd-x.lock"),
            ("name_lock", "/home/u/.jackin/data/jk-abcd-x.lock"),
            ("temp_file", "instances.json.tmp.12.3"),
            ("temp_file", "jk-abcd-x/.jackin/instance.json.tmp.1.2"),
            ("temp_file", "/home/u/.jackin/data/instances.json.tmp.12.3"),
            ("socket", "anything at all"),
        ] {
            assert!(check_name(&orphan(kind, name)).is_ok(), "{kind} {name}");
        }
        for (kind, name) in [
            ("container", "postgres"),
            ("network", "bridge"),
            ("volume", "pgdata"),
            ("name_lock", "instances.json.lock"),
            ("name_lock", "/home/u/.jackin/data/jk-abc.repo.lock"),
            ("temp_file", "notes.txt"),
            ("temp_file", "../instances.json.tmp.1.2"),
            ("temp_file", "jk-abcd-x/home/x.tmp.1.2"),
        ] {
            let err = check_name(&orphan(kind, name)).unwrap_err();
            assert!(err.to_string().contains("is not a name jackin gives"), "{kind} {name}: {err}");
        }
    }

    #[test]
    fn an_orphans_identity_is_its_instances() {
        for name in ["jk-abcd1234-app-smith-net", "jk-abcd1234-app-smith.lock", "jk-abcd1234-app-smith"] {
            let identity = identity(name);
            assert_eq!((identity.container_base.as_str(), identity.instance_id.as_str()), (name, "abcd1234"));
        }
    }
}
