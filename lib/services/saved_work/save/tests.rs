//! The saved-work format's own tests: its name, unreadable mounts, changed files gone or unreadable meanwhile.
use super::*;
use crate::protocol::assessment::Verdict;
use crate::protocol::identity::Identity;
use crate::state::store::{read_json, Roots};

const CONTAINER: &str = "jk-a1b2c3d4-app";

pub(crate) fn store_in(home: &Path) -> Store {
    Store::open(Roots { home: home.to_path_buf(), config_dir: home.to_path_buf() }).unwrap()
}

pub(crate) fn assessment(mounts: Vec<MountAssessment>) -> Assessment {
    Assessment {
        identity: Identity {
            container_base: CONTAINER.into(),
            instance_id: "a1b2c3d4".into(),
            workspace_name: None,
            workspace_label: "app".into(),
            role_key: "agentsmith".into(),
            agent_runtime: "claude".into(),
        },
        verdict: Verdict::Unknown,
        in_place: false,
        mounts,
        summary: "cannot verify: cannot open".into(),
        assessed_at: "2026-12-01T12:00:00Z".into(),
        status: None,
        disk: None,
        seal: None,
    }
}

fn unreadable_mount(mount_dst: &str, path: &Path) -> MountAssessment {
    MountAssessment::unknown(
        mount_dst.into(),
        "worktree".into(),
        path.to_string_lossy().into_owned(),
        "cannot open".into(),
    )
}

fn receipt_of(dir: &Path) -> Receipt {
    read_json(&dir.join("receipt.json")).unwrap().expect("a receipt")
}

/// Saves of the same session within one second take the next free number (`-2`, `-3`, …),
/// never a name already taken, and the save ends.
#[test]
fn a_save_whose_name_is_taken_twice_takes_the_next_free_number() {
    let tmp = tempfile::tempdir().unwrap();
    let root = store_in(tmp.path()).quarantine_root();
    fs::create_dir_all(&root).unwrap();
    // The name and `-2` taken for every second the save below could run in.
    let start = SystemTime::now();
    let mut third_names = Vec::new();
    for second in 0..120 {
        let at = start + Duration::from_secs(second);
        let stamp = humantime::format_rfc3339_seconds(at).to_string().replace(['-', ':'], "");
        fs::create_dir(root.join(format!("{CONTAINER}-{stamp}"))).unwrap();
        fs::create_dir(root.join(format!("{CONTAINER}-{stamp}-2"))).unwrap();
        third_names.push(format!("{CONTAINER}-{stamp}-3"));
    }
    // On its own thread, so that a save that never finds a free name fails the test rather
    // than hanging it.
    let (done, finished) = std::sync::mpsc::channel();
    let home = tmp.path().to_path_buf();
    std::thread::spawn(move || {
        let saved = save(&store_in(&home), &assessment(Vec::new()), AtRisk::Mounts(&[]), 30);
        let _ = done.send(saved.map_err(|e| format!("{e:#}")));
    });
    let dir = finished.recv_timeout(Duration::from_secs(60)).expect("the save ended").unwrap();
    let name = dir.file_name().unwrap().to_string_lossy().into_owned();
    assert!(third_names.contains(&name), "named {name}");
    assert_eq!(receipt_of(&dir).identity.container_base, CONTAINER);
    for entry in fs::read_dir(&root).unwrap() {
        let entry = entry.unwrap().path();
        if entry != dir {
            assert_eq!(fs::read_dir(&entry).unwrap().count(), 0, "{} left as it was", entry.display());
        }
    }
}

/// An unreadable mount is moved into the quarantine whole only when it is in the jackin data
/// directory; one anywhere else (a record can name any path, also one that climbs out with
/// `..`) is left where it is: it is not the session's to take.
#[test]
fn an_unreadable_mount_outside_the_data_directory_is_never_moved() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(tmp.path());
    let own = store.data_dir().join(CONTAINER).join("git/app");
    let elsewhere = tmp.path().join("elsewhere/project");
    for dir in [&own, &elsewhere] {
        fs::create_dir_all(dir).unwrap();
        fs::write(dir.join("notes.txt"), "work").unwrap();
    }
    let climbing_out = store.data_dir().join(CONTAINER).join("../../elsewhere/project");
    assert!(climbing_out.starts_with(store.data_dir()), "lexically inside");
    let mounts = vec![
        unreadable_mount("/workspace/app", &own),
        unreadable_mount("/workspace/elsewhere", &elsewhere),
        unreadable_mount("/workspace/climbing", &climbing_out),
    ];
    let dir = save(&store, &assessment(mounts), AtRisk::Mounts(&[]), 30).unwrap();
    let receipt = receipt_of(&dir);
    assert_eq!(receipt.mounts[0].tree.as_deref(), Some("0-workspace-app/tree"));
    assert_eq!(fs::read_to_string(dir.join("0-workspace-app/tree/notes.txt")).unwrap(), "work");
    assert!(!own.exists());
    for saved in &receipt.mounts[1..] {
        assert_eq!(saved.tree, None, "{}", saved.mount_dst);
        assert_eq!(saved.note.as_deref(), Some("could not be read, nothing saved: cannot open"));
    }
    assert_eq!(fs::read_to_string(elsewhere.join("notes.txt")).unwrap(), "work");
}

/// An unreadable mount in the data directory that is already gone has nothing to move: the
/// receipt says so, and the rest of the quarantine is saved.
#[test]
fn an_unreadable_mount_already_gone_is_noted_not_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let store = store_in(tmp.path());
    let gone = store.data_dir().join(CONTAINER).join("git/app");
    let dir =
        save(&store, &assessment(vec![unreadable_mount("/workspace/app", &gone)]), AtRisk::Mounts(&[]), 30).unwrap();
    let saved = &receipt_of(&dir).mounts[0];
    assert_eq!(saved.tree, None);
    assert_eq!(saved.note.as_deref(), Some("could not be read, nothing saved: cannot open"));
}

/// A changed file that is gone by the time it is copied (a deletion, or removed since the
/// assessment) is recorded as nothing to save; one that is there is copied as it is.
#[test]
fn a_changed_file_gone_meanwhile_is_saved_as_a_deletion_not_an_error() {
    let tmp = tempfile::tempdir().unwrap();
    let mount = tmp.path().join("mount");
    let files_dir = tmp.path().join("files");
    fs::create_dir_all(&mount).unwrap();
    fs::create_dir_all(&files_dir).unwrap();
    fs::write(mount.join("kept.txt"), "work").unwrap();
    assert!(!copy_changed_file(&mount, Path::new("gone.txt"), &files_dir).unwrap());
    assert!(!files_dir.join("gone.txt").exists());
    assert!(copy_changed_file(&mount, Path::new("kept.txt"), &files_dir).unwrap());
    assert_eq!(fs::read_to_string(files_dir.join("kept.txt")).unwrap(), "work");
}

/// A path that cannot be read for another reason than its absence (here: below a file) is
/// an error that stops the quarantine, and with it the purge; it is never recorded as a
/// deletion, after which the purge would delete the file unsaved.
#[test]
fn a_changed_file_that_cannot_be_read_is_an_error_not_a_deletion() {
    let tmp = tempfile::tempdir().unwrap();
    fs::write(tmp.path().join("a-file"), "x").unwrap();
    assert!(copy_entry(&tmp.path().join("a-file/below"), &tmp.path().join("copy")).is_err());
    assert!(!tmp.path().join("copy").exists());
}

/// Which changes' staged versions are saved under `index/`: those whose staged version (X) the
/// work tree no longer holds (Y changed it again, deleted it or changed its type), and no other,
/// so a change staged as it is in the work tree, or not staged at all, is saved once.
#[test]
fn only_a_staged_version_the_work_tree_lacks_is_saved_from_the_index() {
    for status in ["AM", "MM", "AD", "MD", "RM", "RD", "TM", "AT"] {
        assert!(staged_differs(status), "{status:?}");
        assert!(staged_change(status), "{status:?}");
    }
    for status in ["A ", "M ", "R ", "T "] {
        assert!(!staged_differs(status), "{status:?}: the work tree has the staged version");
        assert!(staged_change(status), "{status:?}");
    }
    for status in [" M", " D", " T", "??", "!!", "D ", "DM", "UU", ""] {
        assert!(!staged_differs(status), "{status:?}");
        assert!(!staged_change(status), "{status:?}: nothing staged to save");
    }
}

/// A staged version is written as the index holds it: an executable one executable, any other
/// file not, a link as a link to its target; a path the index lacks writes nothing.
#[test]
fn a_staged_version_keeps_its_mode_and_a_link_stays_a_link() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    fs::create_dir_all(&work).unwrap();
    fs::write(work.join("run.sh"), "#!/bin/sh\n").unwrap();
    fs::set_permissions(work.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(work.join("notes"), "plain\n").unwrap();
    fs::set_permissions(work.join("notes"), fs::Permissions::from_mode(0o600)).unwrap();
    std::os::unix::fs::symlink("notes", work.join("link")).unwrap();
    // Staged by git itself (libgit2 is the engine's alone).
    for args in [&["init", "-q"][..], &["add", "run.sh", "notes", "link"]] {
        let status = std::process::Command::new("git").args(args).current_dir(&work).status().unwrap();
        assert!(status.success(), "git {args:?}");
    }
    let repo = git::Repo::open(&work).unwrap();
    let saved = dir.path().join("index");
    for path in ["run.sh", "notes", "link"] {
        assert!(save_staged(&repo, Path::new(path), &saved).unwrap(), "{path}");
    }
    assert_eq!(fs::metadata(saved.join("run.sh")).unwrap().permissions().mode() & 0o777, 0o755);
    assert_eq!(fs::metadata(saved.join("notes")).unwrap().permissions().mode() & 0o777, 0o644);
    assert_eq!(fs::read(saved.join("notes")).unwrap(), b"plain\n");
    assert_eq!(fs::read_link(saved.join("link")).unwrap(), Path::new("notes"));
    assert!(!save_staged(&repo, Path::new("absent"), &saved).unwrap());
    assert!(!saved.join("absent").exists());
}

/// The files a save measures before anything is written are those it will copy: of each mount
/// saved on a discard that its assessment could read and whose isolation record is readable.
/// A clean mount's, an unassessed mount's (saved whole) and a malformed record's are not.
#[test]
fn only_the_files_of_a_readable_mount_at_risk_are_measured() {
    use crate::protocol::assessment::FileChange;
    let mount = |dst: &str, verdict: Verdict, error: Option<&str>| MountAssessment {
        verdict,
        files: vec![FileChange { status: "??".into(), path: "new.txt".into(), orig_path: None, diff: None }],
        error: error.map(Into::into),
        ..MountAssessment::unknown(dst.into(), "worktree".into(), format!("/w{dst}"), String::new())
    };
    let record = |dst: &str| IsolationRecord {
        workspace: "app".into(),
        mount_dst: dst.into(),
        original_src: "/src".into(),
        isolation: IsolationKind::Worktree,
        worktree_path: format!("/w{dst}"),
        scratch_branch: format!("jackin/scratch/{CONTAINER}"),
        base_commit: "0".repeat(40),
        selector_key: "app".into(),
        container_name: CONTAINER.into(),
        cleanup_status: "preserved".into(),
        extra: Default::default(),
    };
    let malformed = MalformedRecord { mount_dst: Some("/d".into()), isolation: None, path: None, reason: "bad".into() };
    let assessment = assessment(vec![
        mount("/a", Verdict::Dirty, None),
        mount("/b", Verdict::Clean, None),
        mount("/c", Verdict::Dirty, Some("cannot open")),
        mount("/d", Verdict::Dirty, None),
    ]);
    let records = [Ok(record("/a")), Ok(record("/b")), Ok(record("/c")), Err(malformed)];
    assert_eq!(files_to_copy(&assessment, &records), [PathBuf::from("/w/a/new.txt")]);
}

/// A save fits when the free space holds its files' bytes, a twentieth more and the 1 MiB
/// margin, exactly or with room over; one byte less refuses it, saying nothing was deleted.
#[test]
fn a_save_fits_exactly_when_the_free_space_holds_its_bytes_a_twentieth_and_the_margin() {
    let root = Path::new("/quarantine");
    let wanted = 2_000 + 100 + 1_048_576;
    fits(2_000, wanted, root).unwrap();
    fits(2_000, u64::MAX, root).unwrap();
    let err = fits(2_000, wanted - 1, root).unwrap_err().to_string();
    assert!(err.contains(&format!("{wanted} with the margin")) && err.contains("nothing was deleted"), "{err}");
}

/// What a save copies is measured by its blocks on disk: a file's allocated blocks (a hole takes
/// none), at least a page for anything, and a directory with everything under it.
#[test]
fn a_directory_is_measured_with_what_is_under_it() {
    let dir = tempfile::tempdir().unwrap();
    let tree = dir.path().join("tree");
    fs::create_dir_all(tree.join("sub")).unwrap();
    fs::write(tree.join("sub").join("full"), vec![1u8; 64 * 1024]).unwrap();
    let sparse = fs::File::create(tree.join("sparse")).unwrap();
    sparse.set_len(1 << 30).unwrap();
    let file = allocated_bytes(&tree.join("sub").join("full"));
    assert!(file >= 64 * 1024, "{file}");
    assert_eq!(allocated_bytes(&tree.join("sparse")), 4096, "a hole takes no blocks; a page at least");
    let whole = allocated_bytes(&tree);
    assert!(whole >= file + 4096 * 3, "{whole}: the tree, sub and sparse as well as the file");
    assert!(whole < 1 << 30, "{whole}: the hole is not counted");
    assert_eq!(allocated_bytes(&dir.path().join("absent")), 0);
}
