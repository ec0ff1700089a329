//! The commit graph of one object store as one run reads it: each commit's parents and time,
//! parsed once and shared by every session whose work lives in that store (a host repository's
//! worktrees all do). A fleet of sessions on one repository asks the same questions of the same
//! commits once per session; libgit2's revision walker parses (and `stat`s) every commit it is
//! given again for each walk, which made a view of 10,000 sessions quadratic (issue 69).
//!
//! The walk is git's `rev-list TIPS --not HIDDEN`: newest commit first, hidden marks carried to
//! every ancestor, ended once only hidden commits are queued and a few more were looked at
//! (git's "slop", for clocks that went backwards). A clock skewed beyond that can only leave a
//! commit counted as reachable from the tips alone when a hidden one reaches it too: more is
//! said to be at risk, never less.

use std::collections::hash_map::Entry;
use std::collections::{BinaryHeap, HashMap};
use std::sync::{Arc, RwLock};

use git2::{Oid, Repository};

/// How many commits past the point where only hidden ones are queued are still looked at, as git.
const SLOP: usize = 5;

#[derive(Debug, Clone)]
struct Node {
    /// The committer's time, as git orders a walk.
    time: i64,
    parents: Parents,
}

/// A commit's parents, held inline for all but an octopus merge: a node is copied out of the
/// shared table for each walk, and a count shared by two threads would be written by both.
#[derive(Debug, Clone)]
enum Parents {
    Few([Option<Oid>; 2]),
    Many(Arc<[Oid]>),
}

impl Parents {
    fn of(ids: Vec<Oid>) -> Parents {
        match ids.as_slice() {
            [] => Parents::Few([None, None]),
            [one] => Parents::Few([Some(*one), None]),
            [one, two] => Parents::Few([Some(*one), Some(*two)]),
            _ => Parents::Many(ids.into()),
        }
    }

    fn list(&self) -> Vec<Oid> {
        match self {
            Parents::Few(few) => few.iter().flatten().copied().collect(),
            Parents::Many(many) => many.to_vec(),
        }
    }
}

/// The commits of one object store read so far; shared between threads, read far more often
/// than written.
#[derive(Debug, Default)]
pub(crate) struct Graph {
    nodes: RwLock<OidMap<Node>>,
}

/// A map keyed by commit id, hashed fast: the ids are uniform already, and a fleet's walks look
/// them up millions of times.
pub(crate) type OidMap<V> = HashMap<Oid, V, foldhash::fast::RandomState>;

#[derive(Debug, Clone)]
struct Mark {
    hidden: bool,
    queued: bool,
    /// Its parents were queued as the tips' (a later hidden mark has to be carried past it).
    walked: bool,
    /// `None`: a hidden commit that cannot be read (it hides nothing further).
    node: Option<Node>,
}

impl Graph {
    fn node(&self, repo: &Repository, id: Oid) -> Result<Node, git2::Error> {
        if let Some(node) = self.nodes.read().unwrap_or_else(|e| e.into_inner()).get(&id) {
            return Ok(node.clone());
        }
        // Through libgit2's commit parse, so that a shallow repository's grafts apply as in a walk.
        let commit = repo.find_commit(id)?;
        let node = Node { time: commit.time().seconds(), parents: Parents::of(commit.parent_ids().collect()) };
        // Counted once a commit, when it enters the table: two threads may read one at once.
        if self.nodes.write().unwrap_or_else(|e| e.into_inner()).insert(id, node.clone()).is_none() {
            super::counted::one_more(&super::counted::COMMITS);
        }
        Ok(node)
    }

    /// The parents of the commit `id`.
    pub(crate) fn parents(&self, repo: &Repository, id: Oid) -> Result<Vec<Oid>, git2::Error> {
        Ok(self.node(repo, id)?.parents.list())
    }

    /// The committer's time of the commit `id`, in seconds.
    pub(crate) fn time(&self, repo: &Repository, id: Oid) -> Result<i64, git2::Error> {
        Ok(self.node(repo, id)?.time)
    }

    /// Whether `id` names a commit here.
    pub(crate) fn is_commit(&self, repo: &Repository, id: Oid) -> bool {
        self.node(repo, id).is_ok()
    }

    /// The commits `tips` reach that none of `hidden` reaches, newest first. A hidden id that
    /// names no commit here hides nothing; a tip or a parent of theirs that cannot be read is an
    /// error, as for git.
    pub(crate) fn only_reachable_from(
        &self,
        repo: &Repository,
        tips: &[Oid],
        hidden: &[Oid],
    ) -> Result<Vec<Oid>, git2::Error> {
        let mut marks: OidMap<Mark> = OidMap::default();
        let mut queue: BinaryHeap<(i64, Oid)> = BinaryHeap::new();
        // Queued commits without the hidden mark: the walk goes on while there is one.
        let mut open = 0usize;
        for id in hidden {
            let Ok(node) = self.node(repo, *id) else { continue };
            if let Entry::Vacant(vacant) = marks.entry(*id) {
                queue.push((node.time, *id));
                vacant.insert(Mark { hidden: true, queued: true, walked: false, node: Some(node) });
            }
        }
        for id in tips {
            let node = self.node(repo, *id)?;
            if let Entry::Vacant(vacant) = marks.entry(*id) {
                queue.push((node.time, *id));
                vacant.insert(Mark { hidden: false, queued: true, walked: false, node: Some(node) });
                open += 1;
            }
        }
        let mut walked = Vec::new();
        let mut slop = SLOP;
        while let Some((time, id)) = queue.pop() {
            // Every tip hidden and nothing walked as theirs: nothing left can be found (only a
            // commit walked as the tips' queues more of theirs), however many hidden commits share
            // the second (a reachable session's tip beside 2,000 commits of one second on main).
            if open == 0 && walked.is_empty() {
                break;
            }
            let mark = marks.get_mut(&id).expect("a queued commit is marked");
            mark.queued = false;
            // A parent that cannot be read hides nothing further: more is left at risk.
            let Some(parents) = mark.node.as_ref().map(|node| node.parents.clone()) else { continue };
            if mark.hidden {
                for parent in parents.list() {
                    self.hide(repo, parent, &mut marks, &mut queue, &mut open);
                }
            } else {
                mark.walked = true;
                open -= 1;
                walked.push((time, id));
                for parent in parents.list() {
                    if let Entry::Vacant(vacant) = marks.entry(parent) {
                        let node = self.node(repo, parent)?;
                        queue.push((node.time, parent));
                        vacant.insert(Mark { hidden: false, queued: true, walked: false, node: Some(node) });
                        open += 1;
                    }
                }
            }
            // Not done while a queued commit is as new as this one (the same second is common:
            // a rebase, a script), as git and libgit2 count it.
            if open > 0 || queue.peek().is_some_and(|(next, _)| *next >= time) {
                slop = SLOP;
            } else if slop == 0 {
                break;
            } else {
                slop -= 1;
            }
        }
        // Newest first; a tie in the order walked.
        let mut only: Vec<(i64, Oid)> = walked.into_iter().filter(|(_, id)| !marks[id].hidden).collect();
        only.sort_by_key(|(time, _)| std::cmp::Reverse(*time));
        Ok(only.into_iter().map(|(_, id)| id).collect())
    }

    /// Marks `id` hidden and queues it to carry the mark on: also when it was walked already as
    /// the tips' (a clock that went backwards), so that its ancestors lose the tips' mark too.
    fn hide(
        &self,
        repo: &Repository,
        id: Oid,
        marks: &mut OidMap<Mark>,
        queue: &mut BinaryHeap<(i64, Oid)>,
        open: &mut usize,
    ) {
        match marks.entry(id) {
            Entry::Vacant(vacant) => {
                // One that cannot be read is left unmarked, as git leaves it.
                let Ok(node) = self.node(repo, id) else { return };
                queue.push((node.time, id));
                vacant.insert(Mark { hidden: true, queued: true, walked: false, node: Some(node) });
            }
            Entry::Occupied(mut occupied) => {
                let mark = occupied.get_mut();
                if mark.hidden {
                    return;
                }
                mark.hidden = true;
                if mark.queued {
                    *open -= 1;
                } else if let (true, Some(node)) = (mark.walked, &mark.node) {
                    mark.queued = true;
                    queue.push((node.time, id));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::generated::seeded;
    use super::*;
    use std::path::Path;

    fn git(dir: &Path, args: &[&str]) -> String {
        super::super::generated::git(dir, args, None)
    }

    /// git's own `rev-list` over the same tips, as the set the walk must give.
    fn rev_list(dir: &Path, tips: &[Oid], hidden: &[Oid]) -> Vec<String> {
        if tips.is_empty() {
            return Vec::new();
        }
        let mut args: Vec<String> = vec!["rev-list".into()];
        args.extend(tips.iter().map(|t| t.to_string()));
        args.extend(hidden.iter().map(|h| format!("^{h}")));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut listed: Vec<String> = git(dir, &args).lines().map(str::to_owned).collect();
        listed.sort();
        listed
    }

    /// Generated histories (branches, merges, clocks that go backwards), each walk checked against
    /// `git rev-list` for every pair of tip and hidden set, one graph shared by all the walks of a
    /// history as a run shares it. The seed is printed; `GRAPH_SEED` replays one.
    #[test]
    fn the_walk_gives_what_git_rev_list_gives_over_generated_histories() {
        let (seed, mut next) = seeded("GRAPH_SEED", "graph walk");
        for history in 0..4 {
            // The first two histories keep every clock forward, the second all in one second (a
            // rebase, a script): there the walk is exactly git's.
            let skewed = history >= 2;
            let one_second = history == 1;
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            git(dir, &["init", "-q"]);
            let mut commits: Vec<String> = Vec::new();
            for i in 0..40 {
                // Mostly forward clocks, now and then one far behind its parent.
                let step = if one_second { 0 } else { 60 };
                let time = 1_700_000_000 + i as i64 * step - if skewed && next(6) == 0 { 86_400 } else { 0 };
                let date = format!("@{time} +0000");
                let tree = git(dir, &["write-tree"]);
                let mut args = vec!["commit-tree".to_owned(), tree, "-m".to_owned(), format!("c{i}")];
                if !commits.is_empty() {
                    let first = commits[next(commits.len() as u64) as usize].clone();
                    args.extend(["-p".to_owned(), first.clone()]);
                    if next(4) == 0 {
                        let second = commits[next(commits.len() as u64) as usize].clone();
                        if second != first {
                            args.extend(["-p".to_owned(), second]);
                        }
                    }
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                commits.push(super::super::generated::git(dir, &args, Some(&date)));
            }
            let repo = Repository::open(dir).unwrap();
            let graph = Graph::default();
            let ids: Vec<Oid> = commits.iter().map(|c| Oid::from_str(c).unwrap()).collect();
            for _walk in 0..30 {
                let tips: Vec<Oid> = (0..1 + next(3)).map(|_| ids[next(ids.len() as u64) as usize]).collect();
                let hidden: Vec<Oid> = (0..next(5)).map(|_| ids[next(ids.len() as u64) as usize]).collect();
                let mut walked: Vec<String> =
                    graph.only_reachable_from(&repo, &tips, &hidden).unwrap().iter().map(Oid::to_string).collect();
                walked.sort();
                let listed = rev_list(dir, &tips, &hidden);
                // What is exactly so, without a walk's guess: all the tips reach, less all the
                // hidden ones reach (each listed whole).
                let hidden_reach = rev_list(dir, &hidden, &[]);
                let reachable = rev_list(dir, &tips, &[]);
                let exact: Vec<String> = reachable.iter().filter(|c| !hidden_reach.contains(c)).cloned().collect();
                if !skewed {
                    assert_eq!(walked, listed, "seed {seed}: tips {tips:?}, hidden {hidden:?}");
                    assert_eq!(walked, exact, "seed {seed}: tips {tips:?}, hidden {hidden:?}");
                }
                // A clock skewed past the slop may leave a commit the hidden ones reach counted as
                // the tips' (as git's own walk may): never one the other way.
                assert!(exact.iter().all(|c| walked.contains(c)), "seed {seed}: missed {exact:?} vs {walked:?}");
                assert!(walked.iter().all(|c| reachable.contains(c)), "seed {seed}: walked beyond the tips");
            }
        }
    }

    /// Newest first, and a hidden id that is no commit (a tag's blob, a missing object) hides
    /// nothing, as the old walk's existence check did.
    #[test]
    fn newest_first_and_a_hidden_id_of_no_commit_hides_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        git(dir, &["init", "-q"]);
        git(dir, &["commit", "-q", "--allow-empty", "-m", "a"]);
        let a = Oid::from_str(&git(dir, &["rev-parse", "HEAD"])).unwrap();
        git(dir, &["commit", "-q", "--allow-empty", "-m", "b", "--date=@1900000000"]);
        let b = Oid::from_str(&git(dir, &["rev-parse", "HEAD"])).unwrap();
        let repo = Repository::open(dir).unwrap();
        let missing = Oid::from_str("1234567890123456789012345678901234567890").unwrap();
        let graph = Graph::default();
        let mut expected = vec![b, a];
        let times: Vec<i64> = expected.iter().map(|id| repo.find_commit(*id).unwrap().time().seconds()).collect();
        if times[0] < times[1] {
            expected.reverse();
        }
        assert_eq!(graph.only_reachable_from(&repo, &[b], &[missing]).unwrap(), expected);
        assert_eq!(graph.only_reachable_from(&repo, &[b], &[a]).unwrap(), vec![b]);
        assert!(graph.only_reachable_from(&repo, &[missing], &[]).is_err());
    }
}
