//! A container's run shape both ways: read from the engine into a `ContainerSpec` (what the
//! launch recipe records), and created from one (what restore replays).

use super::*;

impl Engine {
    /// `None` when there is no such container.
    pub fn inspect(&self, name: &str) -> Result<Option<ContainerDetails>> {
        let response = match self.call(self.api.inspect_container(name, None::<InspectContainerOptions>)) {
            Ok(r) => r,
            Err(e) if is_not_found(&e) => return Ok(None),
            Err(e) => return Err(anyhow::Error::new(e).context(self.doing(format!("inspecting container {name}")))),
        };
        let state = response.state.unwrap_or_default();
        let config = response.config.unwrap_or_default();
        let host = response.host_config.unwrap_or_default();
        let mut mounts: Vec<MountSpec> = response
            .mounts
            .unwrap_or_default()
            .into_iter()
            .map(|m| {
                let kind = m.typ.map(|t| t.to_string()).unwrap_or_else(|| "bind".into());
                let source = if kind == "volume" { m.name.unwrap_or_default() } else { m.source.unwrap_or_default() };
                MountSpec {
                    kind,
                    source,
                    destination: m.destination.unwrap_or_default(),
                    read_only: !m.rw.unwrap_or(true),
                }
            })
            .collect();
        mounts.sort_by(|a, b| a.destination.cmp(&b.destination));
        let networks = response.network_settings.and_then(|n| n.networks).unwrap_or_default();
        let container_name = response.name.unwrap_or_default().trim_start_matches('/').to_owned();
        let (network, aliases) = match networks.into_iter().next() {
            Some((network, endpoint)) => {
                let aliases = endpoint
                    .aliases
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|a| !is_short_id(a, &response.id))
                    .collect();
                (Some(network), aliases)
            }
            None => (None, Vec::new()),
        };
        let spec = ContainerSpec {
            name: container_name.clone(),
            image: config.image.unwrap_or_default(),
            image_id: response.image.unwrap_or_default(),
            entrypoint: config.entrypoint,
            cmd: config.cmd,
            working_dir: config.working_dir.filter(|w| !w.is_empty()),
            user: config.user.filter(|u| !u.is_empty()),
            hostname: config.hostname.filter(|h| !h.is_empty()),
            labels: labels(config.labels),
            mounts,
            network,
            aliases,
            privileged: host.privileged.unwrap_or(false),
            memory: host.memory.filter(|m| *m > 0),
            nano_cpus: host.nano_cpus.filter(|n| *n > 0),
            pids_limit: host.pids_limit.filter(|n| *n > 0),
            tty: config.tty.unwrap_or(false),
            open_stdin: config.open_stdin.unwrap_or(false),
            healthcheck: config.healthcheck.and_then(|h| h.test).filter(|t| t.first().is_some_and(|k| k != "NONE")),
            cap_add: host.cap_add.unwrap_or_default(),
            cap_drop: host.cap_drop.unwrap_or_default(),
            group_add: host.group_add.unwrap_or_default(),
            security_opt: host.security_opt.unwrap_or_default(),
            tmpfs: host.tmpfs.unwrap_or_default().into_iter().collect(),
            devices: host
                .devices
                .unwrap_or_default()
                .into_iter()
                .map(|d| DeviceSpec {
                    path_on_host: d.path_on_host.unwrap_or_default(),
                    path_in_container: d.path_in_container.unwrap_or_default(),
                    cgroup_permissions: d.cgroup_permissions.unwrap_or_default(),
                })
                .collect(),
            init: host.init,
            shm_size: host.shm_size.filter(|s| *s > 0),
            extra_hosts: host.extra_hosts.unwrap_or_default(),
            restart_policy: host
                .restart_policy
                .and_then(|p| Some((p.name?, p.maximum_retry_count)))
                .filter(|(name, _)| *name != RestartPolicyNameEnum::EMPTY)
                .map(|(name, maximum_retry_count)| RestartSpec { name: name.to_string(), maximum_retry_count }),
            readonly_rootfs: host.readonly_rootfs.unwrap_or(false),
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
            },
            spec,
            env: config.env.unwrap_or_default(),
        }))
    }

    /// Creates a container from `spec` with the environment `env` (`NAME=value`, resolved by
    /// the caller just now, never stored), using `image` (a tag or an image ID).
    pub fn create_container(&self, spec: &ContainerSpec, image: &str, env: Vec<String>) -> Result<String> {
        let mounts = spec
            .mounts
            .iter()
            .map(|m| Mount {
                typ: Some(if m.kind == "volume" { MountType::VOLUME } else { MountType::BIND }),
                source: Some(m.source.clone()),
                target: Some(m.destination.clone()),
                read_only: Some(m.read_only),
                ..Default::default()
            })
            .collect();
        let host_config = HostConfig {
            mounts: Some(mounts),
            privileged: Some(spec.privileged),
            memory: spec.memory,
            nano_cpus: spec.nano_cpus,
            pids_limit: spec.pids_limit,
            network_mode: spec.network.clone(),
            cap_add: Some(spec.cap_add.clone()),
            cap_drop: Some(spec.cap_drop.clone()),
            group_add: Some(spec.group_add.clone()),
            security_opt: Some(spec.security_opt.clone()),
            tmpfs: Some(spec.tmpfs.clone().into_iter().collect()),
            devices: Some(
                spec.devices
                    .iter()
                    .map(|d| DeviceMapping {
                        path_on_host: Some(d.path_on_host.clone()),
                        path_in_container: Some(d.path_in_container.clone()),
                        cgroup_permissions: Some(d.cgroup_permissions.clone()),
                    })
                    .collect(),
            ),
            init: spec.init,
            shm_size: spec.shm_size,
            extra_hosts: Some(spec.extra_hosts.clone()),
            restart_policy: spec.restart_policy.as_ref().map(restart_policy).transpose()?,
            readonly_rootfs: Some(spec.readonly_rootfs),
            ..Default::default()
        };
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
            labels: Some(spec.labels.clone().into_iter().collect()),
            env: Some(env),
            tty: Some(spec.tty),
            open_stdin: Some(spec.open_stdin),
            healthcheck: spec.healthcheck.clone().map(|test| HealthConfig { test: Some(test), ..Default::default() }),
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
}

fn restart_policy(spec: &RestartSpec) -> Result<RestartPolicy> {
    let name = spec
        .name
        .parse::<RestartPolicyNameEnum>()
        .map_err(|_| anyhow::anyhow!("the recipe's restart policy {:?} is not one Docker knows", spec.name))?;
    Ok(RestartPolicy { name: Some(name), maximum_retry_count: spec.maximum_retry_count })
}

/// Docker adds the container's short ID as an alias; it changes with every container.
fn is_short_id(alias: &str, id: &Option<String>) -> bool {
    id.as_deref().is_some_and(|id| id.starts_with(alias) && alias.len() >= 12)
}
