//! The Docker engine, behind blocking calls. This is the only module that knows bollard or
//! tokio; everything else sees the plain types below. `connect` reaches the resolved engine,
//! `events` follows its container events, `containers` reads and creates a container's run shape;
//! this file holds the other calls on containers, networks, volumes and images.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use bollard::errors::Error as BollardError;
use bollard::models::{EndpointSettings, NetworkCreateRequest, VolumeCreateRequest};
use bollard::query_parameters::{
    BuildImageOptionsBuilder, ListContainersOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveVolumeOptionsBuilder, StartContainerOptions, StopContainerOptionsBuilder,
};
use futures_util::StreamExt;
use serde::{Deserialize, Serialize};

use crate::base::exit::Exit;
use crate::engines::endpoint::Endpoint;
use crate::state::recipe::{ContainerSpec, EngineDefaults, NetworkRecipe};

mod connect;
mod containers;
mod dial_stdio;
mod events;
mod ssh;
mod tls;
mod transport;

pub(crate) use events::EventSubscription;

/// Engine API requests this process made, over every connection: `-v` says it at the end of a run.
static CALLS_IN_PROCESS: AtomicU64 = AtomicU64::new(0);

/// Engine API requests this process has made so far, each connection's version negotiation
/// included, for `-v`.
pub fn api_calls_in_process() -> u64 {
    CALLS_IN_PROCESS.load(Ordering::Relaxed)
}

/// One more request to the engine.
fn count_call() {
    CALLS_IN_PROCESS.fetch_add(1, Ordering::Relaxed);
}

/// A connection to one resolved engine (unix, tcp with or without TLS, or ssh).
pub struct Engine {
    runtime: tokio::runtime::Runtime,
    api: bollard::Docker,
    endpoint: Endpoint,
    /// What the engine gives a container whose launch chose nothing, asked once.
    defaults: std::sync::OnceLock<EngineDefaults>,
}

/// A container as the list call shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerBrief {
    pub(crate) id: String,
    pub name: String,
    pub labels: BTreeMap<String, String>,
    /// `created`, `running`, `paused`, `restarting`, `exited`, `removing` or `dead`.
    pub state: String,
    /// The host paths of its bind mounts: which jackin home it belongs to, if any.
    pub(crate) binds: Vec<PathBuf>,
    /// The networks it is attached to and the named volumes it mounts, whatever its state.
    pub(crate) networks: Vec<String>,
    pub(crate) volumes: Vec<String>,
}

/// The containers the engine held when it was asked, by name ([`Engine::container_names`]).
#[derive(Debug, Clone, Default)]
pub(crate) struct ContainerNames(std::collections::HashSet<String>);

impl ContainerNames {
    pub(crate) fn has(&self, name: &str) -> bool {
        self.0.contains(name)
    }
}

/// What `docker inspect` says of a container: its state, and the shape that recreates it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerDetails {
    pub id: String,
    pub(crate) name: String,
    pub state: RunState,
    pub spec: ContainerSpec,
    /// The environment as `NAME=value`. Held in memory only: callers keep the names.
    #[serde(skip)]
    pub env: Vec<String>,
    /// The ID of the network it is attached to (its endpoint's): which network it was on, where
    /// a name says only which one has that name now.
    #[serde(skip)]
    pub(crate) network_id: Option<String>,
}

/// An image's own `Config.Env` and the paths it declares as `VOLUME`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ImageDefaults {
    pub(crate) env: Vec<String>,
    pub(crate) volumes: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunState {
    pub(crate) status: String,
    pub running: bool,
    pub(crate) exit_code: Option<i64>,
    pub(crate) oom_killed: bool,
    pub(crate) started_at: Option<String>,
    pub(crate) finished_at: Option<String>,
    /// The `docker exec` processes running in it (an operator's `jackin hardline` or
    /// `jackin-restore --exec` attach, any `docker exec`), its own healthcheck's not counted:
    /// someone uses the session. Asked of the engine only for a running container.
    #[serde(skip)]
    pub(crate) attached: u32,
}

fn is_not_found(e: &BollardError) -> bool {
    matches!(e, BollardError::DockerResponseServerError { status_code: 404, .. })
}

fn is_removal_in_progress(e: &BollardError) -> bool {
    matches!(e, BollardError::DockerResponseServerError { status_code: 409, message } if message.contains("already in progress"))
}

fn is_name_in_use(e: &BollardError) -> bool {
    matches!(e, BollardError::DockerResponseServerError { status_code: 409, message } if message.contains("is already in use"))
}

fn is_not_modified(e: &BollardError) -> bool {
    matches!(e, BollardError::DockerResponseServerError { status_code: 304, .. })
}

/// How many times a build is tried when the engine's cache probe loses a race with an image
/// removal (see `Engine::build_image`).
const BUILD_TRIES: u32 = 4;

/// Whether a build failed only because an image the builder was reading was removed meanwhile:
/// moby's cache probe says `unable to find image "sha256:…"`, in the stream or as its error.
fn lost_a_race_with_an_image_removal(e: &anyhow::Error) -> bool {
    e.chain().any(|cause| cause.to_string().contains("unable to find image \"sha256:"))
}

fn labels(map: Option<HashMap<String, String>>) -> BTreeMap<String, String> {
    map.unwrap_or_default().into_iter().collect()
}

fn filters(pairs: &[(&str, &str)]) -> HashMap<String, Vec<String>> {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    for (key, value) in pairs {
        map.entry((*key).to_owned()).or_default().push((*value).to_owned());
    }
    map
}

impl Engine {
    /// The engine this connection reaches, as resolved.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// `what` failed, naming the engine, so that "which engine?" is never a question.
    fn doing(&self, what: impl std::fmt::Display) -> String {
        format!("{what} on the Docker engine {}", self.endpoint)
    }

    fn call<T>(&self, future: impl std::future::Future<Output = Result<T, BollardError>>) -> Result<T, BollardError> {
        count_call();
        self.runtime.block_on(future)
    }

    /// Every container jackin manages (label `jackin.managed=true`), in any state: one call.
    pub fn list_managed(&self) -> Result<Vec<ContainerBrief>> {
        self.list(&[("label", "jackin.managed=true")], "listing jackin's containers")
    }

    /// Every container of the engine, jackin's or not, in any state: what still uses a network
    /// or a volume.
    pub(crate) fn list_all(&self) -> Result<Vec<ContainerBrief>> {
        self.list(&[], "listing containers")
    }

    /// The names of every container of the engine, in any state, from one call: a view of many
    /// sessions inspects only the containers that are there (a gone one needs no call to say so).
    pub(crate) fn container_names(&self) -> Result<ContainerNames> {
        Ok(ContainerNames(self.list_all()?.into_iter().map(|c| c.name).collect()))
    }

    /// The containers, in any state, attached to this network or mounting this volume.
    pub(crate) fn users_of(&self, network_or_volume: (&str, &str)) -> Result<Vec<String>> {
        let what = format!("listing the containers using {} {}", network_or_volume.0, network_or_volume.1);
        Ok(self.list(&[network_or_volume], &what)?.into_iter().map(|c| c.name).collect())
    }

    fn list(&self, filter: &[(&str, &str)], what: &str) -> Result<Vec<ContainerBrief>> {
        let options = ListContainersOptionsBuilder::new().all(true).filters(&filters(filter)).build();
        let list = self
            .call(self.api.list_containers(Some(options)))
            .map_err(|e| Exit::Unavailable.wrap(anyhow::Error::new(e).context(self.doing(what))))?;
        Ok(list
            .into_iter()
            .map(|c| {
                let mounts = c.mounts.unwrap_or_default();
                let of_kind = |kind: &'static str| {
                    mounts.iter().filter(move |m| m.typ.as_ref().is_some_and(|t| *t == kind)).cloned()
                };
                ContainerBrief {
                    id: c.id.unwrap_or_default(),
                    name: c
                        .names
                        .unwrap_or_default()
                        .first()
                        .map(|n| n.trim_start_matches('/').to_owned())
                        .unwrap_or_default(),
                    labels: labels(c.labels),
                    state: c.state.map(|s| s.to_string()).unwrap_or_default(),
                    binds: of_kind("bind").filter_map(|m| m.source).map(PathBuf::from).collect(),
                    volumes: of_kind("volume").filter_map(|m| m.name).collect(),
                    networks: c
                        .network_settings
                        .and_then(|n| n.networks)
                        .map(|n| n.into_keys().collect())
                        .unwrap_or_default(),
                }
            })
            .collect())
    }

    /// Stops a container; a missing or already stopped one is fine. Returns whether it existed.
    pub fn stop(&self, name: &str, grace: Duration) -> Result<bool> {
        let options = StopContainerOptionsBuilder::new().t(grace.as_secs() as i32).build();
        match self.call(self.api.stop_container(name, Some(options))) {
            Ok(()) => Ok(true),
            Err(e) if is_not_modified(&e) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e).context(self.doing(format!("stopping container {name}")))),
        }
    }

    /// Removes a container, running or not, with its anonymous volumes (a DinD sidecar's
    /// `/var/lib/docker` would otherwise stay behind, unnamed and unowned); a missing one counts
    /// as removed (returns false).
    pub fn remove_container(&self, name: &str) -> Result<bool> {
        let options = RemoveContainerOptionsBuilder::new().force(true).v(true).build();
        match self.call(self.api.remove_container(name, Some(options))) {
            Ok(()) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            // A run killed mid-removal leaves the engine finishing it; the rerun waits for it.
            Err(e) if is_removal_in_progress(&e) => {
                self.wait_until(name, "removal did not finish", Option::is_none).map(|_| false)
            }
            Err(e) => Err(anyhow::Error::new(e).context(self.doing(format!("removing container {name}")))),
        }
    }

    /// Polls `inspect(name)` until `done` holds for it, for up to 30 s: the engine finishing work
    /// a killed run of ours asked for (a removal, a create).
    fn wait_until(
        &self,
        name: &str,
        failure: &str,
        done: impl Fn(&Option<ContainerDetails>) -> bool,
    ) -> Result<Option<ContainerDetails>> {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let details = self.inspect(name)?;
            if done(&details) {
                return Ok(details);
            }
            if std::time::Instant::now() > deadline {
                anyhow::bail!(self.doing(format_args!("container {name}: the engine's {failure} within 30 s")));
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    pub fn remove_network(&self, name: &str) -> Result<bool> {
        match self.call(self.api.remove_network(name)) {
            Ok(()) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e).context(self.doing(format!("removing network {name}")))),
        }
    }

    pub fn remove_volume(&self, name: &str) -> Result<bool> {
        let options = RemoveVolumeOptionsBuilder::new().build();
        match self.call(self.api.remove_volume(name, Some(options))) {
            Ok(()) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e).context(self.doing(format!("removing volume {name}")))),
        }
    }

    /// Networks labelled `jackin.managed=true`: name and labels.
    /// Whether a volume by this name exists.
    pub(crate) fn volume_exists(&self, name: &str) -> Result<bool> {
        match self.call(self.api.inspect_volume(name)) {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e).context(self.doing(format!("inspecting volume {name}")))),
        }
    }

    pub(crate) fn list_managed_networks(&self) -> Result<Vec<(String, BTreeMap<String, String>)>> {
        let options = ListNetworksOptionsBuilder::new().filters(&filters(&[("label", "jackin.managed=true")])).build();
        let list = self.call(self.api.list_networks(Some(options))).with_context(|| self.doing("listing networks"))?;
        Ok(list.into_iter().map(|n| (n.name.unwrap_or_default(), labels(n.labels))).collect())
    }

    /// Every volume's name and labels (jackin's certs volumes carry no label; their name tells).
    pub(crate) fn list_volumes(&self) -> Result<Vec<(String, BTreeMap<String, String>)>> {
        let options = ListVolumesOptionsBuilder::new().build();
        let list = self.call(self.api.list_volumes(Some(options))).with_context(|| self.doing("listing volumes"))?;
        Ok(list.volumes.unwrap_or_default().into_iter().map(|v| (v.name, labels(Some(v.labels)))).collect())
    }

    pub(crate) fn network_exists(&self, name: &str) -> Result<bool> {
        match self.call(self.api.inspect_network(name, None)) {
            Ok(_) => Ok(true),
            Err(e) if is_not_found(&e) => Ok(false),
            Err(e) => Err(anyhow::Error::new(e).context(self.doing(format!("inspecting network {name}")))),
        }
    }

    /// A network's shape as a recipe records it; `None` when there is no such network.
    pub(crate) fn network_shape(&self, name: &str) -> Result<Option<NetworkRecipe>> {
        match self.call(self.api.inspect_network(name, None)) {
            Ok(network) => Ok(Some(NetworkRecipe {
                id: network.id.filter(|id| !id.is_empty()),
                name: network.name.unwrap_or_else(|| name.to_owned()),
                labels: labels(network.labels),
                driver: network.driver.filter(|d| !d.is_empty()),
                internal: network.internal.unwrap_or(false),
                options: network.options.unwrap_or_default().into_iter().collect(),
            })),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(anyhow::Error::new(e).context(self.doing(format!("inspecting network {name}")))),
        }
    }

    /// Creates a network with the recorded driver, `Internal` flag, options and labels.
    pub(crate) fn create_network(&self, network: &NetworkRecipe) -> Result<()> {
        let request = NetworkCreateRequest {
            name: network.name.clone(),
            driver: network.driver.clone(),
            internal: Some(network.internal),
            options: Some(network.options.clone().into_iter().collect()),
            labels: Some(network.labels.clone().into_iter().collect()),
            ..Default::default()
        };
        self.call(self.api.create_network(request))
            .map(|_| ())
            .with_context(|| self.doing(format!("creating network {}", network.name)))
    }

    pub(crate) fn create_volume(&self, name: &str) -> Result<()> {
        let request = VolumeCreateRequest { name: Some(name.to_owned()), ..Default::default() };
        self.call(self.api.create_volume(request))
            .map(|_| ())
            .with_context(|| self.doing(format!("creating volume {name}")))
    }

    /// The ID of an image by reference or ID; `None` when the engine does not have it.
    pub(crate) fn image_id(&self, reference: &str) -> Result<Option<String>> {
        match self.call(self.api.inspect_image(reference)) {
            Ok(image) => Ok(image.id),
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(anyhow::Error::new(e).context(self.doing(format!("inspecting image {reference}")))),
        }
    }

    /// Attaches a stopped container to `network` again under its aliases. A network removed and
    /// created again has a new ID, and the engine starts a container by the ID it last ran on.
    pub(crate) fn reconnect(&self, container: &str, network: &str, aliases: &[String]) -> Result<()> {
        let request = bollard::models::NetworkConnectRequest {
            container: container.to_owned(),
            endpoint_config: Some(EndpointSettings { aliases: Some(aliases.to_vec()), ..Default::default() }),
        };
        self.call(self.api.connect_network(network, request))
            .with_context(|| self.doing(format!("connecting container {container} to network {network}")))
    }

    /// What the image itself gives every container made from it; `None` when the engine does not
    /// have the image.
    pub(crate) fn image_defaults(&self, reference: &str) -> Result<Option<ImageDefaults>> {
        match self.call(self.api.inspect_image(reference)) {
            Ok(image) => {
                let config = image.config.unwrap_or_default();
                Ok(Some(ImageDefaults {
                    env: config.env.unwrap_or_default(),
                    volumes: config.volumes.unwrap_or_default(),
                }))
            }
            Err(e) if is_not_found(&e) => Ok(None),
            Err(e) => Err(anyhow::Error::new(e).context(self.doing(format!("inspecting image {reference}")))),
        }
    }

    pub(crate) fn start(&self, name: &str) -> Result<()> {
        match self.call(self.api.start_container(name, None::<StartContainerOptions>)) {
            Ok(()) => Ok(()),
            Err(e) if is_not_modified(&e) => Ok(()),
            Err(e) => Err(anyhow::Error::new(e).context(self.doing(format!("starting container {name}")))),
        }
    }

    /// Runs `cmd` inside a running container and returns its exit code.
    pub fn exec_status(&self, container: &str, cmd: &[String]) -> Result<i64> {
        let config = bollard::exec::CreateExecOptions::<String> {
            cmd: Some(cmd.to_vec()),
            attach_stdout: Some(true),
            attach_stderr: Some(true),
            ..Default::default()
        };
        let exec = self
            .call(self.api.create_exec(container, config))
            .with_context(|| self.doing(format!("running {cmd:?} in {container}")))?;
        let started = self.call(self.api.start_exec(&exec.id, None))?;
        if let bollard::exec::StartExecResults::Attached { mut output, .. } = started {
            self.runtime.block_on(async { while output.next().await.is_some() {} });
        }
        let inspect = self.call(self.api.inspect_exec(&exec.id))?;
        Ok(inspect.exit_code.unwrap_or(-1))
    }

    /// Builds an image from a tar build context, tags it `tag` and labels it.
    ///
    /// The classic builder probes its cache by listing the children of each step's parent image
    /// and reading each one; an image removed meanwhile by anyone on the engine (an image prune,
    /// another build's cleanup, jackin's own housekeeping) fails the whole build with `unable to
    /// find image`. Nothing of ours is wrong then, so the build is tried again, a few times.
    pub(crate) fn build_image(
        &self,
        context_tar: Vec<u8>,
        tag: &str,
        image_labels: &BTreeMap<String, String>,
    ) -> Result<()> {
        let mut tries = 0;
        loop {
            tries += 1;
            match self.build_once(context_tar.clone(), tag, image_labels) {
                Err(e) if tries < BUILD_TRIES && lost_a_race_with_an_image_removal(&e) => continue,
                result => return result.with_context(|| self.doing(format!("building image {tag}"))),
            }
        }
    }

    fn build_once(&self, context_tar: Vec<u8>, tag: &str, image_labels: &BTreeMap<String, String>) -> Result<()> {
        // `forcerm`: a step that fails leaves its intermediate container behind otherwise,
        // stopped and unlabelled, where no tool of ours would ever find it again.
        let options = BuildImageOptionsBuilder::new()
            .t(tag)
            .rm(true)
            .forcerm(true)
            .labels(&image_labels.clone().into_iter().collect::<HashMap<_, _>>())
            .build();
        count_call();
        let body = bollard::body_full(context_tar.into());
        self.runtime.block_on(async {
            let mut stream = self.api.build_image(options, None, Some(body));
            while let Some(item) = stream.next().await {
                let info = item.context("building the image")?;
                if let Some(error) = info.error_detail.and_then(|d| d.message) {
                    anyhow::bail!("the image build failed: {error}");
                }
            }
            Ok(())
        })
    }

    /// What the engine fills in for a container whose launch chose nothing (its log driver,
    /// runtime and cgroup namespace mode), from its info; asked once per connection.
    pub(crate) fn launch_defaults(&self) -> Result<EngineDefaults> {
        if let Some(defaults) = self.defaults.get() {
            return Ok(defaults.clone());
        }
        let info = self.call(self.api.info()).with_context(|| self.doing("asking the engine for its info"))?;
        use bollard::models::SystemInfoCgroupVersionEnum as Cgroup;
        let cgroupns_mode = match info.cgroup_version {
            Some(Cgroup::_1) => Some("host".to_owned()),
            Some(Cgroup::_2) => Some("private".to_owned()),
            _ => None,
        };
        let defaults = EngineDefaults {
            log_driver: info.logging_driver.filter(|d| !d.is_empty()),
            runtime: info.default_runtime.filter(|r| !r.is_empty()),
            cgroupns_mode,
        };
        Ok(self.defaults.get_or_init(|| defaults).clone())
    }

    /// The engine's clock and boot facts for evidence: (`SystemTime` as the engine reports it,
    /// the engine's ID).
    pub(crate) fn engine_facts(&self) -> Result<BTreeMap<String, String>> {
        let info = self.call(self.api.info()).with_context(|| self.doing("asking the engine for its info"))?;
        let mut facts = BTreeMap::new();
        if let Some(t) = info.system_time {
            facts.insert("engine_time".to_owned(), t);
        }
        if let Some(id) = info.id {
            facts.insert("engine_id".to_owned(), id);
        }
        if let Some(v) = info.server_version {
            facts.insert("engine_version".to_owned(), v);
        }
        Ok(facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_cache_probe_that_lost_an_image_is_tried_again() {
        // What CI saw: another test removed its own image, a child of the same base, while a
        // tier-3 build probed the base's children.
        let raced = anyhow::Error::from(BollardError::DockerStreamError {
            error: "unable to find image \"sha256:43c25f22b45217165607834a695b74699f794cfd74f3f9f7c8927d11d84c377c\""
                .to_owned(),
        })
        .context("building the image");
        assert!(lost_a_race_with_an_image_removal(&raced));
        for real in [
            "the image build failed: The command '/bin/sh -c false' returned a non-zero code: 1",
            "the image build failed: pull access denied for nothere, repository does not exist",
            "the image build failed: COPY failed: file not found in build context: stat marker",
        ] {
            assert!(!lost_a_race_with_an_image_removal(&anyhow::anyhow!(real.to_owned())), "{real}");
        }
    }
}
