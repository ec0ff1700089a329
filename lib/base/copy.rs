//! Copying work as it is: a symlink as a link, a directory with what is in it, a regular file
//! with its mode and its holes. The quarantine saves changed files this way
//! (services/saved_work) and a recover puts them back (tools/restore/recover.rs).

use std::fs;
use std::io::ErrorKind;
use std::path::Path;

use anyhow::{Context, Result};

/// Copies `src` to `dst` as it is (not following a link); `false` when there is no `src`.
pub(crate) fn copy_entry(src: &Path, dst: &Path) -> Result<bool> {
    let meta = match fs::symlink_metadata(src) {
        Ok(meta) => meta,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", src.display())),
    };
    if meta.file_type().is_symlink() {
        std::os::unix::fs::symlink(fs::read_link(src)?, dst)?;
    } else if meta.is_dir() {
        fs::create_dir_all(dst)?;
        for entry in fs::read_dir(src)? {
            let entry = entry?;
            copy_entry(&entry.path(), &dst.join(entry.file_name()))?;
        }
    } else if meta.is_file() {
        copy_sparse(src, dst, &meta).with_context(|| format!("cannot copy {}", src.display()))?;
    }
    Ok(true)
}

/// Copies a regular file's data extents only (SEEK_DATA, SEEK_HOLE), so a hole stays a hole:
/// `fs::copy` writes a 4 GiB sparse disk image with a few bytes in it out as 4 GiB. A filesystem
/// that cannot say where the data is gets the whole file copied. The mode is copied, as
/// `fs::copy` does.
fn copy_sparse(src: &Path, dst: &Path, meta: &fs::Metadata) -> std::io::Result<()> {
    use rustix::fs::SeekFrom;
    use rustix::io::Errno;
    use std::io::{Read, Seek};
    let mut from = fs::File::open(src)?;
    let mut to = fs::File::create(dst)?;
    let len = meta.len();
    let mut at = 0;
    while at < len {
        let data = match rustix::fs::seek(&from, SeekFrom::Data(at)) {
            Ok(data) => data,
            // No data after `at`: the rest is a hole.
            Err(Errno::NXIO) => break,
            Err(Errno::INVAL | Errno::OPNOTSUPP) if at == 0 => {
                std::io::copy(&mut from, &mut to)?;
                break;
            }
            Err(e) => return Err(e.into()),
        };
        let hole = rustix::fs::seek(&from, SeekFrom::Hole(data))?;
        from.seek(std::io::SeekFrom::Start(data))?;
        to.seek(std::io::SeekFrom::Start(data))?;
        std::io::copy(&mut (&mut from).take(hole - data), &mut to)?;
        at = hole;
    }
    // The trailing hole, and a file that grew or shrank meanwhile cut to the size it had.
    to.set_len(len)?;
    fs::set_permissions(dst, meta.permissions())
}
