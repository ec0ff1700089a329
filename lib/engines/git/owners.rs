//! Which sessions' tips alone reach each commit of a host repository that no kept ref reaches,
//! worked out once per run from one walk: what a purge of one session destroys is then read off a
//! table, where a walk per session, with every other session's tip hidden, made a fleet of
//! sessions holding work quadratic (issue 69).
//!
//! A session's tips are the refs a purge deletes: scratch branches (`refs/heads/jackin/scratch/…`,
//! state.md) and the HEADs of registered worktrees. Every other ref (branches, tags, remote-tracking
//! refs, notes) and the host's own HEAD are kept by every purge. The walk is git's `rev-list
//! SESSION-TIPS --not KEPT` ([`Graph::only_reachable_from`]); each commit it finds is then labelled
//! with the session tips that reach it, carried from children to parents in topological order and
//! held up to two (one session's scratch branch and its detached HEAD): a third is "many", which no
//! session alone owns. A commit is at risk for a session when each tip reaching it is one whose every
//! name is that session's: what the walk per session found, with the same rule for hidden commits
//! (a clock skewed past git's slop leaves more at risk, never less).

use std::collections::HashMap;

use git2::{Oid, Repository};

use super::graph::{Graph, OidMap};

/// The prefix of every scratch branch jackin makes (state.md).
pub(super) const SCRATCH_PREFIX: &str = "refs/heads/jackin/scratch/";

/// The tips of one or two sessions' refs that alone reach a commit; `None` past two.
type Label = Option<(Oid, Option<Oid>)>;

/// The commits only session tips reach, by the tips that reach them.
#[derive(Debug, Default)]
pub(crate) struct Owners {
    /// Each commit's place in the walk, newest first.
    order: OidMap<usize>,
    /// The commits one tip (`(tip, None)`) or two (sorted) alone reach, in the walk's order.
    by_tips: HashMap<(Oid, Option<Oid>), Vec<Oid>, foldhash::fast::RandomState>,
}

impl Owners {
    /// One walk of `session_tips` (each distinct commit once) with `kept` hidden, in the objects
    /// `repo` reads. An error when a commit the walk needs cannot be read: the caller walks per
    /// session then, as before.
    pub(super) fn read(
        graph: &Graph,
        repo: &Repository,
        session_tips: &[Oid],
        kept: &[Oid],
    ) -> Result<Owners, git2::Error> {
        let tips: Vec<Oid> = session_tips.iter().copied().filter(|id| graph.is_commit(repo, *id)).collect();
        let found = graph.only_reachable_from(repo, &tips, kept)?;
        let order: OidMap<usize> = found.iter().enumerate().map(|(at, id)| (*id, at)).collect();
        // Parents inside the found set, and how many children inside it each commit has.
        let mut parents: OidMap<Vec<Oid>> = OidMap::default();
        let mut children: OidMap<usize> = OidMap::default();
        for id in &found {
            let inside: Vec<Oid> = graph.parents(repo, *id)?.into_iter().filter(|p| order.contains_key(p)).collect();
            for parent in &inside {
                *children.entry(*parent).or_default() += 1;
            }
            parents.insert(*id, inside);
        }
        let mut labels: OidMap<Label> = OidMap::default();
        for tip in &tips {
            if order.contains_key(tip) {
                labels.insert(*tip, Some((*tip, None)));
            }
        }
        // Kahn's order: a commit is labelled for good once every child inside has given it its own.
        let mut ready: Vec<Oid> = found.iter().copied().filter(|id| !children.contains_key(id)).collect();
        while let Some(id) = ready.pop() {
            let label = labels.get(&id).copied().unwrap_or(None);
            for parent in &parents[&id] {
                let merged = merge(labels.get(parent).copied(), label);
                labels.insert(*parent, merged);
                let left = children.get_mut(parent).expect("a parent inside has a child inside");
                *left -= 1;
                if *left == 0 {
                    ready.push(*parent);
                }
            }
        }
        let mut by_tips: HashMap<(Oid, Option<Oid>), Vec<Oid>, foldhash::fast::RandomState> = HashMap::default();
        for id in &found {
            match labels.get(id) {
                Some(Some(owners)) => by_tips.entry(*owners).or_default().push(*id),
                Some(None) => {}
                // Found, but under no found child nor a tip: a clock skewed past the walk's slop
                // hid the child. Which session it is at risk for is not told here.
                None => return Err(git2::Error::from_str("a commit found under no tip: walked per session")),
            }
        }
        Ok(Owners { order, by_tips })
    }

    /// The commits `tip` reaches that no session tip but `own` reaches (nor a kept ref), newest
    /// first. `own` are the session's tips whose every name is the session's; `tip` among them.
    pub(super) fn only_reachable_from(&self, tip: Oid, own: &[Oid]) -> Vec<Oid> {
        if !own.contains(&tip) {
            return Vec::new();
        }
        let mut found: Vec<Oid> = self.by_tips.get(&(tip, None)).cloned().unwrap_or_default();
        for other in own.iter().filter(|id| **id != tip) {
            let pair = if tip < *other { (tip, Some(*other)) } else { (*other, Some(tip)) };
            found.extend(self.by_tips.get(&pair).into_iter().flatten());
        }
        found.sort_by_key(|id| self.order[id]);
        found.dedup();
        found
    }
}

/// The tips reaching a commit, given those of one more child: up to two, sorted; past two, none.
fn merge(held: Option<Label>, from_child: Label) -> Label {
    let Some(held) = held else { return from_child };
    let (Some(held), Some(child)) = (held, from_child) else { return None };
    let mut tips: Vec<Oid> = [Some(held.0), held.1, Some(child.0), child.1].into_iter().flatten().collect();
    tips.sort();
    tips.dedup();
    match tips.as_slice() {
        [one] => Some((*one, None)),
        [one, two] => Some((*one, Some(*two))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::super::generated::{git, seeded};
    use super::*;

    /// Generated histories, with sessions of one or two tips (some tips shared by two sessions,
    /// some by a kept ref) and kept refs: for every session and each of its tips, the table
    /// gives what a walk of that tip with every tip not wholly the session's hidden gives (the
    /// walk per session it replaces), and under skewed clocks at least what is exactly so.
    /// The seed is printed; `OWNERS_SEED` replays one.
    #[test]
    fn the_table_gives_what_a_walk_per_session_gives_over_generated_histories() {
        let (seed, mut next) = seeded("OWNERS_SEED", "owners");
        for history in 0..4 {
            let skewed = history == 3;
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path();
            git(dir, &["init", "-q"], None);
            let tree = git(dir, &["write-tree"], None);
            let mut ids: Vec<Oid> = Vec::new();
            for i in 0..60 {
                let behind = if skewed && next(5) == 0 { 86_400 } else { 0 };
                let date = format!("@{} +0000", 1_700_000_000 + i * 60 - behind);
                let mut args = vec!["commit-tree".to_owned(), tree.clone(), "-m".to_owned(), format!("c{i}")];
                // Mostly a line of work on a recent commit, now and then a merge of two.
                for _ in 0..if ids.is_empty() { 0 } else { 1 + usize::from(next(5) == 0) } {
                    let back = ids.len() as u64;
                    let parent = ids[(back - 1 - next(back.min(8))) as usize].to_string();
                    if !args.contains(&parent) {
                        args.extend(["-p".to_owned(), parent]);
                    }
                }
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                ids.push(Oid::from_str(&git(dir, &args, Some(&date))).unwrap());
            }
            let pick = |next: &mut dyn FnMut(u64) -> u64| ids[next(ids.len() as u64) as usize];
            // Named tips: `None` is a kept ref's, `Some(s)` session s's.
            let mut named: Vec<(Option<usize>, Oid)> = Vec::new();
            for _ in 0..1 + next(3) {
                named.push((None, ids[(ids.len() as u64 - 1 - next(30)) as usize]));
            }
            let sessions = 3 + next(8) as usize;
            for s in 0..sessions {
                named.push((Some(s), pick(&mut next)));
                if next(3) == 0 {
                    named.push((Some(s), pick(&mut next)));
                }
                if next(4) == 0 {
                    // Another session's tip too: neither owns it alone.
                    let other = named[next(named.len() as u64) as usize].1;
                    named.push((Some(s), other));
                }
            }
            let distinct = |ids: Vec<Oid>| {
                let mut ids = ids;
                ids.sort();
                ids.dedup();
                ids
            };
            let session_tips = distinct(named.iter().filter(|(s, _)| s.is_some()).map(|(_, id)| *id).collect());
            let kept = distinct(named.iter().filter(|(s, _)| s.is_none()).map(|(_, id)| *id).collect());
            let repo = Repository::open(dir).unwrap();
            let graph = Graph::default();
            let owners = match Owners::read(&graph, &repo, &session_tips, &kept) {
                Ok(owners) => owners,
                // A skewed clock may leave a commit found under no tip: walked per session then.
                Err(_) if skewed => continue,
                Err(e) => panic!("seed {seed}: {e}"),
            };
            for s in 0..sessions {
                let own: Vec<Oid> = named.iter().filter(|(o, _)| *o == Some(s)).map(|(_, id)| *id).collect();
                let count = |id: Oid, of: &dyn Fn(&Option<usize>) -> bool| {
                    named.iter().filter(|(o, i)| of(o) && *i == id).count()
                };
                let survives = |id: Oid| count(id, &|_| true) > count(id, &|o| *o == Some(s));
                let owned: Vec<Oid> = own.iter().copied().filter(|id| !survives(*id)).collect();
                let surviving = distinct(named.iter().map(|(_, id)| *id).filter(|id| survives(*id)).collect());
                for tip in &own {
                    let mut table = owners.only_reachable_from(*tip, &owned);
                    let mut walked = graph.only_reachable_from(&repo, &[*tip], &surviving).unwrap();
                    table.sort();
                    walked.sort();
                    if skewed {
                        // Exactly so: the tip's commits less all the surviving tips reach.
                        let all = graph.only_reachable_from(&repo, &[*tip], &[]).unwrap();
                        let hidden: Vec<Oid> = if surviving.is_empty() {
                            Vec::new()
                        } else {
                            graph.only_reachable_from(&repo, &surviving, &[]).unwrap()
                        };
                        let exact: Vec<Oid> = all.iter().copied().filter(|c| !hidden.contains(c)).collect();
                        assert!(exact.iter().all(|c| table.contains(c)), "seed {seed}: session {s} missed {exact:?}");
                        assert!(table.iter().all(|c| all.contains(c)), "seed {seed}: beyond the tip");
                    } else {
                        assert_eq!(table, walked, "seed {seed}: session {s}, tip {tip}, named {named:?}");
                    }
                }
            }
        }
    }
}
