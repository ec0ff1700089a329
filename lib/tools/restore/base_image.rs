//! Tier 3's base image (lifecycle.md, "Restore": "and the recorded base image"): the role is built
//! on the base jackin recorded at launch (`base_image_ref`, `base_image_digest`), not on whatever
//! the Dockerfile's `FROM` names today, and a Dockerfile whose base differs is reported as drift.

use std::io::Read;

use anyhow::{Context, Result};

/// The base to build on: `ref@digest` when both are recorded, else what is. A digest alone is
/// pinned onto the repository the Dockerfile names (`None` here, resolved in `pin_final_base`).
pub(crate) fn recorded_base(base_ref: Option<&str>, digest: Option<&str>) -> Option<RecordedBase> {
    let base_ref = base_ref.filter(|r| !r.is_empty());
    let digest = digest.filter(|d| !d.is_empty());
    match (base_ref, digest) {
        (None, None) => None,
        (r, d) => Some(RecordedBase { reference: r.map(str::to_owned), digest: d.map(str::to_owned) }),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RecordedBase {
    reference: Option<String>,
    digest: Option<String>,
}

/// `name` of `name:tag`, `name@sha256:…`, `registry:5000/name:tag`.
fn repository(image: &str) -> &str {
    let image = image.split('@').next().unwrap_or(image);
    match image.rfind(':') {
        Some(colon) if !image[colon..].contains('/') => &image[..colon],
        _ => image,
    }
}

impl RecordedBase {
    /// The reference to build on, for a Dockerfile whose final base is `named`.
    fn image_for(&self, named: &str) -> String {
        let reference = self.reference.clone().unwrap_or_else(|| repository(named).to_owned());
        match &self.digest {
            Some(digest) if !reference.contains('@') => format!("{reference}@{digest}"),
            _ => reference,
        }
    }

    /// Whether a Dockerfile base names the recorded one (the tag a digest was taken from counts).
    fn is_named_by(&self, named: &str) -> bool {
        match &self.reference {
            Some(reference) => named == reference || named == self.image_for(named),
            None => true,
        }
    }
}

/// The Dockerfile with its final stage's `FROM` on the recorded base, and the drift to report
/// when the Dockerfile named another one (or a base that cannot be replaced).
pub(crate) fn pin_final_base(dockerfile: &str, recorded: &RecordedBase) -> (String, Option<String>) {
    let lines: Vec<&str> = dockerfile.lines().collect();
    let mut stages = Vec::new();
    let mut last_from = None;
    for (i, line) in lines.iter().enumerate() {
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first().is_some_and(|w| w.eq_ignore_ascii_case("FROM")) {
            let image_at = words.iter().skip(1).position(|w| !w.starts_with("--")).map(|p| p + 1);
            if let Some(at) = image_at {
                last_from = Some((i, at, words.iter().map(|w| (*w).to_owned()).collect::<Vec<_>>()));
                if words.len() > at + 2 && words[at + 1].eq_ignore_ascii_case("AS") {
                    stages.push(words[at + 2].to_owned());
                }
            }
        }
    }
    let Some((index, at, mut words)) = last_from else {
        return (
            dockerfile.to_owned(),
            Some("the Dockerfile has no FROM: the recorded base image was not used".into()),
        );
    };
    let named = words[at].clone();
    if stages.iter().any(|s| s.eq_ignore_ascii_case(&named)) || named.contains('$') {
        let why = format!("the Dockerfile's final base is {named}: built as it says, not on the recorded base image");
        return (dockerfile.to_owned(), Some(why));
    }
    let pinned = recorded.image_for(&named);
    let drift = (!recorded.is_named_by(&named))
        .then(|| format!("the Dockerfile's base is {named}, not the recorded {pinned}: built on the recorded one"));
    words[at] = pinned;
    let mut out: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    out[index] = words.join(" ");
    let mut text = out.join("\n");
    if dockerfile.ends_with('\n') {
        text.push('\n');
    }
    (text, drift)
}

/// The build context with its `Dockerfile` pinned to the recorded base; the drift, if any.
pub(crate) fn pin_in_context(context: Vec<u8>, recorded: &RecordedBase) -> Result<(Vec<u8>, Option<String>)> {
    let mut archive = tar::Archive::new(context.as_slice());
    let mut rebuilt = tar::Builder::new(Vec::new());
    let mut drift =
        Some("the role's source has no Dockerfile at its root: the recorded base image was not used".into());
    for entry in archive.entries().context("reading the build context")? {
        let mut entry = entry.context("reading the build context")?;
        let mut header = entry.header().clone();
        let path = entry.path()?.into_owned();
        if path.as_os_str() == "Dockerfile" && header.entry_type().is_file() {
            let mut text = String::new();
            entry.read_to_string(&mut text).context("reading the Dockerfile")?;
            let (pinned, note) = pin_final_base(&text, recorded);
            drift = note;
            header.set_size(pinned.len() as u64);
            header.set_cksum();
            rebuilt.append(&header, pinned.as_bytes())?;
        } else if header.entry_type().is_symlink() {
            let target = entry.link_name()?.map(|t| t.into_owned()).unwrap_or_default();
            rebuilt.append_link(&mut header, &path, target)?;
        } else {
            rebuilt.append_data(&mut header, &path, &mut entry)?;
        }
    }
    Ok((rebuilt.into_inner()?, drift))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_final_stage_is_built_on_the_recorded_base() {
        let recorded = recorded_base(Some("node:22"), Some("sha256:abc")).unwrap();
        let (text, drift) = pin_final_base("FROM node:22\nRUN true\n", &recorded);
        assert_eq!(text, "FROM node:22@sha256:abc\nRUN true\n");
        assert_eq!(drift, None);

        let (text, drift) =
            pin_final_base("FROM rust AS build\nFROM --platform=linux/amd64 node:23 AS run\n", &recorded);
        assert_eq!(text, "FROM rust AS build\nFROM --platform=linux/amd64 node:22@sha256:abc AS run\n");
        assert!(drift.unwrap().contains("the Dockerfile's base is node:23, not the recorded node:22@sha256:abc"));

        let digest_only = recorded_base(None, Some("sha256:abc")).unwrap();
        assert_eq!(pin_final_base("FROM node:22\n", &digest_only), ("FROM node@sha256:abc\n".into(), None));

        let (text, drift) = pin_final_base("FROM rust AS build\nFROM build\n", &recorded);
        assert_eq!(text, "FROM rust AS build\nFROM build\n");
        assert!(drift.unwrap().contains("final base is build"));
        assert_eq!(recorded_base(None, Some("")), None);
    }
}
