//! The reference's lists that the sources must match: every crate Cargo.toml depends on is named,
//! with its reason, in the dependency tables of README.md and docs/reference.md (and no crate the
//! project no longer uses), and every record type the library writes is in the records' table.

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

/// The reference's table of record types names every type the library writes (each `Record`'s
/// `TYPE`), and no other.
#[test]
fn the_reference_lists_every_record_type() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut written = BTreeSet::new();
    for entry in walkdir::WalkDir::new(root.join("lib")).into_iter().map(Result::unwrap) {
        if entry.path().extension().is_some_and(|e| e == "rs") {
            let source = std::fs::read_to_string(entry.path()).unwrap();
            for line in source.lines() {
                if let Some(rest) = line.trim().strip_prefix("const TYPE: &'static str = \"") {
                    written.insert(rest.trim_end_matches("\";").to_owned());
                }
            }
        }
    }
    assert!(written.len() >= 10, "{written:?}");
    let reference = std::fs::read_to_string(root.join("docs/reference.md")).unwrap();
    let start = reference.find("| type | written by | data |").expect("the record types' table");
    let listed: BTreeSet<String> = reference[start..]
        .lines()
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| l.split('|').nth(1).unwrap().trim().trim_matches('`').to_owned())
        .collect();
    assert_eq!(listed, written, "docs/reference.md's record types against the library's");
}
