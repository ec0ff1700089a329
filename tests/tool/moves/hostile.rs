//! Archives nobody here wrote: an export of home A rewritten by a forger who also rewrites the
//! index (so every sha256 matches), then imported by home B. Each refusal is exit 3 with the
//! entry named, and leaves B's home, B's host repository and every directory outside them
//! exactly as they were (docs/threat-model.md, "Archives").

use super::*;

use jackin::protocol::path_bytes::NameBytes;
use serde_json::Value;

/// One part of an archive as a forger handles it.
#[derive(Clone, Debug)]
pub(super) struct Part {
    pub(super) name: Vec<u8>,
    pub(super) body: Body,
    pub(super) mode: u32,
}

#[derive(Clone, Debug)]
pub(super) enum Body {
    File(Vec<u8>),
    Dir,
    Link(Vec<u8>),
}

/// Every part of the archive but `format.json` and `index.json`, in its order (a sparse file
/// with its holes as zeros).
pub(super) fn parts_of(file: &Path) -> Vec<Part> {
    let tar = tar_of(file);
    let mut archive = tar::Archive::new(tar.as_slice());
    let mut parts = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path_bytes().into_owned();
        if name == b"format.json" || name == b"index.json" {
            continue;
        }
        let mode = entry.header().mode().unwrap() & 0o7777;
        let body = match entry.header().entry_type() {
            tar::EntryType::Directory => Body::Dir,
            tar::EntryType::Symlink => Body::Link(entry.link_name_bytes().unwrap().into_owned()),
            _ => {
                let mut bytes = Vec::new();
                entry.read_to_end(&mut bytes).unwrap();
                Body::File(bytes)
            }
        };
        parts.push(Part { name, body, mode });
    }
    parts
}

/// Writes `parts` as an archive the way an export does (`format.json` first, the index of every
/// part last, each sha256 right), gzip-compressed, to `to`.
pub(super) fn forge(parts: &[Part], to: &Path) {
    let gz = flate2::write::GzEncoder::new(fs::File::create(to).unwrap(), flate2::Compression::fast());
    let mut builder = tar::Builder::new(gz);
    let raw = |builder: &mut tar::Builder<_>, name: &str, bytes: &[u8]| {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o600);
        header.set_entry_type(tar::EntryType::Regular);
        builder.append_data(&mut header, name, bytes).unwrap();
    };
    raw(&mut builder, "format.json", br#"{"format": 1, "written_by": "a forger"}"#);
    let mut index = Vec::new();
    for part in parts {
        let name = Path::new(std::ffi::OsStr::from_bytes(&part.name));
        let mut header = tar::Header::new_gnu();
        header.set_mode(part.mode);
        let (kind, size, sha) = match &part.body {
            Body::File(bytes) => {
                header.set_size(bytes.len() as u64);
                header.set_entry_type(tar::EntryType::Regular);
                builder.append_data(&mut header, name, bytes.as_slice()).unwrap();
                ("file", bytes.len(), Some(sha256_hex(bytes)))
            }
            Body::Dir => {
                header.set_size(0);
                header.set_entry_type(tar::EntryType::Directory);
                builder.append_data(&mut header, name, std::io::empty()).unwrap();
                ("dir", 0, None)
            }
            Body::Link(target) => {
                header.set_size(0);
                header.set_entry_type(tar::EntryType::Symlink);
                builder.append_link(&mut header, name, std::ffi::OsStr::from_bytes(target)).unwrap();
                ("symlink", 0, Some(sha256_hex(target)))
            }
        };
        let bytes = NameBytes::new(part.name.clone());
        let mut listed = serde_json::json!({"path": bytes.text(), "kind": kind, "mode": part.mode, "size": size});
        if let Some(b64) = bytes.wire_bytes() {
            listed["path_bytes"] = b64.into();
        }
        if let Some(sha) = sha {
            listed["sha256"] = sha.into();
        }
        index.push(listed);
    }
    let index = serde_json::to_vec(&serde_json::json!({"format": 1, "parts": index})).unwrap();
    raw(&mut builder, "index.json", &index);
    builder.into_inner().unwrap().finish().unwrap();
}

pub(super) fn json_of(parts: &[Part], name: &str) -> Value {
    let part = parts.iter().find(|p| p.name == name.as_bytes()).unwrap_or_else(|| panic!("no {name}"));
    match &part.body {
        Body::File(bytes) => serde_json::from_slice(bytes).unwrap(),
        other => panic!("{name} is {other:?}"),
    }
}

pub(super) fn set_json(parts: &mut [Part], name: &str, value: &Value) {
    let part = parts.iter_mut().find(|p| p.name == name.as_bytes()).unwrap();
    part.body = Body::File(serde_json::to_vec_pretty(value).unwrap());
}

pub(super) fn dir(name: &str) -> Part {
    Part { name: name.as_bytes().to_vec(), body: Body::Dir, mode: 0o755 }
}

pub(super) fn link(name: &str, target: &Path) -> Part {
    Part { name: name.as_bytes().to_vec(), body: Body::Link(target.as_os_str().as_bytes().to_vec()), mode: 0o777 }
}

pub(super) fn file(name: &str, bytes: &[u8]) -> Part {
    Part { name: name.as_bytes().to_vec(), body: Body::File(bytes.to_vec()), mode: 0o644 }
}

/// Home B and what a hostile archive must leave as it was: B's home, B's host repository and a
/// directory outside both, which holds an operator's private key.
pub(super) struct Target {
    pub(super) b: Other,
    pub(super) outside: PathBuf,
}

pub(super) const PRIVATE_KEY: &[u8] = b"-----BEGIN OPENSSH PRIVATE KEY----- the operator's";

impl Target {
    pub(super) fn new(a: &Kept) -> Target {
        let b = other_host(a);
        let outside = b.home.tmp.path().join("outside");
        fs::create_dir_all(outside.join(".ssh")).unwrap();
        fs::write(outside.join(".ssh/id_ed25519"), PRIVATE_KEY).unwrap();
        Target { b, outside }
    }

    pub(super) fn snapshot(&self) -> Vec<Vec<(PathBuf, common::Entry)>> {
        [&self.b.home.home, &self.b.host, &self.outside].iter().map(|p| common::snapshot_of(p)).collect()
    }

    /// Imports `parts` forged as `what`: refused with exit 3, saying `says`, nothing changed.
    pub(super) fn refuses(&self, what: &str, parts: &[Part], says: &str) {
        let forged = self.b.home.tmp.path().join(format!("forged-{}.tar.gz", what.replace(['/', ' '], "-")));
        forge(parts, &forged);
        let before = self.snapshot();
        for dry in [&["--dry-run"][..], &[]] {
            let out = import(&self.b.home, dry, &forged);
            assert_eq!(out.status.code(), Some(3), "{what} {dry:?}: {}", stderr(&out));
            assert!(stderr(&out).contains(says), "{what} {dry:?}: wanted {says:?} in: {}", stderr(&out));
            assert!(stderr(&out).contains("nothing was"), "{what}: {}", stderr(&out));
            assert!(
                self.snapshot() == before,
                "{what} {dry:?}: B's home, host repository and the outside as they were"
            );
        }
        fs::remove_file(&forged).unwrap();
    }
}

/// A kept session of home A exported without its sparse file (a forger's archive holds every
/// byte), and its parts.
pub(super) fn exported_parts(id: &str) -> (Kept, Vec<Part>) {
    let a = kept(id);
    fs::remove_file(a.inst.mount_path(0).join("disk.img")).unwrap();
    let file = a.home.tmp.path().join("session.tar.gz");
    exported(&export(&a.home, &[], &file, &a.inst.container));
    let parts = parts_of(&file);
    (a, parts)
}

fn mount_of(parts: &[Part]) -> Value {
    json_of(parts, "export.json")["mounts"][0].clone()
}

fn with_mount(parts: &[Part], edit: impl FnOnce(&mut Value)) -> Vec<Part> {
    let mut parts = parts.to_vec();
    let mut account = json_of(&parts, "export.json");
    edit(&mut account["mounts"][0]);
    set_json(&mut parts, "export.json", &account);
    parts
}

#[test]
fn a_forged_archive_is_refused_before_anything_is_written() {
    if !engine_available("a_forged_archive_is_refused") {
        return;
    }
    let (a, parts) = exported_parts("hostilea");
    let t = Target::new(&a);
    let outside = t.outside.clone();

    // The forger's own archive, unchanged, imports: the refusals below are the forgeries'.
    let control = t.b.home.tmp.path().join("control.tar.gz");
    forge(&parts, &control);
    let out = import(&t.b.home, &["--dry-run"], &control);
    assert!(out.status.success(), "the forger's copy of a real export: {}", stderr(&out));

    // Links planted where the import writes, or where a resume binds.
    for planted in ["instance/git", "instance/.jackin", "instance/home", "instance/state", "mounts", "instance"] {
        let mut forged: Vec<Part> = parts
            .iter()
            .filter(|p| !p.name.starts_with(planted.as_bytes()) || p.name.get(planted.len()) != Some(&b'/'))
            .filter(|p| p.name != planted.as_bytes())
            .cloned()
            .collect();
        if planted == "instance/.jackin" {
            forged.retain(|p| !p.name.starts_with(b"instance/.jackin"));
        }
        forged.push(link(planted, &outside));
        t.refuses(&format!("a link at {planted}"), &forged, "is not one a session archive holds");
    }
    // A name no export writes: a purge mark, a directory of the mounts' own.
    let mut forged = parts.clone();
    forged.push(file("instance/.jackin/purge.json", b"{}"));
    t.refuses("a purge mark", &forged, "is not one a session archive holds");
    let mut forged = parts.clone();
    forged.push(dir("instance/git"));
    t.refuses("a git directory", &forged, "is not one a session archive holds");

    // Paths the JSON names, out of the archive: an absolute files_dir, a ../ chain, a link.
    let files_dir = mount_of(&parts)["files_dir"].as_str().unwrap().to_owned();
    let key = |m: &mut Value| {
        m["files"]
            .as_array_mut()
            .unwrap()
            .push(serde_json::json!({"status": "??", "path": ".ssh/id_ed25519", "saved": true}))
    };
    let absolute = with_mount(&parts, |m| {
        m["files_dir"] = outside.to_str().unwrap().into();
        key(m);
    });
    t.refuses("an absolute files_dir", &absolute, "is not a plain relative name");
    let climbing = with_mount(&parts, |m| {
        m["files_dir"] = format!("{files_dir}/../../../../../../../../../../..{}", outside.display()).into();
        key(m);
    });
    t.refuses("a ../ files_dir", &climbing, "is not a plain relative name");
    let mut through_a_link = with_mount(&parts, key);
    through_a_link.push(link(&format!("mounts/{files_dir}/.ssh"), &outside.join(".ssh")));
    t.refuses("a saved file under a link", &through_a_link, "is not under directories of the archive");
    let bundle = mount_of(&parts)["bundle"].as_str().unwrap().to_owned();
    let forged = with_mount(&parts, |m| m["bundle"] = format!("../mounts/{bundle}").into());
    t.refuses("a bundle out of mounts/", &forged, "is not a plain relative name");
    let forged = with_mount(&parts, |m| m["tree"] = "0-app/tree".into());
    t.refuses("an unreadable mount's tree", &forged, "unreadable mount");

    // Refs outside refs/heads and refs/tags, and names git refuses.
    let head_id = mount_of(&parts)["head"].as_str().unwrap().to_owned();
    for branch in [
        format!("refs/replace/{head_id}"),
        "MERGE_HEAD".into(),
        "refs/notes/commits".into(),
        "refs/remotes/origin/main".into(),
        "refs/heads/bad..name".into(),
        "refs/heads/esc\u{1b}[31mape".into(),
    ] {
        let forged = with_mount(&parts, |m| m["head_branch"] = branch.clone().into());
        t.refuses(&format!("HEAD on {branch:?}"), &forged, "not a branch an import makes");
    }
    // Ids that are not ids (one would have panicked a slice of it).
    let forged = with_mount(&parts, |m| m["head"] = "ééééééééééééééééééééé".into());
    t.refuses("a head that is not an id", &forged, "is not an object id");

    // Bytes after the archive's end.
    let mut appended = fs::read(&control).unwrap();
    appended.extend_from_slice(b"\x1f\x8b trailing");
    let forged = t.b.home.tmp.path().join("appended.tar.gz");
    fs::write(&forged, appended).unwrap();
    let before = t.snapshot();
    let out = import(&t.b.home, &["--dry-run"], &forged);
    assert_eq!(out.status.code(), Some(3), "bytes appended: {}", stderr(&out));
    assert!(stderr(&out).contains("bytes follow the end of the archive"), "{}", stderr(&out));
    assert!(t.snapshot() == before);

    // A bundle whose pack is damaged (its sha256 in the index made right): its objects are
    // checked in staging, and nothing reaches B's host repository.
    let mut damaged = parts.clone();
    let part = damaged.iter_mut().find(|p| p.name.ends_with(b".bundle")).expect("the archive has a bundle");
    let Body::File(bytes) = &mut part.body else { panic!() };
    let pack_at = bytes.windows(2).position(|w| w == b"\n\n").unwrap() + 2;
    let middle = pack_at + (bytes.len() - pack_at) / 2;
    bytes[middle] ^= 0x55;
    let forged = t.b.home.tmp.path().join("damaged-pack.tar.gz");
    forge(&damaged, &forged);
    let before = t.snapshot();
    let out = import(&t.b.home, &[], &forged);
    assert_eq!(out.status.code(), Some(3), "a damaged pack: {}", stderr(&out));
    assert!(stderr(&out).contains("does not hold what it says"), "{}", stderr(&out));
    assert!(t.snapshot() == before, "a damaged pack: nothing written");

    // And the archive as exported, with a set-user-id program added to the agent home, imports
    // whole after all of these: without the set-id bit, which is not another host's to give.
    let mut setuid = parts.clone();
    setuid.push(Part { mode: 0o4755, ..file("instance/home/run-as-the-operator", b"#!/bin/sh\n") });
    forge(&setuid, &control);
    let out = import(&t.b.home, &[], &control);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(fs::read(outside.join(".ssh/id_ed25519")).unwrap(), PRIVATE_KEY);
    let program = t.b.home.home.join("data").join(&a.inst.container).join("home/run-as-the-operator");
    assert_eq!(fs::metadata(program).unwrap().permissions().mode() & 0o7777, 0o755, "no set-id bit");
}

/// The session committed a link `vendored -> <outside>` and replaced it with a directory holding
/// `x.txt`; the forger drops the deletion of the link from the saved files. The checkout has the
/// link, and the saved `vendored/x.txt` goes into a directory made in its place, never through it.
#[test]
fn a_saved_file_is_never_written_through_a_link_of_the_checkout() {
    if !engine_available("a_saved_file_is_never_written_through_a_link") {
        return;
    }
    let a = kept("hostileb");
    let wt = a.inst.mount_path(0);
    fs::remove_file(wt.join("disk.img")).unwrap();
    let b_outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(b_outside.path(), wt.join("vendored")).unwrap();
    git(&wt, &["add", "vendored"]);
    git(&wt, &["commit", "-q", "-m", "agent: a link out"]);
    fs::remove_file(wt.join("vendored")).unwrap();
    fs::create_dir(wt.join("vendored")).unwrap();
    fs::write(wt.join("vendored/x.txt"), "the agent's\n").unwrap();
    let file = a.home.tmp.path().join("session.tar.gz");
    exported(&export(&a.home, &[], &file, &a.inst.container));
    let parts = with_mount(&parts_of(&file), |m| {
        m["files"].as_array_mut().unwrap().retain(|f| f["path"] != "vendored");
    });
    let b = other_host(&a);
    let forged = b.home.tmp.path().join("forged.tar.gz");
    forge(&parts, &forged);
    let out = import(&b.home, &[], &forged);
    assert!(out.status.success(), "{}", stderr(&out));
    let imported = b
        .home
        .home
        .join("data")
        .join(&a.inst.container)
        .join("git/worktree/repo/workspace/app")
        .join(&a.inst.container);
    assert!(fs::symlink_metadata(imported.join("vendored")).unwrap().is_dir(), "a directory in the link's place");
    assert_eq!(fs::read_to_string(imported.join("vendored/x.txt")).unwrap(), "the agent's\n");
    assert_eq!(fs::read_dir(b_outside.path()).unwrap().count(), 0, "nothing written where the link leads");
}

/// Hostile values a forger puts where the archive's JSON names a path, a ref or an id.
fn hostile_value(rng: &mut common::Rng, outside: &Path) -> Value {
    let long = "d/".repeat(2100);
    let choices: [Value; 14] = [
        outside.to_str().unwrap().into(),
        format!("../../../../../../../../../..{}", outside.display()).into(),
        "..".into(),
        "".into(),
        "/".into(),
        format!("refs/replace/{}", "a".repeat(40)).into(),
        "MERGE_HEAD".into(),
        "refs/notes/commits".into(),
        "refs/heads/bad..name".into(),
        "refs/heads/\u{1b}[2J".into(),
        "é".repeat(30).into(),
        long.into(),
        Value::Null,
        serde_json::json!(["not", "a", "string"]),
    ];
    rng.pick(&choices).clone()
}

/// A field of a mount's record, picked at random, made hostile.
fn mutate_mount_field(parts: &mut [Part], rng: &mut common::Rng, outside: &Path) {
    let mut account = json_of(parts, "export.json");
    let mount = &mut account["mounts"][0];
    let fields = [
        "files_dir",
        "index_dir",
        "bundle",
        "head",
        "head_branch",
        "scratch_tip",
        "scratch_branch",
        "mount_dst",
        "isolation",
        "tree",
        "modules",
        "path",
        "original_src",
    ];
    let value = hostile_value(rng, outside);
    let files = mount["files"].as_array().map_or(0, Vec::len);
    match rng.below(3) {
        0 if files > 0 => {
            let i = rng.below(files);
            let key = *rng.pick(&["path", "orig_path", "status", "gitlink", "path_bytes"]);
            mount["files"][i][key] = value;
            if rng.below(2) == 0 {
                mount["files"][i]["saved"] = true.into();
                mount["files"][i]["staged"] = true.into();
            }
        }
        1 => {
            let extra = serde_json::json!({"status": "??", "path": value, "saved": true});
            if let Some(files) = mount["files"].as_array_mut() {
                files.push(extra);
            }
        }
        _ => mount[*rng.pick(&fields)] = value,
    }
    set_json(parts, "export.json", &account);
}

/// One mutation of `parts`, forged; or the real archive's bytes damaged.
fn mutated(parts: &[Part], exported: &[u8], rng: &mut common::Rng, outside: &Path, to: &Path) -> &'static str {
    let mut parts = parts.to_vec();
    let n = parts.len();
    let names = [
        "instance/git",
        "instance/git/worktree",
        "instance/.jackin",
        "instance/.jackin/purge.json",
        "instance/home",
        "instance/state",
        "instance/claude",
        "instance",
        "mounts",
        "export.json",
        "instance/sockets",
        "data",
        "mounts/0-app",
        "mounts/0-app/files",
        "mounts/0-app/files/README.md",
        "instance/home/.bashrc",
    ];
    let targets =
        [outside.to_path_buf(), PathBuf::from("/"), PathBuf::from("../../.."), outside.join(".ssh/id_ed25519")];
    let what = match rng.below(11) {
        0 => {
            parts.remove(rng.below(n));
            "a part dropped"
        }
        1 => {
            let part = parts[rng.below(n)].clone();
            parts.insert(rng.below(n + 1), part);
            "a part twice"
        }
        2 => {
            let (i, j) = (rng.below(n), rng.below(n));
            parts.swap(i, j);
            "two parts swapped"
        }
        3 => {
            let i = rng.below(n);
            parts[i].body = Body::Link(rng.pick(&targets[..]).as_os_str().as_bytes().to_vec());
            "a part made a link"
        }
        4 => {
            let name = *rng.pick(&names);
            parts.retain(|p| p.name != name.as_bytes());
            parts.insert(rng.below(parts.len() + 1), link(name, rng.pick(&targets[..]).as_path()));
            "a link planted"
        }
        5 => {
            let name = *rng.pick(&names);
            let part = if rng.below(2) == 0 { dir(name) } else { file(name, b"{}") };
            parts.insert(rng.below(parts.len() + 1), part);
            "an entry added"
        }
        6 | 7 => {
            mutate_mount_field(&mut parts, rng, outside);
            "a mount's field made hostile"
        }
        8 => {
            let i = rng.below(n);
            parts[i].mode = *rng.pick(&[0o000, 0o4755, 0o7777, 0o200]);
            if let Body::File(bytes) = &mut parts[i].body {
                if !bytes.is_empty() && rng.below(2) == 0 {
                    let at = rng.below(bytes.len());
                    bytes[at] ^= 1 << rng.below(8);
                }
            }
            "a part's mode or a byte changed"
        }
        9 => {
            let bundles: Vec<usize> = (0..n).filter(|&i| parts[i].name.ends_with(b".bundle")).collect();
            if let Some(&i) = bundles.first() {
                if let Body::File(bytes) = &mut parts[i].body {
                    let text = String::from_utf8_lossy(bytes).into_owned();
                    let choices: [&str; 3] = ["refs/replace/", "refs/heads/a..", "refs/notes/"];
                    let into = rng.pick(&choices);
                    let edited = text.replacen("refs/heads/", into, 1);
                    if edited.len() == text.len() || rng.below(2) == 0 {
                        let at = rng.below(bytes.len());
                        bytes[at] ^= 1 << rng.below(8);
                    } else {
                        *bytes = edited.into_bytes();
                    }
                }
            }
            "a bundle changed"
        }
        _ => {
            let mut bytes = exported.to_vec();
            match rng.below(3) {
                0 => bytes.truncate(rng.below(bytes.len())),
                1 => {
                    let at = rng.below(bytes.len());
                    bytes[at] ^= 1 << rng.below(8);
                }
                _ => bytes.extend_from_slice(&bytes.clone()[..rng.below(bytes.len())]),
            }
            fs::write(to, bytes).unwrap();
            return "the stream damaged";
        }
    };
    forge(&parts, to);
    what
}

/// Thousands of mutated archives (seeded; `JACKIN_FUZZ_SEED`, `JACKIN_FUZZ_CASES`): each is
/// refused with exit 3 and changes nothing in B's home, B's host repository or outside them, or
/// imports whole and writes nothing outside them. No other end (a crash, a half-made import) is
/// allowed.
#[test]
fn mutated_archives_are_refused_whole_or_imported_whole() {
    if !engine_available("mutated_archives_are_refused_whole_or_imported_whole") {
        return;
    }
    let (a, parts) = exported_parts("hostilez");
    let real = a.home.tmp.path().join("session.tar.gz");
    let exported_bytes = fs::read(&real).unwrap();
    let seed = std::env::var("JACKIN_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs());
    let cases: u64 = std::env::var("JACKIN_FUZZ_CASES").ok().and_then(|s| s.parse().ok()).unwrap_or(2000);
    eprintln!("mutated archives: seed {seed} (JACKIN_FUZZ_SEED={seed} repeats it), {cases} cases");
    let mut t = Target::new(&a);
    let mut before = t.snapshot();
    let mut figures: std::collections::BTreeMap<&str, (u32, u32)> = Default::default();
    for case in 0..cases {
        let mut rng = common::Rng::new(seed.wrapping_mul(6364136223846793005).wrapping_add(case));
        let forged = t.b.home.tmp.path().join("mutated.tar.gz");
        let what = mutated(&parts, &exported_bytes, &mut rng, &t.outside, &forged);
        let out = import(&t.b.home, &[], &forged);
        let context = || format!("seed {seed}, case {case} ({what}): {}", stderr(&out));
        match out.status.code() {
            Some(3) => {
                figures.entry(what).or_default().0 += 1;
                assert!(t.snapshot() == before, "refused, and something changed: {}", context());
            }
            Some(0) => {
                figures.entry(what).or_default().1 += 1;
                let after = t.snapshot();
                assert!(after[2] == before[2], "imported, and something outside changed: {}", context());
                t = Target::new(&a);
                before = t.snapshot();
            }
            _ => panic!("neither refused (3) nor imported (0): {}", context()),
        }
    }
    for (what, (refused, imported)) in &figures {
        eprintln!("  {what}: {refused} refused, {imported} imported");
    }
}

/// An archive whose manifest or recipe names Docker resources that are not the session's own (a
/// container of another session, a volume of the operator's, jackin's prewarmed sidecar): a
/// purge, keep or resume here would act on them, so it is refused.
#[test]
fn an_archive_naming_resources_not_its_sessions_is_refused() {
    if !engine_available("an_archive_naming_resources_not_its_sessions") {
        return;
    }
    let (a, parts) = exported_parts("hostiled");
    let t = Target::new(&a);
    let manifest = "instance/.jackin/instance.json";
    let continuity = "instance/.jackin/continuity.json";
    for (field, value) in [
        ("role_container", "jk-00000001-victim-smith"),
        ("dind_container", "jk-prewarm-dind-dind"),
        ("network", "bridge"),
        ("certs_volume", "postgres-data"),
    ] {
        let mut forged = parts.clone();
        let mut m = json_of(&forged, manifest);
        m["docker"][field] = value.into();
        set_json(&mut forged, manifest, &m);
        t.refuses(&format!("the manifest's {field}"), &forged, "an archive names only the session's own resources");
    }
    let mut forged = parts.clone();
    let mut c = json_of(&forged, continuity);
    assert!(c["recipe"]["role"].is_object(), "the export carries a recipe");
    c["recipe"]["role"]["network"] = "host".into();
    set_json(&mut forged, continuity, &c);
    t.refuses("the recipe's network", &forged, "an archive names only the session's own resources");
}

/// Two homes on one engine, as docs/operator-guide.md's "Moving a session" leaves them: A keeps X,
/// B imports X and resumes it (B's container X runs, its binds in B's home). A's reconcile does
/// not take B's container as evidence that A's copy runs, and A's purge of its copy stops and
/// removes nothing of B's.
#[test]
fn two_homes_on_one_engine_never_take_each_others_containers() {
    if !engine_available("two_homes_on_one_engine_never_take_each_others_containers") {
        return;
    }
    let a = kept("twohomes");
    let c = a.inst.container.clone();
    let file = a.home.tmp.path().join("session.tar.gz");
    exported(&export(&a.home, &[], &file, &c));
    let b = other_host(&a);
    let out = import(&b.home, &[], &file);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut resume = b.home.detached("jackin-restore");
    resume.args([&c, "--yes", "--format=json"]).env("SECRET_TOKEN", "b's").stdin(Stdio::null());
    let out = resume.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &c]), "true", "B's session runs");
    let status_in_a = || a.home.manifest(&a.inst.container).status;
    let kept_in_a = status_in_a();

    let reconcile = a.home.detached("jackin-reconcile").args([&c, "--format=json"]).stdin(Stdio::null()).output();
    let reconcile = reconcile.unwrap();
    assert!(reconcile.status.success(), "{}", stderr(&reconcile));
    assert_eq!(status_in_a(), kept_in_a, "A's copy is not running because B's container is");

    // A's resume of its copy neither starts, attaches to nor replaces B's container.
    let mut resume = a.home.detached("jackin-restore");
    let out =
        resume.args([&c, "--yes", "--format=json"]).env("SECRET_TOKEN", "a's").stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("belongs to the jackin home at"), "{}", stderr(&out));
    let started = docker(&["inspect", "-f", "{{.State.StartedAt}}", &c]);

    let out = a.home.purge(&["--stop", "--discard-unfinished", &c], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let purged = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(!purged.contains("\"container\""), "nothing of B's reported removed: {purged}");
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &c]), "true", "B's session still runs");
    assert_eq!(docker(&["inspect", "-f", "{{.State.StartedAt}}", &c]), started, "never restarted");
    assert!(Session::exists("network", &format!("{c}-net")), "B's network stays");
    assert!(!a.inst.dir.exists(), "A's copy is purged");
    let _ = docker_quiet(&["rm", "-f", &c]);
}
