//! Which Docker engine the tools talk to: the one the docker CLI would reach in the same shell.
//! The order is the CLI's: `--docker-host`, `DOCKER_HOST`, `DOCKER_CONTEXT`, the `currentContext`
//! of `$DOCKER_CONFIG/config.json` (default `~/.docker`), the default socket. Contexts are read
//! from the CLI's own store. Resolved once per run, so a reconnecting watcher finds the same
//! engine. Nothing here knows bollard: this only reads files and the environment.

use std::fmt;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::Deserialize;
use sha2::{Digest, Sha256};

use crate::base::exit::Exit;

/// The engine every docker installation listens on unless told otherwise.
pub(crate) const DEFAULT_HOST: &str = "unix:///var/run/docker.sock";

/// A resolved engine: where it is, how it was chosen, and the TLS files to reach it with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `unix://…`, `tcp://…` or `ssh://…`.
    pub(crate) host: String,
    /// The docker context it came from; `None` for a flag, `DOCKER_HOST` or the default.
    pub(crate) context: Option<String>,
    /// Where `ca.pem`, `cert.pem` and `key.pem` are, when the engine is reached over TLS.
    pub(crate) tls: Option<PathBuf>,
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.context {
            Some(name) => write!(f, "context \"{name}\" ({})", self.host),
            None => f.write_str(&self.host),
        }
    }
}

impl Endpoint {
    /// The engine's unix socket on this host; `None` for a tcp or ssh engine (another machine).
    pub(crate) fn local_socket(&self) -> Option<&Path> {
        self.host.strip_prefix("unix://").map(Path::new)
    }

    /// The engine the docker CLI would use; `flag` is `--docker-host`. An unknown context or a
    /// context store that does not parse is a usage error (exit 2) naming the context.
    pub fn resolve(flag: Option<&str>) -> Result<Endpoint> {
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        if let Some(host) = flag.map(str::to_owned).or_else(|| env("DOCKER_HOST")) {
            let tls = match host.starts_with("tcp://") && env("DOCKER_TLS_VERIFY").is_some() {
                true => Some(env("DOCKER_CERT_PATH").map_or_else(config_dir, PathBuf::from)),
                false => None,
            };
            return Ok(Endpoint { host, context: None, tls });
        }
        let config = config_dir();
        let context = match env("DOCKER_CONTEXT") {
            Some(name) => Some(name),
            None => current_context(&config)?,
        };
        match context {
            None => Ok(Endpoint { host: DEFAULT_HOST.to_owned(), context: None, tls: None }),
            Some(name) if name == "default" => {
                Ok(Endpoint { host: DEFAULT_HOST.to_owned(), context: Some(name), tls: None })
            }
            Some(name) => from_context(&config, name),
        }
    }
}

/// `$DOCKER_CONFIG`, else `~/.docker`: the docker CLI's config directory.
fn config_dir() -> PathBuf {
    match std::env::var_os("DOCKER_CONFIG").filter(|v| !v.is_empty()) {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".docker"),
    }
}

#[derive(Deserialize)]
struct CliConfig {
    #[serde(rename = "currentContext", default)]
    current_context: Option<String>,
}

/// The context `docker context use` chose, if any. A config file that is not there is no choice;
/// one that does not parse is an error, as it is for the CLI.
fn current_context(config: &Path) -> Result<Option<String>> {
    let path = config.join("config.json");
    let text = match std::fs::read_to_string(&path) {
        // It chooses the engine these tools talk to, with this user's rights on it.
        Ok(text) => crate::base::perms::refuse_written_by_others(&path, "the Docker config").map(|()| text)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Exit::Usage.err(format_args!("reading {}: {e}", path.display()))),
    };
    let parsed: CliConfig = serde_json::from_str(&text)
        .map_err(|e| Exit::Usage.err(format_args!("{} does not parse: {e}", path.display())))?;
    Ok(parsed.current_context.filter(|name| !name.is_empty()))
}

#[derive(Deserialize)]
struct ContextMeta {
    #[serde(rename = "Endpoints", default)]
    endpoints: std::collections::HashMap<String, ContextEndpoint>,
}

#[derive(Deserialize)]
struct ContextEndpoint {
    #[serde(rename = "Host", default)]
    host: Option<String>,
    #[serde(rename = "SkipTLSVerify", default)]
    skip_tls_verify: bool,
}

/// A context of the CLI's store: `contexts/meta/<sha256 of the name>/meta.json` holds its docker
/// endpoint, `contexts/tls/<same>/docker/` its TLS files when it has any.
fn from_context(config: &Path, name: String) -> Result<Endpoint> {
    let id = format!("{:x}", Sha256::digest(name.as_bytes()));
    let meta_path = config.join("contexts/meta").join(&id).join("meta.json");
    let text = std::fs::read_to_string(&meta_path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => Exit::Usage.err(format_args!(
            "unknown Docker context \"{name}\": no such context in {} (see `docker context ls`)",
            config.join("contexts").display()
        )),
        _ => Exit::Usage.err(format_args!("Docker context \"{name}\": reading {}: {e}", meta_path.display())),
    })?;
    crate::base::perms::refuse_written_by_others(&meta_path, &format!("Docker context \"{name}\":"))?;
    let meta: ContextMeta = serde_json::from_str(&text).map_err(|e| {
        Exit::Usage.err(format_args!("Docker context \"{name}\": {} does not parse: {e}", meta_path.display()))
    })?;
    let endpoint = meta.endpoints.get("docker");
    let host = endpoint.and_then(|e| e.host.clone()).filter(|h| !h.is_empty());
    let Some(host) = host else {
        return Err(Exit::Usage.err(format_args!("Docker context \"{name}\" has no docker endpoint")));
    };
    let tls_dir = config.join("contexts/tls").join(&id).join("docker");
    let has_tls_files = ["ca.pem", "cert.pem", "key.pem"].iter().any(|file| tls_dir.join(file).is_file());
    let tls = match host.starts_with("tcp://") && has_tls_files {
        true => Some(tls_dir),
        false => None,
    };
    if endpoint.is_some_and(|e| e.skip_tls_verify) && host.starts_with("tcp://") {
        // bollard's TLS always verifies the engine's certificate; reaching it unverified would
        // take a hand-made TLS setup, and a silent downgrade would be worse than a clear no.
        return Err(Exit::Unavailable.err(format_args!(
            "Docker context \"{name}\" ({host}) asks for SkipTLSVerify, which these tools do not do: \
give the context the engine's CA (docker context update --docker \"host={host},ca=…\")"
        )));
    }
    Ok(Endpoint { host, context: Some(name), tls })
}
