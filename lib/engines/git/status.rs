//! The changed files of a work tree as `git status --porcelain=v1 -uall` lists them, read with
//! gitoxide's status: the tracked check and the untracked walk of one work tree run on threads of
//! their own, and paths are stat'ed relative to the work tree as git does (docs/performance.md,
//! "On real source trees"). Everything else git stays on git2.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use gix::bstr::{BString, ByteSlice};
use gix::diff::index::Change as Staged;
use gix::dir::entry::{Kind, Status as Found};
use gix::index::entry::{Flags, Mode};
use gix::status::index_worktree::Item as WorktreeItem;
use gix::status::plumbing::index_as_worktree::{Change as Unstaged, EntryStatus};
use gix::status::{Item, UntrackedFiles};

use super::WorkState;
use crate::protocol::assessment::FileChange;

/// The two letters of a path and, for a rename in the index, its original path.
#[derive(Default)]
struct Letters {
    index: Option<char>,
    worktree: Option<char>,
    conflicted: bool,
    orig_path: Option<String>,
}

pub(super) fn changed_files(workdir: &Path) -> Result<WorkState> {
    // git stats a work tree's files by paths relative to it; a path from the root costs the
    // kernel a lookup per component (a fifth of the run on a jackin data directory). The status
    // runs on a thread of its own with its own working directory (`unshare(CLONE_FS)`), so the
    // process's stays where it was.
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: unshare takes no pointers; it gives this thread its own cwd.
                if unsafe { libc::unshare(libc::CLONE_FS) } != 0 {
                    return Err(std::io::Error::last_os_error()).context("cannot give the status its own directory");
                }
                std::env::set_current_dir(workdir).with_context(|| format!("cannot enter {}", workdir.display()))?;
                changed_files_here()
            })
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

fn changed_files_here() -> Result<WorkState> {
    // git itself does not verify the index's checksum on reading (read-cache.c).
    let options = gix::open::Options::default().config_overrides(["index.skipHash=true", "index.threads=1"]);
    let repo = gix::open_opts(".", options).context("cannot open the work tree")?;
    let index = repo.index_or_empty().context("cannot read the index")?;
    let staged_possible = !index_matches_head(&repo, &index);
    let platform = repo
        .status(gix::progress::Discard)
        .context("cannot read the status configuration")?
        .untracked_files(UntrackedFiles::Files)
        .dirwalk_options(|walk| {
            walk.emit_ignored(Some(gix::dir::walk::EmissionMode::CollapseDirectory))
                .emit_pruned(false)
                .emit_empty_directories(false)
                .recurse_repositories(false)
        })
        .index(gix::worktree::IndexPersistedOrInMemory::Persisted(index))
        // As git: renames only between HEAD and the index; a deleted file and an untracked one
        // stay two entries in the work tree.
        .index_worktree_rewrites(None)
        .tree_index_track_renames(gix::status::tree_index::TrackRenames::AsConfigured);
    let mut by_path: BTreeMap<BString, Letters> = BTreeMap::new();
    let mut ignored = 0;
    let mut note = |item: Item| match item {
        Item::IndexWorktree(WorktreeItem::Modification { rela_path, status, .. }) => {
            let letters = by_path.entry(rela_path).or_default();
            match status {
                EntryStatus::Conflict { .. } => letters.conflicted = true,
                EntryStatus::Change(Unstaged::Removed) => letters.worktree = Some('D'),
                EntryStatus::Change(Unstaged::Type { .. }) => letters.worktree = Some('T'),
                EntryStatus::Change(Unstaged::Modification { .. } | Unstaged::SubmoduleModification(_)) => {
                    letters.worktree = Some('M')
                }
                // `git add -N`: new to the index, its content not added yet.
                EntryStatus::IntentToAdd => {
                    letters.index = Some('A');
                    letters.worktree = Some('M');
                }
                EntryStatus::NeedsUpdate(_) => {}
            }
        }
        Item::IndexWorktree(WorktreeItem::DirectoryContents { entry, .. }) => match entry.status {
            Found::Ignored(_) => ignored += 1,
            Found::Untracked if entry.disk_kind != Some(Kind::Untrackable) => {
                let mut path = entry.rela_path;
                if entry.disk_kind.is_some_and(|kind| kind.is_dir()) {
                    // A nested repository, listed whole as git lists it.
                    path.push(b'/');
                }
                let letters = by_path.entry(path).or_default();
                letters.index = Some('?');
                letters.worktree = Some('?');
            }
            Found::Untracked | Found::Pruned | Found::Tracked => {}
        },
        Item::IndexWorktree(WorktreeItem::Rewrite { .. }) => {}
        Item::TreeIndex(change) => match change {
            Staged::Addition { location, .. } => by_path.entry(location.into_owned()).or_default().index = Some('A'),
            Staged::Deletion { location, .. } => by_path.entry(location.into_owned()).or_default().index = Some('D'),
            Staged::Modification { location, previous_entry_mode, entry_mode, .. } => {
                let letter = if file_kind(previous_entry_mode) == file_kind(entry_mode) { 'M' } else { 'T' };
                by_path.entry(location.into_owned()).or_default().index = Some(letter);
            }
            Staged::Rewrite { source_location, location, copy, .. } => {
                let letters = by_path.entry(location.into_owned()).or_default();
                letters.index = Some(if copy { 'C' } else { 'R' });
                letters.orig_path = Some(source_location.to_str_lossy().into_owned());
            }
        },
    };
    if staged_possible {
        for item in platform.into_iter(Vec::<BString>::new()).context("cannot start the status")? {
            note(item.context("cannot read the status")?);
        }
    } else {
        // Nothing is staged: comparing HEAD's tree with the index, which reads every tree object
        // of HEAD, can only come back empty.
        for item in platform.into_index_worktree_iter(Vec::<BString>::new()).context("cannot start the status")? {
            note(Item::IndexWorktree(item.context("cannot read the status")?));
        }
    }
    let files = by_path
        .into_iter()
        .filter_map(|(path, letters)| {
            let status = if letters.conflicted {
                "UU".to_owned()
            } else {
                let (x, y) = (letters.index.unwrap_or(' '), letters.worktree.unwrap_or(' '));
                if x == ' ' && y == ' ' {
                    return None;
                }
                format!("{x}{y}")
            };
            Some(FileChange {
                status,
                path: path.to_str_lossy().into_owned(),
                orig_path: letters.orig_path,
                diff: None,
            })
        })
        .collect();
    Ok(WorkState { files, ignored })
}

/// A symlink, a submodule, or a file (executable or not): a change between two of these kinds is
/// a type change (`T`), within one a modification.
fn file_kind(mode: Mode) -> u8 {
    if mode == Mode::SYMLINK {
        1
    } else if mode == Mode::COMMIT {
        2
    } else {
        0
    }
}

/// Whether the index holds exactly HEAD's tree, told from the index's own cache of its tree ids
/// (the TREE extension git keeps, as `git status` uses it) without reading a tree object. `false`
/// whenever that cannot be told so cheaply: no HEAD, an invalidated cache, a conflict, or an
/// intent-to-add entry (which the cached trees leave out).
fn index_matches_head(repo: &gix::Repository, index: &gix::index::State) -> bool {
    let Ok(head_tree) = repo.head_tree_id() else { return false };
    let Some(cached) = index.tree() else { return false };
    cached.num_entries.is_some()
        && cached.id == head_tree.detach()
        && !index.entries().iter().any(|entry| entry.flags.contains(Flags::INTENT_TO_ADD) || entry.stage_raw() != 0)
}
