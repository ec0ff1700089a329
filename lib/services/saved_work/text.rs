//! `RECEIPT.txt`: what a quarantine holds and how to bring it back by hand, for a person who
//! will `cat` it.

use std::path::Path;

use super::{Receipt, SavedMount};
use crate::protocol::inert::inert_name;

pub(super) fn receipt_text(receipt: &Receipt, dir: &Path) -> String {
    let d = dir.display();
    let mut t = format!(
        "jackin-purge saved the unfinished work of {} before deleting it.\n\
         Saved {}; kept until {} (then `jackin-purge --expire-quarantine` deletes it).\n\
         What was at risk: {}\n\n\
         Put it all back with one command (refs jackin/recovered/..., a new worktree):\n  \
         jackin-restore --recover {d}\n\
         or by hand, as below.\n",
        receipt.identity.container_base, receipt.saved_at, receipt.expires_at, receipt.summary
    );
    if let Some(tree) = &receipt.git_tree {
        t.push_str(&format!(
            "\nThe isolation records could not be read, so no mount could be assessed: the whole\n\
             git/ tree of the instance (every worktree and clone) was moved to {d}/{tree}/\n"
        ));
    }
    for m in &receipt.mounts {
        t.push_str(&mount_text(m, dir));
    }
    t
}

/// One mount's part of [`receipt_text`]: what was saved where, and how to bring it back by hand.
fn mount_text(m: &SavedMount, dir: &Path) -> String {
    let d = dir.display();
    let mut t = format!("\n{} ({}, was {})\n", m.mount_dst, m.isolation, m.path);
    let repo = m.original_src.as_deref().unwrap_or("<a clone of the repository>");
    if let (Some(bundle), Some(contents)) = (&m.bundle, &m.bundle_contents) {
        t.push_str(&format!("  {} commits in {d}/{bundle}\n", contents.commits));
        for (name, id) in &contents.refs {
            let origin = if contents.from_reflog.contains(name) { " (from the reflog)" } else { "" };
            t.push_str(&format!("    {name} {id}{origin}\n"));
        }
        for integrated in &m.integrated {
            let short = |id: &str| id.chars().take(12).collect::<String>();
            t.push_str(&format!(
                "    {} was integrated as {} on {}: saved all the same\n",
                short(&integrated.commit),
                short(&integrated.as_commit),
                integrated.into
            ));
        }
        t.push_str(&format!(
            "  bring them back (into {repo} or any clone that has the prerequisites):\n    \
             git bundle verify {d}/{bundle}\n    \
             git fetch {d}/{bundle} 'refs/*:refs/recovered/*'\n"
        ));
    }
    for sub in &m.submodules {
        let b = &sub.bundle;
        t.push_str(&format!(
            "  submodule {}: {} commits in {d}/{b}\n  bring them back (in the submodule of a checkout):\n    \
             git -C <your checkout>/{} fetch {d}/{b} 'refs/*:refs/recovered/*'\n",
            inert_name(&sub.path),
            sub.bundle_contents.commits,
            inert_name(&sub.path)
        ));
    }
    if let Some(files_dir) = &m.files_dir {
        t.push_str(&format!("  dirty and untracked files, as they were, in {d}/{files_dir}/\n"));
        for f in &m.files {
            let note = match (f.saved, f.staged) {
                (_, true) => " (and its staged version)",
                (true, false) => "",
                (false, false) => " (deleted: nothing to save)",
            };
            let from = f.orig_path.as_deref().map_or(String::new(), |o| format!(" (renamed from {})", inert_name(o)));
            t.push_str(&format!("    {} {}{from}{note}\n", f.status, inert_name(&f.path)));
        }
        t.push_str(&format!("  bring them back: cp -a {d}/{files_dir}/. <your checkout>/\n"));
        if let Some(index_dir) = &m.index_dir {
            t.push_str(&format!(
                "  staged versions the work tree no longer had (marked staged above) in {d}/{index_dir}/\n"
            ));
        }
    }
    if let Some(tree) = &m.tree {
        t.push_str(&format!("  the whole directory is in {d}/{tree}\n"));
    }
    if let Some(modules) = &m.modules {
        t.push_str(&format!("  its submodules' git directories are in {d}/{modules}/\n"));
    }
    if let Some(note) = &m.note {
        t.push_str(&format!("  note: {note}\n"));
    }
    t
}
