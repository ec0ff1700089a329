//! The idle policy: which workspaces' sessions are kept once nobody used them for how long. The
//! tools' own file, `<config-dir>/jackin-tools-idle.toml`, never jackin's: jackin reads
//! `config.toml` and every `*.toml` under `workspaces/` (its editor rewrites those, dropping keys
//! it does not know), and nothing else in its config directory. Off unless a workspace is named:
//!
//! ```toml
//! [workspaces.my-app]
//! keep_after = "4h"
//! ```
//!
//! A file that is there and cannot be read or parsed stops the run (exit 4) before anything is
//! looked at: a policy half read could stop sessions nobody chose to stop.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use serde::Deserialize;

use crate::base::exit::Exit;

/// The file's name in jackin's config directory.
pub const FILE: &str = "jackin-tools-idle.toml";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PolicyFile {
    #[serde(default)]
    workspaces: BTreeMap<String, WorkspacePolicy>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct WorkspacePolicy {
    /// `off`, or how long a session may go unused before it is kept (`4h`, `1d`).
    keep_after: String,
}

/// Each workspace's window; a workspace not named (or `off`) has none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IdlePolicy {
    windows: BTreeMap<String, Duration>,
}

impl IdlePolicy {
    pub fn path(config_dir: &Path) -> PathBuf {
        config_dir.join(FILE)
    }

    /// The file of `config_dir`; no file is no policy.
    pub fn read(config_dir: &Path) -> Result<IdlePolicy> {
        let path = Self::path(config_dir);
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(IdlePolicy::default()),
            Err(e) => return Err(Exit::Unavailable.err(format_args!("cannot read {}: {e}", path.display()))),
        };
        Self::parse(&text).map_err(|why| Exit::Unavailable.err(format_args!("{}: {why}", path.display())))
    }

    fn parse(text: &str) -> Result<IdlePolicy, String> {
        let file: PolicyFile = toml::from_str(text).map_err(|e| e.message().to_owned())?;
        let mut windows = BTreeMap::new();
        for (workspace, policy) in file.workspaces {
            if policy.keep_after.trim() == "off" {
                continue;
            }
            let window = crate::face::cli::duration(&policy.keep_after)
                .map_err(|e| format!("workspaces.{workspace}.keep_after = {:?}: {e}", policy.keep_after))?;
            if window.is_zero() {
                return Err(format!(
                    "workspaces.{workspace}.keep_after: 0 would keep every session at once; `off` turns it off"
                ));
            }
            windows.insert(workspace, window);
        }
        Ok(IdlePolicy { windows })
    }

    /// The window of `workspace`, if its sessions are kept when idle.
    pub fn window(&self, workspace: Option<&str>) -> Option<Duration> {
        self.windows.get(workspace?).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_named_workspaces_have_a_window_and_bad_values_are_refused() {
        let policy =
            IdlePolicy::parse("[workspaces.app]\nkeep_after = \"4h\"\n[workspaces.docs]\nkeep_after = \"off\"\n")
                .unwrap();
        assert_eq!(policy.window(Some("app")), Some(Duration::from_secs(4 * 3600)));
        assert_eq!(policy.window(Some("docs")), None);
        assert_eq!(policy.window(Some("other")), None);
        assert_eq!(policy.window(None), None);
        assert!(IdlePolicy::parse("[workspaces.app]\nkeep_after = \"4\"\n").unwrap_err().contains("a unit is needed"));
        assert!(IdlePolicy::parse("[workspaces.app]\nkeep_after = \"0s\"\n").unwrap_err().contains("`off`"));
        assert!(IdlePolicy::parse("[workspaces.app]\nkeepafter = \"4h\"\n").is_err(), "a misspelt key is refused");
        assert!(IdlePolicy::parse("idle = true\n").is_err());
        assert_eq!(IdlePolicy::parse("").unwrap(), IdlePolicy::default());
    }
}
