//! jackin's own files, composed by hand from state.md, read and rewritten by the library.

mod common;

use std::fs;
use std::os::unix::fs::MetadataExt;

use common::{manifest_text, Home};
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
