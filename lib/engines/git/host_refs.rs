//! What a host repository's refs say, read once per run and shared by every session made from
//! it: a fleet of 10,000 worktrees of one repository needs its refs read once, each looked up by
//! name, and what each session's purge leaves behind counted from one table, not from a copy of
//! every ref per session (issue 69).

use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use git2::{Oid, Repository};

use super::owners::{Owners, SCRATCH_PREFIX};
use super::patches::{ranked, Memo, Ranked, Surviving};
use super::repo;

#[derive(Debug, Clone)]
pub(crate) struct HostRefs {
    /// The host's git directory, canonical, to check that a worktree belongs to it.
    pub(super) gitdir: PathBuf,
    /// Every ref that peels to a commit, by full name, sorted by name.
    pub(super) tips: Vec<(String, Oid)>,
    /// The host's own HEAD when detached.
    pub(super) detached_head: Option<Oid>,
    /// Detached HEADs of the host's worktrees, by registration directory name, sorted by it.
    pub(super) worktree_heads: Vec<(OsString, Oid)>,
    /// How many of the tips above (refs, HEAD, worktree HEADs) name each commit.
    named_by: HashMap<Oid, usize>,
    /// Every tip by name in the order a patch's place is told ([`ranked`]), made once.
    ranked: Ranked,
    /// The commits and patches this run read from the host's objects, shared by its worktrees.
    pub(super) memo: Arc<Memo>,
    /// Which sessions' tips alone reach each commit, worked out once enough sessions asked;
    /// `None` when that walk failed (each session then walks on its own).
    owners: Arc<OnceLock<Option<Owners>>>,
    /// How many sessions of this run asked for [`HostRefs::owners`].
    asked: Arc<AtomicUsize>,
}

/// The sessions of a run that walk on their own before the table of [`Owners`] is made: the
/// table walks every session's work and the kept refs down to where they meet, which a run of one
/// session (the exit hook's `jackin-assess C`) does not need; a fleet's view pays it once.
const WALKS_BEFORE_TABLE: usize = 16;

impl HostRefs {
    pub(super) fn read(path: &Path) -> Result<HostRefs, git2::Error> {
        let host = repo::open_checked(path)?;
        let mut tips = Vec::new();
        // The commit each object a ref names peels to, looked up once: a fleet's scratch branches
        // name a few commits many times over.
        let mut peeled: HashMap<Oid, Option<Oid>> = HashMap::new();
        for reference in host.references()? {
            // A ref whose name libgit2 refuses (the agent can write any file under `refs/`)
            // survives the purge all the same; it only does not count as surviving.
            let Ok(reference) = reference else { continue };
            let Ok(name) = reference.name().map(str::to_owned) else { continue };
            let commit = match reference.target() {
                Some(id) => *peeled.entry(id).or_insert_with(|| {
                    host.find_object(id, None).and_then(|o| o.peel_to_commit()).ok().map(|c| c.id())
                }),
                None => reference.peel_to_commit().ok().map(|c| c.id()),
            };
            if let Some(commit) = commit {
                tips.push((name, commit));
            }
        }
        tips.sort();
        let detached_head =
            if host.head_detached().unwrap_or(false) { host.head().ok().and_then(|h| h.target()) } else { None };
        let mut worktree_heads = worktree_detached_heads(&host);
        worktree_heads.sort();
        let mut refs = HostRefs {
            gitdir: canonical(host.path()),
            tips,
            detached_head,
            worktree_heads,
            named_by: HashMap::new(),
            ranked: Ranked::default(),
            memo: Arc::default(),
            owners: Arc::default(),
            asked: Arc::default(),
        };
        for id in refs.all_tips().collect::<Vec<_>>() {
            *refs.named_by.entry(id).or_default() += 1;
        }
        refs.ranked = ranked(refs.named_tips());
        Ok(refs)
    }

    /// The commit the ref `name` names, if it is one of the host's.
    pub(super) fn tip(&self, name: &str) -> Option<Oid> {
        let at = self.tips.binary_search_by(|(tip, _)| tip.as_str().cmp(name)).ok()?;
        Some(self.tips[at].1)
    }

    /// The detached HEAD of the worktree registered under `dir`.
    fn worktree_head(&self, dir: &OsStr) -> Option<Oid> {
        let at = self.worktree_heads.binary_search_by(|(name, _)| name.as_os_str().cmp(dir)).ok()?;
        Some(self.worktree_heads[at].1)
    }

    /// Every ref and HEAD of the host, by name (`HEAD`, `worktrees/<name>/HEAD` for the HEADs).
    pub(super) fn named_tips(&self) -> Vec<(String, Oid)> {
        self.tips
            .iter()
            .cloned()
            .chain(self.detached_head.map(|id| ("HEAD".to_owned(), id)))
            .chain(self.worktree_heads.iter().map(|(dir, id)| (worktree_head_name(dir), *id)))
            .collect()
    }

    pub(super) fn all_tips(&self) -> impl Iterator<Item = Oid> + '_ {
        self.tips
            .iter()
            .map(|(_, id)| *id)
            .chain(self.detached_head)
            .chain(self.worktree_heads.iter().map(|(_, id)| *id))
    }

    /// The commits that survive the purge of `worktree`: every host ref but its scratch branch,
    /// the host's HEAD, and the HEADs of the host's other worktrees. Each commit once, counted
    /// from the table of the whole host, so that a session of a fleet costs what its own tips do.
    pub(super) fn surviving_purge_of(&self, worktree: &Repository, scratch_ref: &str) -> Vec<Oid> {
        let own: Vec<Oid> = self.own_tips(worktree, scratch_ref).into_iter().map(|(_, id)| id).collect();
        self.named_by
            .iter()
            .filter(|(id, count)| **count > own.iter().filter(|o| o == id).count())
            .map(|(id, _)| *id)
            .collect()
    }

    /// Whether `id` survives the purge of a session whose tips are `own`: a tip of the host
    /// names it that is not one of them ([`HostRefs::surviving_purge_of`], one commit at a time).
    pub(super) fn survives_purge(&self, own: &[(String, Oid)], id: Oid) -> bool {
        self.named_by.get(&id).is_some_and(|count| *count > own.iter().filter(|(_, o)| *o == id).count())
    }

    /// The table of which session tips alone reach which commits ([`Owners`]), read through
    /// `repo`'s objects the first time; `None` for the first [`WALKS_BEFORE_TABLE`] sessions that
    /// ask, and when it cannot be made. Either way a session's at-risk commits are the same (the
    /// table's generated histories check it), but under a clock skewed past git's slop, where the
    /// table may count more at risk than a session's own walk.
    pub(super) fn owners(&self, repo: &Repository) -> Option<&Owners> {
        if self.asked.fetch_add(1, Ordering::Relaxed) < WALKS_BEFORE_TABLE {
            return None;
        }
        self.owners
            .get_or_init(|| {
                let is_session_tip = |name: &str| name.starts_with(SCRATCH_PREFIX);
                let mut session: Vec<Oid> =
                    self.tips.iter().filter(|(n, _)| is_session_tip(n)).map(|(_, id)| *id).collect();
                session.extend(self.worktree_heads.iter().map(|(_, id)| *id));
                let mut kept: Vec<Oid> =
                    self.tips.iter().filter(|(n, _)| !is_session_tip(n)).map(|(_, id)| *id).collect();
                kept.extend(self.detached_head);
                for ids in [&mut session, &mut kept] {
                    ids.sort();
                    ids.dedup();
                }
                Owners::read(&self.memo.graph, repo, &session, &kept).ok()
            })
            .as_ref()
    }

    /// The same refs by name, to say where a patch was found, in the objects of `worktree`.
    pub(super) fn surviving_named<'r>(&self, worktree: &'r Repository, scratch_ref: &str) -> Surviving<'r> {
        Surviving::shared(worktree, self.ranked.clone(), self.own_tips(worktree, scratch_ref), self.memo.clone())
    }

    /// Every ref and HEAD of the host by name, in the host repository `host` (a clone's commits
    /// may be there as another patch).
    pub(super) fn surviving_in<'r>(&self, host: &'r Repository) -> Surviving<'r> {
        Surviving::shared(host, self.ranked.clone(), Vec::new(), self.memo.clone())
    }

    /// The tips a purge of `worktree` deletes: its scratch branch and its registration's HEAD.
    pub(super) fn own_tips(&self, worktree: &Repository, scratch_ref: &str) -> Vec<(String, Oid)> {
        let dir = worktree.path().file_name().unwrap_or_default();
        let scratch = self.tip(scratch_ref).map(|id| (scratch_ref.to_owned(), id));
        let head = self.worktree_head(dir).map(|id| (worktree_head_name(dir), id));
        scratch.into_iter().chain(head).collect()
    }
}

/// Whether a tip `own_tips` names is one the table of [`Owners`] labels: a scratch branch, or a
/// worktree's HEAD (a scratch branch named otherwise in a manifest is walked on its own).
pub(super) fn is_session_tip(name: &str) -> bool {
    name.starts_with(SCRATCH_PREFIX) || (name.starts_with("worktrees/") && name.ends_with("/HEAD"))
}

fn worktree_head_name(dir: &OsStr) -> String {
    format!("worktrees/{}/HEAD", dir.to_string_lossy())
}

/// Host refs per host path, for one run.
#[derive(Debug, Default)]
pub(crate) struct HostCache {
    hosts: Mutex<HashMap<PathBuf, Arc<Result<HostRefs, String>>>>,
}

impl HostCache {
    pub(crate) fn get(&self, path: &Path) -> Arc<Result<HostRefs, String>> {
        let mut hosts = self.hosts.lock().unwrap_or_else(|e| e.into_inner());
        hosts
            .entry(path.to_path_buf())
            .or_insert_with(|| Arc::new(HostRefs::read(path).map_err(|e| e.message().to_owned())))
            .clone()
    }
}

/// A detached HEAD of a worktree survives the purge of another one. Read straight from each
/// registration's HEAD file: opening every sibling worktree would cost a repository open each.
pub(super) fn worktree_detached_heads(host: &Repository) -> Vec<(OsString, Oid)> {
    let Ok(entries) = std::fs::read_dir(host.path().join("worktrees")) else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|entry| {
            let head = std::fs::read_to_string(entry.path().join("HEAD")).ok()?;
            let head = head.trim();
            let id = Oid::from_str(head).ok().filter(|_| head.len() == 40)?;
            Some((entry.file_name(), id))
        })
        .filter(|(_, id)| host.find_commit(*id).is_ok())
        .collect()
}

pub(super) fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}
