//! jackin's config, read and never written: the exit policy (`dirty_exit_policy`).

use std::path::{Path, PathBuf};

use anyhow::Result;
use serde::{Deserialize, Serialize};

use crate::base::exit::Exit;

/// The exit policy (lifecycle.md, "The exit policy"). jackin's `discard` is `Clean`; a decision
/// record carries the policy by the names of [`Policy::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    Ask,
    Keep,
    Clean,
}

impl Policy {
    pub(crate) fn parse(text: &str) -> Option<Policy> {
        match text {
            "ask" => Some(Policy::Ask),
            "keep" => Some(Policy::Keep),
            "clean" | "discard" => Some(Policy::Clean),
            _ => None,
        }
    }

    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Policy::Ask => "ask",
            Policy::Keep => "keep",
            Policy::Clean => "clean",
        }
    }
}

#[derive(Deserialize)]
struct ConfigFile {
    dirty_exit_policy: Option<String>,
}

/// A workspace name used as a file name: jackin's names are plain words; anything that could
/// leave the directory is not looked up.
fn workspace_file(config_dir: &Path, workspace: &str) -> Option<PathBuf> {
    let plain = !workspace.is_empty()
        && !workspace.starts_with('.')
        && workspace.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
    plain.then(|| config_dir.join("workspaces").join(format!("{workspace}.toml")))
}

fn policy_in(path: &Path) -> Result<Option<Policy>> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(Exit::Unavailable.wrap(anyhow::Error::new(e).context(format!("cannot read {}", path.display()))))
        }
    };
    let file: ConfigFile = toml::from_str(&text)
        .map_err(|e| Exit::Unavailable.err(format_args!("{} does not parse: {}", path.display(), e.message())))?;
    match file.dirty_exit_policy {
        None => Ok(None),
        Some(value) => Policy::parse(&value).map(Some).ok_or_else(|| {
            Exit::Unavailable
                .err(format_args!("{}: dirty_exit_policy = {value:?} is not one of ask, keep, discard", path.display()))
        }),
    }
}

/// The workspace's `dirty_exit_policy`, else the global one, else `ask`.
pub fn configured_policy(config_dir: &Path, workspace: Option<&str>) -> Result<Policy> {
    if let Some(path) = workspace.and_then(|w| workspace_file(config_dir, w)) {
        if let Some(policy) = policy_in(&path)? {
            return Ok(policy);
        }
    }
    let global = config_dir.join("config.toml");
    if let Some(policy) = policy_in(&global)? {
        return Ok(policy);
    }
    Ok(Policy::Ask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workspace_wins_then_global_then_ask() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path();
        assert_eq!(configured_policy(cfg, Some("app")).unwrap(), Policy::Ask);
        std::fs::write(cfg.join("config.toml"), "dirty_exit_policy = \"discard\"\n").unwrap();
        assert_eq!(configured_policy(cfg, Some("app")).unwrap(), Policy::Clean);
        std::fs::create_dir(cfg.join("workspaces")).unwrap();
        std::fs::write(cfg.join("workspaces/app.toml"), "dirty_exit_policy = \"keep\"\n").unwrap();
        assert_eq!(configured_policy(cfg, Some("app")).unwrap(), Policy::Keep);
        assert_eq!(configured_policy(cfg, Some("../app")).unwrap(), Policy::Clean, "never a path");
        assert_eq!(configured_policy(cfg, None).unwrap(), Policy::Clean);
    }

    #[test]
    fn a_broken_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "dirty_exit_policy = [").unwrap();
        let err = configured_policy(dir.path(), None).unwrap_err();
        assert!(format!("{err:#}").contains("config.toml does not parse"), "{err:#}");
        std::fs::write(dir.path().join("config.toml"), "dirty_exit_policy = \"maybe\"").unwrap();
        assert!(format!("{:#}", configured_policy(dir.path(), None).unwrap_err()).contains("maybe"));
    }
}
