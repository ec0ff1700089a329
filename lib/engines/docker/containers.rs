//! A container's run shape both ways: read from the engine into a `ContainerSpec` (what the
//! launch recipe records), and created from one (what restore replays).

use bollard::query_parameters::RenameContainerOptions;
use serde_json::Value;

use super::is_name_in_use;
use super::is_not_found;
use super::labels;
use super::ContainerDetails;
use super::Engine;
use super::RunState;
use crate::state::recipe;
use crate::state::recipe::ContainerSpec;
use crate::state::recipe::HealthTiming;
use crate::state::recipe::MountSpec;
use anyhow::Context;
use anyhow::Result;
use bollard::models::ContainerCreateBody;
use bollard::models::EndpointSettings;
use bollard::models::HealthConfig;
use bollard::models::HostConfig;
use bollard::models::Mount;
use bollard::models::MountType;
use bollard::models::NetworkingConfig;
use bollard::query_parameters::CreateContainerOptionsBuilder;
use bollard::query_parameters::InspectContainerOptions;
use std::collections::HashMap;

impl Engine {
    /// The CPU time each running container of `names` has used since it started, in nanoseconds
    /// (the engine's `cpu_stats.cpu_usage.total_usage`, one sample each, not streamed); `None` for
    /// one that is gone or not running. A restart starts the count again. The engine answers a
    /// sample at its collector's next tick (about a second), so the samples are asked for all at
    /// once: one tick for any number of containers.
    pub fn cpu_times(&self, names: &[&str]) -> Result<Vec<Option<u64>>> {
        use futures_util::StreamExt;
        let sample = |name: &str| {
            let options = bollard::query_parameters::StatsOptionsBuilder::new().stream(false).one_shot(true).build();
            let mut stream = self.api.stats(name, Some(options));
            async move { stream.next().await }
        };
        names.iter().for_each(|_| super::count_call());
        let answers = self.runtime.block_on(futures_util::future::join_all(names.iter().map(|name| sample(name))));
        let mut times = Vec::with_capacity(names.len());
        for (name, answer) in names.iter().zip(answers) {
            times.push(match answer {
                // A stopped container answers with empty stats: no CPU time of a run.
                Some(Ok(sample)) => sample
                    .cpu_stats
                    .and_then(|cpu| cpu.cpu_usage)
                    .and_then(|usage| usage.total_usage)
                    .filter(|&ns| ns > 0),
                Some(Err(e)) if is_not_found(&e) => None,
                Some(Err(e)) => {
                    return Err(anyhow::Error::new(e).context(self.doing(format!("reading the CPU time of {name}"))))
                }
                None => None,
            });
        }
        Ok(times)
    }

    /// `None` when there is no such container.
    pub fn inspect(&self, name: &str) -> Result<Option<ContainerDetails>> {
        let response = match self.call(self.api.inspect_container(name, None::<InspectContainerOptions>)) {
            Ok(r) => r,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(anyhow::Error::new(e).context(self.doing(format!("inspecting container {name}")))),
        };
        let state = response.state.unwrap_or_default();
        let config = response.config.unwrap_or_default();
        let attached = match state.running {
            Some(true) => {
                self.running_execs(response.exec_ids.as_deref().unwrap_or_default(), config.healthcheck.as_ref())?
            }
            _ => 0,
        };
        let host = response.host_config.unwrap_or_default();
        let mounts = mount_specs(response.mounts.unwrap_or_default());
        let container_name = response.name.unwrap_or_default().trim_start_matches('/').to_owned();
        let (network, network_id, aliases) = network_and_aliases(response.network_settings, &response.id);
        // The tools' own label is not jackin's: it never reaches a recipe, nor anything that
        // reads jackin's labels (services/capture.rs records `labels` as they are).
        let mut labels = labels(config.labels);
        let made_from = labels.remove(recipe::MADE_FROM_LABEL);
        let spec = ContainerSpec {
            name: container_name.clone(),
            image: config.image.unwrap_or_default(),
            image_id: response.image.unwrap_or_default(),
            entrypoint: config.entrypoint,
            cmd: config.cmd,
            working_dir: config.working_dir.filter(|w| !w.is_empty()),
            user: config.user.filter(|u| !u.is_empty()),
            // The engine names a container without `--hostname` after its short ID: that one's own.
            hostname: config.hostname.filter(|h| !h.is_empty() && !is_short_id(h, &response.id)),
            labels,
            mounts,
            network,
            aliases,
            tty: config.tty.unwrap_or(false),
            open_stdin: config.open_stdin.unwrap_or(false),
            health_timing: config.healthcheck.as_ref().and_then(health_timing),
            healthcheck: config.healthcheck.and_then(|h| h.test).filter(|t| t.first().is_some_and(|k| k != "NONE")),
            stop_signal: config.stop_signal.filter(|s| !s.is_empty()),
            stop_timeout: config.stop_timeout,
            host_config: Some(recipe::chosen_host_config(as_fields(&host))),
            made_from,
            ..ContainerSpec::default()
        };
        Ok(Some(ContainerDetails {
            id: response.id.unwrap_or_default(),
            name: container_name,
            state: RunState {
                status: state.status.map(|s| s.to_string()).unwrap_or_default(),
                running: state.running.unwrap_or(false),
                exit_code: state.exit_code,
                oom_killed: state.oom_killed.unwrap_or(false),
                started_at: state.started_at.filter(|t| !t.starts_with("0001-")),
                finished_at: state.finished_at.filter(|t| !t.starts_with("0001-")),
                attached,
            },
            spec,
            env: config.env.unwrap_or_default(),
            network_id,
        }))
    }

    /// How many of the exec instances `ids` run now, a run of the container's own healthcheck
    /// not counted (the engine runs it as an exec too). One that ended meanwhile is not counted.
    fn running_execs(&self, ids: &[String], health: Option<&HealthConfig>) -> Result<u32> {
        let health_argv: Option<Vec<String>> =
            health.and_then(|h| h.test.as_ref()).and_then(|test| match test.split_first() {
                Some((kind, rest)) if kind == "CMD" => Some(rest.to_vec()),
                Some((kind, rest)) if kind == "CMD-SHELL" => {
                    Some(["/bin/sh".to_owned(), "-c".to_owned()].into_iter().chain(rest.iter().cloned()).collect())
                }
                _ => None,
            });
        let mut running = 0;
        for id in ids {
            let exec = match self.call(self.api.inspect_exec(id)) {
                Ok(exec) => exec,
                Err(e) if is_not_found(&e) => continue,
                Err(e) => return Err(anyhow::Error::new(e).context(self.doing(format!("inspecting exec {id}")))),
            };
            if exec.running != Some(true) {
                continue;
            }
            let process = exec.process_config.unwrap_or_default();
            let argv: Vec<String> =
                process.entrypoint.into_iter().chain(process.arguments.unwrap_or_default()).collect();
            if health_argv.as_ref() != Some(&argv) {
                running += 1;
            }
        }
        Ok(running)
    }

    /// Creates a container from `spec` with the environment `env` (`NAME=value`, resolved by
    /// the caller just now, never stored), using `image` (a tag or an image ID).
    pub fn create_container(&self, spec: &ContainerSpec, image: &str, env: Vec<String>) -> Result<String> {
        let mounts = spec
            .mounts
            .iter()
            .map(|m| Mount {
                // `bind`, `volume`, `tmpfs`, … as the engine reported it; a tmpfs has no source.
                typ: Some(m.kind.parse().unwrap_or(MountType::BIND)),
                source: Some(m.source.clone()).filter(|s| !s.is_empty()),
                target: Some(m.destination.clone()),
                read_only: Some(m.read_only),
                ..Default::default()
            })
            .collect();
        let mut host_config = host_config_of(spec)?;
        host_config.mounts = Some(mounts);
        host_config.network_mode = spec.network.clone();
        let networking_config = spec.network.as_ref().map(|network| NetworkingConfig {
            endpoints_config: Some(HashMap::from([(
                network.clone(),
                EndpointSettings { aliases: Some(spec.aliases.clone()), ..Default::default() },
            )])),
        });
        let body = ContainerCreateBody {
            image: Some(image.to_owned()),
            entrypoint: spec.entrypoint.clone(),
            cmd: spec.cmd.clone(),
            working_dir: spec.working_dir.clone(),
            user: spec.user.clone(),
            hostname: spec.hostname.clone(),
            labels: Some(spec.labels.clone().into_iter().chain(made_from_label(spec)).collect()),
            env: Some(env),
            tty: Some(spec.tty),
            open_stdin: Some(spec.open_stdin),
            healthcheck: spec.healthcheck.clone().map(|test| {
                let timing = spec.health_timing.clone().unwrap_or_default();
                HealthConfig {
                    test: Some(test),
                    interval: timing.interval,
                    timeout: timing.timeout,
                    retries: timing.retries,
                    start_period: timing.start_period,
                    start_interval: timing.start_interval,
                }
            }),
            stop_signal: spec.stop_signal.clone(),
            stop_timeout: spec.stop_timeout,
            host_config: Some(host_config),
            networking_config,
            ..Default::default()
        };
        let options = CreateContainerOptionsBuilder::new().name(&spec.name).build();
        match self.call(self.api.create_container(Some(options), body)) {
            Ok(created) => Ok(created.id),
            // A run killed after asking for this container leaves the engine creating it under
            // the session's name; the rerun takes that container, as it would one that was done.
            Err(e) if is_name_in_use(&e) => {
                let done = self.wait_until(&spec.name, "create under this name did not finish", Option::is_some)?;
                Ok(done.map(|details| details.id).unwrap_or_default())
            }
            Err(e) => Err(anyhow::Error::new(e).context(self.doing(format!("creating container {}", spec.name)))),
        }
    }

    /// Renames a container; the engine moves its name on the networks it is attached to too.
    pub(crate) fn rename(&self, name: &str, to: &str) -> Result<()> {
        let options = RenameContainerOptions { name: to.to_owned() };
        self.call(self.api.rename_container(name, options))
            .with_context(|| self.doing(format!("renaming container {name} to {to}")))
    }
}

/// The label that says which recipe a container was made from, when it was made from one.
fn made_from_label(spec: &ContainerSpec) -> Option<(String, String)> {
    spec.made_from.clone().map(|fingerprint| (recipe::MADE_FROM_LABEL.to_owned(), fingerprint))
}

/// The recipe's `HostConfig` in the client's type (its mounts and network set by the caller).
fn host_config_of(spec: &ContainerSpec) -> Result<HostConfig> {
    serde_json::from_value(Value::Object(spec.host_config_to_create().into_iter().collect()))
        .with_context(|| format!("the launch recipe's HostConfig of {} is not one this engine client reads", spec.name))
}

/// A `HostConfig` as JSON fields, in the engine's names.
fn as_fields(host: &HostConfig) -> serde_json::Map<String, Value> {
    match serde_json::to_value(host) {
        Ok(Value::Object(fields)) => fields,
        _ => serde_json::Map::new(),
    }
}

/// The timing of a healthcheck, when any of it was set (`0` is the engine's "not set").
fn health_timing(health: &HealthConfig) -> Option<HealthTiming> {
    let set = |value: Option<i64>| value.filter(|v| *v != 0);
    let timing = HealthTiming {
        interval: set(health.interval),
        timeout: set(health.timeout),
        start_period: set(health.start_period),
        start_interval: set(health.start_interval),
        retries: set(health.retries),
    };
    (timing != HealthTiming::default()).then_some(timing)
}

/// Docker adds the container's short ID as an alias; it changes with every container.
/// The container's mounts as a launch gives them, in the order of their destinations: a
/// volume by its name, anything else by its source.
fn mount_specs(mounts: Vec<bollard::models::MountPoint>) -> Vec<MountSpec> {
    let mut specs: Vec<MountSpec> = mounts
        .into_iter()
        .map(|m| {
            let kind = m.typ.map(|t| t.to_string()).unwrap_or_else(|| "bind".into());
            let source = if kind == "volume" { m.name.unwrap_or_default() } else { m.source.unwrap_or_default() };
            MountSpec { kind, source, destination: m.destination.unwrap_or_default(), read_only: !m.rw.unwrap_or(true) }
        })
        .collect();
    specs.sort_by(|a, b| a.destination.cmp(&b.destination));
    specs
}

/// The container's (first) network, that network's ID as the endpoint holds it, and its aliases
/// there, the engine's own short id left out.
fn network_and_aliases(
    settings: Option<bollard::models::NetworkSettings>,
    id: &Option<String>,
) -> (Option<String>, Option<String>, Vec<String>) {
    let networks = settings.and_then(|n| n.networks).unwrap_or_default();
    match networks.into_iter().next() {
        Some((network, endpoint)) => {
            let aliases = endpoint.aliases.unwrap_or_default().into_iter().filter(|a| !is_short_id(a, id)).collect();
            (Some(network), endpoint.network_id.filter(|id| !id.is_empty()), aliases)
        }
        None => (None, None, Vec::new()),
    }
}

fn is_short_id(alias: &str, id: &Option<String>) -> bool {
    id.as_deref().is_some_and(|id| id.starts_with(alias) && alias.len() >= 12)
}

#[cfg(test)]
mod tests {
    use bollard::models::RestartPolicyNameEnum;

    use super::*;

    #[test]
    fn every_recorded_run_shape_becomes_the_clients_host_config() {
        let second: ContainerSpec = serde_json::from_value(serde_json::json!({
            "name": "jk-x", "image": "role:1", "image_id": "sha256:1", "memory": 67108864, "init": true,
            "devices": [{ "path_on_host": "/dev/zero", "path_in_container": "/dev/z", "cgroup_permissions": "rwm" }],
            "restart_policy": { "name": "on-failure", "maximum_retry_count": 3 }, "cap_drop": ["CAP_NET_RAW"],
        }))
        .unwrap();
        let host = host_config_of(&second).unwrap();
        assert_eq!((host.memory, host.init, host.privileged), (Some(67108864), Some(true), Some(false)));
        assert_eq!(host.devices.unwrap()[0].path_in_container.as_deref(), Some("/dev/z"));
        let restart = host.restart_policy.unwrap();
        assert_eq!((restart.name, restart.maximum_retry_count), (Some(RestartPolicyNameEnum::ON_FAILURE), Some(3)));

        let recorded = HostConfig {
            ulimits: Some(vec![bollard::models::ResourcesUlimits {
                name: Some("nofile".into()),
                soft: Some(1024),
                hard: Some(2048),
            }]),
            cpu_shares: Some(512),
            cgroupns_mode: Some(bollard::models::HostConfigCgroupnsModeEnum::HOST),
            ..Default::default()
        };
        let third =
            ContainerSpec { host_config: Some(recipe::chosen_host_config(as_fields(&recorded))), ..Default::default() };
        assert_eq!(host_config_of(&third).unwrap(), recorded, "format 3 round-trips through the recipe");

        let bad = ContainerSpec {
            restart_policy: Some(serde_json::from_value(serde_json::json!({ "name": "sometimes" })).unwrap()),
            ..Default::default()
        };
        assert!(host_config_of(&bad).is_err(), "a restart policy Docker does not know is refused");
    }
}
