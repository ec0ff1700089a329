//! jackin's own files, composed by hand from state.md, read and rewritten by the library.

use crate::common;

use std::fs;
use std::os::unix::fs::MetadataExt;

use common::{manifest_text, Home, Rng};
use jackin::state::model::Status;
use jackin::state::names::InstanceName;
use jackin::state::store::{Roots, Store};
use serde_json::Value;

fn store(home: &Home) -> Store {
    Store::open(Roots { home: home.home.clone(), config_dir: home.config.clone() }).unwrap()
}

const INDEX: &str = r#"{
  "version": 1,
  "instances": [
    {
      "instance_id": "k7p9m2xq",
      "container_base": "jk-k7p9m2xq-myapp-agentsmith",
      "workspace_name": "my-app",
      "workspace_label": "my-app",
      "workdir": "/workspace/my-app",
      "role_key": "agent-smith",
      "agent_runtime": "claude",
      "status": "preserved_dirty",
      "updated_at": "2026-08-20T09:14:03Z"
    },
    {
      "instance_id": "sz2v4p0e",
      "container_base": "jk-sz2v4p0e-architect",
      "workspace_name": null,
      "workspace_label": "scratch — ünïcode",
      "workdir": "/workspace",
      "role_key": "architect",
      "agent_runtime": "codex",
      "status": "active",
      "updated_at": "2026-08-19T10:00:00Z"
    }
  ]
}"#;

#[test]
fn a_jackin_index_reads_and_rewrites_byte_identically() {
    let home = Home::new();
    let path = home.home.join("data/instances.json");
    fs::write(&path, INDEX).unwrap();
    let s = store(&home);
    let index = s.read_index().unwrap();
    assert_eq!(index.instances.len(), 2);
    assert_eq!(index.instances[1].workspace_name, None);
    assert_eq!(index.instances[1].workspace_label, "scratch — ünïcode");
    s.update_index(|_| Ok(((), true))).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), INDEX);
    assert_eq!(fs::metadata(&path).unwrap().mode() & 0o777, 0o600);
}

#[test]
fn a_jackin_manifest_reads_and_rewrites_byte_identically() {
    let home = Home::new();
    let name = InstanceName::parse("jk-k7p9m2xq-myapp-agentsmith").unwrap();
    let text = manifest_text("k7p9m2xq", name.as_str(), "active", "2026-08-20T09:14:03Z");
    fs::create_dir_all(home.data(name.as_str()).join(".jackin")).unwrap();
    let path = home.data(name.as_str()).join(".jackin/instance.json");
    fs::write(&path, &text).unwrap();
    let s = store(&home);
    let manifest = s.read_manifest(&name).unwrap().unwrap();
    assert_eq!(manifest.version, 2);
    assert_eq!(manifest.docker.dind_container, None);
    assert_eq!(manifest.role_source_ref, None);
    s.write_manifest(&name, &manifest).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn a_manifest_with_every_optional_key_round_trips() {
    let home = Home::new();
    let name = InstanceName::parse("jk-k7p9m2xq-myapp-agentsmith").unwrap();
    let text = manifest_text("k7p9m2xq", name.as_str(), "crashed", "2026-08-20T09:14:03Z")
        .replace(
            "\"network\": \"jk-k7p9m2xq-myapp-agentsmith-net\"\n  },",
            "\"dind_container\": \"jk-prewarm-dind-7\",\n    \"network\": \"jk-k7p9m2xq-myapp-agentsmith-net\",\n    \"certs_volume\": \"jk-prewarm-certs-7\"\n  },\n  \"backend\": {\n    \"kind\": \"docker\"\n  },",
        )
        .replace("\"last_attach_outcome\": null", "\"last_attach_outcome\": \"exit:137\"");
    assert!(text.contains("jk-prewarm-dind-7") && text.contains("backend"));
    fs::create_dir_all(home.data(name.as_str()).join(".jackin")).unwrap();
    let path = home.data(name.as_str()).join(".jackin/instance.json");
    fs::write(&path, &text).unwrap();
    let s = store(&home);
    let manifest = s.read_manifest(&name).unwrap().unwrap();
    assert_eq!(manifest.docker.dind_container.as_deref(), Some("jk-prewarm-dind-7"));
    s.write_manifest(&name, &manifest).unwrap();
    assert_eq!(fs::read_to_string(&path).unwrap(), text);
}

#[test]
fn unknown_keys_survive_a_rewrite() {
    let home = Home::new();
    let name = InstanceName::parse("jk-k7p9m2xq-myapp-agentsmith").unwrap();
    let mut manifest: Value =
        serde_json::from_str(&manifest_text("k7p9m2xq", name.as_str(), "active", "2026-08-20T09:14:03Z")).unwrap();
    manifest["jackin_0_7_key"] = Value::from("future");
    manifest["docker"]["future_docker_key"] = Value::from(7);
    fs::create_dir_all(home.data(name.as_str()).join(".jackin")).unwrap();
    fs::write(home.data(name.as_str()).join(".jackin/instance.json"), serde_json::to_string_pretty(&manifest).unwrap())
        .unwrap();
    let mut index: Value = serde_json::from_str(INDEX).unwrap();
    index["instances"][0]["pinned"] = Value::Bool(true);
    index["generation"] = Value::from(3);
    fs::write(home.home.join("data/instances.json"), serde_json::to_string_pretty(&index).unwrap()).unwrap();
    let isolation = serde_json::json!({"version": 1, "records": [{"mount_dst": "/w", "isolation": "worktree",
        "worktree_path": "/x", "original_src": "/y", "scratch_branch": "b", "future_field": [1]}], "extra": "kept"});
    fs::write(
        home.data(name.as_str()).join(".jackin/isolation.json"),
        serde_json::to_string_pretty(&isolation).unwrap(),
    )
    .unwrap();

    let s = store(&home);
    s.set_status(&name, Status::PreservedDirty, "2026-08-21T00:00:00Z").unwrap();
    let mut iso = s.read_isolation(&name).unwrap();
    iso.set_cleanup_status("preserved_dirty");
    s.write_isolation(&name, &iso).unwrap();

    let manifest = home.manifest(name.as_str());
    assert_eq!(manifest.extra["jackin_0_7_key"], "future");
    assert_eq!(manifest.docker.extra["future_docker_key"], 7);
    assert_eq!(home.status(name.as_str()), ("preserved_dirty".into(), "preserved_dirty".into()));
    let index: Value = serde_json::from_slice(&fs::read(home.home.join("data/instances.json")).unwrap()).unwrap();
    assert_eq!(index["generation"], 3);
    let row = &index["instances"][0];
    assert_eq!(row["container_base"], name.as_str());
    assert_eq!(row["pinned"], true, "a replaced row keeps the keys jackin may add");
    let keys: Vec<&str> = row.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "instance_id",
            "container_base",
            "workspace_name",
            "workspace_label",
            "workdir",
            "role_key",
            "agent_runtime",
            "status",
            "updated_at",
            "pinned"
        ]
    );
    let iso: Value =
        serde_json::from_slice(&fs::read(home.data(name.as_str()).join(".jackin/isolation.json")).unwrap()).unwrap();
    assert_eq!(iso["extra"], "kept");
    assert_eq!(iso["records"][0]["future_field"], serde_json::json!([1]));
    assert_eq!(iso["records"][0]["cleanup_status"], "preserved_dirty");
}

#[test]
fn a_status_change_writes_the_manifest_then_a_sorted_index() {
    let home = Home::new();
    fs::write(home.home.join("data/instances.json"), INDEX).unwrap();
    let name = InstanceName::parse("jk-sz2v4p0e-architect").unwrap();
    fs::create_dir_all(home.data(name.as_str()).join(".jackin")).unwrap();
    fs::write(
        home.data(name.as_str()).join(".jackin/instance.json"),
        manifest_text("sz2v4p0e", name.as_str(), "active", "2026-08-19T10:00:00Z"),
    )
    .unwrap();
    store(&home).set_status(&name, Status::CleanExited, "2026-08-22T00:00:00Z").unwrap();
    let rows = home.index_rows();
    let order: Vec<&str> = rows.iter().map(|r| r.container_base.as_str()).collect();
    assert_eq!(order, ["jk-sz2v4p0e-architect", "jk-k7p9m2xq-myapp-agentsmith"]);
    assert_eq!(home.status(name.as_str()), ("clean_exited".into(), "clean_exited".into()));
    let leftovers: Vec<_> = fs::read_dir(home.home.join("data"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
        .collect();
    assert!(leftovers.is_empty(), "no temp files left");
}

#[test]
fn two_programs_changing_one_session_at_once_leave_row_and_manifest_agreeing() {
    let home = Home::new();
    fs::write(home.home.join("data/instances.json"), INDEX).unwrap();
    let name = InstanceName::parse("jk-sz2v4p0e-architect").unwrap();
    let manifest_path = home.data(name.as_str()).join(".jackin/instance.json");
    fs::create_dir_all(manifest_path.parent().unwrap()).unwrap();
    fs::write(&manifest_path, manifest_text("sz2v4p0e", name.as_str(), "active", "2026-08-19T10:00:00Z")).unwrap();
    let mut disagreements = 0;
    for round in 0..150 {
        let start = std::sync::Arc::new(std::sync::Barrier::new(2));
        let writers: Vec<_> = [Status::CleanExited, Status::RestoreAvailable]
            .into_iter()
            .map(|status| {
                let (start, store, name) = (start.clone(), store(&home), name.clone());
                std::thread::spawn(move || {
                    start.wait();
                    store.set_status(&name, status, &format!("2026-08-22T00:00:{:02}Z", round % 60)).unwrap();
                })
            })
            .collect();
        writers.into_iter().for_each(|w| w.join().unwrap());
        let (manifest, row) = home.status(name.as_str());
        if row != manifest {
            disagreements += 1;
        }
    }
    assert_eq!(disagreements, 0, "rounds of 150 whose index row ended disagreeing with the manifest");
}

#[test]
fn an_index_of_another_version_is_refused_and_left_alone() {
    let home = Home::new();
    let path = home.home.join("data/instances.json");
    let v2 = INDEX.replacen("\"version\": 1", "\"version\": 2", 1);
    fs::write(&path, &v2).unwrap();
    let s = store(&home);
    let err = s.update_index(|_| Ok(((), true))).unwrap_err();
    assert!(format!("{err:#}").contains("unsupported index version 2"), "{err:#}");
    assert_eq!(fs::read_to_string(&path).unwrap(), v2);
}

/// `STATE_FORMAT_SEED` (decimal or 0x…) makes a failed run's cases again; otherwise each run
/// draws new ones.
fn seed() -> u64 {
    let given = std::env::var("STATE_FORMAT_SEED").ok().and_then(|s| match s.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => s.parse().ok(),
    });
    let clock = || std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    // xorshift never leaves zero.
    given.unwrap_or_else(clock).max(1)
}

/// `version` values that are not the integer 1, as JSON text: newer and older numbers, 1 in
/// another type, and values no jackin writes.
const OTHER_VERSIONS: &[&str] = &[
    "2",
    "0",
    "-1",
    "3",
    "1.0",
    "1e0",
    "1.5",
    "\"1\"",
    "\"2\"",
    "null",
    "true",
    "[1]",
    "{\"major\": 1}",
    "18446744073709551617",
];

/// `instances` as a newer jackin might shape it (or leave it out), as JSON text; `None` leaves
/// the key out.
fn instance_shapes(container: &str) -> Vec<Option<String>> {
    let row = format!(
        r#"{{"instance_id": "k7p9m2xq", "container_base": "{container}", "workspace_name": "my-app",
  "workspace_label": "my-app", "workdir": "/workspace/my-app", "role_key": "agent-smith",
  "agent_runtime": "claude", "status": "active", "updated_at": "2026-08-20T09:00:03Z"}}"#
    );
    [
        "[]".to_owned(),
        format!("[{row}]"),
        format!("{{\"{container}\": {row}}}"),
        "{\"a\": 1}".to_owned(),
        "{}".to_owned(),
        "\"x\"".to_owned(),
        "null".to_owned(),
        "7".to_owned(),
        "[1, 2]".to_owned(),
        "[{\"container_base\": 3}]".to_owned(),
        "[[]]".to_owned(),
    ]
    .into_iter()
    .map(Some)
    .chain([None])
    .collect()
}

/// Keys beside `version` and `instances` a newer index may hold.
const EXTRA_KEYS: &[&str] = &["", "\"generation\": 3", "\"rows\": {\"by\": \"container_base\"}"];

/// The issue's three cases, then `generated` drawn from `rng`: an index text and its `version`
/// as the refusal renders it.
fn newer_indexes(rng: &mut Rng, container: &str, generated: usize) -> Vec<(String, String)> {
    let mut cases: Vec<(String, &str)> = vec![
        (r#"{"version": 2, "instances": {"a": 1}}"#.to_owned(), "2"),
        (r#"{"version": 2, "instances": "x"}"#.to_owned(), "2"),
        (r#"{"version": 2}"#.to_owned(), "2"),
    ];
    let shapes = instance_shapes(container);
    for _ in 0..generated {
        let version = *rng.pick(OTHER_VERSIONS);
        let mut keys = vec![format!("\"version\": {version}")];
        if let Some(shape) = rng.pick(&shapes) {
            keys.push(format!("\"instances\": {shape}"));
        }
        let extra = *rng.pick(EXTRA_KEYS);
        if !extra.is_empty() {
            keys.push(extra.to_owned());
        }
        // The version is read wherever it stands, not only first.
        let turn = (rng.next() % keys.len() as u64) as usize;
        keys.rotate_left(turn);
        let separator = if rng.next() % 2 == 0 { ",\n  " } else { "," };
        cases.push((format!("{{{}}}", keys.join(separator)), version));
    }
    cases
        .into_iter()
        .map(|(text, version)| {
            let rendered = serde_json::to_string(&serde_json::from_str::<Value>(version).unwrap()).unwrap();
            (text, rendered)
        })
        .collect()
}

/// An index whose `version` is not 1 is a newer jackin's, whatever shape the rest of it has:
/// every tool refuses it with exit 3 and names the file and the version, and nothing in the home
/// changes (the index is not moved aside or rebuilt, no other file is written). Each tool refuses
/// before it reaches the engine, so this needs none.
#[test]
fn an_index_of_another_version_is_refused_by_every_tool_whatever_its_shape() {
    let seed = seed();
    let mut rng = Rng::new(seed);
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance("k7p9m2xq", |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let container = inst.container.as_str();
    let assessment = home.assess_lines(&[container]);
    let index = home.index_path();
    let runs: [(&str, Vec<&str>, &str); 10] = [
        ("jackin-assess", vec![container], ""),
        ("jackin-assess", vec!["--all"], ""),
        ("jackin-keep", vec!["--policy=clean"], &assessment),
        ("jackin-purge", vec![container, "--discard-unfinished"], ""),
        ("jackin-purge", vec!["--terminal", "--dry-run"], ""),
        ("jackin-purge", vec![], &assessment),
        ("jackin-reconcile", vec![], ""),
        ("jackin-reconcile", vec!["--dry-run"], ""),
        ("jackin-restore", vec!["--list"], ""),
        ("jackin-restore", vec![container, "--plan"], ""),
    ];
    for (case, (text, version)) in newer_indexes(&mut rng, container, 9).into_iter().enumerate() {
        fs::write(&index, &text).unwrap();
        let before = home.snapshot();
        for (tool, args, stdin) in &runs {
            let what = format!("seed {seed:#x} (STATE_FORMAT_SEED), case {case}, {tool} {args:?}, index {text}");
            let out = home.cmd(tool).args(args).write_stdin(stdin.to_string()).output().unwrap();
            let stderr = common::stderr(&out);
            assert_eq!(out.status.code(), Some(3), "{what}: {stderr}");
            let said = format!("{tool}: error: {}: unsupported index version {version} ", index.display());
            assert!(stderr.contains(&said), "{what}: expected {said:?} in {stderr}");
            assert!(stderr.contains("newer jackin") && stderr.contains("not touching it"), "{what}: {stderr}");
            assert!(!stderr.contains("panicked"), "{what}: {stderr}");
            assert!(out.stdout.is_empty(), "{what}: {}", String::from_utf8_lossy(&out.stdout));
            assert_eq!(home.snapshot(), before, "{what}: the home changed");
        }
    }
}

/// What reconcile may still mend: a file that is not JSON, not an object or states no `version`
/// (real-host.md: corrupt), and a version 1 index of a shape this version cannot read. Each is
/// moved aside as it was and the index rebuilt from the manifests; a dry run only says so.
#[test]
fn an_index_without_a_version_or_of_version_1_that_does_not_parse_is_mended() {
    if !common::docker::engine_available("an_index_without_a_version_or_of_version_1_that_does_not_parse_is_mended") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&common::unique_id(), |_, _| Vec::new());
    let index = home.index_path();
    let mendable = [
        r#"{"version": 1, "instances": ["#,
        "",
        "[]",
        "\"x\"",
        "{}",
        r#"{"instances": {"a": 1}}"#,
        r#"{"version": 1, "instances": {"a": 1}}"#,
        r#"{"version": 1, "instances": "x"}"#,
    ];
    for text in mendable {
        fs::write(&index, text).unwrap();
        let before = home.snapshot();
        let out = home.cmd("jackin-reconcile").args(["--dry-run", "--format=json"]).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{text}: {}", common::stderr(&out));
        let repairs = common::records::records_of::<common::records::Repair>(&out.stdout);
        assert!(repairs.iter().any(|r| r.kind == "index_rebuilt" && r.dry_run), "{text}: {repairs:?}");
        assert_eq!(home.snapshot(), before, "{text}: the dry run changed the home");

        let out = home.cmd("jackin-reconcile").arg("--format=json").output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{text}: {}", common::stderr(&out));
        let repairs = common::records::records_of::<common::records::Repair>(&out.stdout);
        let rebuilt =
            repairs.iter().find(|r| r.kind == "index_rebuilt").unwrap_or_else(|| panic!("{text}: {repairs:?}"));
        let moved_to = std::path::PathBuf::from(rebuilt.moved_to.as_deref().unwrap());
        assert_eq!(fs::read_to_string(&moved_to).unwrap(), text, "moved aside as it was");
        fs::remove_file(&moved_to).unwrap();
        let rows = home.index_rows();
        assert_eq!(rows.len(), 1, "{text}: {rows:?}");
        assert_eq!(rows[0].container_base, inst.container);
    }
}
