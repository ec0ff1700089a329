//! What an instance holds on disk: its data directory outside the mounts, and per mount the work
//! (tracked and untracked files) and what git ignores, of which the rebuildable part is what
//! `jackin-purge --slim` takes back. Nothing outside the home's data directory is counted.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::base::disk_usage::SizeWalk;
use crate::engines::git;
use crate::protocol::assessment::{Disk, MountAssessment, MountDisk};
use crate::state::names::InstanceName;
use crate::state::store::Store;

/// Measures the instance and each of its `mounts` (filling their `disk`); `None` when its data
/// directory cannot be read. `ignored` holds, beside each mount, the ignored entries its
/// assessment's status found (`None` when it found none to give: the mount's status is made here).
pub(crate) fn measure(
    store: &Store,
    name: &InstanceName,
    mounts: &mut [MountAssessment],
    ignored: &[Option<Vec<git::Ignored>>],
) -> Option<Disk> {
    let data_root = store.data_dir().canonicalize().ok()?;
    let instance_dir = store.instance_dir(name).canonicalize().ok()?;
    let walk = SizeWalk::on_filesystem_of(&data_root).ok()?;
    let mut disk = Disk::default();
    let mut roots: Vec<PathBuf> = Vec::new();
    for (at, mount) in mounts.iter_mut().enumerate() {
        let Some(root) = mount_root(&data_root, &mount.path) else { continue };
        let measured = measure_mount(&walk, &root, ignored.get(at).and_then(Option::as_deref));
        disk.work += measured.work;
        disk.ignored += measured.ignored;
        disk.rebuildable += measured.rebuildable;
        mount.disk = Some(measured);
        roots.push(root);
    }
    disk.data = walk.bytes(&instance_dir, &|path| roots.iter().any(|root| root == path));
    disk.total = disk.data + disk.work + disk.ignored;
    Some(disk)
}

/// A mount's work tree, resolved, when it is inside the home's data directory.
fn mount_root(data_root: &Path, path: &str) -> Option<PathBuf> {
    if path.is_empty() {
        return None;
    }
    Some(Path::new(path).canonicalize().ok()?).filter(|root| root.starts_with(data_root))
}

fn measure_mount(walk: &SizeWalk, root: &Path, assessed: Option<&[git::Ignored]>) -> MountDisk {
    // A mount git cannot read has no ignored part: all of it is work.
    let read = || git::Repo::open(root).ok().and_then(|repo| repo.ignored().ok()).unwrap_or_default();
    let entries = assessed.map_or_else(read, <[git::Ignored]>::to_vec);
    let ignored: Vec<(PathBuf, bool)> =
        entries.iter().filter_map(|e| Some((git::inside(root, e)?, e.rebuildable()))).collect();
    let skip: HashSet<&Path> = ignored.iter().map(|(path, _)| path.as_path()).collect();
    let mut disk = MountDisk { work: walk.bytes(root, &|path| skip.contains(path)), ..MountDisk::default() };
    for (path, rebuildable) in &ignored {
        let bytes = walk.bytes(path, &|_| false);
        disk.ignored += bytes;
        if *rebuildable {
            disk.rebuildable += bytes;
        }
    }
    disk
}
