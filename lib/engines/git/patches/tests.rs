//! The squash search and the tree comparison, on histories made here commit by commit (libgit2
//! writes any parents asked for, as an agent's `git commit-tree` can): merges whose second
//! parent is already in the branch, a merge as the first commit of a branch, root commits, the
//! run limit, a file deleted beside an edit, a file that becomes a directory.

use std::path::Path;

use git2::{Oid, Repository, Signature};

use super::{integrated, Surviving, SQUASH_LIMIT};
use crate::protocol::assessment::Integration;

struct History {
    _dir: tempfile::TempDir,
    repo: Repository,
}

impl History {
    fn new() -> History {
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::init_bare(dir.path()).unwrap();
        History { _dir: dir, repo }
    }

    /// A commit of exactly these files (path, content) on exactly these parents, with `message`
    /// (two commits of one patch differ by it, whatever the clock says).
    fn commit(&self, parents: &[Oid], files: &[(&str, &str)], message: &str) -> Oid {
        let mut index = git2::Index::new().unwrap();
        for (path, content) in files {
            let id = self.repo.blob(content.as_bytes()).unwrap();
            let entry = crate::engines::git::recover::entry(Path::new(path), 0o100644, id, content.len() as u64);
            index.add(&entry).unwrap();
        }
        let tree = self.repo.find_tree(index.write_tree_to(&self.repo).unwrap()).unwrap();
        let parents: Vec<_> = parents.iter().map(|id| self.repo.find_commit(*id).unwrap()).collect();
        let signature = Signature::new("t", "t@example.com", &git2::Time::new(1_700_000_000, 0)).unwrap();
        self.repo.commit(None, &signature, &signature, message, &tree, &parents.iter().collect::<Vec<_>>()).unwrap()
    }

    /// What `integrated` finds of `at_risk` (newest first, as the reachability rule lists them)
    /// when `main` is the one surviving ref: (commit, as which commit, how).
    fn integrated(&self, tip: Oid, at_risk: &[Oid], main: Oid) -> Vec<(Oid, Oid, Integration)> {
        let surviving = [Surviving::new(&self.repo, vec![("refs/heads/main".to_owned(), main)])];
        integrated(&self.repo, tip, at_risk, &surviving)
            .unwrap()
            .into_iter()
            .map(|i| {
                assert_eq!(i.into, "refs/heads/main");
                (Oid::from_str(&i.commit).unwrap(), Oid::from_str(&i.as_commit).unwrap(), i.how)
            })
            .collect()
    }
}

fn squashed(at_risk: &[Oid], as_commit: Oid) -> Vec<(Oid, Oid, Integration)> {
    at_risk.iter().map(|id| (*id, as_commit, Integration::Squash)).collect()
}

#[test]
fn a_merge_of_a_commit_the_branch_already_has_keeps_the_squash_base() {
    let h = History::new();
    let old_main = h.commit(&[], &[("a", "1\n")], "a");
    let main = h.commit(&[old_main], &[("a", "1\n"), ("m", "m\n")], "m");
    // The second parent is the branch's base itself, then an older commit of main: neither moves
    // the base, and the branch is still squashed onto `main`.
    for merged_again in [main, old_main] {
        let c1 = h.commit(&[main], &[("a", "1\n"), ("m", "m\n"), ("b", "2\n")], "b");
        let merge = h.commit(&[c1, merged_again], &[("a", "1\n"), ("m", "m\n"), ("b", "2\n")], "merge again");
        let tip = h.commit(&[merge], &[("a", "1\n"), ("m", "m\n"), ("b", "2\n"), ("c", "3\n")], "c");
        let squash = h.commit(&[main], &[("a", "1\n"), ("m", "m\n"), ("b", "2\n"), ("c", "3\n")], "squash");
        let at_risk = [tip, merge, c1];
        assert_eq!(h.integrated(tip, &at_risk, squash), squashed(&at_risk, squash), "merged again: {merged_again}");
    }
}

#[test]
fn a_merge_as_the_branchs_first_commit_is_squashed_with_what_it_merged() {
    let h = History::new();
    let main = h.commit(&[], &[("a", "1\n")], "a");
    let side = h.commit(&[main], &[("a", "1\n"), ("s", "side\n")], "side");
    // `git merge --no-ff side` on a branch at main: the run is that merge alone.
    let merge = h.commit(&[main, side], &[("a", "1\n"), ("s", "side\n"), ("t", "more\n")], "merge side");
    let squash = h.commit(&[main], &[("a", "1\n"), ("s", "side\n"), ("t", "more\n")], "squash");
    let at_risk = [merge, side];
    assert_eq!(h.integrated(merge, &at_risk, squash), squashed(&at_risk, squash));
}

#[test]
fn a_squash_is_looked_for_over_a_run_up_to_the_limit_and_not_past_it() {
    let h = History::new();
    let main = h.commit(&[], &[("a", "1\n")], "a");
    let mut run = vec![];
    let mut tip = main;
    for n in 1..=SQUASH_LIMIT + 1 {
        tip = h.commit(&[tip], &[("a", "1\n"), ("f", &format!("{n}\n"))], &n.to_string());
        run.push(tip);
        if n >= SQUASH_LIMIT {
            let squash = h.commit(&[main], &[("a", "1\n"), ("f", &format!("{n}\n"))], "squash");
            let at_risk: Vec<Oid> = run.iter().rev().copied().collect();
            let found = h.integrated(tip, &at_risk, squash);
            if n == SQUASH_LIMIT {
                assert_eq!(found, squashed(&at_risk, squash), "a run of the limit's length is one squash");
            } else {
                // Cut short, the run does not start at the merge base: no squash to look for.
                assert_eq!(found, vec![], "a run longer than the limit");
            }
        }
    }
}

#[test]
fn a_root_commit_of_the_same_tree_holds_the_patch_and_a_merge_commit_does_not() {
    let h = History::new();
    let host_root = h.commit(&[], &[("a", "1\n")], "on main");
    let orphan = h.commit(&[], &[("a", "1\n")], "on an orphan branch");
    assert_eq!(h.integrated(orphan, &[orphan], host_root), vec![(orphan, host_root, Integration::Patch)]);

    // A merge's diff from its first parent is no patch of its own, even one equal to the
    // at-risk commit's.
    let base = h.commit(&[], &[("a", "1\n")], "base");
    let elsewhere = h.commit(&[], &[("z", "z\n")], "elsewhere");
    let merge = h.commit(&[base, elsewhere], &[("a", "1\n"), ("b", "2\n")], "an evil merge");
    let own = h.commit(&[base], &[("a", "1\n"), ("b", "2\n")], "b");
    assert_eq!(h.integrated(own, &[own], merge), vec![]);
}

#[test]
fn a_surviving_edit_alone_does_not_hold_an_edit_and_a_deletion() {
    let h = History::new();
    let base = h.commit(&[], &[("a", "1\n"), ("z", "last\n")], "base");
    let main = h.commit(&[base], &[("a", "2\n"), ("z", "last\n")], "the edit alone");
    // `z` sorts after every name the new tree has: the comparison still sees it go.
    let both = h.commit(&[base], &[("a", "2\n")], "the edit and the deletion");
    assert_eq!(h.integrated(both, &[both], main), vec![]);
    let same = h.commit(&[base], &[("a", "2\n"), ("z", "last\n")], "the edit alone, again");
    assert_eq!(h.integrated(same, &[same], main), vec![(same, main, Integration::Patch)]);
}

#[test]
fn a_file_made_a_directory_is_the_same_patch_only_with_the_same_file_before() {
    let h = History::new();
    let mut found = vec![];
    for (old, other_old) in [("old\n", "old\n"), ("old\n", "new\n")] {
        let base = h.commit(&[], &[("x", old), ("k", "k\n")], "base");
        let other_base = h.commit(&[], &[("x", other_old), ("k", "k\n")], "other base");
        let main = h.commit(&[other_base], &[("x/y", "y\n"), ("k", "k\n")], "x made a directory on main");
        let own = h.commit(&[base], &[("x/y", "y\n"), ("k", "k\n")], "x made a directory");
        found.push(h.integrated(own, &[own], main).len());
    }
    // The same size before, other bytes: only the diff tells the two apart.
    assert_eq!(found, vec![1, 0]);
}

#[test]
fn a_pick_of_the_newest_commit_alone_leaves_its_parent_at_risk() {
    let h = History::new();
    let main = h.commit(&[], &[("a", "1\n")], "a");
    let first = h.commit(&[main], &[("a", "1\n"), ("b", "2\n")], "b");
    let second = h.commit(&[first], &[("a", "1\n"), ("b", "2\n"), ("c", "3\n")], "c");
    let picked = h.commit(&[main], &[("a", "1\n"), ("c", "3\n")], "c, picked");
    assert_eq!(h.integrated(second, &[second, first], picked), vec![(second, picked, Integration::Patch)]);
}

#[test]
fn a_merge_of_an_unrelated_history_ends_the_squash_search() {
    let h = History::new();
    let main = h.commit(&[], &[("a", "1\n")], "a");
    let unrelated = h.commit(&[], &[("o", "other\n")], "another history");
    let c1 = h.commit(&[main], &[("a", "1\n"), ("b", "2\n")], "b");
    let merge = h.commit(&[c1, unrelated], &[("a", "1\n"), ("b", "2\n"), ("o", "other\n")], "merge it");
    // A surviving commit whose patch is the merge's diff from the unrelated history: there is no
    // one base to squash from, so it holds nothing of the branch.
    let empty = h.commit(&[], &[], "empty");
    let from_unrelated = h.commit(&[empty], &[("a", "1\n"), ("b", "2\n")], "a and b");
    assert_eq!(h.integrated(merge, &[merge, c1], from_unrelated), vec![]);
}
