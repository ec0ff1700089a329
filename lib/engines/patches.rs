//! Which at-risk commits a surviving ref already holds as the same patch (lifecycle.md's
//! reachability rule, refined for "Rebase and merge" and "Squash and merge"): git's patch-id,
//! as `git cherry` compares commits, and nothing weaker — no message or branch-name matching.
//!
//! Runs only for commits the reachability rule already put at risk, so an assessment with
//! nothing at risk never pays for it.

use std::collections::{HashMap, HashSet};

use git2::{Commit, Diff, DiffOptions, Oid, Repository, Sort, Tree};

use crate::protocol::assessment::{Integrated, Integration};

/// Commits of the surviving refs searched for the same patch, newest first, per repository:
/// a squash or rebase merge is a recent commit, and an old one buried deeper than this is left
/// at risk (docs/decisions.md, "Squash and rebase merges").
pub(crate) const CANDIDATE_LIMIT: usize = 2000;
/// The longest first-parent run of at-risk commits whose prefixes are tried as one squash.
pub(crate) const SQUASH_LIMIT: usize = 500;

/// Where surviving commits live: a repository and its surviving refs by full name, most telling
/// first (remote-tracking branches, local branches, tags, then `origin/HEAD` and HEADs).
pub(crate) struct Surviving<'r> {
    pub(crate) repo: &'r Repository,
    pub(crate) tips: Vec<(String, Oid)>,
}

impl<'r> Surviving<'r> {
    pub(crate) fn new(repo: &'r Repository, mut tips: Vec<(String, Oid)>) -> Self {
        tips.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
        tips.dedup();
        Surviving { repo, tips }
    }

    /// The first ref, in the order above, that reaches `id`.
    fn ref_reaching(&self, id: Oid) -> Option<&str> {
        self.tips
            .iter()
            .find(|(_, tip)| *tip == id || self.repo.graph_descendant_of(*tip, id).unwrap_or(false))
            .map(|(name, _)| name.as_str())
    }
}

fn rank(name: &str) -> u8 {
    // `origin/HEAD` only repeats the branch it points to: name that branch.
    if name.starts_with("refs/remotes/") && name.ends_with("/HEAD") {
        3
    } else if name.starts_with("refs/remotes/") {
        0
    } else if name.starts_with("refs/heads/") {
        1
    } else if name.starts_with("refs/tags/") {
        2
    } else {
        4
    }
}

/// A patch the at-risk side offers: one commit's own, or the first `k` commits' squashed.
struct Offer {
    /// The commit whose tree ends the patch.
    end: Oid,
    how: Integration,
    patch: Lazy,
}

/// A patch-id computed only once a candidate touches the same paths.
enum Lazy {
    Pending(Option<Oid>, Oid),
    Done(PatchKey),
}

/// What two commits with the same patch have in common: the patch-id, and the blob ids of the
/// binary files (libgit2's patch-id, like git's without `--binary`, does not see binary content).
#[derive(PartialEq, Eq)]
struct PatchKey {
    id: Oid,
    binary: Vec<(Oid, Oid)>,
}

/// Of `at_risk` (the commits only `tip` reaches in `repo`), those whose patch one of `surviving`
/// holds. Merge commits have no patch of their own; a squash covers them.
pub(crate) fn integrated(
    repo: &Repository,
    tip: Oid,
    at_risk: &[Oid],
    surviving: &[Surviving<'_>],
) -> Result<Vec<Integrated>, git2::Error> {
    let at_risk_set: HashSet<Oid> = at_risk.iter().copied().collect();
    let mut offers = Vec::new();
    let mut boundary = HashSet::new();
    for id in at_risk {
        let commit = repo.find_commit(*id)?;
        for parent in commit.parent_ids() {
            if !at_risk_set.contains(&parent) {
                boundary.insert(parent);
            }
        }
        if commit.parent_count() <= 1 {
            offers.push(Offer {
                end: *id,
                how: Integration::Patch,
                patch: Lazy::Pending(commit.parent_id(0).ok(), *id),
            });
        }
    }
    // The first-parent run from the merge base to the tip: its prefixes of two commits or more
    // are the squashes to look for (a prefix of one is that commit's own patch).
    let mut run = Vec::new();
    let mut at = Some(tip);
    while let Some(id) = at.filter(|id| at_risk_set.contains(id) && run.len() < SQUASH_LIMIT) {
        run.push(id);
        at = repo.find_commit(id)?.parent_id(0).ok();
    }
    run.reverse();
    // A run cut short by the limit does not start at the merge base: no squash to look for.
    if at.is_none_or(|base| !at_risk_set.contains(&base)) {
        for end in run.iter().skip(1) {
            offers.push(Offer { end: *end, how: Integration::Squash, patch: Lazy::Pending(at, *end) });
        }
    }

    let mut by_paths: HashMap<Vec<Vec<u8>>, Vec<usize>> = HashMap::new();
    for (i, offer) in offers.iter().enumerate() {
        let Lazy::Pending(from, to) = offer.patch else { continue };
        let paths = changed_paths(&diff(repo, from, to)?);
        if !paths.is_empty() {
            by_paths.entry(paths).or_default().push(i);
        }
    }
    if by_paths.is_empty() {
        return Ok(Vec::new());
    }

    // Offer index → (the surviving commit with its patch, which repository).
    let mut found: HashMap<usize, (Oid, usize)> = HashMap::new();
    let mut seen = HashSet::new();
    for (source_index, source) in surviving.iter().enumerate() {
        let odb = source.repo.odb()?;
        let mut walk = source.repo.revwalk()?;
        walk.set_sorting(Sort::TIME)?;
        let mut pushed = false;
        for (_, id) in &source.tips {
            if odb.exists(*id) {
                walk.push(*id)?;
                pushed = true;
            }
        }
        if !pushed {
            continue;
        }
        for id in boundary.iter().chain(std::iter::once(&tip)) {
            if odb.exists(*id) {
                walk.hide(*id)?;
            }
        }
        for candidate in walk.take(CANDIDATE_LIMIT) {
            let candidate = candidate?;
            if !seen.insert(candidate) || at_risk_set.contains(&candidate) {
                continue;
            }
            let commit = source.repo.find_commit(candidate)?;
            if commit.parent_count() > 1 {
                continue;
            }
            let candidate_diff = diff(source.repo, commit.parent_id(0).ok(), candidate)?;
            let Some(wanting) = by_paths.get(&changed_paths(&candidate_diff)) else { continue };
            let mut candidate_key = None;
            for offer_index in wanting {
                if found.contains_key(offer_index) {
                    continue;
                }
                let offered = offer_key(repo, &mut offers[*offer_index].patch)?;
                if candidate_key.is_none() {
                    candidate_key = Some(patch_key(source.repo, &candidate_diff)?);
                }
                if Some(offered) == candidate_key.as_ref() {
                    found.insert(*offer_index, (candidate, source_index));
                }
            }
        }
    }

    // Own patches first; then the longest squash found covers what it reaches.
    let mut integrated: HashMap<Oid, Integrated> = HashMap::new();
    let mut record = |commit: Oid, (as_commit, source): (Oid, usize), how| {
        let Some(into) = surviving[source].ref_reaching(as_commit) else { return };
        integrated.entry(commit).or_insert_with(|| Integrated {
            commit: commit.to_string(),
            as_commit: as_commit.to_string(),
            into: into.to_owned(),
            how,
        });
    };
    for (i, offer) in offers.iter().enumerate() {
        if let (Integration::Patch, Some(found)) = (offer.how, found.get(&i)) {
            record(offer.end, *found, Integration::Patch);
        }
    }
    let longest_squash = offers
        .iter()
        .enumerate()
        .filter(|(i, offer)| offer.how == Integration::Squash && found.contains_key(i))
        .filter_map(|(i, offer)| Some((run.iter().position(|id| *id == offer.end)?, i)))
        .max();
    if let Some((_, i)) = longest_squash {
        let mut walk = repo.revwalk()?;
        walk.push(offers[i].end)?;
        for id in &boundary {
            walk.hide(*id)?;
        }
        for id in walk {
            let id = id?;
            if at_risk_set.contains(&id) {
                record(id, found[&i], Integration::Squash);
            }
        }
    }
    // In the order the reachability rule listed the commits: newest first.
    let mut ordered = Vec::new();
    for id in at_risk {
        if let Some(entry) = integrated.remove(id) {
            ordered.push(entry);
        }
    }
    Ok(ordered)
}

/// The diff from `from` (the empty tree when `None`) to `to`, without rename detection, as git's
/// patch-id reads it.
fn diff(repo: &Repository, from: Option<Oid>, to: Oid) -> Result<Diff<'_>, git2::Error> {
    let tree_of = |id: Oid| -> Result<Tree<'_>, git2::Error> { repo.find_commit(id).and_then(|c: Commit| c.tree()) };
    let old = from.map(tree_of).transpose()?;
    let new = tree_of(to)?;
    repo.diff_tree_to_tree(old.as_ref(), Some(&new), Some(&mut DiffOptions::new()))
}

/// The paths a diff touches, sorted: two diffs with different paths cannot share a patch-id, and
/// comparing paths needs no file content.
fn changed_paths(diff: &Diff<'_>) -> Vec<Vec<u8>> {
    let mut paths: Vec<Vec<u8>> = diff
        .deltas()
        .flat_map(|d| [d.old_file().path_bytes(), d.new_file().path_bytes()])
        .flatten()
        .map(<[u8]>::to_vec)
        .collect();
    paths.sort();
    paths.dedup();
    paths
}

fn offer_key<'k>(repo: &Repository, patch: &'k mut Lazy) -> Result<&'k PatchKey, git2::Error> {
    if let Lazy::Pending(from, to) = *patch {
        *patch = Lazy::Done(patch_key(repo, &diff(repo, from, to)?)?);
    }
    match patch {
        Lazy::Done(key) => Ok(key),
        Lazy::Pending(..) => unreachable!("computed above"),
    }
}

fn patch_key(repo: &Repository, diff: &Diff<'_>) -> Result<PatchKey, git2::Error> {
    let id = diff.patchid(None)?;
    let mut binary = Vec::new();
    for delta in diff.deltas() {
        let (old, new) = (delta.old_file().id(), delta.new_file().id());
        let is_binary = |id: Oid| !id.is_zero() && repo.find_blob(id).is_ok_and(|b| b.is_binary());
        if is_binary(old) || is_binary(new) {
            binary.push((old, new));
        }
    }
    binary.sort();
    Ok(PatchKey { id, binary })
}
