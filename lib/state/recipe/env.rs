//! The launch environment of a recipe: which variables are the launch's (not the image's), which
//! are kept as literals and which only by name and source, and resolving them at resume (from this
//! process's environment, 1Password, or jackin's config), never writing a secret's value.

use std::collections::BTreeMap;

use super::*;

/// The bindings a restore resolves for a container created from an image whose environment is
/// `image_env`. A format 1 recipe recorded the image's variables too: a literal the image holds
/// with the same value is the image's, and an `env:NAME` whose name the image sets is taken from
/// the image, unless the recipe gives it another source (which jackin's config gave it).
pub(crate) fn bindings_to_resolve(recipe_format: u32, env: &[EnvBinding], image_env: &[String]) -> Vec<EnvBinding> {
    if recipe_format >= 2 {
        return env.to_vec();
    }
    let image_sets = |name: &str| image_env.iter().any(|e| e.split_once('=').map_or(e.as_str(), |(n, _)| n) == name);
    env.iter()
        .filter(|b| {
            if b.source == "literal" {
                let entry = format!("{}={}", b.name, b.value.as_deref().unwrap_or_default());
                !image_env.contains(&entry)
            } else {
                b.source != format!("env:{}", b.name) || !image_sets(&b.name)
            }
        })
        .cloned()
        .collect()
}

/// Variables whose values are configuration, not secrets: kept as literals. Besides the usual
/// ones, jackin's own launch environment (real-host.md, "jackin's own launch environment"):
/// `JACKIN` and its `JACKIN_*` family, the sidecar's name for Testcontainers, the operator's git
/// identity and mise's trusted path (the workdir). A credential (jackin's registry, or anything
/// jackin's config gives a secret reference) is never one of them: only its name is kept.
pub(crate) fn is_known_non_secret(name: &str) -> bool {
    const NAMES: [&str; 23] = [
        "PATH",
        "TERM",
        "LANG",
        "LANGUAGE",
        "HOME",
        "USER",
        "SHELL",
        "HOSTNAME",
        "TZ",
        "PWD",
        "COLORTERM",
        "DOCKER_HOST",
        "DOCKER_CERT_PATH",
        "DOCKER_TLS_VERIFY",
        "DOCKER_TLS_CERTDIR",
        "NO_COLOR",
        "JACKIN",
        "TESTCONTAINERS_HOST_OVERRIDE",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "MISE_TRUSTED_CONFIG_PATHS",
    ];
    NAMES.contains(&name) || name.starts_with("JACKIN_") || name.starts_with("LC_")
}

/// Makes every variable of the recipe whose source is neither a literal, its own name in the
/// restoring environment (`env:NAME`), nor the source jackin's config gives it now (`trusted`,
/// from [`crate::state::config::launch_env`]) read its own name instead. A recipe
/// captured by an earlier version took sources from `agent.toml`, which the agent can write: it
/// could have pointed `GIT_AUTHOR_NAME` at the operator's `AWS_SECRET_ACCESS_KEY`. What was
/// changed, a line each.
pub(crate) fn distrust_sources(recipe: &mut LaunchRecipe, trusted: &BTreeMap<String, String>) -> Vec<String> {
    let mut changed = Vec::new();
    let containers = std::iter::once(&mut recipe.role).chain(recipe.sidecar.as_mut());
    for binding in containers.flat_map(|c| c.env.iter_mut()) {
        let own = format!("env:{}", binding.name);
        let configured = trusted.get(&binding.name);
        if binding.source == own && configured.is_some_and(|s| s == FROM_CONFIG) {
            // An earlier version recorded the config's text as the variable's own name: jackin
            // launches with the text, so the resume reads it too.
            binding.source = FROM_CONFIG.to_owned();
            continue;
        }
        if binding.source == "literal" || binding.source == own || configured == Some(&binding.source) {
            continue;
        }
        changed.push(format!(
            "{}: the recorded source {} is not the one jackin's config gives it; read from ${} instead",
            binding.name, binding.source, binding.name
        ));
        binding.source = own;
        binding.value = None;
    }
    changed
}

/// Names and sources of a container's environment; values only for known non-secrets.
pub(crate) fn env_bindings(env: &[String], sources: &BTreeMap<String, String>) -> Vec<EnvBinding> {
    env.iter()
        .map(|entry| {
            let (name, value) = entry.split_once('=').unwrap_or((entry.as_str(), ""));
            if let Some(source) = sources.get(name) {
                EnvBinding { name: name.to_owned(), source: source.clone(), value: None }
            } else if is_known_non_secret(name) {
                EnvBinding { name: name.to_owned(), source: "literal".into(), value: Some(value.to_owned()) }
            } else {
                EnvBinding { name: name.to_owned(), source: format!("env:{name}"), value: None }
            }
        })
        .collect()
}

/// A `docker exec` argv from a Docker healthcheck test (`["CMD-SHELL", "…"]`, `["CMD", …]`).
pub(crate) fn health_argv(test: &[String]) -> Option<Vec<String>> {
    match test.split_first() {
        Some((kind, rest)) if kind == "CMD-SHELL" => Some(vec!["sh".into(), "-c".into(), rest.join(" ")]),
        Some((kind, rest)) if kind == "CMD" && !rest.is_empty() => Some(rest.to_vec()),
        Some((kind, _)) if kind == "NONE" => None,
        Some(_) => Some(test.to_vec()),
        None => None,
    }
}

/// Where a variable that could not be resolved was looked for, for the message that names it.
pub(crate) fn source_to_supply(binding: &EnvBinding) -> String {
    match binding.source.strip_prefix("env:") {
        Some(var) => format!("${var}"),
        None if binding.source == FROM_CONFIG => "jackin's config".to_owned(),
        None => binding.source.clone(),
    }
}

/// The values of a recipe's environment, resolved now. `Err` names every variable that cannot be
/// resolved. The values live in memory only, for the create call.
pub(crate) fn resolve_env(
    bindings: &[EnvBinding],
    config_literals: &BTreeMap<String, String>,
    lookup: impl Fn(&str) -> Option<String>,
    op_read: impl Fn(&str) -> Option<String>,
) -> Result<Vec<String>, Vec<String>> {
    let mut values = Vec::new();
    let mut missing = Vec::new();
    for binding in bindings {
        let value = if binding.source == "literal" {
            binding.value.clone()
        } else if binding.source == FROM_CONFIG {
            config_literals.get(&binding.name).cloned()
        } else if let Some(var) = binding.source.strip_prefix("env:") {
            lookup(var)
        } else if binding.source.starts_with("op://") {
            op_read(&binding.source)
        } else {
            None
        };
        match value {
            Some(value) => values.push(format!("{}={value}", binding.name)),
            None => missing.push(binding.name.clone()),
        }
    }
    if missing.is_empty() {
        Ok(values)
    } else {
        Err(missing)
    }
}

/// `op read <reference>` from 1Password's CLI, when it is on PATH.
pub(crate) fn op_read(reference: &str) -> Option<String> {
    let out = std::process::Command::new("op").args(["read", "--no-newline", reference]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim_end_matches('\n').to_owned())
}
