//! Moving a kept session to another host: `jackin-move export FILE INSTANCE` on home A,
//! `jackin-move import FILE` on home B (two homes on one machine, two clones of one origin
//! as their host repositories), then an ordinary resume in B. Real git, a real Docker engine,
//! the real binaries.

use crate::common;
mod hostile;

use std::fs;
use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};

use common::docker::{docker, docker_quiet, engine_available, OwnEngine, Session, SessionOptions, TEST_IMAGE};
use common::records::{envelopes, records_of, ErrorRecord, Exported, Imported, Restored};
use common::{commit_file, git, stderr, Home, Instance};
use jackin::base::tool::Tool;

/// The untracked file whose name is not UTF-8.
const LATIN1_NAME: &[u8] = b"caf\xe9.txt";
/// A variable of the launch whose value is a secret: only its name may travel.
const SECRET_VALUE: &str = "hunter2-do-not-carry";
/// The contents of the auth slots and the agent home's credentials.
const CREDENTIAL: &str = "credential-do-not-carry";
const SPARSE_LEN: u64 = 64 << 20;

/// A kept session of home A: a worktree of `app` with two unpushed commits, a changed tracked
/// file, untracked files (one of a name that is not UTF-8, a link, an executable, a sparse
/// file), a conversation in the agent home, credentials in the auth slots, launched with a secret
/// variable, kept by jackin-assess | jackin-keep --keep (its recipe captured, its containers
/// removed).
struct Kept {
    home: Home,
    host: PathBuf,
    inst: Instance,
    image: String,
}

fn kept(id: &str) -> Kept {
    let image = format!("jackin-test-role-{id}:latest");
    docker(&["tag", TEST_IMAGE, &image]);
    kept_as(Home::new(), id, image, |_| {})
}

/// [`kept`] in `home`, launched from `image`, with `edit` made to its manifest before the keep.
fn kept_as(mut home: Home, id: &str, image: String, edit: impl FnOnce(&mut serde_json::Value)) -> Kept {
    let host = home.host_repo("app");
    let inst = home.instance(id, |h, c| vec![h.worktree_record(c, &host, "/workspace/app")]);
    let wt = inst.mount_path(0);
    git(&wt, &["config", "user.email", "agent@example.invalid"]);
    git(&wt, &["config", "user.name", "Agent"]);
    commit_file(&wt, "feature.rs", "fn feature() {}\n", "agent: feature");
    commit_file(&wt, "feature.rs", "fn feature() { todo!() }\n", "agent: more feature");
    fs::write(wt.join("README.md"), "hello, changed by the agent\n").unwrap();
    fs::write(wt.join("notes.txt"), "untracked notes\n").unwrap();
    fs::write(wt.join(std::ffi::OsStr::from_bytes(LATIN1_NAME)), "not utf-8\n").unwrap();
    std::os::unix::fs::symlink("notes.txt", wt.join("notes-link")).unwrap();
    fs::write(wt.join("run.sh"), "#!/bin/sh\necho run\n").unwrap();
    fs::set_permissions(wt.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    let sparse = fs::File::create(wt.join("disk.img")).unwrap();
    sparse.set_len(SPARSE_LEN).unwrap();
    std::os::unix::fs::FileExt::write_at(&sparse, b"end", SPARSE_LEN - 3).unwrap();
    let conversation = inst.dir.join("home/.claude/projects/app");
    fs::create_dir_all(&conversation).unwrap();
    fs::write(conversation.join("session.jsonl"), conversation_bytes()).unwrap();
    fs::write(inst.dir.join("state/history.jsonl"), "{\"prompt\":\"go on\"}\n").unwrap();
    for credential in ["claude/.credentials.json", "home/.codex/auth.json", "home/.config/gh/hosts.yml"] {
        let path = inst.dir.join(credential);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, CREDENTIAL).unwrap();
    }
    home.edit_manifest(&inst.container, edit);
    let git_dir = host.join(".git");
    let session = Session::launch(
        &inst.container,
        SessionOptions {
            dind: false,
            running: false,
            image: Some(&image),
            env: vec![("SECRET_TOKEN", SECRET_VALUE), ("JACKIN_ROLE", "agent-smith")],
            binds: vec![
                (wt.clone(), "/workspace/app"),
                (inst.dir.join("home"), "/home/agent"),
                (git_dir.clone(), git_dir.to_str().unwrap()),
            ],
            ..Default::default()
        },
    );
    let assessed = home.assess_lines(&[&inst.container]);
    let mut keep = home.detached("jackin-keep");
    keep.args(["--keep", "--format=json"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = keep.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), assessed.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "keep: {}", stderr(&out));
    assert!(!Session::exists("container", &inst.container), "keep removed the role container");
    drop(session);
    Kept { home, host, inst, image }
}

impl Drop for Kept {
    fn drop(&mut self) {
        let _ = docker_quiet(&["rm", "-f", &self.inst.container]);
        let _ = docker_quiet(&["network", "rm", &format!("{}-net", self.inst.container)]);
        if !self.image.is_empty() {
            let _ = docker_quiet(&["rmi", &self.image]);
        }
    }
}

fn conversation_bytes() -> Vec<u8> {
    let mut bytes = b"{\"role\":\"user\",\"text\":\"caf\xc3\xa9\"}\n".to_vec();
    bytes.extend((0..=255u8).collect::<Vec<_>>());
    bytes
}

/// `jackin-move export FLAGS FILE INSTANCE`.
fn export(home: &Home, flags: &[&str], file: &Path, instance: &str) -> Output {
    let mut cmd = home.detached("jackin-move");
    cmd.arg("export").args(flags).arg(file).arg(instance).arg("--format=json");
    cmd.stdin(Stdio::null()).output().unwrap()
}

/// `jackin-move import FLAGS FILE`.
fn import(home: &Home, flags: &[&str], file: &Path) -> Output {
    let mut cmd = home.detached("jackin-move");
    cmd.arg("import").args(flags).arg(file).arg("--format=json");
    cmd.stdin(Stdio::null()).output().unwrap()
}

fn exported(out: &Output) -> Exported {
    assert!(out.status.success(), "export: {}", stderr(out));
    let recs = records_of::<Exported>(&out.stdout);
    assert_eq!(recs.len(), 1, "{}", String::from_utf8_lossy(&out.stdout));
    recs.into_iter().next().unwrap()
}

/// The archive's tar, uncompressed.
fn tar_of(file: &Path) -> Vec<u8> {
    let mut bytes = Vec::new();
    flate2::read::GzDecoder::new(fs::File::open(file).unwrap()).read_to_end(&mut bytes).unwrap();
    bytes
}

/// Each entry of the archive: its name's bytes, its kind, its contents (a file's, with the holes
/// as zeros) or a link's target.
fn entries_of(file: &Path) -> Vec<(Vec<u8>, tar::EntryType, Vec<u8>)> {
    let tar = tar_of(file);
    let mut archive = tar::Archive::new(tar.as_slice());
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = entry.path_bytes().into_owned();
        let kind = entry.header().entry_type();
        let mut bytes = Vec::new();
        if kind == tar::EntryType::Symlink {
            bytes = entry.link_name_bytes().unwrap().into_owned();
        } else {
            entry.read_to_end(&mut bytes).unwrap();
        }
        out.push((name, kind, bytes));
    }
    out
}

fn sha256_hex(bytes: &[u8]) -> String {
    use sha2::Digest;
    format!("{:x}", sha2::Sha256::digest(bytes))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn an_export_holds_the_session_and_an_index_of_its_parts_and_never_the_auth_slots() {
    if !engine_available("an_export_holds_the_session") {
        return;
    }
    let k = kept("exaaaaaa");
    let file = k.home.tmp.path().join("session.tar.gz");
    let before = k.home.snapshot();
    let rec = exported(&export(&k.home, &[], &file, &k.inst.container));
    assert_eq!(k.home.snapshot(), before, "an export changes nothing in the home");
    assert!(!rec.with_auth && !rec.dry_run);
    assert_eq!(rec.bytes, Some(fs::metadata(&file).unwrap().len()));
    assert!(rec.session_bytes.unwrap() > SPARSE_LEN, "the session's disk total counts the sparse file whole");
    assert!(rec.bytes.unwrap() < 1 << 20, "the holes are not carried: {rec:?}");
    assert_eq!(rec.mounts.len(), 1);
    assert_eq!((rec.mounts[0].commits, rec.mounts[0].files), (2, 6), "{rec:?}");
    let origin = git(&k.host, &["remote", "get-url", "origin"]);
    assert_eq!(rec.mounts[0].remotes, [origin]);
    assert_eq!(rec.auth, ["claude/", "home/.codex/auth.json", "home/.config/gh"], "found, and left out");

    let entries = entries_of(&file);
    assert_eq!(entries.first().unwrap().0, b"format.json");
    assert_eq!(entries.last().unwrap().0, b"index.json");
    let index: serde_json::Value = serde_json::from_slice(&entries.last().unwrap().2).unwrap();
    let parts = index["parts"].as_array().unwrap();
    assert_eq!(parts.len(), entries.len() - 2, "every part but the format and the index is listed");
    assert_eq!(rec.parts, parts.len());
    for ((name, kind, bytes), part) in entries[1..entries.len() - 1].iter().zip(parts) {
        let listed = match part.get("path_bytes").and_then(|b| b.as_str()) {
            Some(b64) => base64_decode(b64),
            None => part["path"].as_str().unwrap().as_bytes().to_vec(),
        };
        assert_eq!(&listed, name);
        if *kind != tar::EntryType::Directory {
            assert_eq!(part["sha256"].as_str().unwrap(), sha256_hex(bytes), "{}", String::from_utf8_lossy(name));
        }
    }
    let names: Vec<String> = entries.iter().map(|(n, _, _)| String::from_utf8_lossy(n).into_owned()).collect();
    for wanted in [
        "export.json",
        "instance/.jackin/instance.json",
        "instance/.jackin/isolation.json",
        "instance/.jackin/continuity.json",
        "instance/home/.claude/projects/app/session.jsonl",
        "instance/state/history.jsonl",
        "mounts/0-workspace-app/commits.bundle",
        "mounts/0-workspace-app/files/README.md",
        "mounts/0-workspace-app/files/notes-link",
        "mounts/0-workspace-app/files/run.sh",
        "mounts/0-workspace-app/files/disk.img",
    ] {
        assert!(names.iter().any(|n| n == wanted), "{wanted} is in the archive: {names:#?}");
    }
    let latin1: Vec<u8> = [b"mounts/0-workspace-app/files/".as_slice(), LATIN1_NAME].concat();
    assert!(entries.iter().any(|(n, _, _)| *n == latin1), "the name that is not UTF-8 travels as its bytes");
    for never in ["instance/claude", "instance/home/.codex/auth.json", "instance/home/.config/gh"] {
        assert!(!names.iter().any(|n| n.starts_with(never)), "{never} is not in the archive");
    }
    let tar = tar_of(&file);
    for secret in [SECRET_VALUE, CREDENTIAL] {
        assert!(!contains(&tar, secret.as_bytes()), "{secret} is nowhere in the archive");
    }
    assert!(contains(&tar, b"env:SECRET_TOKEN"), "the recipe names the secret's source");

    // The same archive again: refused, the file as it was.
    let again = export(&k.home, &[], &file, &k.inst.container);
    assert_eq!(again.status.code(), Some(3), "{}", stderr(&again));
    assert!(stderr(&again).contains("exists already"), "{}", stderr(&again));

    // --with-auth carries the slots and says so; the secret's value never travels.
    let with_auth = k.home.tmp.path().join("with-auth.tar.gz");
    let out = export(&k.home, &["--with-auth"], &with_auth, &k.inst.container);
    let rec = exported(&out);
    assert!(rec.with_auth);
    assert_eq!(rec.auth, ["claude/", "home/.codex/auth.json", "home/.config/gh"]);
    assert!(stderr(&out).contains("credentials"), "{}", stderr(&out));
    let names: Vec<String> =
        entries_of(&with_auth).iter().map(|(n, _, _)| String::from_utf8_lossy(n).into_owned()).collect();
    for carried in
        ["instance/claude/.credentials.json", "instance/home/.codex/auth.json", "instance/home/.config/gh/hosts.yml"]
    {
        assert!(names.iter().any(|n| n == carried), "{carried} is carried with --with-auth");
    }
    assert!(!contains(&tar_of(&with_auth), SECRET_VALUE.as_bytes()));
}

#[test]
fn an_export_dry_run_writes_nothing_and_a_live_session_is_refused() {
    if !engine_available("an_export_dry_run_writes_nothing") {
        return;
    }
    let mut k = kept("exdryaaa");
    let file = k.home.tmp.path().join("dry.tar.gz");
    let before = common::snapshot_of(k.home.tmp.path());
    let out = export(&k.home, &["--dry-run"], &file, &k.inst.container);
    let rec = exported(&out);
    assert!(rec.dry_run && rec.bytes.is_none());
    assert_eq!((rec.mounts[0].commits, rec.mounts[0].files), (2, 6), "{rec:?}");
    assert_eq!(common::snapshot_of(k.home.tmp.path()), before, "a dry run writes nothing anywhere");
    // The dry run's steps are the run's, in the plan's words; its text lists them, numbered.
    assert!(rec.steps.first().is_some_and(|s| s.starts_with("save the work of ")), "{:?}", rec.steps);
    assert_eq!(rec.steps.last(), Some(&format!("publish the archive at {}", file.display())));
    let mut text = k.home.detached("jackin-move");
    text.args(["export", "--dry-run", "--format=text"]).arg(&file).arg(&k.inst.container);
    let text = text.stdin(Stdio::null()).output().unwrap();
    let listed = format!("  {}. {}", rec.steps.len(), rec.steps[rec.steps.len() - 1]);
    assert!(String::from_utf8_lossy(&text.stdout).contains(&listed), "{}", String::from_utf8_lossy(&text.stdout));
    let run = exported(&export(&k.home, &[], &file, &k.inst.container));
    assert_eq!(run.steps, rec.steps, "the run walks the steps its dry run printed");
    // A file that is there refuses a dry run as it refuses the run.
    let there = export(&k.home, &["--dry-run"], &file, &k.inst.container);
    assert_eq!(there.status.code(), Some(3), "{}", stderr(&there));
    fs::remove_file(&file).unwrap();

    // A live session: its role container runs.
    let live = k.home.instance("exliveaa", |_, _| Vec::new());
    let _session = Session::launch(&live.container, SessionOptions { dind: false, ..Default::default() });
    let out = export(&k.home, &[], &file, &live.container);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    let errors = records_of::<ErrorRecord>(&out.stdout);
    assert_eq!(errors[0].code, "live", "{errors:?}");
    assert!(!file.exists());
}

/// The flags the verbs had before they moved to jackin-move stay, hidden, for one release: each
/// says where its verb went and runs it there, with the same arguments and the same records.
#[test]
fn the_old_export_and_import_flags_say_where_they_went_and_run_jackin_move() {
    if !engine_available("the_old_export_and_import_flags") {
        return;
    }
    let k = kept("exaliasa");
    let file = k.home.tmp.path().join("alias.tar.gz");
    let mut keep = k.home.detached("jackin-keep");
    keep.args(["--dry-run", "--export"]).arg(&file).arg(&k.inst.container).arg("--format=json");
    let out = keep.stdin(Stdio::null()).output().unwrap();
    let rec = exported(&out);
    assert!(rec.dry_run, "{rec:?}");
    assert!(stderr(&out).contains("--export moved to `jackin-move export`"), "{}", stderr(&out));
    exported(&export(&k.home, &[], &file, &k.inst.container));
    let mut restore = k.home.detached("jackin-restore");
    restore.arg(format!("--import={}", file.display())).args(["--plan", "--format=json"]);
    let out = restore.stdin(Stdio::null()).output().unwrap();
    assert!(stderr(&out).contains("--import moved to `jackin-move import`"), "{}", stderr(&out));
    // On the home it came from, the session is there already: refused as jackin-move refuses it.
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(
        records_of::<ErrorRecord>(&out.stdout)[0].code,
        "import_failed",
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // Neither tool's help names the verb that moved.
    for tool in ["jackin-keep", "jackin-restore"] {
        let help = k.home.detached(tool).arg("--help").output().unwrap();
        let help = String::from_utf8_lossy(&help.stdout);
        assert!(!help.contains("--export") && !help.contains("--import"), "{tool}: {help}");
    }
}

fn base64_decode(text: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(text).unwrap()
}

/// Home B, the other host: a clone of A's origin as its host repository, which its jackin
/// config mounts into the workspace.
struct Other {
    home: Home,
    host: PathBuf,
}

fn other_host(a: &Kept) -> Other {
    let home = Home::new();
    let origin = git(&a.host, &["remote", "get-url", "origin"]);
    let host = home.tmp.path().join("src/app");
    fs::create_dir_all(host.parent().unwrap()).unwrap();
    git(home.tmp.path(), &["clone", "-q", &origin, host.to_str().unwrap()]);
    let config = format!(
        "[workspaces.my-app]\nworkdir = \"/workspace/app\"\n\n[[workspaces.my-app.mounts]]\nsrc = \"{}\"\ndst = \"/workspace/app\"\n",
        host.display()
    );
    fs::write(home.config.join("config.toml"), config).unwrap();
    Other { home, host }
}

/// The archive with its uncompressed tar changed by `edit`, compressed again (a valid gzip).
fn rewritten(file: &Path, edit: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut tar = tar_of(file);
    edit(&mut tar);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut gz, &tar).unwrap();
    gz.finish().unwrap()
}

fn replace_once(bytes: &mut [u8], from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let at = bytes.windows(from.len()).position(|w| w == from).expect("the bytes to replace are there");
    bytes[at..at + to.len()].copy_from_slice(to);
}

#[test]
fn an_archive_damaged_truncated_altered_newer_or_of_an_instance_here_is_refused_with_nothing_written() {
    if !engine_available("an_archive_damaged_truncated_altered_newer") {
        return;
    }
    let a = kept("imrefaaa");
    let file = a.home.tmp.path().join("session.tar.gz");
    exported(&export(&a.home, &[], &file, &a.inst.container));
    let b = other_host(&a);
    let snapshot = || (common::snapshot_of(&b.home.home), common::snapshot_of(&b.host));
    let before = snapshot();
    let bytes = fs::read(&file).unwrap();
    let mut flipped = bytes.clone();
    flipped[bytes.len() / 2] ^= 0x5a;
    let cases = [
        ("flipped", flipped, "refused"),
        ("truncated", bytes[..bytes.len() / 2].to_vec(), "truncated"),
        ("cut-after-the-tar", bytes[..bytes.len() - 4].to_vec(), "damaged or truncated"),
        ("altered", rewritten(&file, |t| replace_once(t, b"\"go on\"", b"\"go in\"")), "sha256"),
        ("newer", rewritten(&file, |t| replace_once(t, b"\"format\": 1,", b"\"format\": 2,")), "newer"),
    ];
    for (what, archive, says) in cases {
        let bad = b.home.tmp.path().join(format!("{what}.tar.gz"));
        fs::write(&bad, archive).unwrap();
        for dry in [&["--dry-run"][..], &[]] {
            let out = import(&b.home, dry, &bad);
            assert_eq!(out.status.code(), Some(3), "{what} {dry:?}: {}", stderr(&out));
            assert!(stderr(&out).contains(says), "{what}: {}", stderr(&out));
            assert!(stderr(&out).contains("nothing was"), "{what}: {}", stderr(&out));
            let refusal = records_of::<ErrorRecord>(&out.stdout);
            assert_eq!(
                refusal.len(),
                1,
                "{what} {dry:?}: the refusal is a record: {}",
                String::from_utf8_lossy(&out.stdout)
            );
            assert!(refusal[0].code == "import_failed" && refusal[0].message.contains(says), "{:?}", refusal[0]);
            assert_eq!(snapshot(), before, "{what} {dry:?}: nothing written");
        }
    }

    // A dry run says what it would make, and makes nothing.
    let out = import(&b.home, &["--dry-run"], &file);
    assert!(out.status.success(), "{}", stderr(&out));
    let rec = records_of::<Imported>(&out.stdout).remove(0);
    assert!(rec.dry_run);
    assert_eq!(rec.mounts[0].repository.as_deref(), Some(b.host.to_str().unwrap()));
    assert_eq!(snapshot(), before, "a dry run writes nothing");
    let made = rec.steps.iter().filter(|s| s.starts_with("make ")).count();
    assert_eq!(made, rec.mounts.len(), "{:?}", rec.steps);
    assert_eq!(rec.steps.last().map(String::as_str), Some("add the index row"));

    // Imported once, by the steps its dry run printed; the same instance again is refused,
    // nothing changed by the second.
    let out = import(&b.home, &[], &file);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(records_of::<Imported>(&out.stdout).remove(0).steps, rec.steps);
    let after = snapshot();
    let out = import(&b.home, &[], &file);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("here already"), "{}", stderr(&out));
    assert_eq!(snapshot(), after);
}

/// A bind of the recreated role container on the engine at `host`: its source, for a
/// destination.
fn bind_source(host: &str, container: &str, destination: &str) -> Option<String> {
    let format = format!(
        "{{{{range .Mounts}}}}{{{{if eq .Destination \"{destination}\"}}}}{{{{.Source}}}}{{{{end}}}}{{{{end}}}}"
    );
    docker_quiet(&["-H", host, "inspect", "-f", &format, container]).filter(|s| !s.is_empty())
}

#[test]
fn a_kept_session_moves_to_another_home_and_resumes_there_at_tier_2() {
    if !engine_available("a_kept_session_moves_to_another_home") {
        return;
    }
    let a = kept("mvaaaaaa");
    let c = a.inst.container.clone();
    let in_a = a.home.assess(&c);
    let file = a.home.tmp.path().join("session.tar.gz");
    let sent = exported(&export(&a.home, &[], &file, &c));
    let b = other_host(&a);

    let out = import(&b.home, &[], &file);
    assert!(out.status.success(), "{}", stderr(&out));
    let rec = records_of::<Imported>(&out.stdout).remove(0);
    assert_eq!(rec.status, "preserved_dirty");
    let worktree = b.home.home.join("data").join(&c).join("git/worktree/repo/workspace/app").join(&c);
    assert_eq!(rec.mounts[0].worktree, worktree.to_str().unwrap());
    assert_eq!((rec.mounts[0].commits, rec.mounts[0].files), (sent.mounts[0].commits, sent.mounts[0].files));
    assert!(a.inst.dir.exists(), "the session stays kept on the first host");

    // Its assessment in B lists what A's did.
    let in_b = b.home.assess(&c);
    assert_eq!((in_b.verdict.as_str(), in_b.summary.as_str()), (in_a.verdict.as_str(), in_a.summary.as_str()));
    let files = |m: &common::records::Mount| {
        let mut f: Vec<(String, String)> = m.files.iter().map(|f| (f.status.clone(), f.path.clone())).collect();
        f.sort();
        f
    };
    assert_eq!(files(&in_b.mounts[0]), files(&in_a.mounts[0]));
    let commits =
        |m: &common::records::Mount| m.unpushed.iter().map(|u| (u.name.clone(), u.commits)).collect::<Vec<_>>();
    assert_eq!(commits(&in_b.mounts[0]), commits(&in_a.mounts[0]));
    let log = |repo: &Path| git(repo, &["log", "--format=%H %s", &format!("origin/main..jackin/scratch/{c}")]);
    assert_eq!(log(&b.host), log(&a.host), "the same two commits, on the scratch branch");

    // The conversation and the files, byte for byte, with their shapes.
    let data = b.home.home.join("data").join(&c);
    assert_eq!(fs::read(data.join("home/.claude/projects/app/session.jsonl")).unwrap(), conversation_bytes());
    assert_eq!(
        fs::read(data.join("state/history.jsonl")).unwrap(),
        fs::read(a.inst.dir.join("state/history.jsonl")).unwrap()
    );
    assert_eq!(fs::read(worktree.join(std::ffi::OsStr::from_bytes(LATIN1_NAME))).unwrap(), b"not utf-8\n");
    assert_eq!(fs::read_link(worktree.join("notes-link")).unwrap(), Path::new("notes.txt"));
    assert_eq!(fs::metadata(worktree.join("run.sh")).unwrap().permissions().mode() & 0o777, 0o755);
    let disk = fs::metadata(worktree.join("disk.img")).unwrap();
    assert_eq!(disk.len(), SPARSE_LEN);
    assert!(disk.blocks() * 512 < SPARSE_LEN / 2, "the sparse file is still sparse: {} blocks", disk.blocks());
    assert!(!data.join("claude").exists() && !data.join("home/.codex/auth.json").exists(), "no auth came along");

    // An ordinary kept session here: listed, and resumed at tier 2 with this host's paths.
    let list =
        b.home.detached("jackin-restore").args(["--list", "--format=json"]).stdin(Stdio::null()).output().unwrap();
    assert!(String::from_utf8_lossy(&list.stdout).contains(&c), "{}", stderr(&list));
    // The other host's engine: a second engine of the test's own, holding the role image's
    // layers under the recorded image ID only (the tag is this engine's).
    let engine = common::have_dockerd("a_kept_session_moves_to_another_home")
        .then(|| OwnEngine::start_with_test_image(tempfile::tempdir().unwrap(), Vec::new()));
    let host = engine.as_ref().map_or_else(common::docker::engine_host, OwnEngine::host);
    let out = b
        .home
        .detached("jackin-restore")
        .args([&c, "--yes", "--format=json", "--docker-host", &host])
        .env("SECRET_TOKEN", "the value on the other host")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let resumed: Restored = envelopes(&out.stdout)[0].data();
    assert_eq!(resumed.tier, Some(2), "{resumed:?}");
    assert_eq!(bind_source(&host, &c, "/workspace/app").as_deref(), Some(worktree.to_str().unwrap()));
    assert_eq!(bind_source(&host, &c, "/home/agent").as_deref(), Some(data.join("home").to_str().unwrap()));
    let git_dir = b.host.join(".git");
    assert_eq!(bind_source(&host, &c, git_dir.to_str().unwrap()).as_deref(), Some(git_dir.to_str().unwrap()));
    assert_eq!(docker(&["-H", &host, "inspect", "-f", "{{.State.Running}}", &c]), "true");
    if engine.is_some() {
        assert!(!Session::exists("container", &c), "resumed on the other engine, not this one");
    }
}

/// The figure of docs/maintainers/performance.md ("Moving a session"): the archive's bytes against the
/// session's bytes on disk, for a session with a build directory (rebuildable, never carried), a
/// sparse disk image and a conversation. Run by hand:
/// `cargo test --test tests tool::moves::figure -- --ignored --nocapture`.
#[test]
#[ignore]
fn figure_archive_bytes_against_the_sessions_disk() {
    if !engine_available("figure_archive_bytes") {
        return;
    }
    let k = kept("figaaaaa");
    let wt = k.inst.mount_path(0);
    let mut rng = fastrand::Rng::with_seed(31);
    let noise = |rng: &mut fastrand::Rng, n: usize| (0..n).map(|_| rng.u8(..)).collect::<Vec<u8>>();
    fs::create_dir_all(wt.join("target/debug/deps")).unwrap();
    for i in 0..32 {
        fs::write(wt.join(format!("target/debug/deps/lib{i}.rlib")), noise(&mut rng, 1 << 20)).unwrap();
    }
    let conversation: String =
        (0..20_000).map(|i| format!("{{\"turn\":{i},\"text\":\"the agent said something\"}}\n")).collect();
    fs::write(k.inst.dir.join("home/.claude/projects/app/long.jsonl"), conversation).unwrap();
    let assessed = k.home.assess_disk(&k.inst.container);
    let disk = assessed.disk.unwrap();
    let file = k.home.tmp.path().join("figure.tar.gz");
    let rec = exported(&export(&k.home, &[], &file, &k.inst.container));
    let mib = |b: u64| b as f64 / (1 << 20) as f64;
    println!(
        "session on disk {:.1} MiB (data {:.1}, work {:.1}, ignored {:.1} of which rebuildable {:.1}); archive {:.2} MiB, {} parts",
        mib(disk.total),
        mib(disk.data),
        mib(disk.work),
        mib(disk.ignored),
        mib(disk.rebuildable),
        mib(rec.bytes.unwrap()),
        rec.parts
    );
}

/// A clone mount moves too: its branches, its tag, its stash, a staged change whose work tree
/// moved on, and HEAD on the branch it was on; its `origin` is the other host's repository's.
#[test]
fn a_clone_mount_moves_with_its_branches_tag_stash_and_staged_change() {
    if !engine_available("a_clone_mount_moves") {
        return;
    }
    let mut home = Home::new();
    let host = home.host_repo("app");
    let inst = home.instance("mvclonea", |h, c| vec![h.clone_record(c, &host, "/workspace/app")]);
    let clone = inst.mount_path(0);
    commit_file(&clone, "main.rs", "fn main() { println!(); }\n", "agent: main, unpushed");
    git(&clone, &["checkout", "-q", "-b", "topic"]);
    commit_file(&clone, "topic.rs", "fn topic() {}\n", "agent: topic");
    git(&clone, &["tag", "agent-tag"]);
    fs::write(clone.join("README.md"), "a change the agent stashed\n").unwrap();
    git(&clone, &["stash", "-q"]);
    fs::write(clone.join("staged.txt"), "staged\n").unwrap();
    git(&clone, &["add", "staged.txt"]);
    fs::write(clone.join("staged.txt"), "staged, then changed\n").unwrap();
    let store = jackin::state::store::Store::open(jackin::state::store::Roots {
        home: home.home.clone(),
        config_dir: home.config.clone(),
    })
    .unwrap();
    let name = jackin::state::names::InstanceName::parse(&inst.container).unwrap();
    store.set_status(&name, jackin::state::model::Status::PreservedDirty, "2026-11-29T10:00:00Z").unwrap();
    let in_a = home.assess(&inst.container);
    let file = home.tmp.path().join("clone.tar.gz");
    exported(&export(&home, &[], &file, &inst.container));

    let a = Kept { home, host, inst, image: String::new() };
    let b = other_host(&a);
    let out = import(&b.home, &[], &file);
    assert!(out.status.success(), "{}", stderr(&out));
    let c = &a.inst.container;
    let in_b = b.home.assess(c);
    assert_eq!((in_b.verdict.as_str(), in_b.summary.as_str()), (in_a.verdict.as_str(), in_a.summary.as_str()));
    let files = |m: &common::records::Mount| {
        let mut f: Vec<(String, String)> = m.files.iter().map(|f| (f.status.clone(), f.path.clone())).collect();
        f.sort();
        f
    };
    assert_eq!(files(&in_b.mounts[0]), files(&in_a.mounts[0]));
    let unpushed = |m: &common::records::Mount| {
        let mut u: Vec<(String, u64)> = m.unpushed.iter().map(|u| (u.name.clone(), u.commits)).collect();
        u.sort();
        u
    };
    assert_eq!(unpushed(&in_b.mounts[0]), unpushed(&in_a.mounts[0]));
    assert_eq!(in_b.mounts[0].stashes, 1);
    let moved = b.home.home.join("data").join(c).join("git/clone/repo/workspace/app").join(c);
    assert_eq!(git(&moved, &["symbolic-ref", "HEAD"]), "refs/heads/topic");
    assert_eq!(git(&moved, &["rev-parse", "agent-tag"]), git(&clone_of(&a), &["rev-parse", "agent-tag"]));
    assert_eq!(git(&moved, &["show", ":staged.txt"]), "staged");
    assert_eq!(fs::read_to_string(moved.join("staged.txt")).unwrap(), "staged, then changed\n");
    assert_eq!(git(&moved, &["stash", "show", "-p"]), git(&clone_of(&a), &["stash", "show", "-p"]));
    assert_eq!(git(&moved, &["remote", "get-url", "origin"]), git(&b.host, &["remote", "get-url", "origin"]));
}

fn clone_of(k: &Kept) -> PathBuf {
    k.inst.mount_path(0)
}

/// The store of `home`, opened by the library (to set a status by hand).
fn store_of(home: &Home) -> jackin::state::store::Store {
    jackin::state::store::Store::open(jackin::state::store::Roots {
        home: home.home.clone(),
        config_dir: home.config.clone(),
    })
    .unwrap()
}

/// Marks the session kept (`preserved_dirty`), as a keep would.
fn mark_kept(home: &Home, container: &str) {
    let name = jackin::state::names::InstanceName::parse(container).unwrap();
    store_of(home).set_status(&name, jackin::state::model::Status::PreservedDirty, "2026-11-29T10:00:00Z").unwrap();
}

/// Runs git with file:// submodule URLs allowed (the tests' submodules' origins are paths).
fn git_sub(dir: &Path, args: &[&str]) -> String {
    git(dir, &[&["-c", "protocol.file.allow=always"][..], args].concat())
}

/// A kept worktree session of home A whose submodule `vendor/lib` holds two commits only the
/// session has (one on a branch of its own, one on its detached HEAD) and a changed file; with
/// `moved_back`, the submodule then checked out again at the commit the parent records, clean:
/// its commits reachable from its reflog alone. Returns the session and the two commits.
fn kept_with_a_submodule(id: &str, moved_back: bool) -> (Kept, String, String) {
    let mut home = Home::new();
    let (host, _) = common::host_with_submodule(&home);
    let inst = home.instance(id, |h, c| vec![h.worktree_record(c, &host, "/workspace/app")]);
    let wt = inst.mount_path(0);
    git_sub(&wt, &["submodule", "update", "-q", "--init"]);
    let sub = wt.join("vendor/lib");
    git(&sub, &["config", "user.email", "agent@example.invalid"]);
    git(&sub, &["config", "user.name", "Agent"]);
    git(&sub, &["checkout", "-q", "-b", "fix"]);
    let on_branch = commit_file(&sub, "fix.rs", "pub fn fix() {}\n", "a fix on a branch");
    git(&sub, &["checkout", "-q", "--detach"]);
    let detached = commit_file(&sub, "lib.rs", "pub fn lib() -> u8 { 42 }\n", "the agent's change");
    if moved_back {
        git(&sub, &["branch", "-q", "-D", "fix"]);
        git(&sub, &["checkout", "-q", "origin/main"]);
        assert_eq!(git(&wt, &["status", "--porcelain"]), "", "the parent reads clean");
    } else {
        fs::write(sub.join("lib.rs"), "pub fn lib() -> u8 { 43 }\n").unwrap();
    }
    mark_kept(&home, &inst.container);
    (Kept { home, host, inst, image: String::new() }, on_branch, detached)
}

/// Commits made inside a submodule, which only the session holds (`submodule-<k>.bundle` in the
/// archive), move too: in B they are in the imported session's own git directory of that
/// submodule (as in A: `<host>/.git/worktrees/<c>/modules/<name>`), checked out as they were, so
/// B's assessment lists them at risk exactly as A's did and a discard in B bundles them again.
/// B's repository's own git directory of the submodule gets no ref.
/// The other home, whose repository at first has no git directory of the submodule: the import
/// of `file` is refused (exit 3, nothing written, the command that makes one named); then the
/// submodule is checked out there (its git directory in B's checkout), ready for the import.
fn other_host_without_the_submodule_then_with_it(a: &Kept, file: &Path) -> Other {
    let b = other_host(a);
    git(&b.host, &["checkout", "-q", "main"]);
    let snapshot = || (common::snapshot_of(&b.home.home), common::snapshot_of(&b.host));
    let before = snapshot();
    let out = import(&b.home, &[], file);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert!(stderr(&out).contains("submodule update --init vendor/lib"), "{}", stderr(&out));
    assert_eq!(snapshot(), before, "nothing written");
    git_sub(&b.host, &["submodule", "update", "-q", "--init"]);
    b
}

#[test]
fn a_submodules_commits_move_and_are_at_risk_in_the_other_home_as_they_were() {
    if !engine_available("a_submodules_commits_move") {
        return;
    }
    let (a, on_branch, detached) = kept_with_a_submodule("mvsubmod", false);
    let c = a.inst.container.clone();
    let in_a = a.home.assess(&c);
    assert!(in_a.summary.contains("3 commits in submodules"), "{}", in_a.summary);
    let file = a.home.tmp.path().join("submodule.tar.gz");
    exported(&export(&a.home, &[], &file, &c));
    let names: Vec<String> =
        entries_of(&file).iter().map(|(n, _, _)| String::from_utf8_lossy(n).into_owned()).collect();
    assert!(names.iter().any(|n| n == "mounts/0-workspace-app/submodule-0.bundle"), "{names:#?}");

    let b = other_host_without_the_submodule_then_with_it(&a, &file);
    let modules = b.host.join(".git/modules/vendor/lib");
    let refs_before = git(&modules, &["for-each-ref", "--format=%(refname) %(objectname)"]);
    let out = import(&b.home, &[], &file);
    assert!(out.status.success(), "{}", stderr(&out));

    let in_b = b.home.assess(&c);
    assert_eq!((in_b.verdict.as_str(), in_b.summary.as_str()), (in_a.verdict.as_str(), in_a.summary.as_str()));
    assert_eq!(in_b.mounts[0].submodules, in_a.mounts[0].submodules);
    assert_eq!(files_of(&in_b.mounts[0]), files_of(&in_a.mounts[0]));

    // The submodule checked out in the imported worktree as it was: on the detached commit, its
    // branch there, its change in its work tree.
    let worktree = b.home.home.join("data").join(&c).join("git/worktree/repo/workspace/app").join(&c);
    let sub = worktree.join("vendor/lib");
    assert_eq!(git(&sub, &["rev-parse", "HEAD"]), detached);
    assert_eq!(git(&sub, &["rev-parse", "refs/heads/fix"]), on_branch);
    assert_eq!(git(&sub, &["status", "--porcelain"]), "M lib.rs");
    assert_eq!(fs::read_to_string(sub.join("lib.rs")).unwrap(), "pub fn lib() -> u8 { 43 }\n");
    let gitdir = PathBuf::from(git(&sub, &["rev-parse", "--absolute-git-dir"]));
    assert_eq!(gitdir, b.host.join(".git/worktrees").join(&c).join("modules/vendor/lib"));
    assert_eq!(git(&modules, &["for-each-ref", "--format=%(refname) %(objectname)"]), refs_before);

    // A discard in B saves them as A's would have.
    let out = b.home.purge(&["--discard-unfinished", &c], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = b.home.quarantines().pop().expect("a quarantine");
    let receipt = common::state::receipt(&q);
    let saved = &receipt.mounts[0].submodules[0];
    assert_eq!(saved.path, "vendor/lib", "{receipt:?}");
    assert_eq!(saved.bundle_contents.commits, 2, "{receipt:?}");
}

/// A mount's changed files, as (status, path), sorted.
fn files_of(m: &common::records::Mount) -> Vec<(String, String)> {
    let mut f: Vec<(String, String)> = m.files.iter().map(|f| (f.status.clone(), f.path.clone())).collect();
    f.sort();
    f
}

/// A submodule whose commits only its reflog reaches (checked out again at the commit the parent
/// records, so the parent reads clean and no file of it was saved): in B its work tree is
/// checked out whole at that commit, and its reflog holds the commits, at risk as in A.
#[test]
fn a_submodules_reflog_only_commits_move_and_its_work_tree_is_checked_out() {
    if !engine_available("a_submodules_reflog_only_commits_move") {
        return;
    }
    let (a, on_branch, detached) = kept_with_a_submodule("mvsubref", true);
    let c = a.inst.container.clone();
    let in_a = a.home.assess(&c);
    assert!(in_a.summary.contains("in submodules"), "{}", in_a.summary);
    let file = a.home.tmp.path().join("submodule.tar.gz");
    exported(&export(&a.home, &[], &file, &c));
    let b = other_host(&a);
    git(&b.host, &["checkout", "-q", "main"]);
    git_sub(&b.host, &["submodule", "update", "-q", "--init"]);
    let out = import(&b.home, &[], &file);
    assert!(out.status.success(), "{}", stderr(&out));
    let in_b = b.home.assess(&c);
    assert_eq!((in_b.verdict.as_str(), in_b.summary.as_str()), (in_a.verdict.as_str(), in_a.summary.as_str()));
    assert_eq!(in_b.mounts[0].submodules, in_a.mounts[0].submodules);
    assert_eq!(files_of(&in_b.mounts[0]), files_of(&in_a.mounts[0]));
    let worktree = b.home.home.join("data").join(&c).join("git/worktree/repo/workspace/app").join(&c);
    let sub = worktree.join("vendor/lib");
    let recorded = git(&a.host.join("vendor/lib"), &["rev-parse", "HEAD"]);
    assert_eq!(git(&sub, &["rev-parse", "HEAD"]), recorded);
    assert_eq!(git(&sub, &["status", "--porcelain"]), "");
    assert_eq!(fs::read_to_string(sub.join("lib.rs")).unwrap(), "pub fn lib() {}\n");
    let logged = git(&sub, &["log", "-g", "--format=%H", "HEAD"]);
    assert!(logged.contains(detached.as_str()), "{detached} in the reflog: {logged}");
    git(&sub, &["merge-base", "--is-ancestor", &on_branch, &detached]);
    assert_eq!(git(&worktree, &["status", "--porcelain"]), "");
}

/// An imported session whose role image this engine does not have resumes by tier 3: the image
/// rebuilt from the role's source at the commit the manifest pins (not where its branch moved
/// on), the worktree and home bound from this home. A session kept without a role source, its
/// image gone there too: the plan says exactly what is missing, and nothing is built or started.
#[test]
fn an_imported_session_whose_image_is_gone_resumes_by_tier_3_from_its_role_source() {
    if !engine_available("an_imported_session_whose_image_is_gone_resumes_by_tier_3") {
        return;
    }
    let home = Home::new();
    let image = "jackin-test-role-mvtier3a:latest".to_owned();
    let (_, bare, sha) = common::role_source(&home, "role-src", Some(&image));
    let url = bare.to_str().unwrap().to_owned();
    let a = kept_as(home, "mvtier3a", image.clone(), |m| {
        m["role_source_git"] = serde_json::Value::from(url.as_str());
        m["role_git_sha"] = serde_json::Value::from(sha.as_str());
        m["image_tag"] = serde_json::Value::from(image.as_str());
    });
    let c = a.inst.container.clone();
    let file = a.home.tmp.path().join("session.tar.gz");
    exported(&export(&a.home, &[], &file, &c));
    // The other host's engine has no image of the role: neither its tag nor its ID.
    docker(&["rmi", "-f", &image]);
    let b = other_host(&a);
    let out = import(&b.home, &[], &file);
    assert!(out.status.success(), "{}", stderr(&out));

    let restore = |args: &[&str]| {
        let mut cmd = b.home.detached("jackin-restore");
        cmd.arg(&c).args(args).arg("--format=json").env("SECRET_TOKEN", "the value on the other host");
        cmd.stdin(Stdio::null()).output().unwrap()
    };
    let plan = restore(&["--plan"]);
    assert!(plan.status.success(), "{}", stderr(&plan));
    let planned: Restored = envelopes(&plan.stdout)[0].data();
    assert_eq!(planned.tier, Some(3), "{planned:?}");
    assert!(planned.missing.is_empty(), "{planned:?}");
    assert!(planned.actions.iter().any(|a| a.contains(&format!("build {image} from {url} at {sha}"))), "{planned:?}");
    assert!(docker_quiet(&["image", "inspect", &image]).is_none(), "--plan builds nothing");

    let out = restore(&["--yes"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let resumed: Restored = envelopes(&out.stdout)[0].data();
    assert_eq!(resumed.tier, Some(3), "{resumed:?}");
    assert_eq!(docker(&["exec", &c, "cat", "/marker"]), "launched", "built at the pinned commit");
    let label = docker(&["image", "inspect", "-f", "{{index .Config.Labels \"jackin.role_git_sha\"}}", &image]);
    assert_eq!(label, sha);
    let worktree = b.home.home.join("data").join(&c).join("git/worktree/repo/workspace/app").join(&c);
    let host = &common::docker::engine_host();
    assert_eq!(bind_source(host, &c, "/workspace/app").as_deref(), Some(worktree.to_str().unwrap()));
    let data = b.home.home.join("data").join(&c);
    assert_eq!(bind_source(host, &c, "/home/agent").as_deref(), Some(data.join("home").to_str().unwrap()));

    // A session kept without a role source, imported where its image is gone: the plan says
    // what is missing, and nothing is started.
    let home = Home::new();
    let image = "jackin-test-role-mvnosrca:latest".to_owned();
    common::role_source(&home, "role-src", Some(&image));
    let a = kept_as(home, "mvnosrca", image.clone(), |m| {
        m["role_source_git"] = serde_json::Value::from("");
        m["role_git_sha"] = serde_json::Value::Null;
    });
    let c = a.inst.container.clone();
    let file = a.home.tmp.path().join("no-source.tar.gz");
    exported(&export(&a.home, &[], &file, &c));
    docker(&["rmi", "-f", &image]);
    let b = other_host(&a);
    let out = import(&b.home, &[], &file);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut cmd = b.home.detached("jackin-restore");
    cmd.args([&c, "--plan", "--format=json"]).env("SECRET_TOKEN", "the value on the other host");
    let plan = cmd.stdin(Stdio::null()).output().unwrap();
    assert_eq!(plan.status.code(), Some(6), "{}", stderr(&plan));
    let planned: Restored = envelopes(&plan.stdout)[0].data();
    assert_eq!(planned.tier, None, "{planned:?}");
    assert_eq!(planned.missing, [format!("image {image} is gone and there is no source to rebuild it from")]);
    assert!(stderr(&plan).contains("no source to rebuild it from"), "{}", stderr(&plan));
    let mut cmd = b.home.detached("jackin-restore");
    cmd.args([&c, "--yes", "--format=json"]).env("SECRET_TOKEN", "the value on the other host");
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(!Session::exists("container", &c), "nothing started");
    assert!(docker_quiet(&["image", "inspect", &image]).is_none(), "nothing built");
}

/// An import stopped after each of its steps (`JACKIN_IMPORT_CRASH_AT`, lib/base/crash.rs), as a
/// SIGKILL would stop it there: the home holds a session without an index row (from `moved` on, a
/// data directory; from `mounts` on, the worktree in the host repository). The same import again
/// is refused, saying it stopped half-way and what removes it, and changes nothing; the clean-up
/// it names, `jackin-purge C --discard-unfinished`, leaves nothing of the session in the home or
/// the host repository (its worktree, its scratch branch, the unpacked archive) and deletes
/// nothing the repository had; then the import runs whole.
#[test]
fn an_import_stopped_half_way_is_refused_again_and_its_clean_up_leaves_nothing() {
    if !engine_available("an_import_stopped_half_way") {
        return;
    }
    let a = kept("mvcrasha");
    let c = a.inst.container.clone();
    let file = a.home.tmp.path().join("session.tar.gz");
    exported(&export(&a.home, &[], &file, &c));
    for &step in jackin::extras::moves::import::CRASH_POINTS {
        let b = other_host(&a);
        let home_before = common::snapshot_of(&b.home.home);
        let host_before = common::snapshot_of(&b.host);
        let mut cmd = b.home.detached("jackin-move");
        cmd.args(["import", file.to_str().unwrap(), "--format=json"]).env(Tool::Import.variable(), step);
        let out = cmd.stdin(Stdio::null()).output().unwrap();
        assert_eq!(out.status.code(), None, "{step}: aborted: {}", stderr(&out));
        assert!(stderr(&out).contains(&format!("test crash after step {step}")), "{step}: {}", stderr(&out));

        // What the home holds.
        let data = b.home.home.join("data").join(&c);
        let worktree = data.join("git/worktree/repo/workspace/app").join(&c);
        let indexed = b.home.index_path().exists() && b.home.index_row(&c).is_some();
        assert!(!indexed, "{step}: no index row yet");
        assert_eq!(data.exists(), step != "unpacked", "{step}: the data directory");
        assert_eq!(worktree.exists(), ["mounts", "recorded"].contains(&step), "{step}: the worktree");
        assert_eq!(data.join(".jackin/instance.json").exists(), step == "recorded", "{step}: the manifest");
        let staged = fs::read_dir(b.home.home.join("imports")).map(|d| d.count()).unwrap_or(0);
        assert_eq!(staged, 1, "{step}: the unpacked archive is left under imports/");

        // The same import again: refused, saying what removes it; nothing changed.
        let during = (common::snapshot_of(&b.home.home), common::snapshot_of(&b.host));
        let out = import(&b.home, &[], &file);
        assert_eq!(out.status.code(), Some(3), "{step}: {}", stderr(&out));
        let says = format!("jackin-purge {c} --discard-unfinished");
        assert!(stderr(&out).contains("stopped half-way") && stderr(&out).contains(&says), "{step}: {}", stderr(&out));
        assert_eq!((common::snapshot_of(&b.home.home), common::snapshot_of(&b.host)), during, "{step}");

        // The clean-up the refusal names.
        let out = b.home.purge(&["--discard-unfinished", &c], "");
        assert_eq!(out.status.code(), Some(0), "{step}: {}", stderr(&out));
        // Only the home's own files changed: the quarantine of the work, the record the purge
        // leaves of the session, the index (without a row of C) and its lock, the imports and
        // trash directories (empty: what was in them would be listed).
        let ours = |p: &Path| {
            p.starts_with(b.home.home.join("quarantine"))
                || p.starts_with(b.home.home.join("records"))
                || [b.home.index_path(), b.home.home.join("data/instances.json.lock")].iter().any(|f| f == p)
                || [b.home.home.join("imports"), b.home.home.join("trash")].iter().any(|d| d == p)
        };
        let left: Vec<PathBuf> = common::changed_paths(&home_before, &common::snapshot_of(&b.home.home))
            .into_iter()
            .filter(|p| !ours(p))
            .collect();
        assert_eq!(left, Vec::<PathBuf>::new(), "{step}: the purge left nothing of the session");
        assert!(!b.home.index_path().exists() || b.home.index_row(&c).is_none(), "{step}: no row of C");
        let host_after = common::snapshot_of(&b.host);
        for (path, entry) in &host_before {
            let now = host_after.iter().find(|(p, _)| p == path).map(|(_, e)| e);
            assert_eq!(now, Some(entry), "{step}: {} of the host repository as it was", path.display());
        }
        // Added and left: the objects of the session's commits (unreachable now, git's gc takes
        // them), and the empty directories git leaves when its last ref or worktree there goes.
        let objects = b.host.join(".git/objects");
        let no_files = |p: &Path| walkdir::WalkDir::new(p).into_iter().flatten().all(|e| e.file_type().is_dir());
        let added: Vec<&PathBuf> = host_after
            .iter()
            .map(|(p, _)| p)
            .filter(|p| !host_before.iter().any(|(q, _)| q == *p) && !p.starts_with(&objects) && !no_files(p))
            .collect();
        assert_eq!(added, Vec::<&PathBuf>::new(), "{step}: nothing left in the host repository but objects");
        assert!(!git(&b.host, &["worktree", "list"]).contains(&c), "{step}");
        assert_eq!(git(&b.host, &["branch", "--list", &format!("jackin/scratch/{c}")]), "", "{step}");

        // And the import runs whole.
        let out = import(&b.home, &[], &file);
        assert!(out.status.success(), "{step}: {}", stderr(&out));
        assert_eq!(b.home.assess(&c).summary, a.home.assess(&c).summary, "{step}");
    }
}

/// A kept worktree session of home A whose submodule `vendor/lib` has changed files and no
/// commit only the session has: `lib.rs` modified, an untracked file (and one in a new
/// directory) in its work tree, on its branch `main` at the commit the parent records (pushed).
/// The parent lists the submodule as changed; its assessment has no submodule at risk.
fn kept_with_a_dirty_submodule(id: &str) -> Kept {
    let mut home = Home::new();
    let (host, _) = common::host_with_submodule(&home);
    let inst = home.instance(id, |h, c| vec![h.worktree_record(c, &host, "/workspace/app")]);
    let wt = inst.mount_path(0);
    git_sub(&wt, &["submodule", "update", "-q", "--init"]);
    let sub = wt.join("vendor/lib");
    git(&sub, &["checkout", "-q", "main"]);
    fs::write(sub.join("lib.rs"), "pub fn lib() -> u8 { 7 }\n").unwrap();
    fs::write(sub.join("todo.txt"), "untracked in the submodule\n").unwrap();
    fs::create_dir_all(sub.join("new")).unwrap();
    fs::write(sub.join("new/part.rs"), b"\x00\x01 bytes, not text\xff\n").unwrap();
    mark_kept(&home, &inst.container);
    Kept { home, host, inst, image: String::new() }
}

/// A submodule's changed and untracked files with no commit at risk in it move too: in B the
/// submodule is checked out in the imported worktree again (its git directory made from B's own
/// of that submodule, HEAD on the branch and commit it was on), its files over it byte for byte, so B's assessment
/// lists the same changed files as A's, and `git status` in the submodule says what it said in
/// A. Without a git directory of the submodule in B's repository the import is refused (exit 3,
/// nothing written), naming the command that makes one: imported as a plain directory, the
/// changes would read clean there and a purge would not save them.
#[test]
fn a_submodules_changed_files_without_commits_move_and_read_as_changed_in_the_other_home() {
    if !engine_available("a_submodules_changed_files_without_commits_move") {
        return;
    }
    let a = kept_with_a_dirty_submodule("mvsubdty");
    let c = a.inst.container.clone();
    let in_a = a.home.assess(&c);
    assert!(in_a.mounts[0].submodules.is_empty(), "no commit at risk in the submodule: {in_a:?}");
    assert!(!files_of(&in_a.mounts[0]).is_empty(), "the submodule's changes are listed: {in_a:?}");
    let sub_a = a.inst.mount_path(0).join("vendor/lib");
    let status_a = git(&sub_a, &["status", "--porcelain", "--untracked-files=all"]);
    let file = a.home.tmp.path().join("dirty-submodule.tar.gz");
    exported(&export(&a.home, &[], &file, &c));

    let b = other_host_without_the_submodule_then_with_it(&a, &file);
    let out = import(&b.home, &[], &file);
    assert!(out.status.success(), "{}", stderr(&out));
    let rec = records_of::<Imported>(&out.stdout).remove(0);
    assert!(!rec.notes.iter().any(|n| n.contains("left out")), "{:?}", rec.notes);

    let in_b = b.home.assess(&c);
    assert_eq!((in_b.verdict.as_str(), in_b.summary.as_str()), (in_a.verdict.as_str(), in_a.summary.as_str()));
    assert_eq!(files_of(&in_b.mounts[0]), files_of(&in_a.mounts[0]));
    assert_eq!(in_b.mounts[0].submodules, in_a.mounts[0].submodules);
    let worktree = b.home.home.join("data").join(&c).join("git/worktree/repo/workspace/app").join(&c);
    let sub_b = worktree.join("vendor/lib");
    assert_eq!(git(&sub_b, &["status", "--porcelain", "--untracked-files=all"]), status_a);
    assert_eq!(git(&sub_b, &["rev-parse", "HEAD"]), git(&sub_a, &["rev-parse", "HEAD"]));
    assert_eq!(git(&sub_b, &["symbolic-ref", "HEAD"]), "refs/heads/main", "on its branch, as in A");
    for name in ["lib.rs", "todo.txt", "new/part.rs"] {
        assert_eq!(fs::read(sub_b.join(name)).unwrap(), fs::read(sub_a.join(name)).unwrap(), "{name}");
    }
    let gitdir = PathBuf::from(git(&sub_b, &["rev-parse", "--absolute-git-dir"]));
    assert_eq!(gitdir, b.host.join(".git/worktrees").join(&c).join("modules/vendor/lib"));

    // A discard in B saves the submodule's files, as A's would have.
    let out = b.home.purge(&["--discard-unfinished", &c], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = b.home.quarantines().pop().expect("a quarantine");
    let receipt = common::state::receipt(&q);
    let files = q.join(receipt.mounts[0].files_dir.as_deref().expect("files saved"));
    for name in ["lib.rs", "todo.txt", "new/part.rs"] {
        assert_eq!(
            fs::read(files.join("vendor/lib").join(name)).unwrap(),
            fs::read(sub_a.join(name)).unwrap(),
            "{name}"
        );
    }
}

/// A second import of a session while one is at work on it (paused after each of its steps:
/// `JACKIN_IMPORT_PAUSE_AT`, the session's claim held) is refused as busy, exit 5, its message
/// naming the import at work and saying nothing was changed (no record on stdout, as for the
/// import's other refusals); its dry run too; nothing in the home or the host repository changes. Not exit 3's "stopped
/// half-way": that import is not stopped, and a purge it named would take its session from
/// under it. The first then finishes as if alone.
#[test]
fn a_second_import_while_one_is_at_work_is_refused_as_busy_and_changes_nothing() {
    if !engine_available("a_second_import_while_one_is_at_work") {
        return;
    }
    let a = kept("mvbusyaa");
    let c = a.inst.container.clone();
    let file = a.home.tmp.path().join("session.tar.gz");
    exported(&export(&a.home, &[], &file, &c));
    let summary = a.home.assess(&c).summary;
    for &step in jackin::extras::moves::import::CRASH_POINTS {
        let b = other_host(&a);
        let mut first = b.home.detached("jackin-move");
        first.args(["import", file.to_str().unwrap(), "--format=json"]).stdin(Stdio::null());
        let paused = common::Paused::start(first, Tool::Import, step, b.home.tmp.path().join("import.paused"));
        let during = (common::snapshot_of(&b.home.home), common::snapshot_of(&b.host));
        for dry in [&[][..], &["--dry-run"]] {
            let out = import(&b.home, dry, &file);
            assert_eq!(out.status.code(), Some(5), "{step} {dry:?}: {}", stderr(&out));
            let refusal = records_of::<ErrorRecord>(&out.stdout);
            assert_eq!(refusal.len(), 1, "{step} {dry:?}: the refusal alone: {}", String::from_utf8_lossy(&out.stdout));
            assert_eq!(refusal[0].code, "busy", "{step} {dry:?}: {:?}", refusal[0]);
            let says = stderr(&out);
            let holder = common::holder_as_said(&format!("pid {}", paused.pid));
            assert!(refusal[0].message.contains(&holder), "{:?}", refusal[0]);
            let named = !jackin::base::os::NAMES_LOCK_HOLDERS || says.contains("jackin-move");
            assert!(named && says.contains(&holder), "{step}: {says}");
            // Unnamed (a Mac, the portable build), the holder is not known to be an import: the
            // session is said to be live, which changes nothing either.
            let nothing = !jackin::base::os::NAMES_LOCK_HOLDERS || says.contains("nothing was changed");
            assert!(nothing && !says.contains("half-way"), "{step}: {says}");
            let after = (common::snapshot_of(&b.home.home), common::snapshot_of(&b.host));
            assert_eq!(after, during, "{step} {dry:?}: nothing changed");
        }
        let out = paused.finish();
        assert!(out.status.success(), "{step}: the first import finishes: {}", stderr(&out));
        let rec = records_of::<Imported>(&out.stdout).remove(0);
        assert!(!rec.dry_run, "{step}");
        assert!(b.home.index_row(&c).is_some(), "{step}: its index row");
        assert_eq!(b.home.assess(&c).summary, summary, "{step}");
        assert!(!b.home.home.join("data").join(format!("{c}.lock")).exists(), "{step}: its claim ended");
    }
}

/// A mount's name the session chose, with escape sequences in it (an OSC title write, a screen
/// clear): the progress shows it inert.
const HOSTILE_DST: &str = "/workspace/app\x1b]0;owned\x07\x1b[2J";
/// How the progress shows it (protocol/inert.rs).
const HOSTILE_SHOWN: &str = "/workspace/app\\033]0;owned\\007\\033[2J";

/// A kept worktree session of home A whose mount is at [`HOSTILE_DST`], with an unpushed commit
/// and an untracked file whose name holds escapes too.
fn kept_with_a_hostile_mount(id: &str) -> Kept {
    let mut home = Home::new();
    let host = home.host_repo("app");
    let inst = home.instance(id, |h, c| vec![h.worktree_record(c, &host, HOSTILE_DST)]);
    let wt = inst.mount_path(0);
    git(&wt, &["config", "user.email", "agent@example.invalid"]);
    git(&wt, &["config", "user.name", "Agent"]);
    commit_file(&wt, "feature.rs", "fn feature() {}\n", "agent: feature");
    fs::write(wt.join(std::ffi::OsStr::from_bytes(b"x\x1b[2A\x1b[2Kname")), "untracked\n").unwrap();
    mark_kept(&home, &inst.container);
    Kept { home, host, inst, image: String::new() }
}

/// `tool ARGS --format=json` of `home` with stderr on a 200-column pseudo-terminal (stdin
/// empty, stdout a file), `env` set; the session and the stdout file.
fn on_a_terminal(
    home: &Home,
    tool: &str,
    args: &[&std::ffi::OsStr],
    env: &[(&str, &std::ffi::OsStr)],
) -> (rexpect::session::PtySession, PathBuf) {
    let stdout = home.tmp.path().join(format!("{tool}-out-{}.jsonl", common::unique_id()));
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c").arg("stty rows 30 cols 200 </dev/tty && exec \"$0\" \"$@\"").arg(common::tool_path(tool));
    cmd.arg("--home").arg(&home.home).arg("--config-dir").arg(&home.config).args(args).arg("--format=json");
    cmd.env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR").env("TERM", "xterm-256color");
    for crashing in [Tool::Purge, Tool::Keep, Tool::Restore, Tool::Import] {
        cmd.env_remove(crashing.variable()).env_remove(crashing.pause_variable());
    }
    cmd.env_remove(jackin::face::progress::AFTER_VARIABLE).envs(env.iter().copied());
    cmd.stdin(Stdio::null()).stdout(fs::File::create(&stdout).unwrap());
    (rexpect::session::spawn_command(cmd, Some(120_000)).unwrap(), stdout)
}

/// Waits for the end of a run on a terminal: its exit code and every byte the terminal was sent
/// (rexpect hands them over as Latin-1, one char a byte).
fn terminal_end(mut pty: rexpect::session::PtySession) -> (i32, Vec<u8>) {
    let shown: Vec<u8> = pty.exp_eof().unwrap().chars().map(|c| c as u32 as u8).collect();
    match pty.process.wait().unwrap() {
        rexpect::process::WaitStatus::Exited(_, code) => (code, shown),
        other => panic!("ended with {other:?}: {}", String::from_utf8_lossy(&shown)),
    }
}

/// What a terminal must never get from the session: the escapes of its mount's and its file's
/// names (the progress bar's own drawing is `\r` and CSI `K`/`A`/`?25` sequences).
fn assert_no_session_escapes(what: &str, shown: &[u8]) {
    for sequence in [&b"\x1b]"[..], b"\x07", b"\x1b[2J", b"\x1b[2A"] {
        assert!(
            !contains(shown, sequence),
            "{what}: {sequence:?} reached the terminal: {:?}",
            String::from_utf8_lossy(shown)
        );
    }
}

/// Progress on long work, on a terminal: `jackin-move export` and `jackin-move import` draw
/// a bar on stderr when it is a terminal, naming each step (the mount by its name, shown inert:
/// the session's escapes never reach the terminal), and clear it at the end; the records are on
/// stdout all the same. Drawn only once the work has lasted half a second: an import paused past
/// that after unpacking shows the bar from the next step on, not the steps before. With stderr
/// not a terminal, no progress byte is written, even with the delay set to 0
/// (`JACKIN_PROGRESS_AFTER_MS`, debug builds): stderr is empty.
#[test]
fn export_and_import_show_progress_on_a_terminal_and_none_on_a_pipe() {
    if !engine_available("export_and_import_show_progress_on_a_terminal") {
        return;
    }
    let a = kept_with_a_hostile_mount("mvprogra");
    let c = a.inst.container.clone();
    let now = std::ffi::OsStr::new("0");
    let after = [(jackin::face::progress::AFTER_VARIABLE, now)];
    let os = |s: &str| std::ffi::OsString::from(s);

    // Export, on a terminal: every step named.
    let file = a.home.tmp.path().join("progress.tar.gz");
    let args = [os("export"), file.clone().into_os_string(), os(&c)];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let (pty, stdout) = on_a_terminal(&a.home, "jackin-move", &args, &after);
    let (code, shown) = terminal_end(pty);
    let text = String::from_utf8_lossy(&shown);
    assert_eq!(code, 0, "{text}");
    assert_eq!(records_of::<Exported>(&fs::read(&stdout).unwrap()).len(), 1, "the record is on stdout");
    for step in ["exporting", HOSTILE_SHOWN, "the session's files", "the agent home", "the mounts' work"] {
        assert!(text.contains(step), "export: {step:?} is shown: {text:?}");
    }
    assert!(text.contains("\x1b[2K"), "the bar is cleared at the end: {text:?}");
    assert_no_session_escapes("export", &shown);

    // Export, stderr a pipe: nothing on it.
    let piped = a.home.tmp.path().join("piped.tar.gz");
    let mut cmd = a.home.detached("jackin-move");
    cmd.arg("export").arg(&piped).arg(&c).arg("--format=json").env(after[0].0, now);
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "no progress on a pipe");
    exported(&out);

    // Import, on a terminal, with no delay: every step named.
    let b = other_host(&a);
    let args = [os("import"), file.clone().into_os_string()];
    let args: Vec<&std::ffi::OsStr> = args.iter().map(|a| a.as_os_str()).collect();
    let (pty, stdout) = on_a_terminal(&b.home, "jackin-move", &args, &after);
    let (code, shown) = terminal_end(pty);
    let text = String::from_utf8_lossy(&shown);
    assert_eq!(code, 0, "{text}");
    assert_eq!(records_of::<Imported>(&fs::read(&stdout).unwrap()).len(), 1, "the record is on stdout");
    for step in ["importing", "checking the archive", "unpacking", HOSTILE_SHOWN] {
        assert!(text.contains(step), "import: {step:?} is shown: {text:?}");
    }
    assert_no_session_escapes("import", &shown);

    // Import, on a terminal, paused a second after unpacking: the bar from the mount's step on.
    let b = other_host(&a);
    let pause = b.home.tmp.path().join("import.paused");
    let env = [
        (Tool::Import.pause_variable(), std::ffi::OsStr::new("unpacked")),
        (jackin::base::crash::PAUSE_FILE, pause.as_os_str()),
    ];
    let (pty, _) = on_a_terminal(&b.home, "jackin-move", &args, &env);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !fs::read_to_string(&pause).is_ok_and(|t| !t.trim().is_empty()) {
        assert!(std::time::Instant::now() < deadline, "the import did not pause");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(1000));
    fs::remove_file(&pause).unwrap();
    let (code, shown) = terminal_end(pty);
    let text = String::from_utf8_lossy(&shown);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("importing 3/3") && text.contains(HOSTILE_SHOWN),
        "the mount's step is shown, the last of 2 + one per mount: {text:?}"
    );
    assert!(!text.contains("checking the archive"), "not the first step, before the work lasted: {text:?}");
    assert_no_session_escapes("import after a pause", &shown);

    // Import, stderr a pipe: nothing on it.
    let b = other_host(&a);
    let mut cmd = b.home.detached("jackin-move");
    cmd.arg("import").arg(&file).arg("--format=json").env(after[0].0, now);
    let out = cmd.stdin(Stdio::null()).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "", "no progress on a pipe");
    assert_eq!(records_of::<Imported>(&out.stdout).len(), 1);
}
