//! Instance names: the only strings that ever become paths under the jackin home (state.md, "Names").

use std::fmt;

use crate::base::exit::Exit;

/// The longest container name jackin produces.
pub(crate) const MAX_NAME_LEN: usize = 58;
/// The shortest instance-id prefix an argument may use.
pub(crate) const MIN_ID_PREFIX: usize = 4;

/// A container name that matched `^jk-[0-9a-z]+(-[0-9a-z]+)*$` and is at most 58 characters.
/// Holding one is the proof that joining it onto a directory stays inside that directory.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstanceName(String);

impl InstanceName {
    pub fn parse(text: &str) -> anyhow::Result<Self> {
        if is_valid_name(text) {
            Ok(Self(text.to_owned()))
        } else {
            Err(Exit::Usage.err(format_args!(
                "not an instance name: {:?} (expected jk-<id>-[<workspace>-]<role>, lowercase \
                 letters and digits, at most {MAX_NAME_LEN} characters)",
                text
            )))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The text between `jk-` and the next `-`.
    pub(crate) fn instance_id(&self) -> &str {
        let rest = &self.0[3..];
        rest.split('-').next().unwrap_or(rest)
    }
}

impl InstanceName {
    /// `jackin/scratch/<container>`: the branch a worktree mount of this instance is on, and the
    /// only branch a purge of it ever deletes.
    pub(crate) fn scratch_branch(&self) -> String {
        format!("jackin/scratch/{self}")
    }
}

/// What jackin appends to a container name for the Docker resources it derives from it (state.md,
/// "Docker resources of an instance"). The manifest's names win; these are for when it is gone.
pub(crate) const DIND_SUFFIX: &str = "-dind";
pub(crate) const NETWORK_SUFFIX: &str = "-net";
pub(crate) const CERTS_VOLUME_SUFFIX: &str = "-dind-certs";

/// The Docker-in-Docker sidecar jackin derives from a container name.
pub(crate) fn derived_dind_container(container: &str) -> String {
    format!("{container}{DIND_SUFFIX}")
}

/// The network jackin derives from a container name.
pub(crate) fn derived_network(container: &str) -> String {
    format!("{container}{NETWORK_SUFFIX}")
}

/// The name a replacement is created under while the container it replaces is there (restore's
/// create before destroy): the container's name and a suffix of the tools' own. A `.` is no part
/// of an instance name, so nothing that names a container's instance by its name takes a role
/// container's interim one for an instance of its own (an orphan); a sidecar's, labelled with its
/// instance, is that instance's. Teardown removes one a run killed half-way left.
pub(crate) fn interim_container(container: &str) -> String {
    format!("{container}{INTERIM_SUFFIX}")
}

/// The container an interim one stands in for; `None` when `name` is no interim name.
pub(crate) fn interim_for(name: &str) -> Option<&str> {
    name.strip_suffix(INTERIM_SUFFIX)
}

const INTERIM_SUFFIX: &str = ".jackin-restore";

/// The TLS certs volume jackin derives from a container name.
pub(crate) fn derived_certs_volume(container: &str) -> String {
    format!("{container}{CERTS_VOLUME_SUFFIX}")
}

impl fmt::Display for InstanceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<std::path::Path> for InstanceName {
    fn as_ref(&self) -> &std::path::Path {
        std::path::Path::new(&self.0)
    }
}

pub(crate) fn is_valid_name(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("jk-") else { return false };
    text.len() <= MAX_NAME_LEN && rest.split('-').all(|part| !part.is_empty() && part.bytes().all(is_name_byte))
}

/// An argument that could be an instance id or a prefix of one.
pub(crate) fn is_id_prefix(text: &str) -> bool {
    text.len() >= MIN_ID_PREFIX && text.len() <= MAX_NAME_LEN && text.bytes().all(is_name_byte)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_digit() || b.is_ascii_lowercase()
}

/// The kinds of Docker resource jackin makes for an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DockerKind {
    /// The role container, or its sidecar (labelled `jackin.kind=dind`).
    Container,
    Network,
    Volume,
}

/// The instance a labelled Docker resource belongs to: its `jackin.role` label, else its name
/// without the suffix jackin gives its kind (`-dind` for a sidecar, `-net`, `-dind-certs`).
/// `None` when that is no instance name (a prewarmed sidecar).
pub(crate) fn instance_of(
    kind: DockerKind,
    name: &str,
    labels: &std::collections::BTreeMap<String, String>,
) -> Option<InstanceName> {
    if is_prewarm(name, labels) {
        return None;
    }
    let suffix = match kind {
        DockerKind::Container if labels.get("jackin.kind").is_some_and(|k| k == "dind") => "-dind",
        DockerKind::Container => "",
        DockerKind::Network => "-net",
        DockerKind::Volume => "-dind-certs",
    };
    let base = labels.get("jackin.role").map(String::as_str).or_else(|| name.strip_suffix(suffix)).unwrap_or(name);
    InstanceName::parse(base).ok()
}

/// jackin's prewarmed sidecar or one of its resources (`jk-prewarm-*`, or labelled so): it belongs
/// to no instance until a manifest names it, so it is never an orphan.
pub(crate) fn is_prewarm(name: &str, labels: &std::collections::BTreeMap<String, String>) -> bool {
    name.starts_with(PREWARM_PREFIX)
        || labels.get("jackin.kind").is_some_and(|k| k == "prewarm-dind")
        || labels.get("jackin.prewarm").is_some_and(|v| v == "true")
}

/// The name prefix of jackin's prewarmed sidecar and its resources.
pub(crate) const PREWARM_PREFIX: &str = "jk-prewarm-";

/// A Docker name jackin gives: `jk-` then lowercase letters, digits and dashes (the derived
/// names of an instance are longer than the 58 characters of its container name).
pub(crate) fn is_docker_name(name: &str) -> bool {
    name.strip_prefix("jk-").is_some_and(|rest| {
        !rest.is_empty()
            && name.len() <= 128
            && rest.bytes().all(|b| b.is_ascii_digit() || b.is_ascii_lowercase() || b == b'-')
    })
}

/// The short name of the instance whose id is `instance_id`, as the list and the picker show it
/// and as an argument names it (`jk-<id>`).
pub(crate) fn short_name(instance_id: &str) -> String {
    format!("jk-{instance_id}")
}

/// Whether `name` (a container name, a Docker resource's, a data directory's, a name lock's) is
/// of the instance whose id is `instance_id`.
pub(crate) fn is_of_instance(name: &str, instance_id: &str) -> bool {
    instance_id_of(name) == Some(instance_id)
}

/// The instance id a name jackin gives starts with: the text between `jk-` and the next `-` or
/// `.` (a container, its Docker resources, its name lock).
pub(crate) fn instance_id_of(name: &str) -> Option<&str> {
    name.strip_prefix("jk-").and_then(|rest| rest.split(['-', '.']).next())
}

#[cfg(test)]
mod owner_tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn docker_resources_name_their_instance() {
        let none = BTreeMap::new();
        let dind = BTreeMap::from([("jackin.kind".to_owned(), "dind".to_owned())]);
        let labelled = BTreeMap::from([("jackin.role".to_owned(), "jk-abcd-role".to_owned())]);
        let of = |kind, name, labels| instance_of(kind, name, labels).map(|n| n.to_string());
        assert_eq!(of(DockerKind::Container, "jk-abcd-x", &none).as_deref(), Some("jk-abcd-x"));
        assert_eq!(of(DockerKind::Container, "jk-abcd-x-dind", &dind).as_deref(), Some("jk-abcd-x"));
        assert_eq!(of(DockerKind::Network, "jk-abcd-x-net", &none).as_deref(), Some("jk-abcd-x"));
        assert_eq!(of(DockerKind::Volume, "jk-abcd-x-dind-certs", &none).as_deref(), Some("jk-abcd-x"));
        assert_eq!(of(DockerKind::Network, "whatever", &labelled).as_deref(), Some("jk-abcd-role"));
        assert_eq!(of(DockerKind::Container, "prewarm-1-dind", &dind), None);
        let prewarm = BTreeMap::from([("jackin.kind".to_owned(), "prewarm-dind".to_owned())]);
        assert_eq!(of(DockerKind::Container, "jk-abcd-x", &prewarm), None);
        assert_eq!(of(DockerKind::Container, "jk-prewarm-dind-7", &none), None);
        assert_eq!(of(DockerKind::Volume, "jk-prewarm-certs-7", &none), None);
        assert!(is_docker_name("jk-abcd-x-dind-certs") && !is_docker_name("jk-") && !is_docker_name("jk-a.b"));
        assert_eq!(instance_id_of("jk-abcd-x.lock"), Some("abcd"));
        assert_eq!(instance_id_of("abcd"), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_jackin_names() {
        for ok in ["jk-k7p9m2xq-myapp-agentsmith", "jk-k7p9m2xq-architect", "jk-a"] {
            assert!(is_valid_name(ok), "{ok}");
        }
        assert_eq!(InstanceName::parse("jk-k7p9m2xq-arch").unwrap().instance_id(), "k7p9m2xq");
        assert_eq!(
            InstanceName::parse("jk-k7p9m2xq-arch").unwrap().scratch_branch(),
            "jackin/scratch/jk-k7p9m2xq-arch"
        );
        assert_eq!(derived_network("jk-k7p9m2xq-arch"), "jk-k7p9m2xq-arch-net");
        assert_eq!(derived_certs_volume("jk-k7p9m2xq-arch"), "jk-k7p9m2xq-arch-dind-certs");
    }

    #[test]
    fn refuses_anything_path_like() {
        let long = format!("jk-{}", "a".repeat(MAX_NAME_LEN - 2));
        for bad in [
            "", "jk-", "jk--a", "jk-a-", "jk-a/b", "jk-../x", "../jk-a", "/jk-a", "jk-A", "jk-a.b", "jk-a b", "jk-a\n",
            "JK-a", "k7p9m2xq", &long,
        ] {
            assert!(!is_valid_name(bad), "{bad:?}");
            assert!(InstanceName::parse(bad).is_err());
        }
    }
}
