//! The Docker module against a real engine.

use crate::common;

use std::time::Duration;

use common::docker::{engine_available, Session, SessionOptions};
use jackin::base::exit::Exit;
use jackin::engines::docker::Engine;

#[test]
fn lists_inspects_and_removes_a_real_session() {
    if !engine_available("lists_inspects_and_removes_a_real_session") {
        return;
    }
    let name = "jk-dk1test0-engine";
    let session = Session::launch(
        name,
        SessionOptions { env: vec![("SECRET_TOKEN", "s3cr3t-value"), ("TERM", "xterm")], ..Default::default() },
    );
    let engine = Engine::connect(&jackin::engines::endpoint::Endpoint::resolve(None).unwrap()).unwrap();
    let listed = engine.list_managed().unwrap();
    let role = listed.iter().find(|c| c.name == name).expect("the role container is listed");
    assert_eq!(role.state, "running");
    assert_eq!(role.labels.get("jackin.kind").map(String::as_str), Some("role"));
    assert!(listed.iter().any(|c| c.name == format!("{name}-dind")));

    let details = engine.inspect(name).unwrap().expect("inspectable");
    assert!(details.state.running);
    assert_eq!(details.spec.image, common::docker::TEST_IMAGE);
    assert!(details.spec.image_id.starts_with("sha256:"));
    assert_eq!(details.spec.network.as_deref(), Some(format!("{name}-net").as_str()));
    assert_eq!(details.spec.host_config.as_ref().unwrap()["Memory"], 64 * 1024 * 1024);
    assert_eq!(details.spec.working_dir.as_deref(), Some("/workspace"));
    assert!(details.env.iter().any(|e| e == "SECRET_TOKEN=s3cr3t-value"));
    let sidecar = engine.inspect(&format!("{name}-dind")).unwrap().unwrap();
    assert_eq!(sidecar.spec.healthcheck.as_ref().unwrap()[1], "test -e /tmp/healthy");
    assert_eq!(sidecar.spec.aliases, ["dind"]);
    assert_eq!(sidecar.spec.mounts[0].kind, "volume");
    assert_eq!(sidecar.spec.mounts[0].source, format!("{name}-dind-certs"));
    assert_eq!(engine.exec_status(&format!("{name}-dind"), &["true".into()]).unwrap(), 0);
    assert_eq!(engine.exec_status(&format!("{name}-dind"), &["false".into()]).unwrap(), 1);

    assert!(engine.stop(name, Duration::from_secs(1)).unwrap());
    assert!(!engine.inspect(name).unwrap().unwrap().state.running);
    assert!(engine.remove_container(name).unwrap());
    assert!(!engine.remove_container(name).unwrap(), "a missing container counts as removed");
    assert!(engine.inspect(name).unwrap().is_none());
    assert!(engine.remove_container(&format!("{name}-dind")).unwrap());
    assert!(engine.remove_network(&format!("{name}-net")).unwrap());
    assert!(!engine.remove_network(&format!("{name}-net")).unwrap());
    assert!(engine.remove_volume(&format!("{name}-dind-certs")).unwrap());
    assert!(!engine.remove_volume(&format!("{name}-dind-certs")).unwrap());
    drop(session);
}

#[test]
fn a_dead_socket_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let socket = format!("unix://{}/docker.sock", dir.path().display());
    // The library reads DOCKER_HOST; a child process keeps this test's environment clean.
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "host::docker_engine::connect_from_env_probe", "--nocapture"])
        .env("DOCKER_HOST", &socket)
        .env("JACKIN_PROBE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("probe: exit=4"), "{stdout}");
    assert!(stdout.contains("cannot be reached"), "{stdout}");
}

#[test]
fn connect_from_env_probe() {
    if std::env::var_os("JACKIN_PROBE").is_none() {
        return;
    }
    match jackin::engines::endpoint::Endpoint::resolve(None).and_then(|endpoint| Engine::connect(&endpoint)) {
        Ok(_) => println!("probe: connected"),
        Err(e) => println!("probe: exit={} {e:#}", Exit::of(&e).code()),
    }
}

#[test]
fn a_captured_recipe_holds_the_shape_and_no_secret_value() {
    if !engine_available("a_captured_recipe_holds_the_shape_and_no_secret_value") {
        return;
    }
    let mut home = common::Home::new();
    let inst = home.instance("rc1pe0ab", |_, _| Vec::new());
    let sockets = home.home.join("sockets").join(&inst.container);
    std::fs::create_dir_all(&sockets).unwrap();
    std::fs::write(sockets.join("agent.toml"), "role = \"agent-smith\"\nworkdir = \"/workspace\"\n").unwrap();
    let _session = Session::launch(
        &inst.container,
        SessionOptions {
            env: vec![("SECRET_TOKEN", "s3cr3t-value-42"), ("TERM", "xterm")],
            binds: vec![(inst.dir.join("home"), "/home/agent")],
            ..Default::default()
        },
    );
    let store = jackin::state::store::Store::open(jackin::state::store::Roots {
        home: home.home.clone(),
        config_dir: home.config.clone(),
    })
    .unwrap();
    let name = jackin::state::names::InstanceName::parse(&inst.container).unwrap();
    let engine = Engine::connect(&jackin::engines::endpoint::Endpoint::resolve(None).unwrap()).unwrap();
    let mut manifest = store.read_manifest(&name).unwrap().unwrap();
    // The session was launched with a sidecar; the home's manifest names none.
    manifest.docker = jackin::state::model::DockerNames::derived(&inst.container);
    let recipe = jackin::services::capture::capture(&engine, &store, &name, &manifest, "test").unwrap().unwrap();
    let text = serde_json::to_string(&recipe).unwrap();
    assert!(!text.contains("s3cr3t-value-42"), "{text}");
    assert!(recipe
        .role
        .env
        .iter()
        .any(|e| e.name == "SECRET_TOKEN" && e.source == "env:SECRET_TOKEN" && e.value.is_none()));
    assert!(recipe.role.env.iter().any(|e| e.name == "TERM" && e.value.as_deref() == Some("xterm")));
    assert_eq!(recipe.role.spec.cmd.as_deref(), Some(&["sleep".to_owned(), "3600".to_owned()][..]));
    assert_eq!(recipe.role.spec.mounts[0].destination, "/home/agent");
    assert_eq!(recipe.role.spec.labels["jackin.kind"], "role");
    let sidecar = recipe.sidecar.unwrap();
    assert_eq!(sidecar.health.unwrap(), ["sh", "-c", "test -e /tmp/healthy"]);
    assert_eq!(recipe.network.unwrap().name, format!("{}-net", inst.container));
    assert!(recipe.agent_toml.unwrap().contains("agent-smith"));
}

#[test]
fn creating_a_container_whose_name_is_taken_takes_the_one_there() {
    if !engine_available("creating_a_container_whose_name_is_taken") {
        return;
    }
    // What a rerun meets after a run was killed once it had asked the engine for the container.
    let name = "jk-dk2test0-engine";
    let session = Session::launch(name, SessionOptions { dind: false, running: false, ..Default::default() });
    let engine = Engine::connect(&jackin::engines::endpoint::Endpoint::resolve(None).unwrap()).unwrap();
    let existing = engine.inspect(name).unwrap().expect("created by the launch");
    let again = engine.create_container(&existing.spec, &existing.spec.image_id, existing.env.clone()).unwrap();
    assert_eq!(again, existing.id, "the container already there, not a second one");
    let listed = engine.list_managed().unwrap();
    assert_eq!(listed.iter().filter(|c| c.name == name).count(), 1);
    drop(session);
}
