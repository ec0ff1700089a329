//! Saved work put back into a work tree, as recover and import both do it: the saved files
//! copied back as they were (never through a link of the checkout), the deleted ones removed,
//! and the changes the session had staged, read from the saved mount, for the index.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::base::copy::copy_entry;
use crate::engines::git::IndexChange;
use crate::protocol::inert::inert_name;
use crate::protocol::path_bytes::NameBytes;
use crate::services::saved_work::SavedMount;

/// One change to the recovered index, and whether it counts as a staged file (a renamed
/// file's old name going is part of the rename, not a file of its own).
pub(crate) struct PlannedChange {
    pub(crate) change: IndexChange,
    pub(crate) counted: bool,
}

/// A file the receipt names, as a plain relative path (anything else is refused).
fn receipt_name(text: &str, bytes: Option<&str>) -> Result<NameBytes> {
    let name = NameBytes::from_wire(text.to_owned(), bytes).map_err(anyhow::Error::msg)?;
    if name.as_path().components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
        anyhow::bail!("the receipt names {:?}, not a plain relative path: not written", name.text());
    }
    Ok(name)
}

/// What makes the recovered work tree's index the session's, from each file's `git status`
/// letters (XY: X is what the index held against the commit, Y what the work tree held against
/// the index): a staged deletion is removed; a new, changed or renamed entry whose work tree
/// matched the index is added as the work tree now holds it; one whose staged version the work
/// tree no longer had gets that version, saved under `index/`. Also the notes on what cannot be
/// staged again.
pub(crate) fn index_changes(dir: &Path, mount: &SavedMount) -> Result<(Vec<PlannedChange>, Vec<String>)> {
    let mut changes = Vec::new();
    let mut notes = Vec::new();
    for file in &mount.files {
        let name = receipt_name(&file.path, file.path_bytes.as_deref())?;
        let rel = name.as_path().to_path_buf();
        let mut letters = file.status.chars();
        let (x, y) = (letters.next().unwrap_or(' '), letters.next().unwrap_or(' '));
        match x {
            'D' => changes.push(PlannedChange { change: IndexChange::Removed(rel), counted: true }),
            'A' | 'M' | 'T' | 'R' => {
                if let Some(orig) = &file.orig_path {
                    let orig = receipt_name(orig, file.orig_path_bytes.as_deref())?;
                    let change = IndexChange::Removed(orig.as_path().to_path_buf());
                    changes.push(PlannedChange { change, counted: false });
                }
                let staged = mount.index_dir.as_ref().filter(|_| file.staged).map(|index| dir.join(index).join(&rel));
                let change = match (staged, &file.gitlink) {
                    (_, Some(id)) => IndexChange::Gitlink { path: rel, id: id.clone() },
                    (Some(source), None) => {
                        let meta = fs::symlink_metadata(&source)
                            .with_context(|| format!("the staged version {}", source.display()))?;
                        let mode = if meta.file_type().is_symlink() {
                            0o120000
                        } else if std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0 {
                            0o100755
                        } else {
                            0o100644
                        };
                        IndexChange::Blob { path: rel, source, mode }
                    }
                    (None, None) if y == ' ' && file.saved => IndexChange::AsInWorkTree(rel),
                    (None, None) => {
                        notes.push(format!(
                            "{}: its staged version was not saved (it could not be read): not staged again",
                            inert_name(&name.text())
                        ));
                        continue;
                    }
                };
                changes.push(PlannedChange { change, counted: true });
            }
            'U' => notes.push(format!(
                "{} was in conflict: the work tree has it as the session left it, the index the commit's version",
                inert_name(&name.text())
            )),
            _ => {}
        }
    }
    Ok((changes, notes))
}

/// The saved files into `worktree`, each as it was, over what the checkout wrote; the files the
/// session had deleted, deleted, and a renamed file's old name gone (unless a file of its own
/// came back there). Returns the `.git` files left out of saved directories ([`copy_back`]).
pub(crate) fn put_files_back(dir: &Path, mount: &SavedMount, worktree: &Path) -> Result<Vec<PathBuf>> {
    let files_dir = mount.files_dir.as_ref().map(|f| dir.join(f));
    let mut names = Vec::new();
    for file in &mount.files {
        names.push(receipt_name(&file.path, file.path_bytes.as_deref())?);
    }
    let mut left_out = Vec::new();
    for file in &mount.files {
        let Some(orig) = &file.orig_path else { continue };
        let orig = receipt_name(orig, file.orig_path_bytes.as_deref())?;
        if !names.contains(&orig) && real_dirs_to(worktree, orig.as_path(), false)? {
            remove_entry(&worktree.join(orig.as_path()))?;
        }
    }
    for (file, name) in mount.files.iter().zip(&names) {
        let rel = name.as_path();
        let dst = worktree.join(rel);
        // Never through a link: the checkout may hold a committed link where the session had a
        // directory (the saved files are what it had), and writing through it would write
        // wherever the link leads.
        if !real_dirs_to(worktree, rel, file.saved)? {
            continue;
        }
        remove_entry(&dst)?;
        if !file.saved {
            continue;
        }
        let Some(files_dir) = &files_dir else { continue };
        copy_back(&files_dir.join(rel), &dst, &mut left_out)?;
    }
    Ok(left_out.into_iter().filter_map(|p| p.strip_prefix(worktree).ok().map(Path::to_path_buf)).collect())
}

/// Whether every directory on the way from `root` to `rel` in it is a real directory (no link, no
/// file). With `make`, one that is not is made so: a link or a file there is removed (it is the
/// checkout's, inside the new work tree) and the directory made; then the answer is true.
fn real_dirs_to(root: &Path, rel: &Path, make: bool) -> Result<bool> {
    let mut at = root.to_path_buf();
    let parts: Vec<_> = rel.components().collect();
    for part in parts.iter().take(parts.len().saturating_sub(1)) {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => continue,
            _ if !make => return Ok(false),
            Ok(_) => fs::remove_file(&at).with_context(|| format!("replacing {}", at.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", at.display())),
        }
        fs::create_dir(&at).with_context(|| format!("creating {}", at.display()))?;
    }
    Ok(true)
}

/// Copies `src` to `dst` as [`copy_entry`] does, but for the `.git` files in a directory (a
/// submodule's checkout, saved whole): such a file links to the submodule's git directory in the
/// session's, which went with the session, and written back it makes every git command in the
/// recovered worktree fail ("not a git repository"). Each left out is added to `left_out`. A
/// `.git` directory (a repository of the agent's own) is copied as it is.
fn copy_back(src: &Path, dst: &Path, left_out: &mut Vec<PathBuf>) -> Result<()> {
    if !fs::symlink_metadata(src).is_ok_and(|m| m.is_dir()) {
        copy_entry(src, dst)?;
        return Ok(());
    }
    fs::create_dir_all(dst)?;
    for entry in fs::read_dir(src).with_context(|| format!("cannot read {}", src.display()))? {
        let entry = entry?;
        let to = dst.join(entry.file_name());
        if entry.file_name() == ".git" && entry.file_type()?.is_file() {
            left_out.push(to);
            continue;
        }
        copy_back(&entry.path(), &to, left_out)?;
    }
    Ok(())
}

/// Removes what is at `path` (a directory with what is in it), if anything.
fn remove_entry(path: &Path) -> Result<()> {
    if let Ok(meta) = fs::symlink_metadata(path) {
        if meta.is_dir() {
            fs::remove_dir_all(path).with_context(|| format!("replacing {}", path.display()))?;
        } else {
            fs::remove_file(path).with_context(|| format!("replacing {}", path.display()))?;
        }
    }
    Ok(())
}
