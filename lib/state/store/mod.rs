//! The host state on disk: where it lives, how it is read, and how it is written so that jackin
//! and these tools never see a half-written file or lose each other's updates (state.md).
//!
//! One owner for every path and file rule of a jackin home: `mod.rs` knows where each file lives
//! and reads and writes the index, manifests and isolation records; `files` how any file is
//! written (atomically, never through a link) and what its temp files are called; `locks` the
//! index lock and the launcher's name locks; `marks` the small per-instance files of the exit
//! modal and of an unfinished purge.

mod files;
mod locks;
mod marks;

pub(crate) use files::*;
pub(crate) use locks::*;
pub(crate) use marks::*;

use std::fs;
use std::io::ErrorKind;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use serde_json::Value;

use crate::base::exit::Exit;
use crate::state::model::{Index, IndexRow, Isolation, Manifest, Status};
use crate::state::names::InstanceName;

/// The two roots every tool works from (state.md, "Roots").
#[derive(Debug, Clone)]
pub struct Roots {
    pub home: PathBuf,
    pub config_dir: PathBuf,
}

impl Roots {
    /// Flags win; clap has already folded `JACKIN_HOME_DIR`/`JACKIN_CONFIG_DIR` into them. Both
    /// are made absolute here, once, against the working directory ([`absolute`]): every path a
    /// record carries is built on them, and the next process in a pipe may run elsewhere.
    pub(crate) fn resolve(home: Option<PathBuf>, config_dir: Option<PathBuf>) -> Result<Self> {
        let user_home = || {
            std::env::var_os("HOME")
                .map(PathBuf::from)
                .ok_or_else(|| Exit::Usage.err("HOME is not set: pass --home and --config-dir"))
        };
        let home = match home {
            Some(dir) => dir,
            None => user_home()?.join(".jackin"),
        };
        let config_dir = match config_dir {
            Some(dir) => dir,
            None => user_home()?.join(".config/jackin"),
        };
        Ok(Roots { home: absolute(&home)?, config_dir: absolute(&config_dir)? })
    }

    /// `<config-dir>/jackin-tools-hosts`: the hosts of `jackin-hosts --all-hosts`.
    pub(crate) fn hosts_file(&self) -> PathBuf {
        self.config_dir.join("jackin-tools-hosts")
    }
}

/// A path argument made absolute against the working directory, lexically (`std::path::absolute`):
/// no symbolic link is resolved and `..` stays, so it names exactly the files the path as given
/// names, from any working directory.
pub fn absolute(path: &Path) -> Result<PathBuf> {
    std::path::absolute(path).map_err(|e| {
        Exit::Unavailable.wrap(anyhow::Error::new(e).context(format!("cannot make {} absolute", path.display())))
    })
}

/// The agents' auth slots at the top of an instance's data directory (state.md, "Layout"):
/// credentials, never carried to another host unless asked (`jackin-keep --export --with-auth`).
pub(crate) const AUTH_SLOTS: [&str; 6] = ["claude", "codex", "amp", "kimi-code", "opencode", "grok"];

/// Credentials an agent home may hold, wherever in the home (`data/<c>/home/`) they are: each a
/// path that, when a path of the home ends with it, is that credential (a directory with what is
/// in it). Treated as the auth slots are.
pub(crate) const HOME_CREDENTIALS: [&str; 13] = [
    ".claude/.credentials.json",
    ".claude.json",
    ".codex/auth.json",
    ".config/gh",
    ".local/share/opencode/auth.json",
    ".local/share/amp/secrets.json",
    ".kimi/credentials",
    ".grok/auth.json",
    ".git-credentials",
    ".netrc",
    ".ssh",
    ".docker/config.json",
    ".npmrc",
];

/// Whether `rel`, a path inside an agent home, is one of its credentials ([`HOME_CREDENTIALS`]).
pub(crate) fn is_home_credential(rel: &Path) -> bool {
    HOME_CREDENTIALS.iter().any(|credential| rel.ends_with(credential))
}

/// How long an index update waits for another writer before giving up with "busy".
const LOCK_WAIT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone)]
pub struct Store {
    pub roots: Roots,
}

/// Opens a file the agent can write, for reading: never through a symbolic link (the operator's
/// file it names would be read, a device it names could act on being opened: `ELOOP`), never
/// blocking on a FIFO. The caller judges the file by the handle (`metadata`), not the path.
fn open_agent_written(path: &Path) -> std::io::Result<fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    fs::OpenOptions::new()
        .read(true)
        .custom_flags(crate::base::os::NOFOLLOW | crate::base::os::NONBLOCK | crate::base::os::CLOEXEC)
        .open(path)
}

/// The text of a small regular file the agent can write (opened as [`open_agent_written`] opens
/// it, judged by the handle), at most `max` bytes of it; `None` for a link, a FIFO, a device, a
/// directory, or text that is not UTF-8.
pub(crate) fn read_agent_text(path: &Path, max: u64) -> Option<String> {
    use std::io::Read;
    let file = open_agent_written(path).ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(max).read_to_string(&mut text).ok()?;
    Some(text)
}

/// The largest exit-action file read: jackin writes a JSON string of a word.
const EXIT_ACTION_MAX: u64 = 4096;

/// The largest `agent.toml` read: jackin writes a few KiB.
pub(crate) const AGENT_TOML_MAX: u64 = 1 << 20;

impl Store {
    /// A store over an existing jackin home; a missing home is "unavailable", never created.
    pub fn open(roots: Roots) -> Result<Self> {
        match fs::metadata(&roots.home) {
            Ok(meta) if meta.is_dir() => Ok(Store { roots }),
            Ok(_) => {
                Err(Exit::Unavailable.err(format_args!("jackin home {} is not a directory", roots.home.display())))
            }
            Err(e) => Err(Exit::Unavailable.wrap(anyhow::Error::new(e).context(format!(
                "cannot reach the jackin home {} (set --home or JACKIN_HOME_DIR)",
                roots.home.display()
            )))),
        }
    }

    /// The paths of another home's layout (the one an exported session came from): only its
    /// paths, never opened or checked.
    pub(crate) fn layout_of(home: PathBuf) -> Store {
        Store { roots: Roots { home, config_dir: PathBuf::new() } }
    }

    pub(crate) fn data_dir(&self) -> PathBuf {
        self.roots.home.join("data")
    }

    /// `<home>/events/warned.json`: the expiries jackin-reconcile has warned of, and until when.
    pub(crate) fn warned_path(&self) -> PathBuf {
        self.roots.home.join("events").join("warned.json")
    }

    /// `data/<container>/home/`: the agent's home (its conversation, history, plugins).
    pub(crate) fn agent_home_dir(&self, name: &InstanceName) -> PathBuf {
        self.instance_dir(name).join("home")
    }

    /// `data/<container>/state/`: the capsule's state (the exit screen's answer among it).
    pub(crate) fn state_dir(&self, name: &InstanceName) -> PathBuf {
        self.instance_dir(name).join("state")
    }

    /// The key this home's tools seal their assessments and decisions with (services/seal.rs):
    /// 32 random bytes, mode 0600, made by the first keep that needs it.
    pub(crate) fn seal_key_path(&self) -> PathBuf {
        self.roots.home.join("seal.key")
    }

    pub(crate) fn sockets_dir(&self) -> PathBuf {
        self.roots.home.join("sockets")
    }

    pub(crate) fn index_path(&self) -> PathBuf {
        self.data_dir().join("instances.json")
    }

    pub(crate) fn index_lock_path(&self) -> PathBuf {
        self.data_dir().join("instances.json.lock")
    }

    pub(crate) fn instance_dir(&self, name: &InstanceName) -> PathBuf {
        self.data_dir().join(name)
    }

    /// `data/<container>/.jackin/`: jackin's per-instance files and the tools' own.
    pub(crate) fn meta_dir(&self, name: &InstanceName) -> PathBuf {
        self.instance_dir(name).join(".jackin")
    }

    pub(crate) fn manifest_path(&self, name: &InstanceName) -> PathBuf {
        self.meta_dir(name).join("instance.json")
    }

    pub(crate) fn isolation_path(&self, name: &InstanceName) -> PathBuf {
        self.meta_dir(name).join("isolation.json")
    }

    pub(crate) fn name_lock_path(&self, name: &InstanceName) -> PathBuf {
        self.data_dir().join(format!("{name}.lock"))
    }

    pub(crate) fn socket_dir(&self, name: &InstanceName) -> PathBuf {
        self.sockets_dir().join(name)
    }

    /// `sockets/<container>/agent.toml`: the capsule's launch config, read by the role container
    /// when it starts.
    pub(crate) fn agent_toml_path(&self, name: &InstanceName) -> PathBuf {
        self.socket_dir(name).join("agent.toml")
    }

    /// `data/<container>/state/exit-action.json`: the in-container exit modal's choice.
    pub(crate) fn exit_action_path(&self, name: &InstanceName) -> PathBuf {
        self.state_dir(name).join("exit-action.json")
    }

    /// `data/<container>/.jackin/continuity.json`: the tools' own record of a kept session.
    pub(crate) fn continuity_path(&self, name: &InstanceName) -> PathBuf {
        self.meta_dir(name).join("continuity.json")
    }

    pub(crate) fn continuity_lock_path(&self, name: &InstanceName) -> PathBuf {
        self.meta_dir(name).join("continuity.lock")
    }

    /// `data/<container>/.jackin/purge.json` (see [`PurgeMark`]).
    pub(crate) fn purge_mark_path(&self, name: &InstanceName) -> PathBuf {
        self.meta_dir(name).join("purge.json")
    }

    /// `<home>/trash/`: where a purge renames directories before emptying them.
    pub(crate) fn trash_dir(&self) -> PathBuf {
        self.roots.home.join("trash")
    }

    /// `<home>/quarantine/`: work at risk saved before a purge deleted it.
    pub(crate) fn quarantine_root(&self) -> PathBuf {
        self.roots.home.join("quarantine")
    }

    /// Where the records of purged sessions are kept, beside the quarantines
    /// (services/session_record.rs).
    pub(crate) fn records_root(&self) -> PathBuf {
        self.roots.home.join("records")
    }

    /// `<home>/records/<container>/`: the record of the purged session `name`.
    pub(crate) fn session_record_dir(&self, name: &InstanceName) -> PathBuf {
        self.records_root().join(name.as_str())
    }

    /// `<home>/records/.partial-<container>-<pid>`: a record being written, renamed into place whole.
    pub(crate) fn session_record_partial(&self, name: &InstanceName, pid: u32) -> PathBuf {
        self.records_root().join(format!(".partial-{name}-{pid}"))
    }

    /// `data/<container>/<slot>/`: one of the agents' auth slots ([`AUTH_SLOTS`]).
    pub(crate) fn auth_slot_dir(&self, name: &InstanceName, slot: &str) -> PathBuf {
        self.instance_dir(name).join(slot)
    }

    /// Where jackin puts an isolated mount of `name`: `data/<c>/git/worktree/repo/<dst>/<c>` (or
    /// `git/clone/…`), `<dst>` the mount's container path without its leading slash. `None` for a
    /// destination that is not a plain absolute path (it would leave the data directory).
    pub(crate) fn mount_dir(&self, name: &InstanceName, isolation: &str, mount_dst: &str) -> Option<PathBuf> {
        let dst = Path::new(mount_dst).strip_prefix("/").ok()?;
        if dst.as_os_str().is_empty() || dst.components().any(|c| !matches!(c, std::path::Component::Normal(_))) {
            return None;
        }
        Some(self.instance_dir(name).join("git").join(isolation).join("repo").join(dst).join(name.as_str()))
    }

    /// `<home>/imports/`: where `jackin-move import` unpacks an archive before it moves the
    /// session into `data/` (never under `data/`, where a directory holding a manifest is an
    /// instance).
    pub(crate) fn imports_dir(&self) -> PathBuf {
        self.roots.home.join("imports")
    }

    /// `<home>/imports/.partial-<container>-<pid>`: the directory the import of `name` by the
    /// process `pid` unpacks into, removed when the import ends.
    pub(crate) fn import_staging_dir(&self, name: &InstanceName, pid: u32) -> PathBuf {
        self.imports_dir().join(format!(".partial-{name}-{pid}"))
    }

    /// Every import unpacking directory of `name` there is: one an import left when it was
    /// killed; a purge of the instance removes them (none is in use while the purge holds the
    /// session's claim, which an import holds while it unpacks).
    pub(crate) fn import_staging_dirs(&self, name: &InstanceName) -> Vec<PathBuf> {
        let prefix = format!(".partial-{name}-");
        let Ok(entries) = std::fs::read_dir(self.imports_dir()) else { return Vec::new() };
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .and_then(|n| n.strip_prefix(&prefix))
                    .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
            })
            .map(|e| e.path())
            .collect();
        dirs.sort();
        dirs
    }

    /// `<home>/cache/role-sources/<key>`: the bare repository restore's tier 3 fetches a role's
    /// source into, one per source URL (every byte but a letter or digit becomes `_`).
    pub(crate) fn role_source_cache(&self, source_url: &str) -> PathBuf {
        let key: String = source_url.bytes().map(|b| if b.is_ascii_alphanumeric() { b as char } else { '_' }).collect();
        self.roots.home.join("cache").join("role-sources").join(key)
    }

    /// The instance's `agent.toml`; `None` when there is none.
    ///
    /// The agent can write `sockets/<c>`, so only a regular file of at most [`AGENT_TOML_MAX`]
    /// bytes is read, never through a symbolic link (an operator's file it names would be copied
    /// into the launch recipe and written back where the container reads it) and never a FIFO or
    /// a device (which would block or never end): anything else is as good as no `agent.toml`.
    pub(crate) fn read_agent_toml(&self, name: &InstanceName) -> Result<Option<String>> {
        use std::io::Read;
        let path = self.agent_toml_path(name);
        if fs::symlink_metadata(self.socket_dir(name)).is_ok_and(|m| m.file_type().is_symlink()) {
            return Ok(None);
        }
        let file = match open_agent_written(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound || e.raw_os_error() == Some(crate::base::os::ELOOP) => {
                return Ok(None)
            }
            Err(e) => return Err(e).with_context(|| format!("reading {}", path.display())),
        };
        let meta = file.metadata().with_context(|| format!("reading {}", path.display()))?;
        if !meta.is_file() || meta.len() > AGENT_TOML_MAX {
            return Ok(None);
        }
        let mut text = String::new();
        file.take(AGENT_TOML_MAX).read_to_string(&mut text).with_context(|| format!("reading {}", path.display()))?;
        Ok(Some(text))
    }

    /// Writes `agent.toml` into a socket directory only the operator can enter (state.md).
    pub(crate) fn write_agent_toml(&self, name: &InstanceName, text: &str) -> Result<()> {
        use std::os::unix::fs::PermissionsExt;
        let dir = self.socket_dir(name);
        refuse_link(&dir)?;
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&dir)
            .with_context(|| format!("creating {}", dir.display()))?;
        fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))?;
        write_atomic(&self.agent_toml_path(name), text.as_bytes())
    }

    /// The exit-action file as found. `fresh` says whether a file written at that time may decide
    /// this session; a stale one is not read at all.
    pub(crate) fn read_exit_action(
        &self,
        name: &InstanceName,
        fresh: impl FnOnce(SystemTime) -> bool,
    ) -> ExitActionFile {
        use std::io::Read;
        let path = self.exit_action_path(name);
        // Opened once and judged by what was opened: a check of the path and a read of it later
        // could see two different files, as the agent can swap it in between.
        let file = match open_agent_written(&path) {
            Ok(file) => file,
            Err(e) if e.kind() == ErrorKind::NotFound => return ExitActionFile::Absent,
            Err(e) if e.raw_os_error() == Some(crate::base::os::ELOOP) => {
                return ExitActionFile::Unreadable("a symbolic link".into())
            }
            Err(e) => return ExitActionFile::Unreadable(e.to_string()),
        };
        let meta = match file.metadata() {
            Ok(meta) if meta.is_file() => meta,
            Ok(_) => return ExitActionFile::Unreadable("not a file".into()),
            Err(e) => return ExitActionFile::Unreadable(e.to_string()),
        };
        let Ok(written) = meta.modified() else { return ExitActionFile::Unreadable("no modification time".into()) };
        if !fresh(written) {
            return ExitActionFile::Stale;
        }
        // Bounded by the read itself, not by the length seen before it: the file may grow.
        let mut bytes = Vec::new();
        if let Err(e) = file.take(EXIT_ACTION_MAX + 1).read_to_end(&mut bytes) {
            return ExitActionFile::Unreadable(e.to_string());
        }
        if bytes.len() as u64 > EXIT_ACTION_MAX {
            return ExitActionFile::Unreadable("larger than any choice".into());
        }
        match parse_exit_choice(&bytes) {
            Some(choice) => ExitActionFile::Fresh(choice),
            None => ExitActionFile::Unreadable("neither \"keep\" nor \"discard\"".into()),
        }
    }

    /// Removes the exit-action file; one already gone is fine. jackin never clears it, so the tools
    /// do once a session is over: its choice must not decide a later one.
    pub(crate) fn clear_exit_action(&self, name: &InstanceName) -> Result<()> {
        let path = self.exit_action_path(name);
        match fs::remove_file(&path) {
            Err(e) if e.kind() != ErrorKind::NotFound => Err(e).with_context(|| format!("removing {}", path.display())),
            _ => Ok(()),
        }
    }

    /// The purge mark, when a purge of this instance started; an unreadable one counts as none,
    /// so the rerun checks the work again.
    pub(crate) fn read_purge_mark(&self, name: &InstanceName) -> Option<PurgeMark> {
        read_json(&self.purge_mark_path(name)).ok().flatten()
    }

    pub(crate) fn write_purge_mark(&self, name: &InstanceName, mark: &PurgeMark) -> Result<()> {
        self.refuse_linked(name)?;
        write_json_atomic(&self.purge_mark_path(name), mark)
    }

    /// Refuses to write through a data directory or its `.jackin/` that is a symbolic link: the
    /// target may be anywhere outside the home, and the tools write only inside it.
    pub(crate) fn refuse_linked(&self, name: &InstanceName) -> Result<()> {
        refuse_link(&self.instance_dir(name))?;
        refuse_link(&self.meta_dir(name))
    }

    /// The index; a missing file is an empty index (jackin creates it on first launch).
    pub fn read_index(&self) -> Result<Index> {
        let path = self.index_path();
        load_index(&path)?.map_err(|why| Exit::Unavailable.err(format_args!("{} is corrupt: {why}", path.display())))
    }

    /// Refuses an index a newer jackin wrote, before a tool acts on anything. An index that
    /// cannot be read or parsed is left to the step that needs it (jackin-reconcile mends it).
    pub(crate) fn refuse_newer_index(&self) -> Result<()> {
        let path = self.index_path();
        if let Ok(Some(bytes)) = index_bytes(&path) {
            let _corrupt_or_read = parse_index(&bytes, &path)?;
        }
        Ok(())
    }

    /// One read-modify-write of the index under its lock. `change` returns whether it changed
    /// anything; an unchanged index is not rewritten.
    pub fn update_index<T>(&self, change: impl FnOnce(&mut Index) -> Result<(T, bool)>) -> Result<T> {
        let _lock = IndexLock::acquire(&self.index_lock_path(), LOCK_WAIT)?;
        let mut index = self.read_index()?;
        let (value, changed) = change(&mut index)?;
        if changed {
            write_json_atomic(&self.index_path(), &index).context("writing the index")?;
        }
        Ok(value)
    }

    pub fn read_manifest(&self, name: &InstanceName) -> Result<Option<Manifest>> {
        read_json(&self.manifest_path(name))
    }

    pub fn write_manifest(&self, name: &InstanceName, manifest: &Manifest) -> Result<()> {
        self.refuse_linked(name)?;
        write_json_atomic(&self.manifest_path(name), manifest)
    }

    /// The isolation records; a missing file means none (an in-place session).
    pub fn read_isolation(&self, name: &InstanceName) -> Result<Isolation> {
        let path = self.isolation_path(name);
        let isolation = read_json::<Isolation>(&path)?.unwrap_or_default();
        if isolation.version != 1 {
            return Err(Exit::Unavailable.err(format_args!(
                "{}: unsupported isolation version {} (expected 1)",
                path.display(),
                isolation.version
            )));
        }
        Ok(isolation)
    }

    pub fn write_isolation(&self, name: &InstanceName, isolation: &Isolation) -> Result<()> {
        self.refuse_linked(name)?;
        write_json_atomic(&self.isolation_path(name), isolation)
    }

    /// A status change: the manifest first, then its index row (state.md), so a crash between the
    /// two leaves the authoritative file right and the row repairable.
    pub fn set_status(&self, name: &InstanceName, status: Status, now: &str) -> Result<Manifest> {
        self.set_status_after(name, status, now, || Ok(()))
    }

    /// [`Store::set_status`], with `first` (the tools' own record of why: the continuity file)
    /// written before the manifest. The index lock is taken before anything is written: a lock
    /// held past the wait is "busy" (exit 5) with nothing changed, never a manifest that says one
    /// status and a row that says another. `first` must not take the index lock. The row is made
    /// from the manifest as it is on disk once the lock is held, so that when jackin changes the
    /// same session at once, the row matches the last manifest written.
    pub fn set_status_after(
        &self,
        name: &InstanceName,
        status: Status,
        now: &str,
        first: impl FnOnce() -> Result<()>,
    ) -> Result<Manifest> {
        let _lock = IndexLock::acquire(&self.index_lock_path(), LOCK_WAIT)?;
        let mut manifest =
            self.read_manifest(name)?.ok_or_else(|| Exit::Unavailable.err(format_args!("{name}: no manifest")))?;
        first()?;
        manifest.status = status.into();
        manifest.updated_at = now.to_owned();
        self.write_manifest(name, &manifest)?;
        let mut index = self.read_index()?;
        let current = self.read_manifest(name)?.unwrap_or_else(|| manifest.clone());
        index.upsert(IndexRow::from_manifest(&current));
        write_json_atomic(&self.index_path(), &index).context("writing the index")?;
        Ok(manifest)
    }
}

/// What [`Store::read_index_mending`] did with an index that did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IndexRebuilt {
    /// The parse error.
    pub(crate) why: String,
    /// Where the unparsable index went (or would go, in a dry run).
    pub(crate) moved_to: PathBuf,
    /// The rows of the rebuilt index.
    pub(crate) rows: usize,
    pub(crate) dry_run: bool,
}

impl Store {
    /// Data directories whose names are instance names, with a manifest or not.
    pub(crate) fn instance_dirs(&self) -> Result<std::collections::BTreeSet<InstanceName>> {
        let data = self.data_dir();
        let mut dirs = std::collections::BTreeSet::new();
        let entries = match fs::read_dir(&data) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(dirs),
            Err(e) => return Err(e).with_context(|| format!("listing {}", data.display())),
        };
        for entry in entries {
            let entry = entry.with_context(|| format!("listing {}", data.display()))?;
            let Some(text) = entry.file_name().to_str().map(str::to_owned) else { continue };
            if crate::state::names::is_valid_name(&text) && entry.file_type().is_ok_and(|t| t.is_dir()) {
                dirs.insert(InstanceName::parse(&text)?);
            }
        }
        Ok(dirs)
    }

    /// The index, mended: one that does not parse is moved aside to
    /// `instances.json.corrupt-<time>` and rebuilt from the manifests of `dirs` (state.md: never
    /// silently replaced); a dry run only says so and works on the rebuilt index. An index whose
    /// `version` is not 1 is an error whatever its shape, and is never moved or rewritten.
    pub(crate) fn read_index_mending(
        &self,
        dirs: &std::collections::BTreeSet<InstanceName>,
        dry_run: bool,
    ) -> Result<(Index, Option<IndexRebuilt>)> {
        let path = self.index_path();
        let why = match load_index(&path)? {
            Ok(index) => return Ok((index, None)),
            Err(why) => why,
        };
        let rebuild = || {
            let mut index = Index::default();
            for name in dirs {
                if let Ok(Some(manifest)) = self.read_manifest(name) {
                    index.upsert(IndexRow::from_manifest(&manifest));
                }
            }
            index
        };
        let stamp = crate::base::time::now_rfc3339().replace([':', '-'], "");
        let moved_to = path.with_file_name(format!("instances.json.corrupt-{stamp}"));
        if dry_run {
            let index = rebuild();
            let rows = index.instances.len();
            return Ok((index, Some(IndexRebuilt { why, moved_to, rows, dry_run })));
        }
        let _lock = IndexLock::acquire(&self.index_lock_path(), LOCK_WAIT)?;
        // Another program may have rebuilt it while we waited for the lock, or a newer jackin
        // written its own: read again, version first.
        if let Ok(index) = load_index(&path)? {
            return Ok((index, None));
        }
        fs::rename(&path, &moved_to).with_context(|| format!("moving the corrupt index to {}", moved_to.display()))?;
        let index = rebuild();
        write_json_atomic(&path, &index).context("writing the rebuilt index")?;
        let rows = index.instances.len();
        Ok((index, Some(IndexRebuilt { why, moved_to, rows, dry_run })))
    }
}

/// The index file's bytes; `None` when there is none.
fn index_bytes(path: &Path) -> Result<Option<Vec<u8>>> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Exit::Unavailable.wrap(anyhow::Error::new(e).context(format!("cannot read {}", path.display())))),
    }
}

/// The index file: `Ok(Err(why))` when it is corrupt; a missing file is an empty index.
fn load_index(path: &Path) -> Result<std::result::Result<Index, String>> {
    match index_bytes(path)? {
        Some(bytes) => parse_index(&bytes, path),
        None => Ok(Ok(Index::default())),
    }
}

/// Parses an index, its `version` first: one that states any version but the JSON integer 1 is
/// a newer jackin's whatever else it holds, and an error (exit 3) before its shape is looked at,
/// so that no shape a newer jackin chooses can make it look corrupt and be mended. Only a file
/// that is not JSON, not an object or states no `version` (real-host.md), or a version 1 index
/// of a shape this version cannot read, is corrupt: `Ok(Err(why))`.
fn parse_index(bytes: &[u8], path: &Path) -> Result<std::result::Result<Index, String>> {
    let value: Value = match serde_json::from_slice(bytes) {
        Ok(value) => value,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let Some(version) = value.as_object().map(|top| top.get("version")) else {
        return Ok(Err("not a JSON object".into()));
    };
    match version {
        None => return Ok(Err("no version".into())),
        Some(version) if version.as_u64() == Some(1) => {}
        // Bad input, not unavailable: retrying cannot help, and the file belongs to whichever
        // jackin wrote it.
        Some(other) => {
            return Err(Exit::BadInput.err(format_args!(
                "{}: unsupported index version {} (expected 1; written by a newer jackin?); not touching it",
                path.display(),
                shown_version(other)
            )))
        }
    }
    Ok(serde_json::from_value::<Index>(value).map_err(|e| e.to_string()))
}

/// A `version` value as compact JSON, cut short: it is any value a newer jackin chose.
fn shown_version(version: &Value) -> String {
    const LONGEST: usize = 40;
    let text = version.to_string();
    match text.char_indices().nth(LONGEST) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

#[cfg(test)]
mod tests;

/// Runs `step` on `n` threads released by one barrier, so they do it at the same moment (the
/// store's race tests); their results in thread order.
#[cfg(test)]
fn at_once<T: Send>(n: usize, step: impl Fn() -> T + Sync) -> Vec<T> {
    let start = std::sync::Barrier::new(n);
    std::thread::scope(|s| {
        let racers: Vec<_> = (0..n)
            .map(|_| {
                s.spawn(|| {
                    start.wait();
                    step()
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    })
}
