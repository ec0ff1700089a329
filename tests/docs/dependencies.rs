//! Every crate Cargo.toml depends on is named, with its reason, in the dependency tables of
//! README.md and docs/reference.md, and no table names a crate the project no longer uses.

use std::collections::BTreeSet;
use std::path::Path;

/// The crates of a `[dependencies]`-like section of Cargo.toml.
fn section_crates(manifest: &str, section: &str) -> BTreeSet<String> {
    let Some(start) = manifest.find(&format!("\n[{section}]\n")) else { return BTreeSet::new() };
    let body = &manifest[start + section.len() + 4..];
    let body = &body[..body.find("\n[").unwrap_or(body.len())];
    body.lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .filter_map(|l| l.split_once('=').map(|(name, _)| name.trim().to_owned()))
        .filter(|name| !name.is_empty())
        .collect()
}

/// The crate names in the first column of the table under `heading` (words before any `(`).
fn table_crates(doc: &str, heading: &str) -> BTreeSet<String> {
    let start = doc.find(heading).unwrap_or_else(|| panic!("the section {heading:?}"));
    let mut crates = BTreeSet::new();
    for line in doc[start..].lines().skip_while(|l| !l.starts_with('|')).take_while(|l| l.starts_with('|')).skip(2) {
        let first = line.split('|').nth(1).unwrap();
        let names = first.split(" (").next().unwrap_or(first);
        for name in first.split(',').chain(names.split(',')) {
            let name = name.trim().split(' ').next().unwrap_or("").trim();
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_') {
                crates.insert(name.to_owned());
            }
        }
    }
    crates
}

#[test]
fn the_dependency_tables_name_every_crate_and_only_those() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let runtime = section_crates(&manifest, "dependencies");
    let dev = section_crates(&manifest, "dev-dependencies");
    assert!(runtime.contains("git2") && dev.contains("tempfile"), "{runtime:?} {dev:?}");
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let reference = std::fs::read_to_string(root.join("docs/reference.md")).unwrap();
    for (doc, named, wanted) in [
        ("README.md", table_crates(&readme, "## Dependencies"), &runtime),
        (
            "docs/reference.md",
            table_crates(&reference, "## Dependencies, and why each"),
            &runtime.union(&dev).cloned().collect(),
        ),
    ] {
        let missing: Vec<_> = wanted.difference(&named).collect();
        assert!(missing.is_empty(), "{doc}'s dependency table does not name {missing:?}");
        let all: BTreeSet<String> = runtime.union(&dev).cloned().collect();
        let stale: Vec<_> = named.difference(&all).collect();
        assert!(stale.is_empty(), "{doc}'s dependency table names {stale:?}, which Cargo.toml does not depend on");
    }
}
