//! What `jackin-restore --import` accepts of an archive before it writes anything: the archive
//! comes from another host, written there from files the agent wrote, so every name, path, ref
//! and object id in it is hostile until checked here (docs/threat-model.md, "Archives").
//!
//! - the archive's own names ([`Layout::check`]): only the names an export writes, the session's
//!   structural directories real directories (never a link the import would write through);
//! - every path its JSON names ([`Layout::dir`], [`Layout::entry`]): a plain relative name of a
//!   part the archive holds, under directories the archive holds (never `/`, `..` or a link);
//! - every ref it would make ([`shared_ref`], [`branch`]): a valid name under `refs/heads/` or
//!   `refs/tags/`, nothing else;
//! - every object id ([`object_id`]): 40 or 64 hexadecimal digits.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use anyhow::Result;

use crate::base::exit::Exit;
use crate::engines::git::valid_ref_name;
use crate::extras::moves::archive::{self, Verified};
use crate::extras::moves::archive::{Part, PartKind};
use crate::extras::moves::export::ExportedMount;
use crate::extras::moves::export::{CONTINUITY_ENTRY, EXPORT_ENTRY, ISOLATION_ENTRY, MANIFEST_ENTRY, MOUNTS_ENTRY};
use crate::protocol::inert::inert_name;
use crate::protocol::path_bytes::NameBytes;
use crate::state::continuity::Continuity;
use crate::state::model::Manifest;
use crate::state::names::InstanceName;
use crate::state::store::Store;
use crate::state::store::AUTH_SLOTS;

/// An import refused: nothing written (exit 3).
pub(super) fn refuse(file: &Path, why: std::fmt::Arguments<'_>) -> anyhow::Error {
    Exit::BadInput.err(format_args!("{}: {why}; nothing was imported", file.display()))
}

/// The archive's parts by name, as the reading found them (each checked against the index).
pub(super) struct Layout<'a> {
    file: &'a Path,
    kinds: BTreeMap<PathBuf, PartKind>,
}

/// The directories of the session an export writes under `instance/`, whose contents are the
/// agent's (any name, any kind) but which must themselves be directories: jackin binds them into
/// the container at a resume, so a link there would bind whatever it names.
fn session_dir(name: &str) -> bool {
    name == "home" || name == "state" || AUTH_SLOTS.contains(&name)
}

impl<'a> Layout<'a> {
    pub(super) fn new(file: &'a Path, parts: &[Part]) -> Result<Self> {
        let mut kinds = BTreeMap::new();
        for part in parts {
            let name = NameBytes::from_wire(part.path.clone(), part.path_bytes.as_deref())
                .map_err(|e| refuse(file, format_args!("an entry's name: {e}")))?;
            kinds.insert(name.as_path().to_path_buf(), part.kind);
        }
        Ok(Layout { file, kinds })
    }

    /// Every name of the archive is one an export writes: `export.json`; `instance/` with
    /// jackin's three files in `instance/.jackin/` and the session's directories (the agent home,
    /// `state/`, the auth slots) as directories; `mounts/` with a directory per mount. Nothing
    /// else: no `instance/git` (the mounts are made anew from their saves), no purge mark, no
    /// link where the import or a resume would go through it.
    pub(super) fn check(&self) -> Result<()> {
        let kept = [MANIFEST_ENTRY, ISOLATION_ENTRY, CONTINUITY_ENTRY];
        for (name, kind) in &self.kinds {
            let parts: Vec<&str> = name.components().map(|c| c.as_os_str().to_str().unwrap_or("\u{fffd}")).collect();
            let dir = *kind == PartKind::Dir;
            let allowed = match parts.as_slice() {
                [one] if *one == EXPORT_ENTRY => *kind == PartKind::File,
                ["instance"] | ["instance", ".jackin"] => dir,
                ["instance", ".jackin", _] => *kind == PartKind::File && kept.contains(&name.to_str().unwrap_or("")),
                ["instance", top] => dir && session_dir(top),
                ["instance", top, ..] => session_dir(top),
                [mounts] | [mounts, _] if *mounts == MOUNTS_ENTRY => dir,
                [mounts, ..] if *mounts == MOUNTS_ENTRY => true,
                _ => false,
            };
            if !allowed {
                let shown = inert_name(&NameBytes::of_path(name).text()).into_owned();
                let what = match kind {
                    PartKind::File => "a file",
                    PartKind::Dir => "a directory",
                    PartKind::Symlink => "a symbolic link",
                };
                return Err(refuse(
                    self.file,
                    format_args!("the entry {shown:?} ({what}) is not one a session archive holds there"),
                ));
            }
        }
        Ok(())
    }

    /// `rel` (a name the archive's JSON gives, relative to `mounts/`) as a part of kind `kind`
    /// under `mounts/`, reached through directories of the archive only (never through a link
    /// or a file). Returns its path relative to the archive's root.
    fn part(&self, what: &str, rel: &NameBytes, kind: Option<PartKind>) -> Result<PathBuf> {
        let shown = || inert_name(&rel.text()).into_owned();
        let rel_path = rel.as_path();
        if !plain(rel_path) {
            return Err(refuse(self.file, format_args!("{what} {:?} is not a plain relative name", shown())));
        }
        let full = Path::new(MOUNTS_ENTRY).join(rel_path);
        let mut at = PathBuf::from(MOUNTS_ENTRY);
        let components: Vec<_> = rel_path.components().collect();
        for component in &components[..components.len() - 1] {
            at.push(component);
            if self.kinds.get(&at) != Some(&PartKind::Dir) {
                return Err(refuse(
                    self.file,
                    format_args!("{what} {:?} is not under directories of the archive", shown()),
                ));
            }
        }
        match (self.kinds.get(&full), kind) {
            (Some(found), Some(wanted)) if *found != wanted => {
                Err(refuse(self.file, format_args!("{what} {:?} is not a {}", shown(), kind_word(wanted))))
            }
            (Some(_), _) => Ok(full),
            (None, _) => Err(refuse(self.file, format_args!("{what} {:?} is not in the archive", shown()))),
        }
    }

    /// Every part fits in a path unpacked under `root` (the staging directory): a name too deep
    /// for the system's calls there is refused, not left half-written.
    pub(super) fn check_depth(&self, root: &Path) -> Result<()> {
        for name in self.kinds.keys() {
            within_path_max(root, name).map_err(|n| {
                let shown = inert_name(&NameBytes::of_path(name).text()).into_owned();
                refuse(self.file, format_args!("the entry {shown:?} is too deep to be unpacked here ({n})"))
            })?;
        }
        Ok(())
    }

    /// A directory the archive's JSON names (a mount's `files_dir`, `index_dir`).
    pub(super) fn dir(&self, what: &str, rel: &str) -> Result<PathBuf> {
        self.part(what, &NameBytes::new(rel.as_bytes()), Some(PartKind::Dir))
    }

    /// A file the archive's JSON names (a bundle).
    pub(super) fn file(&self, what: &str, rel: &str) -> Result<PathBuf> {
        self.part(what, &NameBytes::new(rel.as_bytes()), Some(PartKind::File))
    }

    /// An entry of any kind under a directory the JSON names (a saved file, saved as a file, a
    /// link or a directory), `dir` relative to `mounts/`: a save lists a file as saved only when
    /// it copied it (or a directory holding it).
    pub(super) fn entry(&self, what: &str, dir: &str, rel: &NameBytes) -> Result<PathBuf> {
        let joined = NameBytes::of_path(&Path::new(dir).join(rel.as_path()));
        if !plain(rel.as_path()) {
            let shown = inert_name(&rel.text()).into_owned();
            return Err(refuse(self.file, format_args!("{what} {shown:?} is not a plain relative name")));
        }
        self.part(what, &joined, None)
    }

    /// A staged version: a file or a link under the mount's `index_dir`.
    pub(super) fn staged(&self, what: &str, dir: &str, rel: &NameBytes) -> Result<PathBuf> {
        let found = self.entry(what, dir, rel)?;
        match self.kinds.get(&found) {
            Some(PartKind::File | PartKind::Symlink) => Ok(found),
            _ => Err(refuse(
                self.file,
                format_args!("{what} {:?} is not a file or a link", inert_name(&rel.text()).into_owned()),
            )),
        }
    }
}

fn kind_word(kind: PartKind) -> &'static str {
    match kind {
        PartKind::File => "file",
        PartKind::Dir => "directory",
        PartKind::Symlink => "symbolic link",
    }
}

/// A non-empty path of plain components only (no `/` first, no `.` or `..`).
pub(super) fn plain(path: &Path) -> bool {
    !path.as_os_str().is_empty() && path.components().all(|c| matches!(c, Component::Normal(_)))
}

use crate::base::os::PATH_MAX;

/// `rel` under `root` as a path the system's calls take; else what it would be.
pub(super) fn within_path_max(root: &Path, rel: &Path) -> Result<(), String> {
    let len = root.as_os_str().len() + 1 + rel.as_os_str().len();
    match len < PATH_MAX {
        true => Ok(()),
        false => Err(format!("{len} bytes, {} at most", PATH_MAX - 1)),
    }
}

/// A ref an import may make in a repository of this host: a valid name under `refs/heads/` or
/// `refs/tags/` (never `refs/replace/`, `refs/notes/`, `refs/remotes/`, a pseudo-ref such as
/// `MERGE_HEAD`, or a name git would refuse).
pub(super) fn shared_ref(name: &str) -> bool {
    (name.starts_with("refs/heads/") || name.starts_with("refs/tags/")) && valid_ref_name(name)
}

/// A branch an import may check out or make: a valid name under `refs/heads/`.
pub(super) fn branch(name: &str) -> bool {
    name.starts_with("refs/heads/") && valid_ref_name(name)
}

/// An object id as git writes it: 40 (SHA-1) or 64 (SHA-256) hexadecimal digits.
pub(super) fn object_id(id: &str) -> bool {
    matches!(id.len(), 40 | 64) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The Docker resources an archive's manifest and recipe name are the session's own, by the
/// names jackin derives from its container name: a purge, a keep or a resume here acts on the
/// resources they name, so an archive that names another's (a container, a volume, jackin's
/// prewarmed sidecar) is refused. A session that adopted a prewarmed sidecar cannot move.
pub(super) fn check_docker_names(
    name: &InstanceName,
    manifest: &Manifest,
    continuity: &Continuity,
    file: &Path,
) -> Result<()> {
    let derived = crate::state::model::DockerNames::derived(name.as_str());
    let docker = &manifest.docker;
    let recipe = continuity.recipe.as_ref();
    let named: Vec<(&str, Option<&str>, String)> = vec![
        ("role container", Some(docker.role_container.as_str()), derived.role_container.clone()),
        ("sidecar", docker.dind_container.as_deref(), derived.dind_container.clone().unwrap_or_default()),
        ("network", Some(docker.network.as_str()), derived.network.clone()),
        ("certs volume", docker.certs_volume.as_deref(), derived.certs_volume.clone().unwrap_or_default()),
        ("recipe's role container", recipe.map(|r| r.role.spec.name.as_str()), derived.role_container.clone()),
        (
            "recipe's sidecar",
            recipe.and_then(|r| r.sidecar.as_ref()).map(|s| s.spec.name.as_str()),
            derived.dind_container.clone().unwrap_or_default(),
        ),
        ("recipe's network", recipe.and_then(|r| r.network.as_ref()).map(|n| n.name.as_str()), derived.network.clone()),
        ("recipe's role network", recipe.and_then(|r| r.role.spec.network.as_deref()), derived.network.clone()),
        (
            "recipe's sidecar network",
            recipe.and_then(|r| r.sidecar.as_ref()).and_then(|s| s.spec.network.as_deref()),
            derived.network.clone(),
        ),
        (
            "recipe's certs volume",
            recipe.and_then(|r| r.certs_volume.as_deref()),
            derived.certs_volume.unwrap_or_default(),
        ),
    ];
    for (what, given, own) in named {
        if let Some(given) = given.filter(|g| *g != own) {
            let shown = crate::protocol::inert::inert_name(given).into_owned();
            return Err(refuse(
                file,
                format_args!("its {what} is {shown:?}, not {own}: an archive names only the session's own resources"),
            ));
        }
    }
    Ok(())
}

/// Every path a mount's save names is a part of the archive reached through its directories
/// only, every object id an id, the branch HEAD was on a branch (import_checks.rs): checked
/// before anything is decided, so nothing the archive names can lead a read or a write out of
/// the staging directory and the mount.
pub(super) fn check_saved(exported: &ExportedMount, layout: &Layout<'_>, mount: &Path, file: &Path) -> Result<()> {
    let saved = &exported.saved;
    let dst = crate::protocol::inert::inert_name(&saved.mount_dst).into_owned();
    if saved.tree.is_some() || saved.modules.is_some() {
        return Err(refuse(file, format_args!("{dst}: the save of an unreadable mount, which no export carries")));
    }
    if let Some(bundle) = &saved.bundle {
        layout.file(&format!("{dst}: its bundle"), bundle)?;
    }
    for sub in &saved.submodules {
        layout.file(&format!("{dst}: a submodule's bundle"), &sub.bundle)?;
    }
    let mut ids: Vec<&String> = saved.head.iter().chain(&exported.scratch_tip).collect();
    ids.extend(saved.submodules.iter().filter_map(|s| s.head.as_ref()));
    ids.extend(exported.changed_submodules.iter().map(|c| &c.head));
    ids.extend(saved.files.iter().filter_map(|f| f.gitlink.as_ref()));
    if let Some(bad) = ids.into_iter().find(|id| !object_id(id)) {
        let shown = crate::protocol::inert::inert_name(bad).into_owned();
        return Err(refuse(file, format_args!("{dst}: {shown:?} is not an object id")));
    }
    let branches =
        exported.head_branch.iter().chain(exported.changed_submodules.iter().filter_map(|c| c.head_branch.as_ref()));
    if let Some(bad) = branches.into_iter().find(|b| !branch(b)) {
        let shown = crate::protocol::inert::inert_name(bad).into_owned();
        return Err(refuse(file, format_args!("{dst}: HEAD was on {shown:?}, not a branch an import makes")));
    }
    let files_dir =
        saved.files_dir.as_deref().map(|d| layout.dir(&format!("{dst}: its files"), d).map(|_| d)).transpose()?;
    let index_dir = saved
        .index_dir
        .as_deref()
        .map(|d| layout.dir(&format!("{dst}: its staged versions"), d).map(|_| d))
        .transpose()?;
    for saved_file in &saved.files {
        let name = NameBytes::from_wire(saved_file.path.clone(), saved_file.path_bytes.as_deref())
            .map_err(|e| refuse(file, format_args!("{dst}: a saved file's name: {e}")))?;
        let orig = saved_file
            .orig_path
            .as_ref()
            .map(|o| NameBytes::from_wire(o.clone(), saved_file.orig_path_bytes.as_deref()));
        let orig = orig.transpose().map_err(|e| refuse(file, format_args!("{dst}: a saved file's name: {e}")))?;
        let shown = || crate::protocol::inert::inert_name(&name.text()).into_owned();
        if !plain(name.as_path()) || orig.as_ref().is_some_and(|o| !plain(o.as_path())) {
            return Err(refuse(file, format_args!("{dst}: the saved file {:?} is not a plain relative name", shown())));
        }
        for rel in std::iter::once(&name).chain(&orig) {
            within_path_max(mount, rel.as_path()).map_err(|n| {
                refuse(file, format_args!("{dst}: the saved file {:?} is too deep to be written here ({n})", shown()))
            })?;
        }
        match (saved_file.saved, files_dir) {
            (true, Some(dir)) => drop(layout.entry(&format!("{dst}: the saved file"), dir, &name)?),
            (true, None) => return Err(refuse(file, format_args!("{dst}: a saved file without a files directory"))),
            (false, _) => {}
        }
        let restaged = saved_file.staged
            && saved_file.gitlink.is_none()
            && matches!(saved_file.status.chars().next(), Some('A' | 'M' | 'T' | 'R'));
        if let (true, Some(dir)) = (restaged, index_dir) {
            layout.staged(&format!("{dst}: the staged version"), dir, &name)?;
        }
    }
    Ok(())
}

/// A bundle's refs: one under `refs/heads/` or `refs/tags/` is made in a repository here, so its
/// name must be one git accepts; the others are read by number or as HEAD, never made.
pub(super) fn check_tips(tips: &[(String, String)], dst: &str, file: &Path) -> Result<()> {
    let made = |n: &str| n.starts_with("refs/heads/") || n.starts_with("refs/tags/");
    match tips.iter().find(|(n, _)| made(n) && !shared_ref(n)) {
        Some((bad, _)) => {
            let shown = crate::protocol::inert::inert_name(bad).into_owned();
            let dst = crate::protocol::inert::inert_name(dst).into_owned();
            Err(refuse(file, format_args!("{dst}: its bundle has the ref {shown:?}, not a valid name")))
        }
        None => Ok(()),
    }
}

/// What an archive's files take unpacked (their sizes as its index gives them), with a margin,
/// must fit in the free space of the home's filesystem: refused (exit 3) before anything is
/// unpacked otherwise.
pub(super) fn check_free_space(store: &Store, file: &Path, verified: &Verified) -> Result<()> {
    let needed: u64 = verified.parts.iter().filter(|p| p.kind == archive::PartKind::File).map(|p| p.size).sum();
    let free = fs2::available_space(&store.roots.home).unwrap_or(u64::MAX);
    if !archive::fits(needed, free) {
        return Err(refuse(
            file,
            format_args!(
                "it takes {needed} bytes unpacked, and {} has {free} bytes free (less a margin of {} bytes)",
                store.roots.home.display(),
                archive::SPACE_MARGIN
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(path: &str, kind: PartKind) -> Part {
        Part { path: path.into(), path_bytes: None, kind, mode: 0o755, size: 0, sha256: None }
    }

    fn exported_layout() -> Vec<Part> {
        vec![
            part("export.json", PartKind::File),
            part("instance/.jackin/instance.json", PartKind::File),
            part("instance/home", PartKind::Dir),
            part("instance/home/.bashrc", PartKind::Symlink),
            part("instance/state", PartKind::Dir),
            part("instance/claude", PartKind::Dir),
            part("mounts", PartKind::Dir),
            part("mounts/0-app", PartKind::Dir),
            part("mounts/0-app/0-app.bundle", PartKind::File),
            part("mounts/0-app/files", PartKind::Dir),
            part("mounts/0-app/files/a", PartKind::Dir),
            part("mounts/0-app/files/a/b.txt", PartKind::File),
            part("mounts/0-app/files/link", PartKind::Symlink),
        ]
    }

    #[test]
    fn an_exports_own_names_pass_and_every_other_name_or_kind_is_refused() {
        let file = Path::new("a.tar.gz");
        Layout::new(file, &exported_layout()).unwrap().check().unwrap();
        let refused = [
            part("instance/git", PartKind::Symlink),
            part("instance/git", PartKind::Dir),
            part("instance/git/worktree/x", PartKind::File),
            part("instance/.jackin", PartKind::Symlink),
            part("instance/.jackin/purge.json", PartKind::File),
            part("instance/.jackin/instance.json", PartKind::Symlink),
            part("instance/home", PartKind::Symlink),
            part("instance/state", PartKind::File),
            part("instance/claude", PartKind::Symlink),
            part("instance/sockets", PartKind::Dir),
            part("instance", PartKind::Symlink),
            part("mounts", PartKind::Symlink),
            part("mounts/0-app", PartKind::Symlink),
            part("export.json", PartKind::Symlink),
            part("other.json", PartKind::File),
            part("data/jk-1/home", PartKind::Dir),
        ];
        for bad in refused {
            let mut parts: Vec<Part> = exported_layout().into_iter().filter(|p| p.path != bad.path).collect();
            let shown = format!("{} {:?}", bad.path, bad.kind);
            parts.push(bad);
            let err = Layout::new(file, &parts).unwrap().check().expect_err(&shown);
            assert_eq!(Exit::of(&err), Exit::BadInput, "{shown}");
            assert!(format!("{err:#}").contains("is not one a session archive holds"), "{shown}: {err:#}");
        }
    }

    #[test]
    fn a_path_the_json_names_is_a_part_of_its_kind_under_directories_of_the_archive() {
        let file = Path::new("a.tar.gz");
        let layout = Layout::new(file, &exported_layout()).unwrap();
        assert_eq!(layout.dir("files_dir", "0-app/files").unwrap(), Path::new("mounts/0-app/files"));
        assert!(layout.file("bundle", "0-app/0-app.bundle").is_ok());
        let name = |s: &str| NameBytes::new(s.as_bytes());
        assert!(layout.entry("a saved file", "0-app/files", &name("a/b.txt")).is_ok());
        assert!(layout.entry("a saved file", "0-app/files", &name("link")).is_ok());
        assert!(layout.entry("a saved file not in the archive", "0-app/files", &name("gone/x")).is_err());
        assert!(within_path_max(Path::new("/h"), Path::new(&"d/".repeat(2046))).is_ok());
        assert!(within_path_max(Path::new("/h"), Path::new(&"d/".repeat(2047))).is_err());
        let refused: [(&str, Result<PathBuf>); 10] = [
            ("absolute", layout.dir("files_dir", "/home/op/.ssh")),
            ("dot-dot", layout.dir("files_dir", "0-app/../../instance")),
            ("empty", layout.dir("files_dir", "")),
            ("a file as a directory", layout.dir("files_dir", "0-app/0-app.bundle")),
            ("missing", layout.file("bundle", "0-app/other.bundle")),
            ("a directory as a bundle", layout.file("bundle", "0-app/files")),
            ("under a link", layout.entry("a saved file", "0-app/files", &name("link/id_rsa"))),
            ("a dot-dot file", layout.entry("a saved file", "0-app/files", &name("../0-app.bundle"))),
            ("an absolute file", layout.entry("a saved file", "0-app/files", &name("/etc/passwd"))),
            ("a staged directory", layout.staged("a staged version", "0-app/files", &name("a"))),
        ];
        for (what, result) in refused {
            let err = result.expect_err(what);
            assert_eq!(Exit::of(&err), Exit::BadInput, "{what}");
        }
    }

    #[test]
    fn only_valid_branches_and_tags_are_made_and_ids_are_hex() {
        for good in ["refs/heads/main", "refs/heads/jackin/jk-1", "refs/tags/v1.0"] {
            assert!(shared_ref(good), "{good}");
        }
        assert!(branch("refs/heads/main") && !branch("refs/tags/v1"));
        for bad in [
            "refs/replace/0123456789012345678901234567890123456789",
            "refs/notes/commits",
            "refs/remotes/origin/main",
            "MERGE_HEAD",
            "HEAD",
            "refs/heads/a..b",
            "refs/heads/x.lock",
            "refs/heads/esc\u{1b}ape",
            "refs/heads/",
            "refs/heads/../../config",
        ] {
            assert!(!shared_ref(bad) && !branch(bad), "{bad:?}");
        }
        assert!(object_id(&"a".repeat(40)) && object_id(&"0".repeat(64)));
        for bad in ["", "abc", &"g".repeat(40), &"é".repeat(20), &"a".repeat(41)] {
            assert!(!object_id(bad), "{bad:?}");
        }
    }
}
