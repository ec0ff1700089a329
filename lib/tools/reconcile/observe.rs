//! Observing: the engine's lists, then the home (index, data dirs, manifests, name locks), each
//! read once, and the exited role containers the plan will judge, inspected. Everything the plan
//! decides on is here, so the plan itself reads nothing.

use std::collections::{BTreeMap, HashMap};

use anyhow::Result;

use super::{Failure, Options, Selection};
use crate::base::exit::Exit;
use crate::base::time::now_rfc3339;
use crate::engines::docker::{ContainerBrief, Engine, RunState};
use crate::services::host_kill::Clock;
use crate::services::ownership::HomeRoots;
use crate::state::continuity::CauseKind;
use crate::state::model::{IndexRow, Manifest, Status};
use crate::state::names::{instance_of, DockerKind, InstanceName};
use crate::state::select::Catalog;
use crate::state::store::{name_lock_held, IndexRebuilt, Store};

/// A labelled Docker network or volume: its name and labels.
pub(crate) type Labelled = (String, BTreeMap<String, String>);

/// What one reconciliation saw.
pub(crate) struct Observation {
    /// When it looked: the `observed_at` of every piece of evidence.
    pub(crate) now: String,
    pub(crate) whole_host: bool,
    /// jackin's containers, in the engine's order.
    pub(crate) containers: Vec<ContainerBrief>,
    pub(super) by_name: HashMap<String, usize>,
    /// Listed only for a whole-host run (the orphan scan): jackin's networks and every volume,
    /// and every container of the engine (what still uses a network or a volume).
    pub(crate) networks: Vec<Labelled>,
    pub(crate) volumes: Vec<Labelled>,
    pub(crate) every_container: Vec<ContainerBrief>,
    /// The index (mended if it did not parse) and the data dirs.
    pub(crate) catalog: Catalog,
    pub(crate) index_rebuilt: Option<IndexRebuilt>,
    /// Arguments that named no instance.
    pub(crate) unresolved: Vec<Failure>,
    /// The selected instances, in selection order.
    pub(crate) instances: Vec<Seen>,
    /// Read before the first inspection; `None` when nothing was inspected.
    pub(crate) clock: Option<Clock>,
}

impl Observation {
    pub(crate) fn container(&self, name: &str) -> Option<&ContainerBrief> {
        self.by_name.get(name).map(|&i| &self.containers[i])
    }
}

/// One instance as the disk and the engine show it.
pub(crate) struct Seen {
    pub(crate) name: InstanceName,
    pub(crate) row: Option<IndexRow>,
    pub(crate) dir: bool,
    pub(crate) manifest: Result<Option<Manifest>>,
    /// Whether another process holds its name lock (a lock that cannot even be tested counts as
    /// held: the session may be live).
    pub(crate) lock_held: bool,
    pub(crate) inspected: Inspected,
}

/// The inspection of an exited role container (and its sidecar).
pub(crate) enum Inspected {
    /// Nothing the plan judges needed one.
    NotNeeded,
    /// The role container was gone by the time it was inspected.
    Gone,
    Ended(Box<Exited>),
    Failed(anyhow::Error),
}

/// The states a session's containers ended in.
pub(crate) struct Exited {
    pub(crate) role: RunState,
    /// `None`: no sidecar in the manifest. `Some((name, None))`: named, but gone.
    pub(crate) sidecar: Option<(String, Option<RunState>)>,
    /// Of a `restore_available` session: whether these tools kept it after its container last
    /// started (`jackin-keep --keep --stop` stops it on purpose). Without such a keep, jackin
    /// left it running when the operator detached, and what stopped it was not the operator.
    pub(crate) kept_since_start: bool,
}

/// Nothing is written before the engine has answered the list calls, so an unreachable engine
/// (exit 4) leaves every file unchanged; only then is the index read (and mended).
pub(crate) fn observe(engine: &Engine, store: &Store, selection: &Selection, options: &Options) -> Result<Observation> {
    let now = now_rfc3339();
    let whole_host = matches!(selection, Selection::All);
    // A whole-host run needs every container (what still uses a network or a volume); jackin's
    // are among them, so the one list serves both.
    let (containers, networks, volumes, every_container) = if whole_host {
        let every_container = engine.list_all()?;
        let managed = every_container.iter().filter(|c| c.labels.get("jackin.managed").is_some_and(|v| v == "true"));
        let containers = managed.cloned().collect();
        let networks = engine.list_managed_networks().map_err(|e| Exit::Unavailable.wrap(e))?;
        let volumes = engine.list_volumes().map_err(|e| Exit::Unavailable.wrap(e))?;
        (containers, networks, volumes, every_container)
    } else {
        (engine.list_managed()?, Vec::new(), Vec::new(), Vec::new())
    };
    let by_name = own_containers(store, &containers);

    let dirs = store.instance_dirs()?;
    let (index, index_rebuilt) = store.read_index_mending(&dirs, options.dry_run)?;
    let catalog = Catalog::over_every_dir(index, dirs);
    let (names, unresolved) = select(&catalog, selection);
    let instances = crate::base::parallel::map(&names, |name| Seen {
        name: name.clone(),
        row: catalog.row(name).cloned(),
        dir: catalog.dirs.contains(name),
        manifest: if catalog.dirs.contains(name) { store.read_manifest(name) } else { Ok(None) },
        lock_held: name_lock_held(&store.name_lock_path(name)).unwrap_or(true),
        inspected: Inspected::NotNeeded,
    });
    let mut observation = Observation {
        now,
        whole_host,
        containers,
        by_name,
        networks,
        volumes,
        every_container,
        catalog,
        index_rebuilt,
        unresolved,
        instances,
        clock: None,
    };
    inspect_exited(engine, store, &mut observation);
    Ok(observation)
}

/// jackin's containers by name, those of another home left out (services/ownership.rs): a role
/// container whose binds reach another home's `data/<c>` or `sockets/<c>`, and the containers of
/// its instance, are that home's evidence, never this one's (a session moved to another home on
/// the same engine and resumed there is not running here).
fn own_containers(store: &Store, containers: &[ContainerBrief]) -> HashMap<String, usize> {
    let roots = HomeRoots::of(store);
    let instance = |c: &ContainerBrief| instance_of(DockerKind::Container, &c.name, &c.labels);
    let elsewhere: Vec<InstanceName> = containers
        .iter()
        .filter_map(|c| instance(c).filter(|i| i.as_str() == c.name && roots.other_home(i, &c.binds).is_some()))
        .collect();
    containers
        .iter()
        .enumerate()
        .filter(|(_, c)| !instance(c).is_some_and(|i| elsewhere.contains(&i)))
        .map(|(i, c)| (c.name.clone(), i))
        .collect()
}

/// The instances a selection names, each once; arguments that name none are failures of their own.
fn select(catalog: &Catalog, selection: &Selection) -> (Vec<InstanceName>, Vec<Failure>) {
    let mut names: Vec<InstanceName> = Vec::new();
    // A set beside the list: a whole-host run selects every instance, and a linear `contains`
    // per name made that quadratic (a tenth of a second at 10,000 rows).
    let mut seen = std::collections::HashSet::new();
    let mut unresolved = Vec::new();
    let mut add = |name: &InstanceName| {
        if seen.insert(name.clone()) {
            names.push(name.clone());
        }
    };
    match selection {
        Selection::All => catalog.names().for_each(add),
        Selection::Instances(wanted) => wanted.iter().filter(|n| catalog.is_known(n)).for_each(add),
        Selection::Args(args) => {
            for arg in args {
                // A tombstone is a row reconcile keeps as it is: named, it is simply looked at.
                match catalog.resolve_including_tombstones(arg) {
                    Ok(target) => add(&target.name),
                    Err(why) => unresolved.push(Failure {
                        container_base: Some(arg.clone()),
                        code: why.code.into(),
                        error: anyhow::anyhow!(why.message),
                    }),
                }
            }
        }
    }
    (names, unresolved)
}

/// Inspects the role container (and its sidecar) of every instance whose exit the plan will
/// judge: an exited role under a live row whose name lock nobody holds. The clock is read once,
/// before the first inspection.
fn inspect_exited(engine: &Engine, store: &Store, observation: &mut Observation) {
    for i in 0..observation.instances.len() {
        let seen = &observation.instances[i];
        let Ok(Some(manifest)) = &seen.manifest else { continue };
        let Some(status) = manifest.known_status() else { continue };
        let role_state = observation.container(&manifest.docker.role_container).map(|c| c.state.as_str());
        if seen.lock_held || !needs_inspection(status, role_state) {
            continue;
        }
        let sidecar_name = manifest.docker.dind_container.clone();
        let sidecar_listed = sidecar_name.as_deref().is_some_and(|name| observation.container(name).is_some());
        let role_name = manifest.docker.role_container.clone();
        let seen_name = seen.name.clone();
        observation.clock.get_or_insert_with(|| Clock::read(engine));
        let inspected = (|| -> Result<Inspected> {
            let Some(role) = engine.inspect(&role_name)? else { return Ok(Inspected::Gone) };
            let sidecar_state = match &sidecar_name {
                Some(name) if sidecar_listed => engine.inspect(name)?.map(|d| d.state),
                _ => None,
            };
            let sidecar = sidecar_name.map(|name| (name, sidecar_state));
            let kept_since_start = status == Status::RestoreAvailable && kept_after(store, &seen_name, &role.state)?;
            Ok(Inspected::Ended(Box::new(Exited { role: role.state, sidecar, kept_since_start })))
        })();
        observation.instances[i].inspected = inspected.unwrap_or_else(Inspected::Failed);
    }
}

/// Whether the plan judges how a role container ended, so the observation must inspect it: it
/// exited under a live row, under `failed_setup` (which only a host kill changes), or under
/// `restore_available` (jackin's status for a session the operator detached from and left
/// running, as well as for a kept one).
pub(crate) fn needs_inspection(status: Status, role_state: Option<&str>) -> bool {
    matches!(role_state, Some("exited" | "dead"))
        && (status.is_live() || matches!(status, Status::FailedSetup | Status::RestoreAvailable))
}

/// Whether the tools' keep record of the session is later than the container's last start. A
/// session these tools kept before they recorded when (a cause of `kept` and no record) counts
/// as kept: only evidence of a later start makes a kept session an interrupted one.
fn kept_after(store: &Store, name: &InstanceName, role: &RunState) -> Result<bool> {
    let continuity = crate::state::continuity::read(store, name)?;
    let at = |t: Option<&str>| t.and_then(crate::base::time::parse_rfc3339);
    Ok(match (at(continuity.kept_at().as_deref()), at(role.started_at.as_deref())) {
        (Some(kept), Some(started)) => kept >= started,
        (Some(_), None) => true,
        (None, _) => {
            continuity.cause.as_ref().is_some_and(|cause| *cause == CauseKind::Kept || *cause == CauseKind::IdleKept)
        }
    })
}
