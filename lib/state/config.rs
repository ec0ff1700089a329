//! jackin's config, read and never written: the exit policy (`dirty_exit_policy`) and where the
//! launch's variables come from (the `env` maps).

use std::collections::BTreeMap;
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

/// One value of an `env` map of jackin's config: an `op://` reference (`{ op = …, path = … }`),
/// or text (a plain string, or `{ value = … }`) that is a literal or a `$VAR` / `${VAR}` of the
/// operator's environment.
#[derive(Deserialize)]
#[serde(untagged)]
enum EnvValue {
    Op { op: String },
    Text { value: String },
    Plain(String),
}

/// `$NAME` or `${NAME}`: the operator's variable it names.
fn host_variable(text: &str) -> Option<&str> {
    let name = text.strip_prefix("${").and_then(|rest| rest.strip_suffix('}')).or_else(|| text.strip_prefix('$'))?;
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

/// What one value of an `env` map is at launch: a recipe source (`op://…`, `env:VAR` for a
/// `$VAR`, or [`FROM_CONFIG`] for text typed into the config) and, for that text, its value. The
/// value is read again from the config at each resume and never written to the recipe: text typed
/// into the config may still be a secret. `None` for a shape this code does not know.
fn source_of(value: toml::Value) -> Option<(String, Option<String>)> {
    match value.try_into::<EnvValue>().ok()? {
        EnvValue::Op { op } => op.starts_with("op://").then_some((op, None)),
        EnvValue::Text { value: text } | EnvValue::Plain(text) => match host_variable(&text) {
            Some(var) => Some((format!("env:{var}"), None)),
            None => Some((FROM_CONFIG.to_owned(), Some(text))),
        },
    }
}

/// A config file as a table; a missing file is an empty one. Only what does not parse as TOML
/// is an error: keys of shapes this code does not know are jackin's business.
fn table_in(path: &Path) -> Result<toml::Table> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(toml::Table::new()),
        Err(e) => {
            return Err(Exit::Unavailable.wrap(anyhow::Error::new(e).context(format!("cannot read {}", path.display()))))
        }
    };
    toml::from_str(&text)
        .map_err(|e| Exit::Unavailable.err(format_args!("{} does not parse: {}", path.display(), e.message())))
}

/// The file's `[env]`, then its `[roles.<role>.env]`: whatever of them is a table.
fn env_layers(file: &toml::Table, role: &str) -> Vec<(String, toml::Value)> {
    let env_of = |table: Option<&toml::Table>| {
        let env = table.and_then(|t| t.get("env")).and_then(toml::Value::as_table);
        env.into_iter().flatten().map(|(name, value)| (name.clone(), value.clone())).collect::<Vec<_>>()
    };
    let role_table = file.get("roles").and_then(|roles| roles.get(role)).and_then(toml::Value::as_table);
    let mut layers = env_of(Some(file));
    layers.extend(env_of(role_table));
    layers
}

/// The recipe source of a variable whose value is text typed into jackin's config: the resume
/// reads the text from the config again, as jackin's launch does.
pub const FROM_CONFIG: &str = "jackin-config";

/// What jackin's config gives a session's variables at launch.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct LaunchEnv {
    /// Where each variable comes from, as a recipe source.
    pub sources: BTreeMap<String, String>,
    /// The text of each variable whose source is [`FROM_CONFIG`]. Memory only.
    pub literals: BTreeMap<String, String>,
}

/// Where each variable jackin's config gives a session comes from, as a recipe source: the
/// global `[env]`, then the role's (`[roles.<role>.env]`), then the workspace file's `[env]`, then
/// its `[roles.<role>.env]`; the later layer wins, as when jackin launches. This is the only
/// place a source other than a variable's own name comes from: `agent.toml` is in the agent's
/// reach (docs/threat-model.md), jackin's config is not.
pub fn launch_env(config_dir: &Path, workspace: Option<&str>, role: &str) -> Result<LaunchEnv> {
    let global = table_in(&config_dir.join("config.toml"))?;
    let workspace = match workspace.and_then(|w| workspace_file(config_dir, w)) {
        Some(path) => table_in(&path)?,
        None => toml::Table::new(),
    };
    let mut env = LaunchEnv::default();
    for (name, value) in env_layers(&global, role).into_iter().chain(env_layers(&workspace, role)) {
        env.literals.remove(&name);
        match source_of(value) {
            Some((source, literal)) => {
                env.sources.insert(name.clone(), source);
                if let Some(text) = literal {
                    env.literals.insert(name, text);
                }
            }
            None => {
                env.sources.remove(&name);
            }
        }
    }
    Ok(env)
}

/// The host directories jackin's config mounts into its workspaces: each `src` of a `mounts`
/// entry of a workspace, in `config.toml`'s `[workspaces.<name>]` and in each
/// `workspaces/<name>.toml`, in the order found, each once. `jackin-restore --import` looks
/// among them for a moved session's repositories.
pub(crate) fn mounted_sources(config_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut tables = Vec::new();
    let global = table_in(&config_dir.join("config.toml"))?;
    if let Some(workspaces) = global.get("workspaces").and_then(toml::Value::as_table) {
        tables.extend(workspaces.values().filter_map(toml::Value::as_table).cloned());
    }
    let mut files: Vec<PathBuf> = match std::fs::read_dir(config_dir.join("workspaces")) {
        Ok(entries) => {
            entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "toml")).collect()
        }
        Err(_) => Vec::new(),
    };
    files.sort();
    for file in files {
        tables.push(table_in(&file)?);
    }
    let mut sources = Vec::new();
    for table in &tables {
        let mounts = table.get("mounts").and_then(toml::Value::as_array).into_iter().flatten();
        for src in mounts.filter_map(|m| m.get("src")).filter_map(toml::Value::as_str) {
            let src = PathBuf::from(src);
            if src.is_absolute() && !sources.contains(&src) {
                sources.push(src);
            }
        }
    }
    Ok(sources)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mounted_sources_are_every_workspaces_mounts() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path();
        assert!(mounted_sources(cfg).unwrap().is_empty());
        std::fs::write(
            cfg.join("config.toml"),
            "[workspaces.prod]\nworkdir = \"/w\"\n[[workspaces.prod.mounts]]\nsrc = \"/src/a\"\ndst = \"/w\"\n",
        )
        .unwrap();
        std::fs::create_dir_all(cfg.join("workspaces")).unwrap();
        std::fs::write(
            cfg.join("workspaces/app.toml"),
            "mounts = [{ src = \"/src/b\", dst = \"/b\" }, { src = \"/src/a\", dst = \"/a\" }, { src = \"rel\" }]\n",
        )
        .unwrap();
        assert_eq!(mounted_sources(cfg).unwrap(), [PathBuf::from("/src/a"), PathBuf::from("/src/b")]);
    }

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

    #[test]
    fn variable_sources_come_from_the_env_layers_the_later_winning() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = dir.path();
        assert_eq!(launch_env(cfg, Some("app"), "agent-smith").unwrap(), LaunchEnv::default());
        std::fs::write(
            cfg.join("config.toml"),
            "[env]\nGH_TOKEN = { op = \"op://v/gh/token\", path = \"V/gh/token\" }\nAPI = \"$HOST_API\"\n\
             PLAIN = \"not-a-ref\"\nBRACED = { value = \"${HOST_B}\", on_demand = true }\n\
             [roles.agent-smith]\ngit = \"https://example.invalid/r.git\"\n\
             [roles.agent-smith.env]\nAPI = \"$ROLE_API\"\n[roles.other.env]\nGH_TOKEN = \"$OTHER\"\n",
        )
        .unwrap();
        std::fs::create_dir(cfg.join("workspaces")).unwrap();
        std::fs::write(
            cfg.join("workspaces/app.toml"),
            "workdir = \"/w\"\n[env]\nWS = \"$WS_VAR\"\n[roles.agent-smith.env]\nGH_TOKEN = \"literal now\"\n",
        )
        .unwrap();
        let env = launch_env(cfg, None, "agent-smith").unwrap();
        let expected: BTreeMap<String, String> = [
            ("API", "env:ROLE_API"),
            ("BRACED", "env:HOST_B"),
            ("GH_TOKEN", "op://v/gh/token"),
            ("PLAIN", FROM_CONFIG),
        ]
        .into_iter()
        .map(|(n, s)| (n.to_owned(), s.to_owned()))
        .collect();
        assert_eq!(env.sources, expected, "another role's layer is not read");
        assert_eq!(env.literals, BTreeMap::from([("PLAIN".to_owned(), "not-a-ref".to_owned())]));
        let in_workspace = launch_env(cfg, Some("app"), "agent-smith").unwrap();
        assert_eq!(in_workspace.sources.get("WS").map(String::as_str), Some("env:WS_VAR"));
        assert_eq!(in_workspace.sources.get("GH_TOKEN").map(String::as_str), Some(FROM_CONFIG));
        assert_eq!(
            in_workspace.literals.get("GH_TOKEN").map(String::as_str),
            Some("literal now"),
            "the workspace role layer made it a literal"
        );
        assert_eq!(launch_env(cfg, Some("../app"), "agent-smith").unwrap(), env, "never a path");
        std::fs::write(cfg.join("config.toml"), "[env\n").unwrap();
        let err = launch_env(cfg, None, "r").unwrap_err();
        assert!(format!("{err:#}").contains("config.toml does not parse"), "{err:#}");
    }

    #[test]
    fn only_a_variable_name_is_a_host_variable() {
        assert_eq!(host_variable("$A_1"), Some("A_1"));
        assert_eq!(host_variable("${_B}"), Some("_B"));
        for text in ["$", "${}", "$1A", "${A", "$A-B", "A", "$A;rm"] {
            assert_eq!(host_variable(text), None, "{text}");
        }
    }
}
