//! Git bundles written with libgit2. libgit2 has no bundle writer, but its pack builder writes
//! the pack; a v2 bundle is that pack behind a short text header (gitformat-bundle(5)):
//! `# v2 git bundle`, one `-<oid> <subject>` line per prerequisite, one `<oid> <refname>` line
//! per ref, an empty line, then the pack.

use std::collections::{BTreeSet, HashSet};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use anyhow::{Context, Result};
use git2::{Oid, Repository};
use serde::{Deserialize, Serialize};

/// What a bundle holds, for the receipt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct BundleContents {
    /// `(refname, oid)` of each ref in the bundle.
    pub(crate) refs: Vec<(String, String)>,
    /// Commits the bundle builds on: a repository must have them to fetch from it.
    pub(crate) prerequisites: Vec<String>,
    /// Commits in the bundle.
    pub(crate) commits: usize,
}

/// Writes a bundle of the commits `refs` reach that none of `hidden` reaches. `None` when that
/// is no commit at all (git refuses an empty bundle, and there is nothing to save).
pub(crate) fn write(
    repo: &Repository,
    refs: &[(String, Oid)],
    hidden: &[Oid],
    path: &Path,
) -> Result<Option<BundleContents>> {
    let odb = repo.odb()?;
    let hidden: Vec<Oid> = hidden.iter().copied().filter(|id| odb.exists(*id)).collect();
    let walk = || -> Result<git2::Revwalk<'_>> {
        let mut walk = repo.revwalk()?;
        for (_, id) in refs {
            walk.push(*id)?;
        }
        for id in &hidden {
            walk.hide(*id)?;
        }
        Ok(walk)
    };
    let included: HashSet<Oid> = walk()?.collect::<Result<_, _>>()?;
    if included.is_empty() {
        return Ok(None);
    }
    let mut prerequisites = BTreeSet::new();
    for id in &included {
        for parent in repo.find_commit(*id)?.parent_ids() {
            if !included.contains(&parent) {
                prerequisites.insert(parent);
            }
        }
    }
    let mut builder = repo.packbuilder()?;
    builder.insert_walk(&mut walk()?)?;

    let file = File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let mut out = BufWriter::new(file);
    out.write_all(b"# v2 git bundle\n")?;
    for id in &prerequisites {
        let subject =
            repo.find_commit(*id).ok().and_then(|c| c.summary().ok().flatten().map(str::to_owned)).unwrap_or_default();
        writeln!(out, "-{id} {}", subject.replace('\n', " "))?;
    }
    for (name, id) in refs {
        writeln!(out, "{id} {name}")?;
    }
    out.write_all(b"\n")?;
    let mut io_error = None;
    builder.foreach(|chunk| match out.write_all(chunk) {
        Ok(()) => true,
        Err(e) => {
            io_error = Some(e);
            false
        }
    })?;
    if let Some(e) = io_error {
        return Err(e).with_context(|| format!("writing {}", path.display()));
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(Some(BundleContents {
        refs: refs.iter().map(|(name, id)| (name.clone(), id.to_string())).collect(),
        prerequisites: prerequisites.iter().map(Oid::to_string).collect(),
        commits: included.len(),
    }))
}
