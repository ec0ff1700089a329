//! The store's own tests: atomic writes, never through a link, the exit action, the index's version and mending, the index lock.
use std::os::unix::fs::MetadataExt;

use super::*;

#[test]
fn atomic_write_is_exact_and_private() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.json");
    write_atomic(&path, b"{\n  \"a\": 1\n}").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"{\n  \"a\": 1\n}");
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1, "no temp file left behind");
}

#[test]
fn a_linked_data_dir_is_never_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let outside = dir.path().join("outside");
    fs::create_dir_all(home.join("data")).unwrap();
    fs::create_dir_all(outside.join(".jackin")).unwrap();
    let store = Store::open(Roots { home: home.clone(), config_dir: home.clone() }).unwrap();
    let name = InstanceName::parse("jk-abcd1234-x").unwrap();
    std::os::unix::fs::symlink(&outside, home.join("data/jk-abcd1234-x")).unwrap();
    let err = store.write_isolation(&name, &Isolation::default()).unwrap_err();
    assert!(err.to_string().contains("is a symbolic link"), "{err}");
    assert_eq!(fs::read_dir(outside.join(".jackin")).unwrap().count(), 0, "nothing written outside");
}

#[test]
fn a_private_dir_is_made_once_and_never_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let trash = dir.path().join("trash");
    ensure_private_dir(&trash).unwrap();
    ensure_private_dir(&trash).unwrap();
    assert_eq!(fs::metadata(&trash).unwrap().mode() & 0o777, 0o700);
    let linked = dir.path().join("quarantine");
    std::os::unix::fs::symlink(&trash, &linked).unwrap();
    assert!(ensure_private_dir(&linked).is_err());
}

#[test]
fn a_stale_exit_action_is_not_read() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(Roots { home: dir.path().to_owned(), config_dir: dir.path().to_owned() }).unwrap();
    let name = InstanceName::parse("jk-abcd1234-x").unwrap();
    assert_eq!(store.read_exit_action(&name, |_| true), ExitActionFile::Absent);
    fs::create_dir_all(store.exit_action_path(&name).parent().unwrap()).unwrap();
    fs::write(store.exit_action_path(&name), "\"discard\"").unwrap();
    assert_eq!(store.read_exit_action(&name, |_| true), ExitActionFile::Fresh(ExitChoice::Discard));
    assert_eq!(store.read_exit_action(&name, |_| false), ExitActionFile::Stale);
    store.clear_exit_action(&name).unwrap();
    store.clear_exit_action(&name).unwrap();
    assert_eq!(store.read_exit_action(&name, |_| true), ExitActionFile::Absent);
}

#[test]
fn an_exit_action_is_judged_by_the_file_opened_never_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(Roots { home: dir.path().to_owned(), config_dir: dir.path().to_owned() }).unwrap();
    let name = InstanceName::parse("jk-abcd1234-x").unwrap();
    let path = store.exit_action_path(&name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    let elsewhere = dir.path().join("operator-file");
    fs::write(&elsewhere, "\"discard\"").unwrap();
    std::os::unix::fs::symlink(&elsewhere, &path).unwrap();
    assert_eq!(store.read_exit_action(&name, |_| true), ExitActionFile::Unreadable("a symbolic link".into()));
    store.clear_exit_action(&name).unwrap();
    assert!(elsewhere.exists(), "the link is removed, not what it names");

    crate::base::testing::fifo(&path);
    let (reader, fifo_name) = (store.clone(), name.clone());
    let read = returns_promptly("the read of an exit action that is a FIFO", move || {
        reader.read_exit_action(&fifo_name, |_| true)
    });
    assert_eq!(read, ExitActionFile::Unreadable("not a file".into()));
    fs::remove_file(&path).unwrap();

    let mut padded = b"\"discard\"".to_vec();
    padded.resize(4097, b' ');
    fs::write(&path, &padded).unwrap();
    assert_eq!(store.read_exit_action(&name, |_| true), ExitActionFile::Unreadable("larger than any choice".into()));
    padded.truncate(4096);
    fs::write(&path, &padded).unwrap();
    assert_eq!(store.read_exit_action(&name, |_| true), ExitActionFile::Fresh(ExitChoice::Discard));
}

/// Runs `call` on a thread of its own, and fails the test when it has not returned within 10 s:
/// a read that waits for a FIFO's writer, or a try that waits for a lock's holder, would
/// otherwise hang the whole suite (and a CI run with it) rather than fail it.
pub(super) fn returns_promptly<T: Send + 'static>(what: &str, call: impl FnOnce() -> T + Send + 'static) -> T {
    crate::base::testing::returns_promptly(call).unwrap_or_else(|| panic!("{what} waits instead of returning"))
}

fn store_in(dir: &Path) -> Store {
    fs::create_dir_all(dir.join("data")).unwrap();
    Store::open(Roots { home: dir.to_owned(), config_dir: dir.to_owned() }).unwrap()
}

fn data_entries(store: &Store) -> Vec<String> {
    let mut names: Vec<String> =
        fs::read_dir(store.data_dir()).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into()).collect();
    names.sort();
    names
}

#[test]
fn an_index_of_another_version_is_refused_whatever_its_shape() {
    let cases = [
        (r#"{"version": 2, "instances": {"a": 1}}"#, "2"),
        (r#"{"version": 2, "instances": "x"}"#, "2"),
        (r#"{"version": 2}"#, "2"),
        (r#"{"instances": 7, "version": 0}"#, "0"),
        (r#"{"version": "1", "instances": []}"#, r#""1""#),
        (r#"{"version": 1.0, "instances": []}"#, "1.0"),
        (r#"{"version": null}"#, "null"),
        (r#"{"version": [1], "instances": null}"#, "[1]"),
        (
            r#"{"version": "a version string far longer than forty characters"}"#,
            r#""a version string far longer than forty …"#,
        ),
    ];
    for (text, shown) in cases {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path());
        fs::write(store.index_path(), text).unwrap();
        let refusals = [
            store.read_index().map(drop).unwrap_err(),
            store.refuse_newer_index().unwrap_err(),
            store.read_index_mending(&Default::default(), true).map(drop).unwrap_err(),
            store.read_index_mending(&Default::default(), false).map(drop).unwrap_err(),
            store.update_index(|_| Ok(((), true))).unwrap_err(),
        ];
        for err in refusals {
            assert_eq!(Exit::of(&err), Exit::BadInput, "{text}: {err:#}");
            let said = format!("unsupported index version {shown} (expected 1; written by a newer jackin?)");
            assert!(err.to_string().contains(&said), "{text}: {err:#}");
        }
        assert_eq!(fs::read_to_string(store.index_path()).unwrap(), text);
        let left = data_entries(&store);
        assert!(left.iter().all(|n| n == "instances.json" || n == "instances.json.lock"), "{text}: {left:?}");
    }
}

#[test]
fn only_an_index_that_states_no_version_or_version_1_is_mended() {
    for text in [
        "{\"version\": 1, \"instances\": [",
        "",
        "[2]",
        "\"x\"",
        "{}",
        r#"{"instances": {"a": 1}}"#,
        r#"{"version": 1, "instances": "x"}"#,
    ] {
        let dir = tempfile::tempdir().unwrap();
        let store = store_in(dir.path());
        fs::write(store.index_path(), text).unwrap();
        let err = store.read_index().unwrap_err();
        assert_eq!(Exit::of(&err), Exit::Unavailable, "{text}: {err:#}");
        assert!(format!("{err:#}").contains("instances.json is corrupt"), "{text}: {err:#}");
        store.refuse_newer_index().unwrap();
        let (index, rebuilt) = store.read_index_mending(&Default::default(), false).unwrap();
        assert_eq!(index, Index::default(), "{text}");
        let rebuilt = rebuilt.unwrap_or_else(|| panic!("{text}: not mended"));
        assert_eq!(fs::read_to_string(&rebuilt.moved_to).unwrap(), text);
        assert_eq!(store.read_index().unwrap(), Index::default());
    }
}

#[test]
fn lock_is_exclusive_and_survives_an_unlinked_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("instances.json.lock");
    let held = IndexLock::acquire(&path, Duration::ZERO).unwrap();
    let err = IndexLock::acquire(&path, Duration::from_millis(20)).unwrap_err();
    assert_eq!(Exit::of(&err), Exit::Busy);
    // Another program unlinks the file: the next locker must lock the new inode, not wait
    // on the old one forever.
    fs::remove_file(&path).unwrap();
    let _again = IndexLock::acquire(&path, Duration::from_millis(100)).unwrap();
    drop(held);
}

#[test]
fn a_home_credential_is_known_wherever_in_the_home_it_is_and_nothing_else_is() {
    for credential in [".ssh", ".ssh/id_ed25519", ".claude/.credentials.json", "work/.netrc", ".config/gh/hosts.yml"] {
        let rel = Path::new(credential);
        // A file inside a credential directory is found by its directory, when the walk reaches it.
        let found = rel.ancestors().any(|a| !a.as_os_str().is_empty() && is_home_credential(a));
        assert!(found, "{credential} is a credential");
    }
    assert!(is_home_credential(Path::new("project/.git-credentials")));
    for other in [".claude/settings.json", ".sshx", "notes/netrc", ".config", ".docker/daemon.json", ""] {
        assert!(!is_home_credential(Path::new(other)), "{other:?} is not a credential");
    }
}

#[test]
fn a_path_is_made_absolute_lexically_against_the_working_directory() {
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(absolute(Path::new("a/../b")).unwrap(), cwd.join("a/../b"), "`..` stays, no link is resolved");
    assert_eq!(absolute(Path::new("/x/./y")).unwrap(), PathBuf::from("/x/y"));
    let err = absolute(Path::new("")).unwrap_err();
    assert_eq!(Exit::of(&err), Exit::Unavailable, "{err:#}");
}

#[test]
fn agent_toml_is_read_up_to_its_limit_and_never_from_a_fifo() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let name = InstanceName::parse("jk-00000001-app-smith").unwrap();
    assert_eq!(store.read_agent_toml(&name).unwrap(), None, "none yet");
    store.write_agent_toml(&name, "[env]\nA = \"1\"\n").unwrap();
    assert_eq!(store.read_agent_toml(&name).unwrap().as_deref(), Some("[env]\nA = \"1\"\n"));
    let limit = "#".repeat(AGENT_TOML_MAX as usize);
    store.write_agent_toml(&name, &limit).unwrap();
    assert_eq!(store.read_agent_toml(&name).unwrap().map(|t| t.len()), Some(limit.len()), "the limit is read whole");
    store.write_agent_toml(&name, &(limit + "#")).unwrap();
    assert_eq!(store.read_agent_toml(&name).unwrap(), None, "one byte over is as good as none");
    let path = store.agent_toml_path(&name);
    fs::remove_file(&path).unwrap();
    crate::base::testing::fifo(&path);
    let (reader, fifo_name) = (store.clone(), name.clone());
    let read = returns_promptly("the read of an agent.toml that is a FIFO", move || {
        reader.read_agent_toml(&fifo_name).unwrap()
    });
    assert_eq!(read, None, "a FIFO is never read");
}

#[test]
fn a_home_that_is_missing_or_not_a_directory_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("file");
    fs::write(&file, "").unwrap();
    for home in [file, dir.path().join("missing")] {
        let err = Store::open(Roots { home: home.clone(), config_dir: home.clone() }).unwrap_err();
        assert_eq!(Exit::of(&err), Exit::Unavailable, "{err:#}");
        assert!(format!("{err:#}").contains(&home.display().to_string()), "{err:#}");
    }
    assert!(Store::open(Roots { home: dir.path().to_owned(), config_dir: dir.path().to_owned() }).is_ok());
}

/// Every path of the layout (state.md, "Layout"), from the home: a slip here reads or deletes
/// another file than jackin's.
#[test]
fn the_layout_names_jackins_files() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let c = InstanceName::parse("jk-00000001-app-smith").unwrap();
    let rel = |p: PathBuf| p.strip_prefix(dir.path()).unwrap().to_str().unwrap().to_owned();
    let layout = [
        (rel(store.data_dir()), "data"),
        (rel(store.sockets_dir()), "sockets"),
        (rel(store.index_path()), "data/instances.json"),
        (rel(store.index_lock_path()), "data/instances.json.lock"),
        (rel(store.instance_dir(&c)), "data/jk-00000001-app-smith"),
        (rel(store.meta_dir(&c)), "data/jk-00000001-app-smith/.jackin"),
        (rel(store.manifest_path(&c)), "data/jk-00000001-app-smith/.jackin/instance.json"),
        (rel(store.isolation_path(&c)), "data/jk-00000001-app-smith/.jackin/isolation.json"),
        (rel(store.continuity_path(&c)), "data/jk-00000001-app-smith/.jackin/continuity.json"),
        (rel(store.continuity_lock_path(&c)), "data/jk-00000001-app-smith/.jackin/continuity.lock"),
        (rel(store.purge_mark_path(&c)), "data/jk-00000001-app-smith/.jackin/purge.json"),
        (rel(store.exit_action_path(&c)), "data/jk-00000001-app-smith/state/exit-action.json"),
        (rel(store.name_lock_path(&c)), "data/jk-00000001-app-smith.lock"),
        (rel(store.socket_dir(&c)), "sockets/jk-00000001-app-smith"),
        (rel(store.agent_toml_path(&c)), "sockets/jk-00000001-app-smith/agent.toml"),
        (rel(store.trash_dir()), "trash"),
        (rel(store.quarantine_root()), "quarantine"),
        (rel(store.imports_dir()), "imports"),
        (rel(store.import_staging_dir(&c, 42)), "imports/.partial-jk-00000001-app-smith-42"),
        (rel(store.role_source_cache("https://x.example/r.git")), "cache/role-sources/https___x_example_r_git"),
    ];
    for (path, expected) in layout {
        assert_eq!(path, expected);
    }
    let mount = |dst: &str| store.mount_dir(&c, "worktree", dst).map(rel);
    assert_eq!(
        mount("/workspace/app").as_deref(),
        Some("data/jk-00000001-app-smith/git/worktree/repo/workspace/app/jk-00000001-app-smith")
    );
    for outside in ["workspace/app", "/", "", "/workspace/../../x", "/workspace/.."] {
        assert_eq!(mount(outside), None, "{outside:?} would leave the data directory");
    }
}

#[test]
fn only_an_imports_own_unpacking_directories_are_found() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let c = InstanceName::parse("jk-00000001-app-smith").unwrap();
    assert!(store.import_staging_dirs(&c).is_empty(), "no imports directory yet");
    fs::create_dir_all(store.imports_dir()).unwrap();
    for name in [
        ".partial-jk-00000001-app-smith-7",
        ".partial-jk-00000001-app-smith-12",
        ".partial-jk-00000001-app-smith-",
        ".partial-jk-00000001-app-smith-1x",
        ".partial-jk-00000001-app-smithy-3",
        ".partial-jk-00000002-app-smith-3",
    ] {
        fs::create_dir(store.imports_dir().join(name)).unwrap();
    }
    let found: Vec<String> =
        store.import_staging_dirs(&c).iter().map(|p| p.file_name().unwrap().to_str().unwrap().to_owned()).collect();
    assert_eq!(found, [".partial-jk-00000001-app-smith-12", ".partial-jk-00000001-app-smith-7"]);
}

fn instance(store: &Store, name: &str) -> InstanceName {
    let name = InstanceName::parse(name).unwrap();
    fs::create_dir_all(store.meta_dir(&name)).unwrap();
    name
}

fn manifest_of(name: &InstanceName) -> Manifest {
    Manifest::sample(name.as_str(), "active")
}

#[test]
fn agent_toml_behind_a_link_or_in_place_of_a_file_is_none_and_an_unreachable_one_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let name = InstanceName::parse("jk-00000001-app-smith").unwrap();
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    fs::write(elsewhere.join("agent.toml"), "[env]\n").unwrap();
    // The socket directory a link: not followed.
    fs::create_dir_all(store.sockets_dir()).unwrap();
    std::os::unix::fs::symlink(&elsewhere, store.socket_dir(&name)).unwrap();
    assert_eq!(store.read_agent_toml(&name).unwrap(), None);
    fs::remove_file(store.socket_dir(&name)).unwrap();
    // agent.toml itself a link, or a directory.
    fs::create_dir_all(store.socket_dir(&name)).unwrap();
    std::os::unix::fs::symlink(elsewhere.join("agent.toml"), store.agent_toml_path(&name)).unwrap();
    assert_eq!(store.read_agent_toml(&name).unwrap(), None);
    fs::remove_file(store.agent_toml_path(&name)).unwrap();
    fs::create_dir(store.agent_toml_path(&name)).unwrap();
    assert_eq!(store.read_agent_toml(&name).unwrap(), None);
    // The socket directory a file: agent.toml cannot be reached, which is not "none".
    fs::remove_dir_all(store.socket_dir(&name)).unwrap();
    fs::write(store.socket_dir(&name), "").unwrap();
    let err = store.read_agent_toml(&name).unwrap_err();
    assert!(format!("{err:#}").contains("reading"), "{err:#}");
}

#[test]
fn an_exit_action_is_read_whole_up_to_its_limit_and_judged_by_what_is_there() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let name = instance(&store, "jk-00000001-app-smith");
    let path = store.exit_action_path(&name);
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    // The choice at the end of the limit: a read one byte short would cut it.
    let padded = |len: usize| format!("{}\"keep\"", " ".repeat(len - 6));
    fs::write(&path, padded(EXIT_ACTION_MAX as usize)).unwrap();
    assert_eq!(store.read_exit_action(&name, |_| true), ExitActionFile::Fresh(ExitChoice::Keep));
    fs::write(&path, padded(EXIT_ACTION_MAX as usize + 1)).unwrap();
    assert_eq!(store.read_exit_action(&name, |_| true), ExitActionFile::Unreadable("larger than any choice".into()));
    fs::write(&path, "\"later\"").unwrap();
    assert_eq!(
        store.read_exit_action(&name, |_| true),
        ExitActionFile::Unreadable("neither \"keep\" nor \"discard\"".into())
    );
    fs::remove_file(&path).unwrap();
    fs::create_dir(&path).unwrap();
    assert_eq!(store.read_exit_action(&name, |_| true), ExitActionFile::Unreadable("not a file".into()));
    let err = store.clear_exit_action(&name).unwrap_err();
    assert!(format!("{err:#}").contains("removing"), "a directory in its place is not cleared: {err:#}");
    assert!(path.is_dir());
    // Its directory a file: the path cannot be opened, which is not "absent".
    fs::remove_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path.parent().unwrap(), "").unwrap();
    let found = store.read_exit_action(&name, |_| true);
    assert!(matches!(&found, ExitActionFile::Unreadable(why) if why.contains("Not a directory")), "{found:?}");
}

#[test]
fn the_per_instance_files_are_read_back_as_written_and_never_written_through_a_link() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let name = instance(&store, "jk-00000001-app-smith");
    assert!(store.read_purge_mark(&name).is_none());
    let mark =
        PurgeMark { started_at: "t".into(), verdict: "clean".into(), quarantine: Some("q".into()), session: None };
    store.write_purge_mark(&name, &mark).unwrap();
    let read = store.read_purge_mark(&name).unwrap();
    assert_eq!((read.started_at, read.verdict, read.quarantine), ("t".into(), "clean".into(), Some("q".into())));

    assert_eq!(store.read_manifest(&name).unwrap(), None);
    let manifest = manifest_of(&name);
    store.write_manifest(&name, &manifest).unwrap();
    assert_eq!(store.read_manifest(&name).unwrap(), Some(manifest.clone()));

    assert_eq!(store.read_isolation(&name).unwrap(), Isolation::default(), "none: an in-place session");
    let isolation = Isolation { records: vec![serde_json::json!({"mount_dst": "/w"})], ..Default::default() };
    store.write_isolation(&name, &isolation).unwrap();
    assert_eq!(store.read_isolation(&name).unwrap(), isolation);
    fs::write(store.isolation_path(&name), r#"{"version": 2, "records": []}"#).unwrap();
    let err = store.read_isolation(&name).unwrap_err();
    assert_eq!(Exit::of(&err), Exit::Unavailable, "{err:#}");
    assert!(err.to_string().contains("unsupported isolation version 2"), "{err:#}");

    // `.jackin/` a link to somewhere else: nothing is written there.
    let elsewhere = dir.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    fs::remove_dir_all(store.meta_dir(&name)).unwrap();
    std::os::unix::fs::symlink(&elsewhere, store.meta_dir(&name)).unwrap();
    assert!(store.refuse_linked(&name).is_err());
    assert!(store.write_purge_mark(&name, &mark).is_err());
    assert!(store.write_manifest(&name, &manifest).is_err());
    assert!(store.write_isolation(&name, &isolation).is_err());
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
}

#[test]
fn an_index_update_writes_only_a_change_and_a_status_change_writes_the_manifest_then_its_row() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    assert_eq!(store.read_index().unwrap(), Index::default(), "no file yet: an empty index");
    assert_eq!(store.update_index(|_| Ok((7, false))).unwrap(), 7);
    assert!(!store.index_path().exists(), "an unchanged index is not written");
    let name = instance(&store, "jk-00000001-app-smith");
    store.write_manifest(&name, &manifest_of(&name)).unwrap();
    let err =
        store.set_status(&InstanceName::parse("jk-00000002-app-smith").unwrap(), Status::Active, "t").unwrap_err();
    assert!(err.to_string().contains("no manifest"), "{err:#}");

    let written = store.set_status(&name, Status::PreservedDirty, "2026-12-01T00:00:00Z").unwrap();
    assert_eq!((written.status.as_str(), written.updated_at.as_str()), ("preserved_dirty", "2026-12-01T00:00:00Z"));
    assert_eq!(store.read_manifest(&name).unwrap(), Some(written.clone()));
    let index = store.read_index().unwrap();
    assert_eq!(index.instances, vec![IndexRow::from_manifest(&written)]);
}

#[test]
fn instance_dirs_are_the_directories_named_like_instances() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    for made in ["jk-00000001-app-smith", "jk-00000002-app-smith/.jackin", "not-an-instance", "jk_00000004"] {
        fs::create_dir_all(store.data_dir().join(made)).unwrap();
    }
    fs::write(store.data_dir().join("jk-00000003-app-smith"), "").unwrap();
    fs::write(store.data_dir().join("jk-00000001-app-smith.lock"), "").unwrap();
    let found: Vec<String> = store.instance_dirs().unwrap().iter().map(|n| n.as_str().to_owned()).collect();
    assert_eq!(found, ["jk-00000001-app-smith", "jk-00000002-app-smith"]);

    fs::remove_dir_all(store.data_dir()).unwrap();
    assert!(store.instance_dirs().unwrap().is_empty(), "no data directory yet: none");
    fs::write(store.data_dir(), "").unwrap();
    assert!(store.instance_dirs().is_err(), "a data directory that cannot be listed is an error");
}

#[test]
fn a_corrupt_index_is_rebuilt_from_the_manifests_and_a_dry_run_moves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    let name = instance(&store, "jk-00000001-app-smith");
    store.write_manifest(&name, &manifest_of(&name)).unwrap();
    instance(&store, "jk-00000002-app-smith");
    fs::write(store.index_path(), "{").unwrap();
    let dirs = store.instance_dirs().unwrap();
    let expected = vec![IndexRow::from_manifest(&manifest_of(&name))];

    let (index, rebuilt) = store.read_index_mending(&dirs, true).unwrap();
    let rebuilt = rebuilt.unwrap();
    assert_eq!((index.instances.clone(), rebuilt.rows, rebuilt.dry_run), (expected.clone(), 1, true));
    assert_eq!(fs::read_to_string(store.index_path()).unwrap(), "{", "a dry run moves and writes nothing");
    assert!(!rebuilt.moved_to.exists());

    let (index, rebuilt) = store.read_index_mending(&dirs, false).unwrap();
    let rebuilt = rebuilt.unwrap();
    assert_eq!((index.instances, rebuilt.rows, rebuilt.dry_run), (expected.clone(), 1, false));
    assert_eq!(fs::read_to_string(&rebuilt.moved_to).unwrap(), "{");
    assert_eq!(store.read_index().unwrap().instances, expected);
    let (_, again) = store.read_index_mending(&dirs, false).unwrap();
    assert!(again.is_none(), "a sound index is not mended");
}

#[test]
fn an_index_that_cannot_be_read_is_unavailable_not_empty() {
    let dir = tempfile::tempdir().unwrap();
    let store = store_in(dir.path());
    fs::create_dir(store.index_path()).unwrap();
    let err = store.read_index().unwrap_err();
    assert_eq!(Exit::of(&err), Exit::Unavailable, "{err:#}");
    assert!(format!("{err:#}").contains("cannot read"), "{err:#}");
    assert!(store.refuse_newer_index().is_ok(), "left to the step that needs it");
    assert!(store.read_index_mending(&Default::default(), false).is_err(), "never mended over");
}
