//! The archive of a session moved to another host: what `jackin-keep --export` writes and
//! `jackin-move import` reads (extras/moves/export/, extras/moves/import/).
//!
//! One gzip-compressed tar. Its first entry is `format.json` (the format and the tool that wrote
//! it), so a reader refuses an archive of a newer format before it reads anything else; its last
//! is `index.json`, every other entry's name, kind, mode, size and sha256 (of a file's bytes, of a
//! link's target). Between them, the parts, each as it was on disk: a symbolic link as a link, a
//! regular file with its mode and its holes (GNU sparse entries), names as bytes. A reader checks
//! every entry against the index and the gzip trailer's CRC and length: a truncated, damaged or
//! altered archive is refused with what is wrong.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufReader, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::base::exit::Exit;
use crate::engines::git::{read_bundle_header, BundleHeader};
use crate::protocol::path_bytes::NameBytes;

/// The format this code writes and reads.
pub(crate) const FORMAT: u64 = 1;
const FORMAT_ENTRY: &str = "format.json";
const INDEX_ENTRY: &str = "index.json";

#[derive(Debug, Clone, Serialize, Deserialize)]
struct FormatHeader {
    format: u64,
    written_by: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PartKind {
    File,
    Dir,
    Symlink,
}

/// One entry of the archive, as the index lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Part {
    /// Its name in the archive; one that is not UTF-8 has its bytes in `path_bytes`.
    pub(crate) path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path_bytes: Option<String>,
    pub(crate) kind: PartKind,
    /// The permission bits.
    pub(crate) mode: u32,
    /// A file's length (holes included).
    #[serde(default)]
    pub(crate) size: u64,
    /// A file's bytes, a link's target; nothing for a directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) sha256: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Index {
    format: u64,
    parts: Vec<Part>,
}

/// The archive being written, to a file of its own.
pub(crate) struct Writer {
    builder: tar::Builder<flate2::write::GzEncoder<File>>,
    parts: Vec<Part>,
    /// What was found but is not a file, a directory or a link (a socket, a FIFO): left out.
    pub(crate) skipped: Vec<String>,
}

impl Writer {
    /// A new archive at `path`, which must not exist (mode 0600: it holds the session's work).
    pub(crate) fn create(path: &Path, written_by: &str) -> Result<Writer> {
        let file = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(file, flate2::Compression::default()));
        builder.follow_symlinks(false);
        builder.sparse(true);
        let mut writer = Writer { builder, parts: Vec::new(), skipped: Vec::new() };
        let header = FormatHeader { format: FORMAT, written_by: written_by.to_owned() };
        writer.raw(FORMAT_ENTRY, &serde_json::to_vec_pretty(&header)?)?;
        Ok(writer)
    }

    fn raw(&mut self, name: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o600);
        header.set_mtime(now_secs());
        header.set_entry_type(tar::EntryType::Regular);
        self.builder.append_data(&mut header, name, bytes)?;
        Ok(())
    }

    /// A part made in memory (a file of jackin's, as JSON).
    pub(crate) fn add_bytes(&mut self, name: &Path, bytes: &[u8]) -> Result<()> {
        self.raw(name, bytes)?;
        self.parts.push(part(name, PartKind::File, 0o600, bytes.len() as u64, Some(sha256_hex(bytes))));
        Ok(())
    }

    /// `src` (a file, a link or a directory with what is in it) as `name`, never following a
    /// link; `leave_out` names (relative to `src`) what is not carried. Returns the bytes added.
    pub(crate) fn add_tree(&mut self, name: &Path, src: &Path, leave_out: &dyn Fn(&Path) -> bool) -> Result<u64> {
        self.add_entry(name, src, Path::new(""), leave_out)
    }

    fn add_entry(&mut self, name: &Path, src: &Path, rel: &Path, leave_out: &dyn Fn(&Path) -> bool) -> Result<u64> {
        if !rel.as_os_str().is_empty() && leave_out(rel) {
            return Ok(0);
        }
        let meta = match fs::symlink_metadata(src) {
            Ok(meta) => meta,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", src.display())),
        };
        let mode = meta.permissions().mode() & 0o7777;
        let file_type = meta.file_type();
        if file_type.is_symlink() {
            let target = fs::read_link(src)?;
            let mut header = tar::Header::new_gnu();
            header.set_metadata(&meta);
            header.set_entry_type(tar::EntryType::Symlink);
            header.set_size(0);
            self.builder.append_link(&mut header, name, &target)?;
            let digest = sha256_hex(target.as_os_str().as_bytes());
            self.parts.push(part(name, PartKind::Symlink, mode, 0, Some(digest)));
            Ok(0)
        } else if file_type.is_dir() {
            let mut header = tar::Header::new_gnu();
            header.set_metadata(&meta);
            header.set_entry_type(tar::EntryType::Directory);
            header.set_size(0);
            self.builder.append_data(&mut header, name, io::empty())?;
            self.parts.push(part(name, PartKind::Dir, mode, 0, None));
            let mut entries: Vec<_> = fs::read_dir(src)
                .with_context(|| format!("cannot read {}", src.display()))?
                .collect::<io::Result<_>>()?;
            entries.sort_by_key(|e| e.file_name());
            let mut bytes = 0;
            for entry in entries {
                let file_name = entry.file_name();
                bytes += self.add_entry(&name.join(&file_name), &entry.path(), &rel.join(&file_name), leave_out)?;
            }
            Ok(bytes)
        } else if file_type.is_file() {
            // Never through a link swapped in since the look (the agent can write these trees).
            let open = || {
                fs::OpenOptions::new()
                    .read(true)
                    .custom_flags(crate::base::os::NOFOLLOW | crate::base::os::NONBLOCK)
                    .open(src)
                    .with_context(|| format!("cannot read {}", src.display()))
            };
            let (digest, size) = hash_reader(open()?)?;
            self.builder.append_file(name, &mut open()?).with_context(|| format!("archiving {}", src.display()))?;
            self.parts.push(part(name, PartKind::File, mode, size, Some(digest)));
            Ok(size)
        } else {
            self.skipped.push(NameBytes::of_path(name).text());
            Ok(0)
        }
    }

    /// Writes the index, finishes the compression and syncs the file. Returns how many parts the
    /// archive holds.
    pub(crate) fn finish(mut self) -> Result<usize> {
        let count = self.parts.len();
        let index = Index { format: FORMAT, parts: std::mem::take(&mut self.parts) };
        self.raw(INDEX_ENTRY, &serde_json::to_vec(&index)?)?;
        let file = self.builder.into_inner()?.finish()?;
        file.sync_all()?;
        Ok(count)
    }
}

fn part(name: &Path, kind: PartKind, mode: u32, size: u64, sha256: Option<String>) -> Part {
    let bytes = NameBytes::of_path(name);
    Part { path: bytes.text(), path_bytes: bytes.wire_bytes(), kind, mode, size, sha256 }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// The sha256 and the length of what `reader` holds.
fn hash_reader(mut reader: impl Read) -> Result<(String, u64)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 1 << 16];
    let mut size = 0u64;
    loop {
        let n = reader.read(&mut buffer)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
        size += n as u64;
    }
    Ok((format!("{:x}", hasher.finalize()), size))
}

/// A reader that hashes and counts what passes through it.
struct Hashing<R> {
    inner: R,
    hasher: Sha256,
    size: u64,
}

impl<R: Read> Read for Hashing<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }
}

/// What a reading of an archive found, every part checked against its index.
pub(crate) struct Verified {
    /// The tool that wrote it.
    pub(crate) written_by: String,
    pub(crate) parts: Vec<Part>,
    /// The parts the caller asked to keep in memory (by name).
    pub(crate) kept: BTreeMap<String, Vec<u8>>,
    /// The header of each bundle (a part whose name ends in `.bundle`), by name.
    pub(crate) bundles: BTreeMap<String, BundleHeader>,
}

/// How far an archive may expand: its tar stream at most [`EXPANSION_RATIO`] times the archive's
/// size, or [`EXPANSION_FLOOR`] bytes when that is more. An export compresses text and leaves
/// packs and holes as they are (a sparse file is stored as its data), so a real session stays
/// far below it; a stream of zeros does not (docs/threat-model.md).
pub(crate) const EXPANSION_RATIO: u64 = 200;
pub(crate) const EXPANSION_FLOOR: u64 = 1 << 30;
/// What an unpacking leaves free on the home's filesystem, at least.
pub(crate) const SPACE_MARGIN: u64 = 256 << 20;

/// Whether `needed` bytes fit in `free` with [`SPACE_MARGIN`] to spare.
pub(crate) fn fits(needed: u64, free: u64) -> bool {
    needed.saturating_add(SPACE_MARGIN) <= free
}

/// A reader that fails once more than `limit` bytes have passed through it, and says so.
struct Bounded<R> {
    inner: R,
    left: u64,
    tripped: std::rc::Rc<std::cell::Cell<bool>>,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n as u64 > self.left {
            self.tripped.set(true);
            return Err(io::Error::other("it expands beyond its limit"));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

/// An archive refused: what is wrong, nothing written (exit 3).
fn refuse(file: &Path, why: std::fmt::Arguments<'_>) -> anyhow::Error {
    Exit::BadInput.err(format_args!("{}: {why}; refused, nothing was written", file.display()))
}

/// Reads the archive at `file` and checks it whole. The parts named by `keep` are held in
/// memory; with `unpack_into` (an empty directory) every other part is written there as it was
/// (a directory's own mode set once what is in it is written), else only read. Any damage,
/// truncation, entry the index does not list (or lists otherwise), or a format other than
/// [`FORMAT`], is an error (exit 3) that says what is wrong.
pub(crate) fn read(file: &Path, keep: &dyn Fn(&str) -> bool, unpack_into: Option<&Path>) -> Result<Verified> {
    let opened = File::open(file).with_context(|| format!("cannot open {}", file.display()))?;
    let limit = opened.metadata()?.len().saturating_mul(EXPANSION_RATIO).max(EXPANSION_FLOOR);
    let mut reading = Reading {
        file,
        keep,
        unpack_into,
        limit,
        tripped: std::rc::Rc::new(std::cell::Cell::new(false)),
        free: unpack_into.map_or(u64::MAX, |root| fs2::available_space(root).unwrap_or(u64::MAX)),
        unpacked: 0,
        verified: Verified {
            written_by: String::new(),
            parts: Vec::new(),
            kept: BTreeMap::new(),
            bundles: BTreeMap::new(),
        },
        dir_modes: Vec::new(),
    };
    let bounded = Bounded {
        inner: flate2::bufread::GzDecoder::new(BufReader::new(opened)),
        left: limit,
        tripped: reading.tripped.clone(),
    };
    let mut archive = tar::Archive::new(bounded);
    let mut index: Option<Index> = None;
    {
        let mut entries = archive.entries().map_err(|e| reading.damaged(&e))?;
        let first = match entries.next() {
            Some(entry) => entry.map_err(|e| reading.damaged(&e))?,
            None => return Err(refuse(file, format_args!("the archive is empty"))),
        };
        reading.format(first)?;
        for entry in entries {
            let mut entry = entry.map_err(|e| reading.damaged(&e))?;
            if index.is_some() {
                return Err(refuse(file, format_args!("an entry follows the index")));
            }
            if entry.path_bytes().as_ref() == INDEX_ENTRY.as_bytes() {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).map_err(|e| reading.damaged(&e))?;
                index = Some(
                    serde_json::from_slice(&bytes)
                        .map_err(|e| refuse(file, format_args!("{INDEX_ENTRY} does not parse: {e}")))?,
                );
                continue;
            }
            reading.part(entry)?;
        }
    }
    // The gzip trailer (CRC-32 and length) is read only at the very end: past the tar's own end.
    let mut rest = archive.into_inner();
    io::copy(&mut rest, &mut io::sink()).map_err(|e| reading.damaged(&e))?;
    // An export is one gzip member and nothing after it: bytes there are not the archive's.
    let mut after = rest.inner.into_inner();
    if !io::BufRead::fill_buf(&mut after).map_err(|e| reading.damaged(&e))?.is_empty() {
        return Err(refuse(file, format_args!("bytes follow the end of the archive")));
    }
    for (dir, mode) in reading.dir_modes.into_iter().rev() {
        fs::set_permissions(&dir, fs::Permissions::from_mode(mode))?;
    }
    let Some(index) = index else {
        return Err(refuse(file, format_args!("the archive ends before its index: truncated")));
    };
    check_against(file, &reading.verified.parts, &index.parts)?;
    Ok(reading.verified)
}

/// One read of an archive: what it was asked to keep or unpack, and what it has found so far.
struct Reading<'a> {
    file: &'a Path,
    keep: &'a dyn Fn(&str) -> bool,
    unpack_into: Option<&'a Path>,
    /// How far the archive may expand, and whether the stream stopped there.
    limit: u64,
    tripped: std::rc::Rc<std::cell::Cell<bool>>,
    /// The bytes free where it is unpacked, and the bytes unpacked so far.
    free: u64,
    unpacked: u64,
    verified: Verified,
    /// Each directory unpacked and its mode, set once everything under it is written.
    dir_modes: Vec<(PathBuf, u32)>,
}

impl Reading<'_> {
    /// A read that failed: past the expansion bound, or damage.
    fn damaged(&self, e: &dyn std::fmt::Display) -> anyhow::Error {
        let (file, limit) = (self.file, self.limit);
        match self.tripped.get() {
            true => refuse(
                file,
                format_args!(
                    "it expands to more than {limit} bytes ({EXPANSION_RATIO} times its size, at least \
                     {EXPANSION_FLOOR}): not a session archive of jackin-keep --export"
                ),
            ),
            false => refuse(file, format_args!("the archive is damaged or truncated ({e})")),
        }
    }

    /// The first entry: `format.json`, of a format this version reads.
    fn format(&mut self, first: tar::Entry<'_, impl Read>) -> Result<()> {
        let file = self.file;
        if first.path_bytes().as_ref() != FORMAT_ENTRY.as_bytes() {
            return Err(refuse(
                file,
                format_args!("not a session archive of jackin-keep --export (no {FORMAT_ENTRY})"),
            ));
        }
        let mut bytes = Vec::new();
        first.take(1 << 20).read_to_end(&mut bytes).map_err(|e| self.damaged(&e))?;
        let header: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| refuse(file, format_args!("{FORMAT_ENTRY} does not parse: {e}")))?;
        let format = header.get("format").and_then(serde_json::Value::as_u64);
        self.verified.written_by = header.get("written_by").and_then(|w| w.as_str()).unwrap_or("?").to_owned();
        match format {
            Some(FORMAT) => Ok(()),
            Some(newer) if newer > FORMAT => Err(refuse(
                file,
                format_args!(
                    "written in format {newer} by {} (a newer version); this one reads format {FORMAT}",
                    crate::protocol::inert::inert_name(&self.verified.written_by)
                ),
            )),
            _ => Err(refuse(file, format_args!("{FORMAT_ENTRY} names no format this version knows"))),
        }
    }

    /// One entry: a plain relative name of a kind an export writes, kept, unpacked or only
    /// hashed, and listed as a part.
    fn part(&mut self, mut entry: tar::Entry<'_, impl Read>) -> Result<()> {
        let file = self.file;
        let name_bytes = entry.path_bytes().into_owned();
        let name = PathBuf::from(std::ffi::OsStr::from_bytes(&name_bytes));
        // Only `a/b` as it is: no `..`, no root, and nothing the path's own reading would tidy
        // away (`a/./b`, `a//b`, `a/`), so the name checked is the name written.
        // A directory's name may end in the one `/` tar gives it.
        let is_dir = entry.header().entry_type() == tar::EntryType::Directory;
        let written = match name_bytes.strip_suffix(b"/") {
            Some(bare) if is_dir => bare,
            _ => &name_bytes[..],
        };
        let plain = name.components().all(|c| matches!(c, Component::Normal(_)))
            && written == name.components().collect::<PathBuf>().as_os_str().as_bytes();
        if name.as_os_str().is_empty() || !plain {
            let shown = NameBytes::of_path(&name).text();
            return Err(refuse(file, format_args!("the entry {shown:?} is not a plain relative name")));
        }
        let text = NameBytes::of_path(&name).text();
        let mode = entry.header().mode().map_err(|e| self.damaged(&e))? & 0o7777;
        let kind = match entry.header().entry_type() {
            tar::EntryType::Regular | tar::EntryType::GNUSparse | tar::EntryType::Continuous => PartKind::File,
            tar::EntryType::Directory => PartKind::Dir,
            tar::EntryType::Symlink => PartKind::Symlink,
            other => {
                return Err(refuse(file, format_args!("the entry {text:?} is of a kind never archived ({other:?})")))
            }
        };
        let target = match self.unpack_into {
            Some(root) if !(self.keep)(&text) => Some(fresh_target(file, root, &name)?),
            _ => None,
        };
        let (sha256, size) = match kind {
            PartKind::Dir => {
                if let Some(dst) = &target {
                    fs::create_dir(dst).with_context(|| format!("creating {}", dst.display()))?;
                    // Permission bits only: a set-id or sticky bit from another host's
                    // archive is not the operator's to give.
                    self.dir_modes.push((dst.clone(), mode & 0o777));
                }
                (None, 0)
            }
            PartKind::Symlink => {
                let link = entry.link_name_bytes().map(|l| l.into_owned()).unwrap_or_default();
                if let Some(dst) = &target {
                    std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&link), dst)
                        .with_context(|| format!("creating {}", dst.display()))?;
                }
                (Some(sha256_hex(&link)), 0)
            }
            PartKind::File => self.file_part(&mut entry, &text, target.as_deref())?,
        };
        let path_bytes = NameBytes::of_path(&name).wire_bytes();
        self.verified.parts.push(Part { path: text, path_bytes, kind, mode, size, sha256 });
        Ok(())
    }

    /// A regular file's digest and size: kept in memory, unpacked to `target`, or only hashed;
    /// a bundle's header read on the way.
    fn file_part(
        &mut self,
        entry: &mut tar::Entry<'_, impl Read>,
        text: &str,
        target: Option<&Path>,
    ) -> Result<(Option<String>, u64)> {
        let file = self.file;
        if (self.keep)(text) {
            let mut bytes = Vec::new();
            entry.read_to_end(&mut bytes).map_err(|e| self.damaged(&e))?;
            let digest = sha256_hex(&bytes);
            let size = bytes.len() as u64;
            self.verified.kept.insert(text.to_owned(), bytes);
            return Ok((Some(digest), size));
        }
        if let Some(dst) = target {
            self.unpacked = self.unpacked.saturating_add(entry.header().size().unwrap_or(u64::MAX));
            if !fits(self.unpacked, self.free) {
                let free = self.free;
                return Err(refuse(
                    file,
                    format_args!("it does not fit in the {free} bytes free where it is unpacked"),
                ));
            }
            // The permission bits (0o777) without set-id bits, as for directories.
            entry.set_preserve_permissions(false);
            entry.set_preserve_mtime(true);
            entry.unpack(dst).map_err(|e| self.damaged(&e))?;
            let (digest, size) = hash_reader(File::open(dst)?)?;
            if text.ends_with(".bundle") {
                let header = read_bundle_header(&mut BufReader::new(File::open(dst)?), text)
                    .map_err(|e| refuse(file, format_args!("{e:#}")))?;
                self.verified.bundles.insert(text.to_owned(), header);
            }
            return Ok((Some(digest), size));
        }
        let mut hashing = Hashing { inner: entry, hasher: Sha256::new(), size: 0 };
        if text.ends_with(".bundle") {
            let mut buffered = BufReader::new(&mut hashing);
            match read_bundle_header(&mut buffered, text) {
                Ok(header) => drop(self.verified.bundles.insert(text.to_owned(), header)),
                Err(e) if e.downcast_ref::<io::Error>().is_some() => return Err(self.damaged(&e)),
                Err(e) => return Err(refuse(file, format_args!("{e:#}"))),
            }
            io::copy(&mut buffered, &mut io::sink()).map_err(|e| self.damaged(&e))?;
        } else {
            io::copy(&mut hashing, &mut io::sink()).map_err(|e| self.damaged(&e))?;
        }
        Ok((Some(format!("{:x}", hashing.hasher.finalize())), hashing.size))
    }
}

/// Every part read is the index's, with the same kind, mode, size and sha256, and none is
/// missing.
fn check_against(file: &Path, read: &[Part], listed: &[Part]) -> Result<()> {
    let listed_by_name: BTreeMap<(&str, Option<&str>), &Part> =
        listed.iter().map(|p| ((p.path.as_str(), p.path_bytes.as_deref()), p)).collect();
    let inert = |p: &Part| crate::protocol::inert::inert_name(&p.path).into_owned();
    for part in read {
        match listed_by_name.get(&(part.path.as_str(), part.path_bytes.as_deref())) {
            None => return Err(refuse(file, format_args!("{} is not in the index", inert(part)))),
            Some(listed) if listed.sha256 != part.sha256 || listed.size != part.size => {
                return Err(refuse(
                    file,
                    format_args!("the sha256 of {} differs from the index's (altered or damaged)", inert(part)),
                ))
            }
            Some(listed) if listed.kind != part.kind || listed.mode != part.mode => {
                return Err(refuse(file, format_args!("{} is not what the index says it is", inert(part))))
            }
            Some(_) => {}
        }
    }
    if read.len() != listed.len() {
        let seen: std::collections::BTreeSet<(&str, Option<&str>)> =
            read.iter().map(|p| (p.path.as_str(), p.path_bytes.as_deref())).collect();
        let missing = listed.iter().find(|p| !seen.contains(&(p.path.as_str(), p.path_bytes.as_deref())));
        let what = missing.map(inert).unwrap_or_else(|| "an entry".into());
        return Err(refuse(file, format_args!("{what} is in the index but not in the archive")));
    }
    Ok(())
}

/// Where a part is unpacked under `root`: every directory on the way one the archive made (a
/// real directory, never a link), and nothing there yet.
fn fresh_target(file: &Path, root: &Path, name: &Path) -> Result<PathBuf> {
    let mut at = root.to_path_buf();
    let parts: Vec<_> = name.components().collect();
    for part in &parts[..parts.len() - 1] {
        at.push(part);
        match fs::symlink_metadata(&at) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                let shown = NameBytes::of_path(name).text();
                return Err(refuse(file, format_args!("the entry {shown:?} is under one that is not a directory")));
            }
            Err(_) => fs::create_dir_all(&at).with_context(|| format!("creating {}", at.display()))?,
        }
    }
    let dst = root.join(name);
    if fs::symlink_metadata(&dst).is_ok() {
        let shown = NameBytes::of_path(name).text();
        return Err(refuse(file, format_args!("the entry {shown:?} comes twice")));
    }
    Ok(dst)
}

/// A private directory the archive's parts are made or unpacked in (an export's saves, an
/// import's unpacked session), removed however the run ends.
pub(crate) struct Staging(pub(crate) PathBuf);

impl Staging {
    pub(crate) fn new(dir: PathBuf) -> Result<Staging> {
        fs::DirBuilder::new().mode(0o700).create(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
        Ok(Staging(dir))
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

/// Syncs `path` and the directory it is in.
pub(crate) fn sync(path: &Path) -> Result<()> {
    File::open(path)?.sync_all()?;
    if let Some(dir) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        File::open(dir)?.sync_all()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
