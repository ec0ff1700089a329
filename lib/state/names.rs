//! Instance names: the only strings that ever become paths under the jackin home (state.md, "Names").

use std::fmt;

use crate::base::exit::Exit;

/// The longest container name jackin produces.
pub const MAX_NAME_LEN: usize = 58;
/// The shortest instance-id prefix an argument may use.
pub const MIN_ID_PREFIX: usize = 4;

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
    pub fn instance_id(&self) -> &str {
        let rest = &self.0[3..];
        rest.split('-').next().unwrap_or(rest)
    }
}

impl InstanceName {
    /// `jackin/scratch/<container>`: the branch a worktree mount of this instance is on, and the
    /// only branch a purge of it ever deletes.
    pub fn scratch_branch(&self) -> String {
        format!("jackin/scratch/{self}")
    }
}

/// What jackin appends to a container name for the Docker resources it derives from it (state.md,
/// "Docker resources of an instance"). The manifest's names win; these are for when it is gone.
pub const DIND_SUFFIX: &str = "-dind";
pub const NETWORK_SUFFIX: &str = "-net";
pub const CERTS_VOLUME_SUFFIX: &str = "-dind-certs";

/// The Docker-in-Docker sidecar jackin derives from a container name.
pub fn derived_dind_container(container: &str) -> String {
    format!("{container}{DIND_SUFFIX}")
}

/// The network jackin derives from a container name.
pub fn derived_network(container: &str) -> String {
    format!("{container}{NETWORK_SUFFIX}")
}

/// The TLS certs volume jackin derives from a container name.
pub fn derived_certs_volume(container: &str) -> String {
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

pub fn is_valid_name(text: &str) -> bool {
    let Some(rest) = text.strip_prefix("jk-") else { return false };
    text.len() <= MAX_NAME_LEN && rest.split('-').all(|part| !part.is_empty() && part.bytes().all(is_name_byte))
}

/// An argument that could be an instance id or a prefix of one.
pub fn is_id_prefix(text: &str) -> bool {
    text.len() >= MIN_ID_PREFIX && text.len() <= MAX_NAME_LEN && text.bytes().all(is_name_byte)
}

fn is_name_byte(b: u8) -> bool {
    b.is_ascii_digit() || b.is_ascii_lowercase()
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
