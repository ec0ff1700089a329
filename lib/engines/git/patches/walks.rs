//! The commits a session's patches are looked for among: what the surviving refs reach less what
//! its tip and its boundary reach, newest first (ties by id), at most [`CANDIDATE_LIMIT`].
//!
//! A fleet's sessions on one repository each asked for that walk, and each walk went through
//! every other session's work: quadratic in the sessions holding work (issue 69). When a
//! session's own refs all lie under its tip (its scratch branch is the tip, or is behind it), the
//! same commits are what every ref of the table reaches less what the boundary reaches, less the
//! session's at-risk commits: a walk that depends on the table and the boundary alone, made once
//! per run for all the sessions that share the boundary (most of a fleet branches from the same
//! commit), with what each walked commit changes read once for all of them. Otherwise (a scratch
//! branch ahead of a detached HEAD, a reflog's lost commits) the session walks on its own.
//!
//! Both give the same list: the sets are the same (the reachability proof is in
//! docs/maintainers/decisions.md, "One walk of the patch candidates per boundary"), and the order
//! is by time and then id, not by the order a walk met them.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, MutexGuard};

use git2::{Oid, Repository};

use super::changes::Trees;
use super::{Facts, Memo, Surviving, CANDIDATE_LIMIT};

/// A candidate that is not a merge: its facts, shared by the run's sessions.
pub(super) type Candidate = Arc<Facts>;

/// A key of a set of paths, to pass over a candidate with other paths than every offer's without
/// comparing the paths themselves (equal keys are then compared in full).
pub(super) fn paths_key(paths: &[Vec<u8>]) -> u64 {
    foldhash::fast::FixedState::with_seed(0).hash_one(paths)
}

/// The walks a run made, by table of refs and boundary.
#[derive(Debug, Default)]
pub(super) struct Walks(Mutex<HashMap<WalkKey, WalkSlot>>);

/// Where a walk is kept once made (`None` until then, or after the walk failed).
type WalkSlot = Arc<Mutex<Option<Arc<Walk>>>>;

/// A table of refs ([`super::Ranked`]'s id) and a boundary, sorted.
type WalkKey = (u64, Vec<Oid>);

/// One walk of every commit a table names with a boundary hidden, and what its commits change,
/// read as far as a session has looked.
#[derive(Debug)]
pub(super) struct Walk {
    order: Vec<Oid>,
    looked: Mutex<Vec<Looked>>,
}

#[derive(Debug)]
enum Looked {
    Merge,
    Patch(Arc<Facts>),
}

impl Walk {
    /// What the first `upto` commits change, each read once for every session.
    fn looked(&self, memo: &Memo, repo: &Repository, upto: usize) -> Result<MutexGuard<'_, Vec<Looked>>, git2::Error> {
        let mut looked = self.looked.lock().unwrap_or_else(|e| e.into_inner());
        let mut trees = Trees::default();
        while looked.len() < upto.min(self.order.len()) {
            let next = look(memo, repo, &mut trees, self.order[looked.len()])?;
            looked.push(next);
        }
        Ok(looked)
    }
}

fn look(memo: &Memo, repo: &Repository, trees: &mut Trees, id: Oid) -> Result<Looked, git2::Error> {
    let parents = memo.graph.parents(repo, id)?;
    if parents.len() > 1 {
        return Ok(Looked::Merge);
    }
    Ok(Looked::Patch(memo.facts(trees, repo, parents.first().copied(), id)?))
}

/// What a session looks for: the candidates for its at-risk commits `at_risk` of `tip`
/// (`boundary`: the commits they build on, sorted), and of them those whose paths' key is `wanted`.
pub(super) struct Sought<'a> {
    pub(super) boundary: &'a [Oid],
    pub(super) tip: Oid,
    pub(super) at_risk: &'a HashSet<Oid>,
    pub(super) wanted: &'a dyn Fn(u64) -> bool,
}

impl Sought<'_> {
    /// `looked` when it is a commit of a patch (not a merge) whose paths are wanted.
    fn take(&self, looked: &Looked) -> Option<Candidate> {
        match looked {
            Looked::Patch(facts) if (self.wanted)(facts.paths_key) => Some(facts.clone()),
            _ => None,
        }
    }
}

/// The candidates of `source` for `sought`, newest first, at most [`CANDIDATE_LIMIT`] counted;
/// of them, those that are not merges and whose paths are wanted.
pub(super) fn candidates(
    source: &Surviving<'_>,
    sought: &Sought<'_>,
    trees: &mut Trees,
) -> Result<Vec<Candidate>, git2::Error> {
    if source.skip.iter().all(|(_, id)| *id == sought.tip || sought.at_risk.contains(id)) {
        from_shared_walk(source, sought)
    } else {
        from_own_walk(source, sought, trees)
    }
}

/// [`candidates`] from the walk of the table with the boundary hidden, less the at-risk commits.
fn from_shared_walk(source: &Surviving<'_>, sought: &Sought<'_>) -> Result<Vec<Candidate>, git2::Error> {
    let walk = shared(source, sought.boundary)?;
    let looked = walk.looked(&source.memo, source.repo, CANDIDATE_LIMIT + sought.at_risk.len())?;
    let listed = walk.order.iter().zip(looked.iter()).filter(|(id, _)| !sought.at_risk.contains(id));
    Ok(listed.take(CANDIDATE_LIMIT).filter_map(|(_, looked)| sought.take(looked)).collect())
}

/// [`candidates`] from a walk of the session's own: the surviving tips with the boundary and the
/// tip hidden.
fn from_own_walk(
    source: &Surviving<'_>,
    sought: &Sought<'_>,
    trees: &mut Trees,
) -> Result<Vec<Candidate>, git2::Error> {
    let (memo, repo) = (&*source.memo, source.repo);
    let hidden: Vec<Oid> = sought.boundary.iter().copied().chain(std::iter::once(sought.tip)).collect();
    let mut found = Vec::new();
    for id in walked(memo, repo, source.distinct_tips(), &hidden)?.into_iter().take(CANDIDATE_LIMIT) {
        // The walk hides the tip, so no at-risk commit is walked where the tip is, and a commit a
        // surviving ref of the host reaches is not at risk: a second guard, so that no commit is
        // ever taken for its own copy.
        if sought.at_risk.contains(&id) {
            continue;
        }
        found.extend(sought.take(&look(memo, repo, trees, id)?));
    }
    Ok(found)
}

/// The walk of every commit `source`'s table names with `boundary` hidden, made once per run: a
/// second session with that boundary waits for the first's walk rather than making its own.
fn shared(source: &Surviving<'_>, boundary: &[Oid]) -> Result<Arc<Walk>, git2::Error> {
    let key = (source.tips.id, boundary.to_vec());
    let slot = source.memo.walks.0.lock().unwrap_or_else(|e| e.into_inner()).entry(key).or_default().clone();
    let mut slot = slot.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(walk) = &*slot {
        return Ok(walk.clone());
    }
    let tips = source.tips.counted.iter().map(|(id, _)| *id).collect();
    let walk = Arc::new(Walk { order: walked(&source.memo, source.repo, tips, boundary)?, looked: Mutex::default() });
    *slot = Some(walk.clone());
    Ok(walk)
}

/// What `tips` (those that are commits here) reach and `hidden` does not, newest first, a tie by id.
fn walked(memo: &Memo, repo: &Repository, mut tips: Vec<Oid>, hidden: &[Oid]) -> Result<Vec<Oid>, git2::Error> {
    super::super::counted::one_more(&super::super::counted::CANDIDATE_WALKS);
    let graph = &memo.graph;
    tips.retain(|id| graph.is_commit(repo, *id));
    let found = graph.only_reachable_from(repo, &tips, hidden)?;
    let mut timed = found
        .into_iter()
        .map(|id| Ok((std::cmp::Reverse(graph.time(repo, id)?), id)))
        .collect::<Result<Vec<_>, git2::Error>>()?;
    timed.sort_unstable();
    Ok(timed.into_iter().map(|(_, id)| id).collect())
}

#[cfg(test)]
mod tests {
    use super::super::super::generated::seeded;
    use super::super::ranked;
    use super::*;
    use git2::{Repository, Signature};

    /// Generated histories of three files edited on branches from recent commits, merged now and
    /// then, two commits to each second (ties the order has to break the same way), the same
    /// edit made twice now and then; a main branch, a tag and sessions' scratch branches on them:
    /// for every session holding work, the walk shared by its boundary gives the candidates its
    /// own walk gives, in the same order. The seed is printed; `WALKS_SEED` replays one.
    #[test]
    fn the_shared_walk_gives_what_the_sessions_own_walk_gives_over_generated_histories() {
        let (seed, mut next) = seeded("WALKS_SEED", "walks");
        let mut compared = 0;
        for _ in 0..4 {
            let dir = tempfile::tempdir().unwrap();
            let repo = Repository::init_bare(dir.path()).unwrap();
            let mut ids: Vec<Oid> = Vec::new();
            for i in 0..80 {
                let back = ids.len() as u64;
                let mut parents: Vec<Oid> = Vec::new();
                for _ in 0..if ids.is_empty() { 0 } else { 1 + usize::from(next(6) == 0) } {
                    let parent = ids[(back - 1 - next(back.min(8))) as usize];
                    if !parents.contains(&parent) {
                        parents.push(parent);
                    }
                }
                let base = parents.first().map(|id| repo.find_commit(*id).unwrap().tree().unwrap());
                let mut tree = repo.treebuilder(base.as_ref()).unwrap();
                let blob = repo.blob(format!("{}\n", next(3)).as_bytes()).unwrap();
                tree.insert(format!("f{}", next(3)), blob, 0o100644).unwrap();
                let tree = repo.find_tree(tree.write().unwrap()).unwrap();
                let when = Signature::new("t", "t@example.invalid", &git2::Time::new(1_700_000_000 + i / 2 * 60, 0));
                let when = when.unwrap();
                let parents: Vec<_> = parents.iter().map(|id| repo.find_commit(*id).unwrap()).collect();
                let parents: Vec<_> = parents.iter().collect();
                ids.push(repo.commit(None, &when, &when, &format!("c{i}"), &tree, &parents).unwrap());
            }
            let mut pick = |recent: u64| ids[ids.len() - 1 - next(recent) as usize];
            let mut named = vec![("refs/heads/main".to_owned(), pick(10)), ("refs/tags/t".to_owned(), pick(40))];
            let sessions = 3 + next(8);
            for s in 0..sessions {
                named.push((format!("refs/heads/jackin/scratch/s{s}"), ids[ids.len() - 1 - next(30) as usize]));
            }
            let table = ranked(named.clone());
            let memo = Arc::new(Memo::default());
            for (name, tip) in named.iter().filter(|(name, _)| name.contains("scratch")) {
                let surviving: Vec<Oid> = named.iter().filter(|(other, _)| other != name).map(|(_, id)| *id).collect();
                let at_risk = memo.graph.only_reachable_from(&repo, &[*tip], &surviving).unwrap();
                let at_risk: HashSet<Oid> = at_risk.into_iter().collect();
                // Nothing at risk: nothing to look for (`integrated` is not called).
                if at_risk.is_empty() {
                    continue;
                }
                let mut boundary: Vec<Oid> = at_risk
                    .iter()
                    .flat_map(|id| memo.graph.parents(&repo, *id).unwrap())
                    .filter(|parent| !at_risk.contains(parent))
                    .collect();
                boundary.sort();
                boundary.dedup();
                let source = Surviving::shared(&repo, table.clone(), vec![(name.clone(), *tip)], memo.clone());
                let ids = |found: Vec<Candidate>| found.into_iter().map(|c| c.id).collect::<Vec<_>>();
                let sought = Sought { boundary: &boundary, tip: *tip, at_risk: &at_risk, wanted: &|_| true };
                let shared = ids(from_shared_walk(&source, &sought).unwrap());
                let own = ids(from_own_walk(&source, &sought, &mut Trees::default()).unwrap());
                assert_eq!(shared, own, "seed {seed}: {name} at {tip}, refs {named:?}");
                compared += own.len();
            }
        }
        assert!(compared > 0, "seed {seed}: no session had a candidate to compare");
    }
}
