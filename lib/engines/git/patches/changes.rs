//! What a commit changes, read from its trees alone, and how much each file it changes grows:
//! what the patch search compares first, so that a candidate with other paths or another growth is
//! ruled out without a diff (`super`).

use std::collections::HashMap;

use git2::{Oid, Repository, Tree};

/// A tree entry's id, whether it is a tree, and its mode.
type Entry = (Oid, bool, i32);

/// A tree's entries sorted by name (bytes), each name once, the names in one buffer: hundreds of
/// trees are read per run, and a map or an allocation per name was most of the patch check.
#[derive(Default)]
struct Entries {
    names: Vec<u8>,
    items: Vec<(std::ops::Range<usize>, Entry)>,
}

impl Entries {
    fn read(tree: &Tree<'_>) -> Entries {
        let mut entries = Entries::default();
        for entry in tree.iter() {
            let start = entries.names.len();
            entries.names.extend_from_slice(entry.name_bytes());
            let is_tree = entry.kind() == Some(git2::ObjectType::Tree);
            entries.items.push((start..entries.names.len(), (entry.id(), is_tree, entry.filemode())));
        }
        // git's own order puts a tree's name as if it ended in `/`; this one is plain bytes, the
        // same for both sides of a comparison whatever a (possibly hand-made) tree holds. A name
        // twice counts once, the later entry, as a map would keep it.
        let names = &entries.names;
        entries.items.sort_by(|(a, _), (b, _)| names[a.clone()].cmp(&names[b.clone()]));
        entries.items.reverse();
        entries.items.dedup_by(|(a, _), (b, _)| names[a.clone()] == names[b.clone()]);
        entries.items.reverse();
        entries
    }

    fn name(&self, i: usize) -> &[u8] {
        &self.names[self.items[i].0.clone()]
    }
}

/// Trees read once per run: hundreds of candidates share their parents' subtrees, and libgit2's
/// object cache keeps no tree over 4 KiB. Tree ids name their content, so one cache serves the
/// clone and its host alike.
#[derive(Default)]
pub(super) struct Trees(HashMap<Oid, std::rc::Rc<Entries>>);

impl Trees {
    fn entries(&mut self, repo: &Repository, id: Option<Oid>) -> Result<std::rc::Rc<Entries>, git2::Error> {
        let Some(id) = id else { return Ok(Default::default()) };
        if let Some(entries) = self.0.get(&id) {
            return Ok(entries.clone());
        }
        let entries = std::rc::Rc::new(Entries::read(&repo.find_tree(id)?));
        self.0.insert(id, entries.clone());
        Ok(entries)
    }
}

/// A file's blob and mode on one side of a diff (`None`: no file there).
pub(super) type Side = Option<(Oid, i32)>;

/// What a diff touches, from the trees alone: its paths, sorted (two diffs with other paths
/// cannot be the same patch), and each path's file before and after.
#[derive(Debug)]
pub(super) struct Changes {
    pub(super) paths: Vec<Vec<u8>>,
    pub(super) sides: Vec<(Side, Side)>,
}

/// The changes from commit `from` (the empty tree when `None`) to `to`, skipping equal subtrees
/// (a libgit2 diff reads every subtree and sets up a patch generator: most of a run's cost when
/// hundreds of candidates are compared).
pub(super) fn changes(
    trees: &mut Trees,
    repo: &Repository,
    from: Option<Oid>,
    to: Oid,
) -> Result<Changes, git2::Error> {
    let old = from.map(|id| repo.find_commit(id).map(|c| c.tree_id())).transpose()?;
    let new = repo.find_commit(to)?.tree_id();
    let mut found = Vec::new();
    tree_changes(trees, repo, old, Some(new), &mut Vec::new(), &mut found)?;
    found.sort_by(|(a, _), (b, _)| a.cmp(b));
    found.dedup_by(|(a, _), (b, _)| a == b);
    let (paths, sides) = found.into_iter().unzip();
    Ok(Changes { paths, sides })
}

fn tree_changes(
    trees: &mut Trees,
    repo: &Repository,
    old: Option<Oid>,
    new: Option<Oid>,
    prefix: &mut Vec<u8>,
    out: &mut Vec<(Vec<u8>, (Side, Side))>,
) -> Result<(), git2::Error> {
    if old == new {
        return Ok(());
    }
    let (old_entries, new_entries) = (trees.entries(repo, old)?, trees.entries(repo, new)?);
    // Both sides are sorted by name: one merge of the two, each name compared once (a squash of
    // k commits compares every directory it touches, k times over: this loop is most of it).
    let (mut i, mut j) = (0, 0);
    while i < old_entries.items.len() || j < new_entries.items.len() {
        let order = match (old_entries.items.get(i), new_entries.items.get(j)) {
            (Some(_), Some(_)) => old_entries.name(i).cmp(new_entries.name(j)),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        let (name, before, after) = match order {
            std::cmp::Ordering::Equal => {
                (i, j) = (i + 1, j + 1);
                (old_entries.name(i - 1), Some(old_entries.items[i - 1].1), Some(new_entries.items[j - 1].1))
            }
            std::cmp::Ordering::Less => {
                i += 1;
                (old_entries.name(i - 1), Some(old_entries.items[i - 1].1), None)
            }
            std::cmp::Ordering::Greater => {
                j += 1;
                (new_entries.name(j - 1), None, Some(new_entries.items[j - 1].1))
            }
        };
        if before == after {
            continue;
        }
        let len = prefix.len();
        prefix.extend_from_slice(name);
        // A name can be a file on one side and a directory on the other: the file first (the
        // caller sorts the paths), then what is under the directory.
        let file =
            |side: Option<Entry>| -> Side { side.filter(|(_, is_tree, _)| !*is_tree).map(|(id, _, mode)| (id, mode)) };
        let sides = (file(before), file(after));
        if sides.0.is_some() || sides.1.is_some() {
            out.push((prefix.clone(), sides));
        }
        let subtree = |side: Option<Entry>| side.filter(|(_, is_tree, _)| *is_tree).map(|(id, _, _)| id);
        let (old_tree, new_tree) = (subtree(before), subtree(after));
        if old_tree.is_some() || new_tree.is_some() {
            prefix.push(b'/');
            tree_changes(trees, repo, old_tree, new_tree, prefix, out)?;
        }
        prefix.truncate(len);
    }
    Ok(())
}

/// How many bytes each path's file grows by (new size − old size), from the object headers. Two
/// diffs with the same lines at a path grow it by the same count (context lines are on both
/// sides; the added and removed lines are the same bytes), so another growth rules a candidate
/// out without a diff: the common case of two sessions editing the same file differently. `None`
/// when a size cannot be read that way (a submodule's commit lives in another repository, an
/// object may be missing): the diff then decides.
pub(super) fn growth(repo: &Repository, sides: &[(Side, Side)]) -> Option<Vec<i64>> {
    const GITLINK: i32 = 0o160000;
    let odb = repo.odb().ok()?;
    let size = |side: &Side| -> Option<i64> {
        match side {
            None => Some(0),
            Some((_, mode)) if *mode == GITLINK => None,
            Some((id, _)) => odb.read_header(*id).ok().and_then(|(size, _)| i64::try_from(size).ok()),
        }
    };
    sides.iter().map(|(before, after)| Some(size(after)? - size(before)?)).collect()
}
