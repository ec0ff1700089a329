//! The launch recipe (lifecycle.md, "The launch recipe"): what recreates a session's containers,
//! captured from `docker inspect` and the socket dir before anything tears them down. The
//! environment is kept as names and sources only: no secret value is ever written to disk.

use std::collections::BTreeMap;

use anyhow::Result;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

pub use crate::state::config::FROM_CONFIG;

mod env;
pub(crate) use env::*;

/// The recipe format this code writes. 1 (no `format` key): the whole `Config.Env`, no run shape
/// beyond lifecycle.md's list, the network's name and labels. 2: only the variables the launch
/// added, real-host.md's run shape as named fields, the network's driver, `Internal` flag and
/// options. 3: the whole `HostConfig` the launch chose (`host_config`, in the engine's own names)
/// instead of those named fields, and `Config`'s stop signal, stop timeout and healthcheck timing.
/// Every earlier format is still read.
pub const RECIPE_FORMAT: u32 = 3;

fn first_format() -> u32 {
    1
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchRecipe {
    #[serde(default = "first_format")]
    pub format: u32,
    pub(crate) captured_at: String,
    /// Which tool captured it: `jackin-keep` or `jackin-reconcile`.
    pub(crate) captured_by: String,
    pub role: ContainerRecipe,
    pub sidecar: Option<ContainerRecipe>,
    pub network: Option<NetworkRecipe>,
    pub(crate) certs_volume: Option<String>,
    /// `sockets/<c>/agent.toml` as it was (it holds sources of secrets, never their values).
    pub agent_toml: Option<String>,
    /// The text jackin's config gives each variable whose source is [`FROM_CONFIG`], read from the
    /// config at resume. Never serialised: such text may be a secret.
    #[serde(skip)]
    pub(crate) config_literals: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContainerRecipe {
    #[serde(flatten)]
    pub spec: ContainerSpec,
    pub env: Vec<EnvBinding>,
    /// The command that says the container is ready (`docker exec` argv): the container's own
    /// healthcheck when it has one, else `docker info` for a sidecar.
    pub health: Option<Vec<String>>,
}

/// One environment variable of a container: its name and where its value comes from at restore.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EnvBinding {
    pub name: String,
    /// `env:NAME` (the restoring process's environment), `op://vault/item/field` (`op read`),
    /// `jackin-config` (text typed into jackin's config, read from it at resume), or `literal` (a
    /// value known not to be secret, stored in `value`).
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// Everything needed to create the container again, except the environment's values.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ContainerSpec {
    pub(crate) name: String,
    /// The image reference the container was created from (usually a tag).
    pub image: String,
    /// The image ID it ran, to use when the tag has moved.
    pub image_id: String,
    pub(crate) entrypoint: Option<Vec<String>>,
    pub cmd: Option<Vec<String>>,
    pub working_dir: Option<String>,
    pub(crate) user: Option<String>,
    pub(crate) hostname: Option<String>,
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    #[serde(default)]
    pub mounts: Vec<MountSpec>,
    /// The network the container is attached to, with its aliases there.
    pub network: Option<String>,
    #[serde(default)]
    pub aliases: Vec<String>,
    #[serde(default)]
    pub(crate) tty: bool,
    #[serde(default)]
    pub(crate) open_stdin: bool,
    /// The container's own Docker healthcheck command, when it has one.
    pub healthcheck: Option<Vec<String>>,
    /// The rest of its healthcheck: how often and how long the engine runs it. Format 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_timing: Option<HealthTiming>,
    /// `Config.StopSignal` and `Config.StopTimeout` (seconds): how the engine stops it. Format 3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_signal: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_timeout: Option<i64>,
    /// Format 3: the `HostConfig` the launch chose, as the engine reports it (`docker inspect`'s
    /// field names and values), less what belongs to the one container, what the recipe's own
    /// `mounts` and `network` carry, and the engine's defaults ([`chosen_host_config`],
    /// [`less_engine_defaults`]). When it is absent (formats 1 and 2) the named fields below are
    /// the run shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_config: Option<BTreeMap<String, Value>>,
    // Formats 1 and 2: the run shape as named fields (lifecycle.md's list, then real-host.md's
    // "Run shape"), read from older recipes and never written by format 3.
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) privileged: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) memory: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) nano_cpus: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) pids_limit: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) cap_add: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) cap_drop: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) group_add: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) security_opt: Vec<String>,
    /// Mount point → options.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) tmpfs: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) devices: Vec<DeviceSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) init: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) shm_size: Option<i64>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) extra_hosts: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) restart_policy: Option<RestartSpec>,
    #[serde(default, skip_serializing_if = "is_false")]
    pub(crate) readonly_rootfs: bool,
    /// The [`fingerprint`] of the launch recipe a container was made from, carried by restore's
    /// containers as the label [`MADE_FROM_LABEL`]: read from and written to the engine only,
    /// never part of a recipe (a recipe captured from such a container records jackin's labels
    /// alone).
    #[serde(skip)]
    pub(crate) made_from: Option<String>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// A healthcheck's timing, in nanoseconds as the engine reports them (`Config.Healthcheck`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HealthTiming {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_period: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_interval: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retries: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceSpec {
    pub(crate) path_on_host: String,
    pub(crate) path_in_container: String,
    pub(crate) cgroup_permissions: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RestartSpec {
    /// `no`, `always`, `unless-stopped` or `on-failure`.
    pub(crate) name: String,
    pub(crate) maximum_retry_count: Option<i64>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct MountSpec {
    /// `bind` or `volume`.
    pub kind: String,
    /// The host path of a bind, or the volume name.
    pub source: String,
    pub destination: String,
    pub(crate) read_only: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkRecipe {
    /// The engine's ID of a network looked at now; never part of a recipe (a network made again
    /// from it has another).
    #[serde(skip)]
    pub(crate) id: Option<String>,
    pub name: String,
    pub(crate) labels: BTreeMap<String, String>,
    /// `None` in format 1 recipes: the engine's default (`bridge`).
    #[serde(default)]
    pub(crate) driver: Option<String>,
    /// No route out: a session launched on an internal network never comes back with one.
    #[serde(default)]
    pub internal: bool,
    #[serde(default)]
    pub(crate) options: BTreeMap<String, String>,
}

/// `HostConfig` fields a recipe never replays: what belongs to the one container (the file its ID
/// was written to, its links, which name it; the terminal size of the run that created it), what
/// the recipe's own `mounts` and `network` carry (`Binds` and `Mounts` as the launch wrote them;
/// `VolumesFrom`, whose mounts are among them), and the paths the engine masks, which it derives
/// from `Privileged` and `SecurityOpt` (`systempaths=unconfined`).
const NOT_REPLAYED: [&str; 9] = [
    "ContainerIDFile",
    "Links",
    "ConsoleSize",
    "Binds",
    "Mounts",
    "VolumesFrom",
    "NetworkMode",
    "MaskedPaths",
    "ReadonlyPaths",
];

/// Fields whose zero is a choice the engine keeps apart from "not set" (`null`): `--init=false`
/// over a daemon that inits by default, `--memory-swappiness 0`.
const ZERO_IS_CHOSEN: [&str; 2] = ["Init", "MemorySwappiness"];

/// Docker's own default `--shm-size` (64 MiB) and IPC mode, which every container reports.
const DEFAULT_SHM_SIZE: i64 = 64 * 1024 * 1024;
const DEFAULT_IPC_MODE: &str = "private";

/// What the engine fills in for a container whose launch chose nothing, from its own
/// configuration: its log driver, its runtime, and its cgroup namespace mode (`host` on cgroup
/// v1, `private` on v2). `None`: the engine did not say, and the launch's value is kept.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct EngineDefaults {
    pub(crate) log_driver: Option<String>,
    pub(crate) runtime: Option<String>,
    pub(crate) cgroupns_mode: Option<String>,
}

/// What `docker inspect` shows for an option nobody set: `null`, `false`, `0`, `""`, `[]`, `{}`.
fn is_unset(value: &Value) -> bool {
    match value {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(o) => o.is_empty(),
    }
}

/// A container's `HostConfig` (as the engine reports it, in its own field names) less what a
/// recipe never replays ([`NOT_REPLAYED`]) and every option the launch did not set.
pub(crate) fn chosen_host_config(host_config: serde_json::Map<String, Value>) -> BTreeMap<String, Value> {
    host_config
        .into_iter()
        .filter(|(field, _)| !NOT_REPLAYED.contains(&field.as_str()))
        .filter(|(field, value)| !is_unset(value) || (ZERO_IS_CHOSEN.contains(&field.as_str()) && !value.is_null()))
        .collect()
}

/// Leaves out of a recorded `HostConfig` the values the engine gives every container whose
/// launch chose nothing: created again, the container gets the engine's defaults of the day, not
/// those of the engine it was launched on.
pub(crate) fn less_engine_defaults(host_config: &mut BTreeMap<String, Value>, defaults: &EngineDefaults) {
    let is = |value: &Value, default: &Option<String>| default.is_some() && value.as_str() == default.as_deref();
    host_config.retain(|field, value| match field.as_str() {
        "LogConfig" => !(is(&value["Type"], &defaults.log_driver) && is_unset(&value["Config"])),
        "Runtime" => !is(value, &defaults.runtime),
        "CgroupnsMode" => !is(value, &defaults.cgroupns_mode),
        "IpcMode" => value.as_str() != Some(DEFAULT_IPC_MODE),
        "ShmSize" => value.as_i64() != Some(DEFAULT_SHM_SIZE),
        _ => true,
    });
}

impl ContainerSpec {
    /// The `HostConfig` to create the container with, in the engine's field names, without its
    /// mounts and network (the recipe's `mounts` and `network`): format 3's `host_config` as
    /// recorded, or the named fields of an earlier format.
    pub(crate) fn host_config_to_create(&self) -> BTreeMap<String, Value> {
        if let Some(recorded) = &self.host_config {
            return recorded.clone();
        }
        let mut fields = BTreeMap::from([
            ("Privileged".to_owned(), json!(self.privileged)),
            ("CapAdd".to_owned(), json!(self.cap_add)),
            ("CapDrop".to_owned(), json!(self.cap_drop)),
            ("GroupAdd".to_owned(), json!(self.group_add)),
            ("SecurityOpt".to_owned(), json!(self.security_opt)),
            ("Tmpfs".to_owned(), json!(self.tmpfs)),
            ("ExtraHosts".to_owned(), json!(self.extra_hosts)),
            ("ReadonlyRootfs".to_owned(), json!(self.readonly_rootfs)),
        ]);
        let devices: Vec<Value> = self
            .devices
            .iter()
            .map(|d| {
                json!({
                    "PathOnHost": d.path_on_host,
                    "PathInContainer": d.path_in_container,
                    "CgroupPermissions": d.cgroup_permissions,
                })
            })
            .collect();
        fields.insert("Devices".to_owned(), Value::Array(devices));
        let numbers = [("Memory", self.memory), ("NanoCpus", self.nano_cpus), ("PidsLimit", self.pids_limit)];
        for (field, value) in numbers.into_iter().chain([("ShmSize", self.shm_size)]) {
            if let Some(value) = value {
                fields.insert(field.to_owned(), json!(value));
            }
        }
        if let Some(init) = self.init {
            fields.insert("Init".to_owned(), json!(init));
        }
        if let Some(policy) = &self.restart_policy {
            let mut restart = json!({ "Name": policy.name });
            if let Some(count) = policy.maximum_retry_count {
                restart["MaximumRetryCount"] = json!(count);
            }
            fields.insert("RestartPolicy".to_owned(), restart);
        }
        fields
    }
}

/// The label restore puts on each container it creates from a launch recipe: the recipe's
/// [`fingerprint`]. In the tools' own namespace, apart from jackin's `jackin.*` labels, which
/// recipes record and the tools read.
pub(crate) const MADE_FROM_LABEL: &str = "jackin-tools.recipe";

/// What a container made from `container` on the image `image_id` is, in one string: the
/// recipe's mounts, variable names (never values) and network, and the image the container runs,
/// hashed. Equal fingerprints say a container was made from this very recipe, though the engine
/// shows an image other than the recipe's (tier 3 builds the role image anew). The image is the
/// container's own, not the recipe's: labels copied onto a container made by hand on another
/// image (`docker create --label …`) do not vouch for it.
pub(crate) fn fingerprint(container: &ContainerRecipe, image_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let spec = &container.spec;
    let mut mounts: Vec<(&str, &str, &str, bool)> =
        spec.mounts.iter().map(|m| (m.kind.as_str(), m.source.as_str(), m.destination.as_str(), m.read_only)).collect();
    mounts.sort();
    let names: std::collections::BTreeSet<&str> = container.env.iter().map(|b| b.name.as_str()).collect();
    let shape = json!({ "image_id": image_id, "mounts": mounts, "env": names, "network": spec.network });
    format!("sha256:{:x}", Sha256::digest(shape.to_string().as_bytes()))
}

/// The entries of a container's `Config.Env` that the launch added: those the image's own
/// `Config.Env` does not hold with the same value. The image's come back with the image.
pub(crate) fn added_by_launch(container_env: &[String], image_env: &[String]) -> Vec<String> {
    container_env.iter().filter(|entry| !image_env.contains(entry)).cloned().collect()
}

/// The mounts the launch chose: an anonymous volume (a 64-hex name) on a path the image declares
/// as `VOLUME` comes back with the image, anonymous; recreated by its name it would become a named
/// volume that removing the container leaves behind.
pub(crate) fn mounts_of_launch(mounts: &[MountSpec], image_volumes: &[String]) -> Vec<MountSpec> {
    mounts.iter().filter(|m| !(is_anonymous_volume(m) && image_volumes.contains(&m.destination))).cloned().collect()
}

/// A volume the engine named (64 hex digits), not the launch.
pub(crate) fn is_anonymous_volume(mount: &MountSpec) -> bool {
    mount.kind == "volume" && mount.source.len() == 64 && mount.source.bytes().all(|b| b.is_ascii_hexdigit())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_keep_only_their_names() {
        let sources = BTreeMap::from([
            ("GH_TOKEN".to_owned(), "op://dev/gh/token".to_owned()),
            ("API".to_owned(), "env:MY_API".to_owned()),
        ]);
        let env = [
            "PATH=/bin".to_owned(),
            "SECRET_TOKEN=hunter2".into(),
            "GH_TOKEN=ghp_x".into(),
            "API=k".into(),
            "JACKIN_ROLE=r".into(),
        ];
        let bindings = env_bindings(&env, &sources);
        let text = serde_json::to_string(&bindings).unwrap();
        for secret in ["hunter2", "ghp_x", "\"k\""] {
            assert!(!text.contains(secret), "{text}");
        }
        assert_eq!(
            bindings[0],
            EnvBinding { name: "PATH".into(), source: "literal".into(), value: Some("/bin".into()) }
        );
        assert_eq!(bindings[1].source, "env:SECRET_TOKEN");
        assert_eq!(bindings[2].source, "op://dev/gh/token");
        assert_eq!(bindings[3].source, "env:MY_API");
        assert_eq!(bindings[4].value.as_deref(), Some("r"));
    }

    #[test]
    fn resolution_names_every_missing_variable() {
        let bindings = env_bindings(&["A=1".into(), "B=2".into(), "PATH=/bin".into()], &BTreeMap::new());
        let missing = resolve_env(&bindings, &BTreeMap::new(), |_| None, |_| None).unwrap_err();
        assert_eq!(missing, ["A", "B"]);
        let values = resolve_env(&bindings, &BTreeMap::new(), |n| Some(format!("v{n}")), |_| None).unwrap();
        assert_eq!(values, ["A=vA", "B=vB", "PATH=/bin"]);
    }

    #[test]
    fn the_image_environment_is_the_images() {
        let image = ["PATH=/usr/local/bin:/bin".to_owned(), "NODE_VERSION=22.1.0".into(), "HOME=/root".into()];
        let container = [
            "PATH=/usr/local/bin:/bin".to_owned(),
            "NODE_VERSION=22.1.0".into(),
            "HOME=/home/agent".into(),
            "T=1".into(),
        ];
        assert_eq!(added_by_launch(&container, &image), ["HOME=/home/agent", "T=1"]);

        // A format 1 recipe recorded them all: the image's variables are not asked for.
        let recorded = env_bindings(&container, &BTreeMap::new());
        let names = |bindings: Vec<EnvBinding>| bindings.into_iter().map(|b| b.name).collect::<Vec<_>>();
        assert_eq!(names(bindings_to_resolve(1, &recorded, &image)), ["HOME", "T"]);
        let sourced = BTreeMap::from([("NODE_VERSION".to_owned(), "env:MY_NODE".to_owned())]);
        let recorded_sourced = env_bindings(&container, &sourced);
        assert_eq!(names(bindings_to_resolve(1, &recorded_sourced, &image)), ["NODE_VERSION", "HOME", "T"]);
        assert_eq!(bindings_to_resolve(2, &recorded, &image), recorded);
    }

    #[test]
    fn a_source_jackins_config_does_not_give_is_not_followed() {
        let binding = |name: &str, source: &str| EnvBinding { name: name.into(), source: source.into(), value: None };
        let container = |env: Vec<EnvBinding>| ContainerRecipe { spec: ContainerSpec::default(), env, health: None };
        let mut recipe = LaunchRecipe {
            format: RECIPE_FORMAT,
            captured_at: String::new(),
            captured_by: String::new(),
            role: container(vec![
                binding("GIT_AUTHOR_NAME", "env:AWS_SECRET_ACCESS_KEY"),
                binding("GH_TOKEN", "op://dev/gh/token"),
                binding("OTHER", "op://attacker/vault/field"),
                binding("SECRET_TOKEN", "env:SECRET_TOKEN"),
                EnvBinding { name: "TERM".into(), source: "literal".into(), value: Some("xterm".into()) },
            ]),
            sidecar: Some(container(vec![binding("DOCKER_TOKEN", "env:HOST_TOKEN")])),
            network: None,
            certs_volume: None,
            agent_toml: None,
            config_literals: BTreeMap::new(),
        };
        recipe.role.env.push(binding("WAS_TEXT", FROM_CONFIG));
        let trusted = BTreeMap::from([
            ("GH_TOKEN".to_owned(), "op://dev/gh/token".to_owned()),
            ("OTHER".to_owned(), "op://dev/other".to_owned()),
            ("SECRET_TOKEN".to_owned(), FROM_CONFIG.to_owned()),
        ]);
        let changed = distrust_sources(&mut recipe, &trusted);
        assert_eq!(changed.len(), 4, "{changed:?}");
        assert!(
            changed[0].starts_with("GIT_AUTHOR_NAME: the recorded source env:AWS_SECRET_ACCESS_KEY"),
            "{changed:?}"
        );
        let sources: Vec<&str> = recipe.role.env.iter().map(|b| b.source.as_str()).collect();
        assert_eq!(
            sources,
            ["env:GIT_AUTHOR_NAME", "op://dev/gh/token", "env:OTHER", FROM_CONFIG, "literal", "env:WAS_TEXT"],
            "the config's text is read from the config; text the config no longer gives, from the shell"
        );
        assert_eq!(recipe.role.env[4].value.as_deref(), Some("xterm"));
        assert_eq!(recipe.sidecar.as_ref().unwrap().env[0].source, "env:DOCKER_TOKEN");
        assert!(distrust_sources(&mut recipe, &trusted).is_empty(), "a second pass changes nothing");
    }

    #[test]
    fn the_images_anonymous_volumes_stay_anonymous() {
        let mount = |kind: &str, source: &str, destination: &str| MountSpec {
            kind: kind.into(),
            source: source.into(),
            destination: destination.into(),
            read_only: false,
        };
        let anonymous = "5d0f6c3e9b8a7f1e2d4c6b8a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f10";
        let mounts = [
            mount("volume", "jk-x-dind-certs", "/certs"),
            mount("volume", anonymous, "/var/lib/docker"),
            mount("volume", "named-by-the-launch", "/cache"),
            mount("volume", anonymous, "/not-declared"),
        ];
        let kept = mounts_of_launch(&mounts, &["/var/lib/docker".to_owned(), "/cache".to_owned()]);
        let destinations: Vec<&str> = kept.iter().map(|m| m.destination.as_str()).collect();
        assert_eq!(destinations, ["/certs", "/cache", "/not-declared"]);
    }

    #[test]
    fn the_host_config_keeps_what_the_launch_chose_and_leaves_the_engines_defaults() {
        let inspected = json!({
            "Binds": ["/home/x:/home/agent"], "ContainerIDFile": "", "Links": ["/other:/jk-x/other"],
            "LogConfig": { "Type": "json-file", "Config": {} }, "NetworkMode": "jk-x-net",
            "PortBindings": {}, "RestartPolicy": { "Name": "no", "MaximumRetryCount": 0 },
            "ConsoleSize": [24, 80], "CapAdd": null, "CapDrop": ["CAP_NET_RAW"], "CgroupnsMode": "host",
            "IpcMode": "private", "OomScoreAdj": 0, "Privileged": false, "ShmSize": 67108864,
            "Runtime": "runc", "Isolation": "", "CpuShares": 512, "Memory": 67108864, "MemorySwap": 134217728,
            "MemorySwappiness": null, "CpusetCpus": "0", "Init": false, "PidsLimit": null, "OomKillDisable": false,
            "Ulimits": [{ "Name": "nofile", "Soft": 1024, "Hard": 2048 }], "MaskedPaths": ["/proc/kcore"],
            "ReadonlyPaths": ["/proc/sys"], "Devices": [], "VolumesFrom": null, "Tmpfs": { "/scratch": "size=1m" },
        });
        let Value::Object(fields) = inspected else { unreachable!() };
        let mut chosen = chosen_host_config(fields);
        let defaults = EngineDefaults {
            log_driver: Some("json-file".into()),
            runtime: Some("runc".into()),
            cgroupns_mode: Some("host".into()),
        };
        less_engine_defaults(&mut chosen, &defaults);
        let fields: Vec<&str> = chosen.keys().map(String::as_str).collect();
        assert_eq!(
            fields,
            ["CapDrop", "CpuShares", "CpusetCpus", "Init", "Memory", "MemorySwap", "RestartPolicy", "Tmpfs", "Ulimits"],
            "{chosen:?}"
        );
        assert_eq!(chosen["Init"], json!(false), "an explicit --init=false is the launch's");

        // Another engine's log driver, runtime and cgroup namespace mode were chosen by the launch.
        let mut other = BTreeMap::from([
            ("LogConfig".to_owned(), json!({ "Type": "local", "Config": {} })),
            ("Runtime".to_owned(), json!("sysbox-runc")),
            ("CgroupnsMode".to_owned(), json!("private")),
            ("ShmSize".to_owned(), json!(33554432)),
        ]);
        less_engine_defaults(&mut other, &defaults);
        assert_eq!(other.len(), 4, "{other:?}");
        // An engine that did not say what it defaults to: kept as the launch had them.
        let mut unknown = BTreeMap::from([("Runtime".to_owned(), json!("runc"))]);
        less_engine_defaults(&mut unknown, &EngineDefaults::default());
        assert_eq!(unknown.len(), 1);
    }

    #[test]
    fn a_second_format_recipe_keeps_its_run_shape_and_the_third_writes_only_the_host_config() {
        let second: ContainerSpec = serde_json::from_value(json!({
            "name": "jk-x", "image": "role:1", "image_id": "sha256:1", "entrypoint": null, "cmd": null,
            "working_dir": null, "user": "1000:1000", "hostname": "agent", "network": "jk-x-net",
            "privileged": false, "memory": 67108864, "nano_cpus": null, "pids_limit": 100, "tty": true,
            "open_stdin": true, "healthcheck": null, "cap_add": [], "cap_drop": ["CAP_NET_RAW"], "group_add": ["0"],
            "security_opt": ["no-new-privileges"], "tmpfs": { "/scratch": "size=1m" },
            "devices": [{ "path_on_host": "/dev/zero", "path_in_container": "/dev/z", "cgroup_permissions": "rwm" }],
            "init": true, "shm_size": 33554432, "extra_hosts": [],
            "restart_policy": { "name": "unless-stopped", "maximum_retry_count": 0 }, "readonly_rootfs": true,
        }))
        .unwrap();
        let shape = second.host_config_to_create();
        assert_eq!(shape["Memory"], json!(67108864));
        assert_eq!(shape["PidsLimit"], json!(100));
        assert_eq!(shape["CapDrop"], json!(["CAP_NET_RAW"]));
        assert_eq!(shape["Devices"][0]["PathInContainer"], json!("/dev/z"));
        assert_eq!(shape["RestartPolicy"], json!({ "Name": "unless-stopped", "MaximumRetryCount": 0 }));
        assert_eq!(
            (&shape["Init"], &shape["ReadonlyRootfs"], &shape["ShmSize"]),
            (&json!(true), &json!(true), &json!(33554432))
        );
        assert!(!shape.contains_key("NanoCpus"), "{shape:?}");

        let host_config = BTreeMap::from([("CpuShares".to_owned(), json!(512))]);
        let third =
            ContainerSpec { host_config: Some(host_config.clone()), memory: Some(1), ..ContainerSpec::default() };
        assert_eq!(third.host_config_to_create(), host_config, "format 3's host_config is the run shape");
        let written =
            serde_json::to_value(ContainerSpec { host_config: Some(host_config), ..ContainerSpec::default() }).unwrap();
        for legacy in ["privileged", "memory", "cap_add", "tmpfs", "devices", "restart_policy", "readonly_rootfs"] {
            assert!(written.get(legacy).is_none(), "format 3 writes no {legacy}: {written}");
        }
    }

    /// Which recipe a container was made from is the engine's label, never part of a recipe.
    #[test]
    fn the_made_from_fingerprint_is_never_written_into_a_recipe() {
        let spec = ContainerSpec { made_from: Some("sha256:abc".into()), ..ContainerSpec::default() };
        let written = serde_json::to_string(&spec).unwrap();
        assert!(!written.contains("sha256:abc") && !written.contains(MADE_FROM_LABEL), "{written}");
        let read: ContainerSpec = serde_json::from_str(&written).unwrap();
        assert_eq!(read.made_from, None);
    }

    #[test]
    fn healthchecks_become_exec_argv() {
        assert_eq!(health_argv(&["CMD-SHELL".into(), "docker info".into()]).unwrap(), ["sh", "-c", "docker info"]);
        assert_eq!(health_argv(&["CMD".into(), "true".into()]).unwrap(), ["true"]);
        assert_eq!(health_argv(&["NONE".into()]), None);
    }
}
