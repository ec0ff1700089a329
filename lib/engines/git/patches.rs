//! Which at-risk commits a surviving ref already holds as the same patch (lifecycle.md's
//! reachability rule, refined for "Rebase and merge" and "Squash and merge"): the same bytes,
//! as `git patch-id --verbatim` compares diffs, and nothing weaker — not `git cherry`'s patch-id,
//! which drops whitespace (an indentation is a program's meaning in Python, YAML or a Makefile),
//! no message or branch-name matching.
//!
//! Runs only for commits the reachability rule already put at risk, so an assessment with
//! nothing at risk never pays for it.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

use git2::{Commit, Diff, DiffFormat, DiffLineType, DiffOptions, Oid, Repository, Tree};
use sha2::{Digest, Sha256};

use super::graph::{Graph, OidMap};
use crate::protocol::assessment::{Integrated, Integration};
use changes::{changes, growth, Changes, Trees};

/// Commits of the surviving refs searched for the same patch, newest first, per repository:
/// a squash or rebase merge is a recent commit, and an old one buried deeper than this is left
/// at risk (docs/maintainers/decisions.md, "Squash and rebase merges").
pub(crate) const CANDIDATE_LIMIT: usize = 2000;
/// The longest first-parent run of at-risk commits whose prefixes are tried as one squash.
pub(crate) const SQUASH_LIMIT: usize = 500;

/// Where surviving commits live: a repository and its surviving refs by full name, most telling
/// first (remote-tracking branches, local branches, tags, then `origin/HEAD` and HEADs), less
/// those named in `skip` (a host's table of refs is shared by its worktrees; each skips its own).
pub(crate) struct Surviving<'r> {
    pub(crate) repo: &'r Repository,
    tips: Ranked,
    /// The refs of the session looked for, by name and commit: not surviving.
    skip: Vec<(String, Oid)>,
    /// What this run read of `repo`'s objects: shared by every session whose work is there.
    memo: Arc<Memo>,
}

impl<'r> Surviving<'r> {
    /// Refs of their own, with nothing read yet: the patch tests' shape.
    #[cfg(test)]
    pub(crate) fn new(repo: &'r Repository, tips: Vec<(String, Oid)>) -> Self {
        Surviving { repo, tips: ranked(tips), skip: Vec::new(), memo: Arc::default() }
    }

    /// Refs already [`ranked`], read once for many sessions, and what this run read of their objects.
    pub(crate) fn shared(repo: &'r Repository, tips: Ranked, skip: Vec<(String, Oid)>, memo: Arc<Memo>) -> Self {
        Surviving { repo, tips, skip, memo }
    }

    fn tips(&self) -> impl Iterator<Item = &(String, Oid)> {
        self.tips.named.iter().filter(|(name, _)| !self.skip.iter().any(|(skipped, _)| skipped == name))
    }

    /// Each commit a ref not skipped names, once, in id order: from the table's counts, without a
    /// look at every name (a fleet's host has a scratch branch per session, and each session of
    /// it holding work asks).
    fn distinct_tips(&self) -> Vec<Oid> {
        let skipped = |id: &Oid| self.skip.iter().filter(|(_, own)| own == id).count();
        self.tips.counted.iter().filter(|(id, names)| *names > skipped(id)).map(|(id, _)| *id).collect()
    }

    /// The first ref, in the order above, that reaches `id`.
    fn ref_reaching(&self, id: Oid) -> Option<&str> {
        self.tips()
            .find(|(_, tip)| *tip == id || self.repo.graph_descendant_of(*tip, id).unwrap_or(false))
            .map(|(name, _)| name.as_str())
    }
}

/// Refs in the order a patch's place is told ([`Surviving`]), each (name, commit) once, and how
/// many of them name each commit; made once per table of refs and shared by its sessions.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ranked {
    /// Which table this is, for the walks made from it ([`walks`]); unique in a process.
    id: u64,
    named: Arc<[(String, Oid)]>,
    /// Each commit named, in id order, with the number of names.
    counted: Arc<[(Oid, usize)]>,
}

pub(crate) fn ranked(mut tips: Vec<(String, Oid)>) -> Ranked {
    tips.sort_by(|(a, _), (b, _)| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    tips.dedup();
    let mut ids: Vec<Oid> = tips.iter().map(|(_, id)| *id).collect();
    ids.sort();
    let mut counted: Vec<(Oid, usize)> = Vec::new();
    for id in ids {
        match counted.last_mut() {
            Some((last, names)) if *last == id => *names += 1,
            _ => counted.push((id, 1)),
        }
    }
    static TABLES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = TABLES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    Ranked { id, named: tips.into(), counted: counted.into() }
}

/// What one run learned about the commits of one object store, shared by the sessions whose work
/// is there: the graph, and each candidate's changes, growth and patch key (a function of the
/// objects alone), so that a fleet's sessions, which look through the same commits for their
/// patches, read and diff each commit once (issue 69).
#[derive(Debug, Default)]
pub(crate) struct Memo {
    pub(crate) graph: Graph,
    facts: Mutex<OidMap<Arc<Facts>>>,
    /// The candidates' walks, one per table of refs and boundary.
    walks: walks::Walks,
}

/// A candidate commit's changes from its parent, and what was worked out from them so far:
/// shared by every session of the run that looks at it, and read without a lock once made (a
/// fleet's sessions that touch one file each compare the others' commits).
#[derive(Debug)]
pub(super) struct Facts {
    id: Oid,
    parent: Option<Oid>,
    changes: Changes,
    /// [`walks::paths_key`] of the changed paths.
    paths_key: u64,
    growth: OnceLock<Option<Vec<i64>>>,
    key: OnceLock<PatchKey>,
}

impl Facts {
    fn growth(&self, repo: &Repository) -> Option<&[i64]> {
        self.growth.get_or_init(|| growth(repo, &self.changes.sides)).as_deref()
    }

    fn key(&self, repo: &Repository) -> Result<PatchKey, git2::Error> {
        if let Some(key) = self.key.get() {
            return Ok(*key);
        }
        let key = patch_key(&diff(repo, self.parent, self.id, &self.changes.paths)?)?;
        Ok(*self.key.get_or_init(|| key))
    }
}

impl Memo {
    /// The facts of the commit `id` (whose parent is `parent`), its changes read the first time.
    fn facts(
        &self,
        trees: &mut Trees,
        repo: &Repository,
        parent: Option<Oid>,
        id: Oid,
    ) -> Result<Arc<Facts>, git2::Error> {
        let table = || self.facts.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(facts) = table().get(&id) {
            return Ok(facts.clone());
        }
        let changes = changes(trees, repo, parent, id)?;
        let paths_key = walks::paths_key(&changes.paths);
        let facts = Facts { id, parent, changes, paths_key, growth: OnceLock::new(), key: OnceLock::new() };
        Ok(table().entry(id).or_insert(Arc::new(facts)).clone())
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
    /// The commit whose tree starts the patch (`None`: the empty tree).
    from: Option<Oid>,
    /// The commit whose tree ends the patch.
    end: Oid,
    how: Integration,
    changes: Changes,
    /// Computed only once a candidate with the same paths but other blobs comes along.
    growth: Option<Option<Vec<i64>>>,
    /// Computed only once a candidate with the same paths and the same growth comes along.
    key: Option<PatchKey>,
}

impl Offer {
    fn new(
        trees: &mut Trees,
        repo: &Repository,
        from: Option<Oid>,
        end: Oid,
        how: Integration,
    ) -> Result<Offer, git2::Error> {
        Ok(Offer { from, end, how, changes: changes(trees, repo, from, end)?, growth: None, key: None })
    }

    fn growth(&mut self, repo: &Repository) -> Option<&[i64]> {
        self.growth.get_or_insert_with(|| growth(repo, &self.changes.sides)).as_deref()
    }

    fn key(&mut self, repo: &Repository) -> Result<PatchKey, git2::Error> {
        if let Some(key) = self.key {
            return Ok(key);
        }
        let key = patch_key(&diff(repo, self.from, self.end, &self.changes.paths)?)?;
        self.key = Some(key);
        Ok(key)
    }
}

/// A whitespace-sensitive patch-id: equal for two diffs only when they are the same bytes, line
/// numbers aside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PatchKey([u8; 32]);

/// Of `at_risk` (the commits only `tip` reaches in `repo`), those whose patch one of `surviving`
/// holds. Merge commits have no patch of their own; a squash covers them.
pub(crate) fn integrated(
    repo: &Repository,
    tip: Oid,
    at_risk: &[Oid],
    surviving: &[Surviving<'_>],
) -> Result<Vec<Integrated>, git2::Error> {
    let at_risk_set: HashSet<Oid> = at_risk.iter().copied().collect();
    let mut trees = Trees::default();
    let (mut offers, boundary) = offers(repo, tip, at_risk, &at_risk_set, &mut trees)?;
    let mut by_paths: HashMap<Vec<Vec<u8>>, Vec<usize>> = HashMap::new();
    for (i, offer) in offers.iter().enumerate() {
        if !offer.changes.paths.is_empty() {
            by_paths.entry(offer.changes.paths.clone()).or_default().push(i);
        }
    }
    if by_paths.is_empty() {
        return Ok(Vec::new());
    }

    let found = found_in(repo, surviving, &mut offers, &by_paths, &boundary, tip, &at_risk_set, &mut trees)?;
    recorded(repo, at_risk, &at_risk_set, &offers, &found, &boundary, surviving)
}

/// What to look for: each at-risk commit's own patch (not a merge's), and the squashes of the
/// first-parent run from the merge base to the tip; with the boundary, the commits the at-risk
/// ones build on.
fn offers(
    repo: &Repository,
    tip: Oid,
    at_risk: &[Oid],
    at_risk_set: &HashSet<Oid>,
    trees: &mut Trees,
) -> Result<(Vec<Offer>, HashSet<Oid>), git2::Error> {
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
            offers.push(Offer::new(trees, repo, commit.parent_id(0).ok(), *id, Integration::Patch)?);
        }
    }
    // The first-parent run from the merge base to the tip: its prefixes are the squashes to look
    // for (a prefix of one that is not a merge is that commit's own patch again: one offer more,
    // found or not with it).
    let mut run = Vec::new();
    let mut at = Some(tip);
    while let Some(id) = at.filter(|id| at_risk_set.contains(id) && run.len() < SQUASH_LIMIT) {
        run.push(id);
        at = repo.find_commit(id)?.parent_id(0).ok();
    }
    run.reverse();
    // A run cut short by the limit does not start at the merge base: no squash to look for.
    if at.is_none_or(|base| !at_risk_set.contains(&base)) {
        // A branch brought up to date by merging main into it ("Update branch") is squashed
        // onto that newer main: the base moves to the newest surviving commit merged in.
        // `Some(None)`: from the empty tree (a branch with no merge base); `None`: the branch
        // merged in commits that do not line up, and no later prefix has one base.
        let mut base = Some(at);
        for end in &run {
            let commit = repo.find_commit(*end)?;
            for merged in commit.parent_ids().skip(1).filter(|p| !at_risk_set.contains(p)) {
                base = match base {
                    Some(Some(b)) if b == merged || repo.graph_descendant_of(b, merged)? => Some(Some(b)),
                    Some(Some(b)) if repo.graph_descendant_of(merged, b)? => Some(Some(merged)),
                    _ => None,
                };
            }
            let Some(from) = base else { break };
            offers.push(Offer::new(trees, repo, from, *end, Integration::Squash)?);
        }
    }

    Ok((offers, boundary))
}

/// Offer index → (the surviving commit with its patch, which repository): a walk of each
/// surviving repository's refs, the tip and the boundary hidden, every commit compared with the
/// offers that touch the same paths.
#[allow(clippy::too_many_arguments)]
fn found_in(
    repo: &Repository,
    surviving: &[Surviving<'_>],
    offers: &mut [Offer],
    by_paths: &HashMap<Vec<Vec<u8>>, Vec<usize>>,
    boundary: &HashSet<Oid>,
    tip: Oid,
    at_risk_set: &HashSet<Oid>,
    trees: &mut Trees,
) -> Result<HashMap<usize, (Oid, usize)>, git2::Error> {
    let mut found: HashMap<usize, (Oid, usize)> = HashMap::new();
    let mut seen = HashSet::new();
    // The offers by the key of their paths: a candidate is looked up by the key its facts hold.
    let mut by_key: HashMap<u64, Vec<usize>> = HashMap::new();
    for (paths, wanting) in by_paths {
        by_key.entry(walks::paths_key(paths)).or_default().extend(wanting);
    }
    let mut boundary: Vec<Oid> = boundary.iter().copied().collect();
    boundary.sort();
    let wanted = |key| by_key.contains_key(&key);
    let sought = walks::Sought { boundary: &boundary, tip, at_risk: at_risk_set, wanted: &wanted };
    for (source_index, source) in surviving.iter().enumerate() {
        for candidate in walks::candidates(source, &sought, trees)? {
            // A commit both the clone and the host hold is compared once.
            if !seen.insert(candidate.id) {
                continue;
            }
            let Some(wanting) = by_key.get(&candidate.paths_key) else { continue };
            let changes = &candidate.changes;
            for offer_index in wanting {
                let offer = &mut offers[*offer_index];
                if found.contains_key(offer_index) || offer.changes.paths != changes.paths {
                    continue;
                }
                // The same blobs before and after at every path: the same diff, without one.
                let same = offer.changes.sides == changes.sides || {
                    // Another growth at some path: another patch, without a diff either.
                    if let (Some(offered), Some(grown)) = (offer.growth(repo), candidate.growth(source.repo)) {
                        if offered != grown {
                            continue;
                        }
                    }
                    offer.key(repo)? == candidate.key(source.repo)?
                };
                if same {
                    found.insert(*offer_index, (candidate.id, source_index));
                }
            }
        }
    }

    Ok(found)
}

/// The integrated commits found, newest first: own patches first, then what the longest squash
/// found reaches.
fn recorded(
    repo: &Repository,
    at_risk: &[Oid],
    at_risk_set: &HashSet<Oid>,
    offers: &[Offer],
    found: &HashMap<usize, (Oid, usize)>,
    boundary: &HashSet<Oid>,
    surviving: &[Surviving<'_>],
) -> Result<Vec<Integrated>, git2::Error> {
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
    // The squashes were offered in the run's order, shortest first: the last one found.
    let longest_squash =
        (0..offers.len()).rev().find(|i| offers[*i].how == Integration::Squash && found.contains_key(i));
    if let Some(i) = longest_squash {
        let mut walk = repo.revwalk()?;
        walk.push(offers[i].end)?;
        for id in boundary {
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
/// patch-id reads it, whitespace included (libgit2's default: no `ignore_whitespace` option).
/// Only `paths`, the ones [`changes`] found, as exact paths: libgit2 then reads only the
/// subtrees that lead to them.
fn diff<'r>(repo: &'r Repository, from: Option<Oid>, to: Oid, paths: &[Vec<u8>]) -> Result<Diff<'r>, git2::Error> {
    super::counted::one_more(&super::counted::DIFFS);
    let tree_of = |id: Oid| -> Result<Tree<'_>, git2::Error> { repo.find_commit(id).and_then(|c: Commit| c.tree()) };
    let old = from.map(tree_of).transpose()?;
    let new = tree_of(to)?;
    let mut options = DiffOptions::new();
    // Every file as text, whatever a `.gitattributes` says: the key is then the objects' alone
    // (shared by the sessions of a fleet), and no attribute file the agent writes changes it.
    options.disable_pathspec_match(true).force_text(true);
    for path in paths {
        options.pathspec(path.as_slice());
    }
    repo.diff_tree_to_tree(old.as_ref(), Some(&new), Some(&mut options))
}

/// The diff's bytes, as `git patch-id --verbatim` reads a diff: each line with its indentation,
/// trailing blanks and line ending, and the "\ No newline at end of file" markers; not the hunk
/// headers, whose line numbers a rebase onto a newer main moves. Each file's header (its paths and
/// modes) counts too. libgit2's own `git_diff_patchid` drops every whitespace byte, as `git
/// cherry` does, and would take a Python line moved out of its block for the same patch. A binary
/// file, which the diff shows only as "Binary files differ", adds its blob ids.
fn patch_key(diff: &Diff<'_>) -> Result<PatchKey, git2::Error> {
    let mut hash = Sha256::new();
    diff.print(DiffFormat::PatchId, |delta, _, line| {
        hash.update([line.origin() as u8]);
        // Lengths keep two different sequences of lines from hashing the same bytes.
        hash.update((line.content().len() as u64).to_le_bytes());
        hash.update(line.content());
        if line.origin_value() == DiffLineType::Binary {
            hash.update(delta.old_file().id().as_bytes());
            hash.update(delta.new_file().id().as_bytes());
        }
        true
    })?;
    Ok(PatchKey(hash.finalize().into()))
}

mod changes;
#[cfg(test)]
mod tests;
mod walks;
