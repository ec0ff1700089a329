//! jackin-restore against a real Docker engine and real git: each tier, secrets, divergence.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::docker::{
    build_real_images, docker, docker_quiet, engine_available, Session, SessionOptions, TEST_IMAGE,
    TEST_REAL_DIND_IMAGE, TEST_REAL_DIND_IMAGE_ENV, TEST_ROLE_IMAGE, TEST_ROLE_IMAGE_ENV,
};
use common::records::{envelopes, records, Candidate, ErrorRecord, Restored};
use common::{git, Home, Instance, Paused};
use jackin::base::tool::Tool;
use jackin::state::model::Status;
use jackin::state::names::InstanceName;
use jackin::state::store::{Roots, Store};
use serde_json::Value;

fn store(home: &Home) -> Store {
    Store::open(Roots { home: home.home.clone(), config_dir: home.config.clone() }).unwrap()
}

/// A per-test image tag, so parallel tests never move each other's tags.
fn role_image(id: &str) -> String {
    let tag = format!("jackin-test-role-{id}:latest");
    docker(&["tag", TEST_IMAGE, &tag]);
    tag
}

fn set_manifest(home: &Home, inst: &Instance, edit: impl FnOnce(&mut Value)) {
    home.edit_manifest(&inst.container, edit);
}

/// What jackin-keep does before it tears a session down: capture the recipe into the tools' own
/// file; then the status. (Done through the library here: these tests are about restore.)
fn capture_and_keep(home: &Home, inst: &Instance, sidecar: bool) {
    set_manifest(home, inst, |m| {
        if sidecar {
            m["docker"]["dind_container"] = Value::from(format!("{}-dind", inst.container));
            m["docker"]["certs_volume"] = Value::from(format!("{}-dind-certs", inst.container));
        }
    });
    common::docker::keep_with_recipe(home, &inst.container);
}

fn remove_docker_side(inst: &Instance) {
    let c = &inst.container;
    docker(&["rm", "-f", c, &format!("{c}-dind")]);
    docker(&["network", "rm", &format!("{c}-net")]);
    docker(&["volume", "rm", &format!("{c}-dind-certs")]);
}

fn with_agent_toml(home: &Home, inst: &Instance) -> std::path::PathBuf {
    home.write_agent_toml(&inst.container)
}

fn restore(home: &Home, args: &[&str]) -> std::process::Output {
    home.cmd("jackin-restore").args(args).arg("--format=json").output().unwrap()
}

fn status_of(home: &Home, inst: &Instance) -> (String, String) {
    (home.manifest(&inst.container).status, home.index_row(&inst.container).unwrap().status)
}

/// The `restored` record a run starts its output with.
fn restored(stdout: &[u8]) -> Restored {
    envelopes(stdout)[0].data()
}

fn no_file_holds(home: &Home, secret: &str) {
    for entry in walkdir::WalkDir::new(&home.home).into_iter().flatten().filter(|e| e.file_type().is_file()) {
        let bytes = fs::read(entry.path()).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&bytes).contains(secret), "{} holds the secret value", entry.path().display());
    }
}

#[test]
fn tier_1_starts_the_sidecar_when_healthy_then_the_container_and_rewrites_agent_toml() {
    if !engine_available("tier_1") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance("t1aaaaaa", |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let agent_toml = with_agent_toml(&home, &inst);
    let _session = Session::launch(&inst.container, SessionOptions { sidecar_ready_after: 3, ..Default::default() });
    capture_and_keep(&home, &inst, true);
    docker(&["stop", "-t", "0", &inst.container, &format!("{}-dind", inst.container)]);
    fs::remove_file(&agent_toml).unwrap();

    let out = restore(&home, &[&inst.container, "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(1));
    assert_eq!(rec.attach, ["docker", "exec", "-it", &inst.container, "/jackin/runtime/jackin-capsule"]);
    assert!(rec.actions.iter().any(|a| a.ends_with("and wait until it is healthy")), "{:?}", rec.actions);
    assert!(fs::read_to_string(&agent_toml).unwrap().contains("agent-smith"), "agent.toml came back");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(fs::metadata(agent_toml.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &inst.container]), "true");
    assert_eq!(docker(&["exec", &format!("{}-dind", inst.container), "test", "-e", "/tmp/healthy"]), "");
    assert_eq!(status_of(&home, &inst), ("active".into(), "active".into()));
    assert_eq!(home.isolation(&inst.container).records[0].cleanup_status, "active");
}

#[test]
fn tier_2_recreates_a_removed_session_with_secrets_from_the_environment_and_op() {
    if !engine_available("tier_2") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("t2aaaaaa", |_, _| Vec::new());
    with_agent_toml(&home, &inst);
    let sockets = home.home.join("sockets").join(&inst.container);
    // GH_TOKEN's source is jackin's config (the workspace's role layer); the agent rewrote
    // agent.toml to point SECRET_TOKEN at the operator's AWS key and GH_TOKEN at a vault of its
    // choosing: neither is followed.
    fs::create_dir_all(home.config.join("workspaces")).unwrap();
    fs::write(
        home.config.join("workspaces/my-app.toml"),
        "workdir = \"/workspace/my-app\"\n[roles.agent-smith.env]\n\
         GH_TOKEN = { op = \"op://dev/github/token\", path = \"Dev/GitHub/token\" }\n\
         API_BASE = \"https://internal.example/config-text-4321\"\n",
    )
    .unwrap();
    fs::write(
        sockets.join("agent.toml"),
        "role = \"agent-smith\"\n[[exec_bindings]]\nname = \"GH_TOKEN\"\nkind = \"op\"\nsource = \"op://agent/vault/field\"\n\
         [[exec_bindings]]\nname = \"SECRET_TOKEN\"\nkind = \"env\"\nsource = \"AWS_SECRET_ACCESS_KEY\"\n",
    )
    .unwrap();
    let image = role_image("t2aaaaaa");
    let _session = Session::launch(
        &inst.container,
        SessionOptions {
            image: Some(&image),
            env: vec![
                ("SECRET_TOKEN", "env-secret-1234"),
                ("GH_TOKEN", "op-secret-5678"),
                ("TERM", "xterm"),
                ("API_BASE", "https://internal.example/config-text-4321"),
            ],
            ..Default::default()
        },
    );
    capture_and_keep(&home, &inst, true);
    // A recipe an earlier version captured took its sources from agent.toml: one that names the
    // operator's AWS key for SECRET_TOKEN is read from $SECRET_TOKEN at resume, and says so.
    let captured = home.continuity(&inst.container).recipe.expect("a recipe");
    let source = |name: &str| {
        let env = captured["role"]["env"].as_array().unwrap();
        env.iter().find(|b| b["name"] == name).map(|b| b["source"].clone())
    };
    assert_eq!(source("GH_TOKEN"), Some("op://dev/github/token".into()), "from jackin's config");
    assert_eq!(source("SECRET_TOKEN"), Some("env:SECRET_TOKEN".into()), "its own name, not the agent's choice");
    assert_eq!(source("API_BASE"), Some("jackin-config".into()), "text typed into jackin's config");
    no_file_holds(&home, "config-text-4321");
    home.edit_continuity(&inst.container, |kept| {
        for binding in kept["recipe"]["role"]["env"].as_array_mut().unwrap() {
            if binding["name"] == "SECRET_TOKEN" {
                binding["source"] = "env:AWS_SECRET_ACCESS_KEY".into();
            }
        }
    });
    remove_docker_side(&inst);

    // A fake 1Password CLI on PATH.
    let bin = home.tmp.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    fs::write(
        bin.join("op"),
        "#!/bin/sh\n[ \"$1 $3\" = \"read op://dev/github/token\" ] && printf op-secret-5678 && exit 0\nexit 1\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(bin.join("op"), fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());

    // Missing SECRET_TOKEN: the restore names it and starts nothing.
    let before = home.snapshot();
    let out = home
        .cmd("jackin-restore")
        .args([&inst.container, "--yes"])
        .env("PATH", &path)
        .env_remove("SECRET_TOKEN")
        .env("AWS_SECRET_ACCESS_KEY", "operator-aws-secret")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("SECRET_TOKEN"));
    assert!(docker_quiet(&["inspect", &inst.container]).is_none(), "nothing was started");
    assert!(docker_quiet(&["network", "inspect", &format!("{}-net", inst.container)]).is_none());
    assert_eq!(home.snapshot(), before, "nothing changed");

    let out = home
        .cmd("jackin-restore")
        .args([&inst.container, "--yes", "--format=json"])
        .env("PATH", &path)
        .env("SECRET_TOKEN", "env-secret-1234")
        .env("AWS_SECRET_ACCESS_KEY", "operator-aws-secret")
        .env_remove("API_BASE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(2));
    assert_eq!(rec.drift.len(), 1, "{:?}", rec.drift);
    assert!(rec.drift[0].starts_with("SECRET_TOKEN: the recorded source env:AWS_SECRET_ACCESS_KEY"), "{:?}", rec.drift);
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &inst.container]), "true");
    assert_eq!(
        docker(&["exec", &inst.container, "sh", "-c", "echo $SECRET_TOKEN $GH_TOKEN"]),
        "env-secret-1234 op-secret-5678"
    );
    assert_eq!(
        docker(&["exec", &inst.container, "sh", "-c", "echo $API_BASE"]),
        "https://internal.example/config-text-4321",
        "the config's text, read from the config: the shell did not have it"
    );
    assert!(docker(&["inspect", "-f", "{{.Config.Labels}}", &inst.container]).contains("jackin.kind:role"));
    assert!(docker_quiet(&["volume", "inspect", &format!("{}-dind-certs", inst.container)]).is_some());
    assert_eq!(status_of(&home, &inst), ("active".into(), "active".into()));
    no_file_holds(&home, "env-secret-1234");
    no_file_holds(&home, "op-secret-5678");
    no_file_holds(&home, "config-text-4321");
}

#[test]
fn tier_2_uses_the_recorded_image_when_the_tag_has_moved() {
    if !engine_available("tier_2_moved_tag") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("t2mvtaga", |_, _| Vec::new());
    let image = role_image("t2mvtaga");
    let recorded = docker(&["image", "inspect", "-f", "{{.Id}}", &image]);
    let _session =
        Session::launch(&inst.container, SessionOptions { image: Some(&image), dind: false, ..Default::default() });
    capture_and_keep(&home, &inst, false);
    docker(&["rm", "-f", &inst.container]);
    // The tag moves on to a different image.
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("Dockerfile"), format!("FROM {TEST_IMAGE}\nRUN echo moved > /moved\n")).unwrap();
    docker(&["build", "-q", "-t", &image, dir.path().to_str().unwrap()]);

    let out = restore(&home, &[&inst.container, "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(2));
    assert!(rec.drift[0].contains("moved"), "{rec:?}");
    assert_eq!(docker(&["inspect", "-f", "{{.Image}}", &inst.container]), recorded);
    assert!(docker_quiet(&["exec", &inst.container, "test", "-e", "/moved"]).is_none(), "the old image runs");
    docker(&["rmi", "-f", &image]);
}

#[test]
fn the_role_source_at_the_recorded_commit_comes_over_http_once_then_from_the_cache() {
    use std::sync::atomic::Ordering::SeqCst;
    let home = Home::new();
    let (_, bare, sha) = common::role_source(&home, "http-src", None);
    let server = common::smart_http::SmartHttp::serve(home.tmp.path());
    let url = server.url(bare.file_name().unwrap().to_str().unwrap());
    let cache = home.tmp.path().join("cache");

    let context = jackin::engines::git::source_tar(&cache, &url, &sha).expect("fetching over http");
    let mut archive = tar::Archive::new(context.as_slice());
    let mut files = std::collections::BTreeMap::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let mut text = String::new();
        std::io::Read::read_to_string(&mut entry, &mut text).unwrap();
        files.insert(entry.path().unwrap().display().to_string(), text);
    }
    assert_eq!(files.keys().collect::<Vec<_>>(), ["Dockerfile", "marker"]);
    assert_eq!(files["marker"], "launched\n", "the recorded commit, not the moved branch");
    let served = server.requests.load(SeqCst);
    assert!(served >= 2, "advertisement and pack came over HTTP ({served} requests)");

    jackin::engines::git::source_tar(&cache, &url, &sha).expect("from the cache");
    assert_eq!(server.requests.load(SeqCst), served, "a cached commit is not fetched again");

    let missing = "0123456789abcdef0123456789abcdef01234567";
    let err = format!("{:#}", jackin::engines::git::source_tar(&cache, &url, missing).unwrap_err());
    assert!(err.contains(&format!("commit {missing} is not in {url}")), "{err}");

    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let dead = format!("http://127.0.0.1:{closed}/http-src.git");
    let err =
        format!("{:#}", jackin::engines::git::source_tar(&home.tmp.path().join("cache2"), &dead, &sha).unwrap_err());
    assert!(err.contains(&format!("fetching {dead}")), "{err}");
}

#[test]
fn tier_3_rebuilds_the_image_from_the_recorded_commit_not_the_moved_branch() {
    if !engine_available("tier_3") {
        return;
    }
    let home = Home::new();
    tier_3(home, "t3aaaaaa", |bare| bare.to_str().unwrap().to_owned(), &[]);
}

#[test]
fn tier_3_fetches_the_role_source_over_https() {
    if !engine_available("tier_3_https") {
        return;
    }
    let home = Home::new();
    let server = common::smart_http::SmartHttp::serve_tls(home.tmp.path());
    let certificate = server.certificate.clone().unwrap();
    let url = |bare: &Path| server.url(bare.file_name().unwrap().to_str().unwrap());
    tier_3(home, "t3hhhhhh", url, &[("SSL_CERT_FILE", certificate.to_str().unwrap())]);
    assert!(server.requests.load(std::sync::atomic::Ordering::SeqCst) >= 2, "the fetch went over https");
}

#[test]
fn tier_3_fetches_the_role_source_over_ssh_with_the_agents_key() {
    if !engine_available("tier_3_ssh") || !common::ssh::sshd_available("tier_3_ssh") {
        return;
    }
    let home = Home::new();
    let server = common::ssh::SshServer::start(&home.tmp.path().join("ssh"));
    let (agent, user_home) = (server.agent_socket.clone(), server.home.clone());
    let env = [("SSH_AUTH_SOCK", agent.to_str().unwrap()), ("HOME", user_home.to_str().unwrap())];
    tier_3(home, "t3ssssss", |bare| server.url(bare), &env);
}

/// Runs `jackin::engines::git::source_tar` in a process of its own (the test binary again), so that HOME
/// and SSH_AUTH_SOCK can differ per case without touching this process's environment.
#[test]
fn ssh_fetch_probe() {
    let Ok(spec) = std::env::var("JACKIN_SSH_FETCH") else { return };
    let mut parts = spec.split('|');
    let (cache, url, sha) = (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    match jackin::engines::git::source_tar(Path::new(cache), url, sha) {
        Ok(context) => println!("fetched {} bytes", context.len()),
        Err(e) => {
            eprintln!("{e:#}");
            std::process::exit(1);
        }
    }
}

#[test]
fn an_ssh_role_source_needs_a_known_host_key_and_a_key_the_server_accepts() {
    if !common::ssh::sshd_available("ssh_fetch") {
        return;
    }
    let home = Home::new();
    let dir = home.tmp.path().join("ssh");
    let server = common::ssh::SshServer::start(&dir);
    let (_, bare, sha) = common::role_source(&home, "role-src", None);
    let url = server.url(&bare);
    let fetch = |case: &str, home_dir: &Path, agent: &Path| {
        let started = std::time::Instant::now();
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "tool::restore::ssh_fetch_probe", "--nocapture"])
            .env("JACKIN_SSH_FETCH", format!("{}|{url}|{sha}", dir.join(format!("cache-{case}")).display()))
            .env("HOME", home_dir)
            .env("SSH_AUTH_SOCK", agent)
            .output()
            .unwrap();
        assert!(started.elapsed() < std::time::Duration::from_secs(30), "{case}: no credential loop");
        (
            out.status.success(),
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)),
        )
    };

    let (ok, output) = fetch("good", &server.home, &server.agent_socket);
    assert!(ok && output.contains("fetched"), "{output}\nsshd: {}", server.log(&dir));

    let stranger = home.tmp.path().join("stranger");
    fs::create_dir_all(stranger.join(".ssh")).unwrap();
    fs::write(stranger.join(".ssh/known_hosts"), "").unwrap();
    let (ok, output) = fetch("unknown-host", &stranger, &server.agent_socket);
    assert!(!ok, "a host key missing from known_hosts is refused: {output}");
    assert!(
        output.contains(&format!("fetching {url}")) && output.contains("hostkey") && output.contains("known_hosts"),
        "{output}"
    );

    let no_agent = home.tmp.path().join("no-agent.sock");
    let (ok, output) = fetch("no-agent", &server.home, &no_agent);
    assert!(!ok, "no key, no fetch: {output}");
    assert!(output.contains(&format!("fetching {url}: the server accepted no key the ssh-agent offered")), "{output}");
}

/// A role-source server that accepts and never says a word: a resume's fetch gives up after
/// `--fetch-timeout` with exit 4 and what to do, nothing started and nothing but the (empty)
/// role-source cache made; `--list` and `--plan` never connect to it.
#[test]
fn a_role_source_that_never_answers_is_given_up_on_after_the_fetch_timeout() {
    if !engine_available("tier_3_silent_server") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("t3qqqqqq", |_, _| Vec::new());
    let image = "jackin-test-role-t3qqqqqq:latest";
    let (_, _, sha) = common::role_source(&home, "role-src", Some(image));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("ssh://git@127.0.0.1:{}/role.git", listener.local_addr().unwrap().port());
    let accepted = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = std::sync::Arc::clone(&accepted);
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            held.push(stream);
        }
    });
    let _session = kept_with_only_its_role_source(&home, &inst, image, &url, &sha, |_| {});
    let restore = |args: &[&str]| home.cmd("jackin-restore").args(args).arg("--format=json").output().unwrap();

    for looks in [&["--list"][..], &[&inst.container, "--plan"]] {
        let out = restore(looks);
        assert!(out.status.success(), "{looks:?}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 0, "--list and --plan never fetch");

    let before = home.snapshot();
    let started = std::time::Instant::now();
    let out = restore(&[&inst.container, "--yes", "--fetch-timeout", "2"]);
    let waited = started.elapsed();
    let message = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{message}");
    assert!(
        message.contains(&format!("fetching {url}")) && message.contains("no answer from the server for 2 s"),
        "{message}"
    );
    assert!(message.contains("--fetch-timeout"), "says what to do: {message}");
    assert!(waited < std::time::Duration::from_secs(30), "gave up after {waited:?}");
    assert!(accepted.load(std::sync::atomic::Ordering::SeqCst) >= 1, "the resume did try the server");
    assert!(docker_quiet(&["inspect", &inst.container]).is_none(), "nothing was started");
    let outside_the_cache = |entries: Vec<(PathBuf, common::Entry)>| -> Vec<(PathBuf, common::Entry)> {
        let cache = home.home.join("cache");
        entries.into_iter().filter(|(path, _)| !path.starts_with(&cache)).collect()
    };
    let (before, after) = (outside_the_cache(before), outside_the_cache(home.snapshot()));
    let why = home.only_failed_attempts_between(&inst.container, &before, &after, 3);
    assert!(why.contains("no answer from the server"), "the history says why: {why}");

    // The 7-character abbreviation jackin records when it reused an image: the fetch that would
    // resolve it fails the same way, and is the same retry-later exit 4 (it was 6, "not ready").
    set_manifest(&home, &inst, |m| m["role_git_sha"] = Value::from(&sha[..7]));
    let before = home.snapshot();
    let out = restore(&[&inst.container, "--yes", "--fetch-timeout", "2"]);
    let message = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{message}");
    assert!(message.contains(&format!("fetching {url}")), "{message}");
    assert_eq!(outside_the_cache(home.snapshot()), outside_the_cache(before), "nothing changed");
}

/// A kept session whose image is gone, with the manifest's role source (and `more` of it): what
/// only tier 3 can bring back.
fn kept_with_only_its_role_source(
    home: &Home,
    inst: &Instance,
    image: &str,
    url: &str,
    sha: &str,
    more: impl FnOnce(&mut Value),
) -> Session {
    set_manifest(home, inst, |m| {
        m["role_source_git"] = Value::from(url);
        m["role_git_sha"] = Value::from(sha);
        m["image_tag"] = Value::from(image);
        more(m);
    });
    let session =
        Session::launch(&inst.container, SessionOptions { image: Some(image), dind: false, ..Default::default() });
    capture_and_keep(home, inst, false);
    docker(&["rm", "-f", &inst.container]);
    docker(&["rmi", "-f", image]);
    session
}

fn tier_3(mut home: Home, id: &str, url_of: impl FnOnce(&Path) -> String, env: &[(&str, &str)]) {
    let inst = home.instance(id, |_, _| Vec::new());
    let image = format!("jackin-test-role-{id}:latest");
    let (_, bare, sha) = common::role_source(&home, "role-src", Some(&image));
    let url = url_of(&bare);
    let _session = kept_with_only_its_role_source(&home, &inst, &image, &url, &sha, |_| {});

    let restore = |args: &[&str]| {
        home.cmd("jackin-restore").args(args).arg("--format=json").envs(env.iter().copied()).output().unwrap()
    };
    let plan = restore(&[&inst.container, "--plan"]);
    assert!(plan.status.success(), "{}", String::from_utf8_lossy(&plan.stderr));
    let planned = restored(&plan.stdout);
    assert_eq!(planned.tier, Some(3));
    assert!(planned.dry_run);
    assert!(docker_quiet(&["image", "inspect", &image]).is_none(), "--plan builds nothing");

    // The text plan lists the same steps, one a line, in order.
    let mut text = home.cmd("jackin-restore");
    text.args([&inst.container, "--plan", "--format=text"]).envs(env.iter().copied());
    let text = String::from_utf8_lossy(&text.output().unwrap().stdout).into_owned();
    let listed: Vec<&str> = text.lines().skip(1).take(planned.actions.len()).collect();
    let numbered: Vec<String> = planned.actions.iter().enumerate().map(|(n, a)| format!("  {}. {a}", n + 1)).collect();
    assert_eq!(listed, numbered, "{text}");

    let out = restore(&[&inst.container, "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ran = restored(&out.stdout);
    assert_eq!(ran.tier, Some(3));
    assert_eq!(ran.actions, planned.actions, "the resume runs exactly the steps --plan printed");
    assert_eq!(docker(&["exec", &inst.container, "cat", "/marker"]), "launched");
    assert_eq!(docker(&["image", "inspect", "-f", "{{index .Config.Labels \"jackin.role_git_sha\"}}", &image]), sha);
    docker(&["rm", "-f", &inst.container]);
    docker(&["rmi", "-f", &image]);
}

#[test]
fn a_worktree_on_another_branch_resumes_with_drift_and_only_a_lost_one_stops_the_restore() {
    if !engine_available("diverged") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance("dvrgaaaa", |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    with_agent_toml(&home, &inst);
    let _session = Session::launch(&inst.container, SessionOptions { dind: false, ..Default::default() });
    capture_and_keep(&home, &inst, false);
    docker(&["stop", "-t", "0", &inst.container]);
    let worktree = inst.mount_path(0);

    // The agent started a branch of its own: nothing is lost, the plan says so and is ready.
    git(&worktree, &["switch", "-q", "-c", "feature"]);
    let out = restore(&home, &[&inst.container, "--plan"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let planned = restored(&out.stdout);
    assert_eq!(planned.tier, Some(1));
    assert_eq!(
        planned.drift,
        [format!(
            "worktree {} is on branch feature, not its scratch branch jackin/scratch/{}",
            worktree.display(),
            inst.container
        )]
    );

    // A detached HEAD resumes too, with the drift in the record.
    git(&worktree, &["checkout", "-q", "--detach", "HEAD~1"]);
    let out = restore(&home, &[&inst.container, "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(1));
    assert!(rec.drift.len() == 1 && rec.drift[0].contains("has a detached HEAD at"), "{rec:?}");
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &inst.container]), "true");
    assert_eq!(git(&worktree, &["rev-parse", "--abbrev-ref", "HEAD"]), "HEAD", "restore moves no HEAD");
    docker(&["stop", "-t", "0", &inst.container]);
    // Kept again, as a keep records it: stopped on purpose, not interrupted.
    let name = InstanceName::parse(&inst.container).unwrap();
    store(&home).set_status(&name, Status::RestoreAvailable, "2026-11-29T10:00:00Z").unwrap();
    jackin::state::continuity::update(&store(&home), &name, |c| {
        c.cause = Some("kept".into());
        Ok(((), true))
    })
    .unwrap();

    // The worktree is no longer registered in its host repository: that stops it.
    fs::remove_dir_all(app.join(".git/worktrees").join(&inst.container)).unwrap();
    let before = home.snapshot();
    let out = restore(&home, &[&inst.container, "--yes"]);
    assert_eq!(out.status.code(), Some(6));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is no longer registered"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &inst.container]), "false");
    assert_eq!(home.snapshot(), before, "nothing changed");

    // Its path is gone: that stops it too.
    fs::remove_dir_all(&worktree).unwrap();
    let out = restore(&home, &[&inst.container, "--yes"]);
    assert_eq!(out.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is gone"), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_list_shows_resumable_sessions_newest_first_with_readiness() {
    if !engine_available("list") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let kept = home.instance("l1staaaa", |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let finished = home.instance("l1stbbbb", |_, _| Vec::new());
    let needs = home.instance("l1stcccc", |_, _| Vec::new());
    let _a = Session::launch(&kept.container, SessionOptions { dind: false, ..Default::default() });
    let _b = Session::launch(
        &needs.container,
        SessionOptions { dind: false, env: vec![("LIST_SECRET", "x")], ..Default::default() },
    );
    capture_and_keep(&home, &kept, false);
    capture_and_keep(&home, &needs, false);
    docker(&["rm", "-f", &kept.container, &needs.container]);
    fs::write(kept.mount_path(0).join("notes.md"), "wip\n").unwrap();
    let store = store(&home);
    store
        .set_status(&InstanceName::parse(&finished.container).unwrap(), Status::CleanExited, "2026-11-29T11:00:00Z")
        .unwrap();
    store.set_status(&InstanceName::parse(&needs.container).unwrap(), Status::Crashed, "2026-11-29T09:00:00Z").unwrap();
    jackin::state::continuity::update(&store, &InstanceName::parse(&needs.container).unwrap(), |c| {
        c.cause = Some("killed_by_host".into());
        Ok(((), true))
    })
    .unwrap();

    let out = home.cmd("jackin-restore").args(["--list", "--format=json"]).env_remove("LIST_SECRET").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let recs = records::<Candidate>(&out.stdout);
    let names: Vec<&str> = recs.iter().map(|r| r.identity.container_base.as_str()).collect();
    assert_eq!(names, [kept.container.as_str(), needs.container.as_str()], "clean_exited is not listed; newest first");
    let first = &recs[0];
    assert_eq!(first.tier, Some(2));
    assert!(first.ready);
    assert!(first.label.starts_with("Resume jk-l1staaaa · "), "{first:?}");
    assert!(first.label.contains(" · 1 file dirty · ") && first.label.ends_with("B · ready"), "{first:?}");
    let disk = first.disk.expect("a candidate says what it holds on disk");
    assert_eq!(disk.total, disk.data + disk.work + disk.ignored);
    assert!(disk.work > 0 && disk.rebuildable == 0, "{disk:?}");
    let second = &recs[1];
    assert!(!second.ready);
    assert_eq!(second.cause.as_deref(), Some("killed_by_host"));
    assert!(second.label.contains("interrupted by host"), "{second:?}");
    assert!(second.label.ends_with("needs LIST_SECRET"), "{second:?}");

    // With the operator's retention, a kept clean session says when the retention purge takes it;
    // work at risk is never purged by retention, and says nothing.
    let last_month =
        humantime::format_rfc3339_seconds(std::time::SystemTime::now() - std::time::Duration::from_secs(29 * 86_400));
    store
        .set_status(&InstanceName::parse(&kept.container).unwrap(), Status::RestoreAvailable, &last_month.to_string())
        .unwrap();
    let out = home.cmd("jackin-restore").args(["--list", "--format=json"]).env("JACKIN_KEPT_RETENTION", "30d").output();
    let recs = records::<Candidate>(&out.unwrap().stdout);
    let kept_one = recs.iter().find(|r| r.identity.container_base == kept.container).unwrap();
    let secs = kept_one.expires_in_secs.expect("a kept clean session expires under a retention");
    assert!((86_000..=86_400).contains(&secs), "{kept_one:?}");
    assert!(kept_one.label.contains(" · expires in "), "{kept_one:?}");
    let at_risk = recs.iter().find(|r| r.identity.container_base == needs.container).unwrap();
    assert_eq!(at_risk.expires_in_secs, None);

    let filtered = home.cmd("jackin-restore").args(["--list", "--format=json", "--role", "nobody"]).output().unwrap();
    assert!(envelopes(&filtered.stdout).is_empty());
    let text = home.cmd("jackin-restore").args(["--list", "--format=text"]).env("LIST_SECRET", "x").output().unwrap();
    assert!(
        String::from_utf8_lossy(&text.stdout).lines().all(|l| l.starts_with("Resume jk-")),
        "{}",
        String::from_utf8_lossy(&text.stdout)
    );
}

#[test]
fn a_running_session_is_tier_0_and_a_finished_one_is_refused() {
    if !engine_available("tier_0") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("t0aaaaaa", |_, _| Vec::new());
    let _session = Session::launch(&inst.container, SessionOptions { dind: false, ..Default::default() });
    let out = restore(&home, &[&inst.container, "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(restored(&out.stdout).tier, Some(0));
    let store = store(&home);
    store
        .set_status(&InstanceName::parse(&inst.container).unwrap(), Status::CleanExited, "2026-11-29T11:00:00Z")
        .unwrap();
    let out = restore(&home, &[&inst.container, "--yes"]);
    assert_eq!(out.status.code(), Some(6));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not resumable"));
    let _ = Path::new("");
}

/// Where jackin is installed, the attach a resume prints (and `--exec` and the picker run) is
/// jackin's own `jackin hardline C`: jackin's finalizer then settles the session when its agent
/// exits, as jackin's exit does. The capsule reconnect alone left the row `active` after a clean
/// exit, for the next reconcile to call a crash (issue 65). jackin is the tests' stand-in, which
/// plays jackin's exit check and teardown.
#[test]
fn where_jackin_is_installed_the_printed_attach_is_jackins_and_a_clean_exit_is_settled() {
    if !engine_available("where_jackin_is_installed_the_printed_attach_is_jackins") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&common::unique_id(), |_, _| Vec::new());
    with_agent_toml(&home, &inst);
    let _session = Session::launch(&inst.container, SessionOptions { dind: false, ..Default::default() });
    store(&home)
        .set_status(&InstanceName::parse(&inst.container).unwrap(), Status::RestoreAvailable, "2026-11-29T10:00:00Z")
        .unwrap();
    docker(&["stop", "-t", "0", &inst.container]);
    let stand_ins = home.tmp.path().join("stand-ins");
    common::install_jackin_stand_in(&stand_ins);
    let path = format!("{}:{}", stand_ins.display(), std::env::var("PATH").unwrap());
    let out = home
        .cmd("jackin-restore")
        .args([&inst.container, "--yes", "--format=json"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let restored = envelopes(&out.stdout)[0].data::<Restored>();
    assert_eq!(restored.attach, ["jackin", "hardline", inst.container.as_str()], "{restored:?}");
    // The operator follows it, and the agent exits with nothing at risk: jackin tears it down.
    let attached = std::process::Command::new(&restored.attach[0])
        .args(&restored.attach[1..])
        .env("PATH", &path)
        .env("JACKIN_HOME_DIR", &home.home)
        .env("JACKIN_STAND_IN_HARDLINE_EXIT", "clean")
        .env("JACKIN_STAND_IN_SECONDS", "0")
        .output()
        .unwrap();
    assert!(attached.status.success(), "{}", String::from_utf8_lossy(&attached.stderr));
    assert_eq!(home.index_row(&inst.container).map(|r| r.status).as_deref(), Some("purged"));
    assert!(!inst.dir.exists(), "settled as jackin's clean exit settles it");
}

#[test]
fn without_a_recipe_tier_2_says_what_is_missing_and_exec_becomes_the_attach_command() {
    if !engine_available("no_recipe_and_exec") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("n0rec1pe", |_, _| Vec::new());
    with_agent_toml(&home, &inst);
    let session = Session::launch(&inst.container, SessionOptions { dind: false, ..Default::default() });
    store(&home)
        .set_status(&InstanceName::parse(&inst.container).unwrap(), Status::RestoreAvailable, "2026-11-29T10:00:00Z")
        .unwrap();

    // Tier 1 needs no recipe; --exec then replaces the process with the attach command (a fake
    // `docker` on PATH stands in for the CLI the operator would attach with; the tools themselves
    // talk to the engine's API, not to this program).
    docker(&["stop", "-t", "0", &inst.container]);
    let bin = home.tmp.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    fs::write(bin.join("docker"), "#!/bin/sh\necho \"attached with: $*\"\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(bin.join("docker"), fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let out = home
        .cmd("jackin-restore")
        .args([&inst.container, "--yes", "--exec", "--format=json"])
        .env("PATH", &path)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut lines = stdout.lines();
    assert!(lines.next().unwrap().contains("\"tier\":1"), "{stdout}");
    assert_eq!(
        lines.next().unwrap(),
        format!("attached with: exec -it {} /jackin/runtime/jackin-capsule", inst.container)
    );

    // Gone without a recipe: nothing can recreate it, and the list and the plan say exactly why.
    drop(session);
    let out = restore(&home, &[&inst.container, "--plan"]);
    assert_eq!(out.status.code(), Some(6));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no launch recipe"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let recs = envelopes(&out.stdout);
    assert_eq!(recs.len(), 2);
    let planned = recs[0].data::<Restored>();
    assert_eq!(planned.tier, None, "no made-up tier: {planned:?}");
    assert!(planned.missing[0].contains("no launch recipe"), "{planned:?}");
    let error = recs[1].data::<ErrorRecord>();
    assert!(error.dry_run, "a plan is a dry run, its error record too");
    let text = home.cmd("jackin-restore").args([&inst.container, "--plan", "--format=text"]).output().unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.starts_with(&format!("{} · cannot resume: no launch recipe", inst.container)), "{text}");
    let listed = restore(&home, &["--list"]);
    let candidate = &records::<Candidate>(&listed.stdout)[0];
    assert!(!candidate.ready);
    assert_eq!(candidate.tier, None);
    assert!(candidate.label.contains("cannot resume: no launch recipe"), "{candidate:?}");
}

/// A per-test tag of the role image shaped like jackin's (own `ENV`, `USER`, the capsule).
fn real_role_image(id: &str) -> String {
    build_real_images();
    let tag = format!("jackin-test-role-{id}:latest");
    docker(&["tag", TEST_ROLE_IMAGE, &tag]);
    tag
}

/// `jackin-restore` with none of the images' own variables in its environment.
fn restore_without_image_env(home: &Home, args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut cmd = home.cmd("jackin-restore");
    cmd.args(args).arg("--format=json");
    for (name, _) in TEST_ROLE_IMAGE_ENV.iter().chain(&TEST_REAL_DIND_IMAGE_ENV) {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied()).output().unwrap()
}

fn host_config(container: &str, field: &str) -> String {
    docker(&["inspect", "-f", &format!("{{{{json .HostConfig.{field}}}}}"), container])
}

/// The attach argv of a record, run without `-it` (no terminal here): what it reaches.
fn run_attach(attach: &[String]) -> String {
    let argv: Vec<&str> = attach.iter().map(String::as_str).filter(|a| *a != "-it").collect();
    assert_eq!(argv[0], "docker");
    docker(&argv[1..])
}

#[test]
fn a_real_session_comes_back_as_it_was_launched_at_tiers_2_1_and_0() {
    if !engine_available("real_session") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("r3a1aaaa", |_, _| Vec::new());
    with_agent_toml(&home, &inst);
    let image = real_role_image("r3a1aaaa");
    let c = inst.container.clone();
    let _session = Session::launch(
        &c,
        SessionOptions {
            image: Some(&image),
            sidecar_image: Some(TEST_REAL_DIND_IMAGE),
            internal_network: true,
            env: vec![("SECRET_TOKEN", "real-secret-1234"), ("TERM", "xterm")],
            role_args: vec![
                "--user",
                "1000:1000",
                "--group-add",
                "0",
                "--cap-drop",
                "NET_RAW",
                "--cap-add",
                "SYS_PTRACE",
                "--security-opt",
                "no-new-privileges",
                "--tmpfs",
                "/scratch:size=1m",
                "--device",
                "/dev/zero:/dev/jackin-zero",
                "--init",
                "--shm-size",
                "32m",
                "--add-host",
                "jackin.test:10.0.0.1",
                "--restart",
                "unless-stopped",
                "--read-only",
            ],
            ..Default::default()
        },
    );
    let launched: Vec<String> =
        ["CapAdd", "CapDrop", "GroupAdd", "SecurityOpt", "Tmpfs", "Devices", "Init", "ShmSize", "ExtraHosts"]
            .into_iter()
            .chain(["RestartPolicy", "ReadonlyRootfs"])
            .map(|field| host_config(&c, field))
            .collect();
    capture_and_keep(&home, &inst, true);
    let recipe = home.continuity(&inst.container).recipe.expect("a recipe");
    assert_eq!(recipe["format"], 3);
    // Sorted: the engine does not keep `-e`'s order in `Config.Env` (about one create in ten put
    // TERM first here, with docker 28.2 against dockerd 20.10), and the order means nothing.
    let recorded_names = |container: &str| -> Vec<String> {
        let mut names: Vec<String> = recipe[container]["env"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap().to_owned())
            .collect();
        names.sort();
        names
    };
    assert_eq!(recorded_names("role"), ["SECRET_TOKEN", "TERM"], "only what the launch added");
    assert_eq!(recorded_names("sidecar"), Vec::<String>::new(), "the DinD image's variables are the image's");
    assert_eq!(recipe["network"]["internal"], true);
    remove_docker_side(&inst);

    // Tier 2, with none of the images' variables in the restoring environment: nothing is asked.
    let listed = restore_without_image_env(&home, &["--list"], &[("SECRET_TOKEN", "real-secret-1234")]);
    let candidate = &records::<Candidate>(&listed.stdout)[0];
    assert!(candidate.ready && candidate.missing.is_empty(), "{candidate:?}");
    let out = restore_without_image_env(&home, &[&c, "--yes"], &[("SECRET_TOKEN", "real-secret-1234")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(2));
    let env = docker(&["exec", &c, "env"]);
    for (name, value) in TEST_ROLE_IMAGE_ENV {
        assert!(env.lines().any(|l| l == format!("{name}={value}")), "the image's {name}: {env}");
    }
    assert!(env.lines().any(|l| l == "SECRET_TOKEN=real-secret-1234"), "{env}");
    let sidecar_env = docker(&["exec", &format!("{c}-dind"), "env"]);
    for (name, value) in TEST_REAL_DIND_IMAGE_ENV {
        assert!(sidecar_env.lines().any(|l| l == format!("{name}={value}")), "the DinD image's {name}: {sidecar_env}");
    }
    let net = format!("{c}-net");
    assert_eq!(docker(&["network", "inspect", "-f", "{{.Internal}}", &net]), "true", "no route out");
    assert_eq!(docker(&["network", "inspect", "-f", "{{index .Labels \"jackin.role\"}}", &net]), c);
    let restored_shape: Vec<String> =
        ["CapAdd", "CapDrop", "GroupAdd", "SecurityOpt", "Tmpfs", "Devices", "Init", "ShmSize", "ExtraHosts"]
            .into_iter()
            .chain(["RestartPolicy", "ReadonlyRootfs"])
            .map(|field| host_config(&c, field))
            .collect();
    assert_eq!(restored_shape, launched);
    assert_eq!(host_config(&c, "CapDrop"), r#"["CAP_NET_RAW"]"#);
    assert_eq!(host_config(&c, "GroupAdd"), r#"["0"]"#);
    assert_eq!(docker(&["inspect", "-f", "{{.Config.User}}", &c]), "1000:1000");
    let capsule = ["docker", "exec", "-it", "--user", "1000:1000", c.as_str(), "/jackin/runtime/jackin-capsule"];
    assert_eq!(rec.attach, capsule);
    assert_eq!(run_attach(&rec.attach), "capsule reached as 1000:1000 groups 1000 0");

    // Tier 1 after jackin's garbage collection took the network of the stopped session.
    docker(&["stop", "-t", "0", &c, &format!("{c}-dind")]);
    docker(&["network", "rm", &net]);
    store(&home)
        .set_status(&InstanceName::parse(&c).unwrap(), Status::RestoreAvailable, "2026-11-29T10:00:00Z")
        .unwrap();
    let out = restore_without_image_env(&home, &[&c, "--yes"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(1));
    assert!(rec.actions.iter().any(|a| a == &format!("create network {net} (internal)")), "{:?}", rec.actions);
    assert!(rec.actions.contains(&format!("connect {c} to network {net} again")), "{:?}", rec.actions);
    assert_eq!(docker(&["network", "inspect", "-f", "{{.Internal}}", &net]), "true", "no route out");
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &c]), "true");

    // Tier 0: the attach command reaches the capsule, as the container's user.
    let out = restore_without_image_env(&home, &[&c, "--yes"], &[]);
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(0));
    assert_eq!(rec.attach, capsule);
    assert_eq!(run_attach(&rec.attach), "capsule reached as 1000:1000 groups 1000 0");
    docker(&["rm", "-f", &c]);
    docker(&["rmi", &image]);
}

/// Tier 0 is the session as it was, its Docker-in-Docker included: a sidecar that stopped under
/// the running role container is started again and waited for, and one that was removed is
/// recreated from the launch recipe; the role container is left running as it is.
#[test]
fn tier_0_brings_back_a_stopped_or_removed_sidecar_under_the_running_session() {
    if !engine_available("tier_0_sidecar") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("t0s1dcar", |_, _| Vec::new());
    with_agent_toml(&home, &inst);
    let image = real_role_image("t0s1dcar");
    let c = inst.container.clone();
    let sidecar = format!("{c}-dind");
    let _session = Session::launch(
        &c,
        SessionOptions { image: Some(&image), sidecar_image: Some(TEST_REAL_DIND_IMAGE), ..Default::default() },
    );
    capture_and_keep(&home, &inst, true);
    let role_started = docker(&["inspect", "-f", "{{.State.StartedAt}}", &c]);

    // Stopped (it crashed, someone stopped it): started again, healthy.
    docker(&["stop", "-t", "0", &sidecar]);
    let plan = restore_without_image_env(&home, &[&c, "--plan"], &[]);
    assert!(plan.status.success(), "{}", common::stderr(&plan));
    let planned = restored(&plan.stdout);
    assert_eq!(planned.tier, Some(0));
    assert_eq!(planned.actions, [format!("start {sidecar} and wait until it is healthy")]);
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &sidecar]), "false", "--plan starts nothing");
    let out = restore_without_image_env(&home, &[&c, "--yes"], &[]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(0));
    assert_eq!(rec.actions, planned.actions, "the run does what the plan said: {rec:?}");
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &sidecar]), "true");

    // Removed: recreated from the recipe, on the session's network, and said so.
    docker(&["rm", "-f", "-v", &sidecar]);
    let out = restore_without_image_env(&home, &[&c, "--yes"], &[]);
    assert!(out.status.success(), "{}", common::stderr(&out));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(0));
    assert!(
        rec.actions.contains(&format!(
            "recreate {sidecar} from the launch recipe (it was removed) and wait until it is healthy"
        )),
        "{rec:?}"
    );
    assert!(rec.drift.iter().any(|d| d.starts_with(&format!("sidecar {sidecar} was removed"))), "{rec:?}");
    assert_eq!(wait_for_health(&sidecar), "healthy");
    let net = format!("{c}-net");
    assert_eq!(network_ids(&sidecar), network_ids(&c), "the sidecar is back on the session's network");
    assert!(network_ids(&c)[0].starts_with(&format!("{net}=")));

    // Running as it is: nothing to start, and the role container was never restarted.
    let out = restore_without_image_env(&home, &[&c, "--yes"], &[]);
    assert_eq!(restored(&out.stdout).actions, [format!("{c} is running: nothing to start")]);
    assert_eq!(docker(&["inspect", "-f", "{{.State.StartedAt}}", &c]), role_started);
    docker(&["rm", "-f", &c, &sidecar]);
    docker(&["rmi", &image]);
}

/// A recipe as the first format wrote it (the whole `Config.Env`, the network's name and labels
/// only), from tests/fixtures/recipe-format-1.json: it still restores, and the images' variables it
/// recorded as `env:NAME` come from the images, not from the restoring shell.
#[test]
fn a_recipe_in_the_first_format_still_restores() {
    if !engine_available("recipe_format_1") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("f0rmat1a", |_, _| Vec::new());
    let image = real_role_image("f0rmat1a");
    let c = inst.container.clone();
    let image_id = docker(&["image", "inspect", "-f", "{{.Id}}", &image]);
    let dind_id = docker(&["image", "inspect", "-f", "{{.Id}}", TEST_REAL_DIND_IMAGE]);
    let fixture = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/recipe-format-1.json"))
        .unwrap()
        .replace("@CONTAINER@", &c)
        .replace("@IMAGE@", &image)
        .replace("@IMAGE_ID@", &image_id)
        .replace("@DIND_IMAGE@", TEST_REAL_DIND_IMAGE)
        .replace("@DIND_IMAGE_ID@", &dind_id);
    let recipe: Value = serde_json::from_str(&fixture).unwrap();
    assert!(recipe.get("format").is_none(), "the fixture is in the first format");
    let continuity = serde_json::json!({ "version": 1, "recipe": recipe, "cause": "kept" });
    fs::write(inst.dir.join(".jackin/continuity.json"), serde_json::to_string_pretty(&continuity).unwrap()).unwrap();
    store(&home)
        .set_status(&InstanceName::parse(&c).unwrap(), Status::RestoreAvailable, "2026-11-29T10:00:00Z")
        .unwrap();
    let _cleanup = Session {
        container: c.clone(),
        sidecar: Some(format!("{c}-dind")),
        network: format!("{c}-net"),
        volume: Some(format!("{c}-dind-certs")),
        host: None,
    };

    let listed = restore_without_image_env(&home, &["--list"], &[]);
    let candidate = &records::<Candidate>(&listed.stdout)[0];
    assert!(candidate.label.ends_with("needs SECRET_TOKEN"), "only the launch's secret is asked: {candidate:?}");
    let out = restore_without_image_env(&home, &[&c, "--yes"], &[("SECRET_TOKEN", "fixture-secret")]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(2));
    assert!(rec.drift.iter().any(|d| d.contains("first-format launch recipe")), "{rec:?}");
    let env = docker(&["exec", &c, "env"]);
    for (name, value) in TEST_ROLE_IMAGE_ENV {
        assert!(env.lines().any(|l| l == format!("{name}={value}")), "the image's {name}: {env}");
    }
    assert!(env.lines().any(|l| l == "SECRET_TOKEN=fixture-secret"), "{env}");
    let sidecar_env = docker(&["exec", &format!("{c}-dind"), "env"]);
    assert!(sidecar_env.lines().any(|l| l == "DIND_COMMIT=8b94a1b0a0b1"), "{sidecar_env}");
    let anonymous = "5d0f6c3e9b8a7f1e2d4c6b8a0f9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f10";
    assert!(docker_quiet(&["volume", "inspect", anonymous]).is_none(), "the image's volume stays anonymous");
    assert_eq!(docker(&["inspect", "-f", "{{.Config.User}}", &c]), "1000:1000");
    docker(&["rm", "-f", &c]);
    docker(&["rmi", &image]);
}

/// A role repository with over a thousand objects, so that some 4-character prefix is shared by
/// two of them: the shortest abbreviation libgit2 resolves, and an ambiguous one. Both objects
/// are new, and no object the repository had before starts with it: the role-source cache, which
/// holds only those, must not resolve it to one of its own (the ids move with the clock).
fn ambiguous_prefix(bare: &Path, source: &Path) -> String {
    let prefixes = |repo: &Path| -> Vec<String> {
        git(repo, &["rev-list", "--objects", "--all"]).lines().map(|line| line[..4].to_owned()).collect()
    };
    let before: std::collections::HashSet<String> = prefixes(bare).into_iter().collect();
    for i in 0..1500 {
        fs::write(source.join(format!("f{i}")), format!("{i}\n")).unwrap();
    }
    git(source, &["add", "-A"]);
    git(source, &["commit", "-q", "-m", "many files"]);
    git(source, &["push", "-q", bare.to_str().unwrap(), "main"]);
    let mut seen = std::collections::HashSet::new();
    for prefix in prefixes(bare).into_iter().filter(|p| !before.contains(p)) {
        if !seen.insert(prefix.clone()) {
            return prefix;
        }
    }
    panic!("no two of {} new objects share a 4-character prefix", seen.len())
}

#[test]
fn tier_3_resolves_a_short_role_sha_and_refuses_an_ambiguous_or_unknown_one() {
    if !engine_available("tier_3_short_sha") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("t3sh0rta", |_, _| Vec::new());
    let image = "jackin-test-role-t3sh0rta:latest".to_owned();
    let (source, bare, sha) = common::role_source(&home, "role-src", Some(&image));
    let url = bare.to_str().unwrap().to_owned();
    let short = sha[..7].to_owned();
    let _session = kept_with_only_its_role_source(&home, &inst, &image, &url, &short, |_| {});

    // A plan does not fetch: with the role source not in the cache, tier 3 is stated with the
    // commit resolved at resume, exit 0, the home as it was; only the resume can fail on it.
    let at_resume = |plan: &std::process::Output, prefix: &str| {
        assert_eq!(plan.status.code(), Some(0), "the plan is stated: {}", String::from_utf8_lossy(&plan.stderr));
        let planned = restored(&plan.stdout);
        assert_eq!(planned.tier, Some(3), "{planned:?}");
        assert!(planned.missing.is_empty(), "nothing known stops it: {planned:?}");
        assert!(planned.actions.iter().any(|a| a.contains(&format!("at {prefix}, resolved at resume"))), "{planned:?}");
        assert_eq!(envelopes(&plan.stdout).len(), 1, "no error record");
    };
    let before = home.snapshot();
    at_resume(&restore(&home, &[&inst.container, "--plan"]), &short);
    assert_eq!(home.snapshot(), before, "a plan changes nothing in the home");
    assert!(!home.home.join("cache").exists(), "a plan creates no cache");
    let out = restore(&home, &[&inst.container, "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(restored(&out.stdout).tier, Some(3));
    assert_eq!(docker(&["exec", &inst.container, "cat", "/marker"]), "launched");
    docker(&["rm", "-f", &inst.container]);
    docker(&["rmi", "-f", &image]);

    // The resume fetched it into the cache: a plan now resolves the abbreviation there.
    let plan = restore(&home, &[&inst.container, "--plan"]);
    assert!(plan.status.success(), "{}", String::from_utf8_lossy(&plan.stderr));
    let planned = restored(&plan.stdout);
    assert_eq!(planned.tier, Some(3));
    assert!(planned.actions.iter().any(|a| a.contains(&format!("at {short} ({sha})"))), "{planned:?}");

    // An ambiguous and an unknown abbreviation the cache does not hold yet: the plan leaves them
    // to the resume, which fetches, names them and starts nothing.
    let ambiguous = ambiguous_prefix(&bare, &source);
    for (prefix, why) in [(ambiguous.as_str(), "is ambiguous in"), ("0000000", "is not in")] {
        set_manifest(&home, &inst, |m| m["role_git_sha"] = Value::from(prefix));
        at_resume(&restore(&home, &[&inst.container, "--plan"]), prefix);
        let expected = format!("role_git_sha {prefix} {why} {url}");
        let out = restore(&home, &[&inst.container, "--yes"]);
        assert_eq!(out.status.code(), Some(6));
        assert!(String::from_utf8_lossy(&out.stderr).contains(&expected), "{}", String::from_utf8_lossy(&out.stderr));
    }
    // Once fetched, an ambiguous one is named by the plan from the cache alone, with no tier.
    set_manifest(&home, &inst, |m| m["role_git_sha"] = Value::from(ambiguous.as_str()));
    let plan = restore(&home, &[&inst.container, "--plan"]);
    assert_eq!(plan.status.code(), Some(6), "{}", String::from_utf8_lossy(&plan.stderr));
    let planned = restored(&plan.stdout);
    assert_eq!(planned.tier, None, "{planned:?}");
    let expected = format!("role_git_sha {ambiguous} is ambiguous in {url}");
    assert!(planned.missing.iter().any(|m| m.contains(&expected)), "{expected}: {planned:?}");
}

#[test]
fn tier_3_over_https_takes_credentials_from_the_configured_credential_helper() {
    if !engine_available("tier_3_credential_helper") {
        return;
    }
    let mut home = Home::new();
    let server =
        common::smart_http::SmartHttp::serve_tls_with_password(home.tmp.path(), Some(("agent", "s3cret/pass")));
    let certificate = server.certificate.clone().unwrap();
    let inst = home.instance("t3cr3dhp", |_, _| Vec::new());
    let image = "jackin-test-role-t3cr3dhp:latest".to_owned();
    let (_, bare, sha) = common::role_source(&home, "role-src", Some(&image));
    let url = server.url_by_name(bare.file_name().unwrap().to_str().unwrap());
    assert!(!url.contains('@'), "no credentials in the URL");
    let _session = kept_with_only_its_role_source(&home, &inst, &image, &url, &sha, |_| {});

    // git's own configuration: a `store` helper whose file holds the credentials for the host.
    let user_home = home.tmp.path().join("operator");
    fs::create_dir_all(&user_home).unwrap();
    let store_file = user_home.join("git-credentials");
    fs::write(
        user_home.join(".gitconfig"),
        format!("[credential]\n\thelper = store --file={}\n", store_file.display()),
    )
    .unwrap();
    let port = server.port;
    let restore = |password: Option<&str>| {
        let _ = fs::remove_dir_all(home.home.join("cache"));
        match password {
            Some(password) => {
                let encoded = password.replace('/', "%2f");
                fs::write(&store_file, format!("https://agent:{encoded}@localhost:{port}\n")).unwrap()
            }
            None => fs::write(&store_file, "").unwrap(),
        }
        home.cmd("jackin-restore")
            .args([&inst.container, "--yes", "--format=json"])
            .env("SSL_CERT_FILE", &certificate)
            .env("HOME", &user_home)
            .env("XDG_CONFIG_HOME", user_home.join(".config"))
            .env_remove("GIT_CONFIG_GLOBAL")
            .output()
            .unwrap()
    };

    // No credentials anywhere: the 401 is named with the URL.
    let out = restore(None);
    assert_eq!(out.status.code(), Some(4), "a fetch that fails is unavailable: nothing was created");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{url} asks for credentials (HTTP 401)")), "{stderr}");
    // Wrong ones: the URL refused them.
    let out = restore(Some("wrong"));
    assert_eq!(out.status.code(), Some(4));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("{url} refused the credentials of the credential helper")), "{stderr}");
    assert!(!stderr.contains("wrong"), "no credential in the message: {stderr}");
    assert!(docker_quiet(&["inspect", &inst.container]).is_none(), "nothing was started");

    let out = restore(Some("s3cret/pass"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(restored(&out.stdout).tier, Some(3));
    assert_eq!(docker(&["exec", &inst.container, "cat", "/marker"]), "launched");
    assert!(server.refused.load(std::sync::atomic::Ordering::SeqCst) >= 3, "the server asked for credentials");
    no_file_holds(&home, "s3cret");
    docker(&["rm", "-f", &inst.container]);
    docker(&["rmi", "-f", &image]);
}

#[test]
fn tier_3_builds_on_the_recorded_base_image_and_reports_a_dockerfile_that_names_another() {
    if !engine_available("tier_3_base_image") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("t3ba5eaa", |_, _| Vec::new());
    let image = "jackin-test-role-t3ba5eaa:latest".to_owned();
    let base = "jackin-test-base-t3ba5eaa:1".to_owned();
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("Dockerfile"),
        format!("FROM {TEST_IMAGE}\nLABEL test.home={:?}\nRUN echo recorded > /base\n", home.tmp.path()),
    )
    .unwrap();
    docker(&["build", "-q", "-t", &base, dir.path().to_str().unwrap()]);
    let (_, bare, sha) = common::role_source(&home, "role-src", Some(&image));
    let _session = kept_with_only_its_role_source(&home, &inst, &image, bare.to_str().unwrap(), &sha, |m| {
        m["base_image_ref"] = Value::from(base.clone());
    });

    let out = restore(&home, &[&inst.container, "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(3));
    let expected = format!("the Dockerfile's base is {TEST_IMAGE}, not the recorded {base}: built on the recorded one");
    assert_eq!(rec.drift, [expected]);
    assert_eq!(docker(&["exec", &inst.container, "cat", "/base", "/marker"]), "recorded\nlaunched");
    docker(&["rm", "-f", &inst.container]);
    docker(&["rmi", "-f", &image, &base]);
}

// ---- the picker, on a terminal ---------------------------------------------------------------

/// jackin-restore with no INSTANCE on a 120×30 pseudo-terminal that can draw; stdout goes to a
/// file, the screens and the attach command's terminal are the pseudo-terminal.
fn restore_on_screen(home: &Home) -> (rexpect::session::PtySession, std::path::PathBuf) {
    let output = home.tmp.path().join(format!("restore-out-{}.jsonl", std::process::id()));
    let mut cmd = std::process::Command::new("sh");
    cmd.arg("-c").arg("stty rows 30 cols 120 </dev/tty && exec \"$0\" \"$@\"").arg(common::tool_path("jackin-restore"));
    cmd.arg("--home").arg(&home.home).arg("--config-dir").arg(&home.config).arg("--format=json");
    cmd.env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR").env("TERM", "xterm-256color");
    cmd.stdout(fs::File::create(&output).unwrap());
    (rexpect::session::spawn_command(cmd, Some(30_000)).unwrap(), output)
}

fn exit_code(mut pty: rexpect::session::PtySession) -> (i32, String) {
    let rest = pty.exp_eof().unwrap();
    match pty.process.wait().unwrap() {
        rexpect::process::WaitStatus::Exited(_, code) => (code, rest),
        other => panic!("jackin-restore ended with {other:?}"),
    }
}

#[test]
fn the_picker_resumes_the_chosen_session_and_refuses_one_not_ready() {
    if !engine_available("picker") {
        return;
    }
    let mut home = Home::new();
    let [newest, second, gone] = ["p1ckaaaa", "p1ckbbbb", "p1ckcccc"].map(|id| home.instance(id, |_, _| Vec::new()));
    let mut sessions = Vec::new();
    for (inst, at) in
        [(&newest, "2026-11-29T12:00:00Z"), (&second, "2026-11-29T11:00:00Z"), (&gone, "2026-11-29T10:00:00Z")]
    {
        with_agent_toml(&home, inst);
        // Shaped like jackin's role image: the attach command reaches its capsule script.
        let image = real_role_image(&inst.id);
        sessions.push(Session::launch(
            &inst.container,
            SessionOptions { dind: false, image: Some(&image), ..Default::default() },
        ));
        docker(&["stop", "-t", "0", &inst.container]);
        // Kept by these tools (a keep says so in the continuity file): stopped on purpose, so
        // reconciliation leaves it kept rather than calling it interrupted.
        let name = InstanceName::parse(&inst.container).unwrap();
        store(&home).set_status(&name, Status::RestoreAvailable, at).unwrap();
        jackin::state::continuity::update(&store(&home), &name, |c| {
            c.cause = Some("kept".into());
            Ok(((), true))
        })
        .unwrap();
    }
    // Gone with no launch recipe: listed, not ready.
    drop(sessions.pop());
    let listed = home.cmd("jackin-restore").args(["--list", "--format=json"]).output().unwrap();
    let listed = records::<Candidate>(&listed.stdout);
    let names: Vec<&str> = listed.iter().map(|c| c.identity.container_base.as_str()).collect();
    assert_eq!(names, [&newest.container, &second.container, &gone.container]);

    // `q` leaves; choosing the one that is not ready says why and does nothing.
    let before = home.snapshot();
    let (mut pty, output) = restore_on_screen(&home);
    pty.exp_string("Pick").unwrap();
    pty.exp_string("p1ckcccc").unwrap();
    pty.send("3").unwrap();
    pty.send("\r").unwrap();
    pty.flush().unwrap();
    pty.exp_string("recipe").unwrap();
    pty.send("q").unwrap();
    pty.flush().unwrap();
    let (code, shown) = exit_code(pty);
    assert_eq!(code, 0, "{shown}");
    assert!(fs::read(&output).unwrap().is_empty(), "nothing resumed, nothing listed");
    assert_eq!(home.snapshot(), before, "q changes nothing");
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &second.container]), "false");
    let (mut pty, output) = restore_on_screen(&home);
    pty.exp_string("p1ckcccc").unwrap();
    pty.send_control('c').unwrap();
    let (code, shown) = exit_code(pty);
    assert_eq!(code, 130, "{shown}");
    assert!(fs::read(&output).unwrap().is_empty());
    assert_eq!(home.snapshot(), before, "Ctrl-C changes nothing");

    // Down and Enter: the second, acknowledged, resumed, then its attach command runs.
    let (mut pty, output) = restore_on_screen(&home);
    pty.exp_string("p1ckcccc").unwrap();
    pty.send("\x1b[B").unwrap();
    pty.send("\r").unwrap();
    pty.flush().unwrap();
    pty.exp_string("Press Enter to resume it").unwrap();
    pty.send("\r").unwrap();
    pty.flush().unwrap();
    let (code, shown) = exit_code(pty);
    assert_eq!(code, 0, "{shown}");
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &second.container]), "true");
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &newest.container]), "false");
    let resumed = restored(&fs::read(&output).unwrap());
    assert_eq!((resumed.identity.container_base.as_str(), resumed.tier), (second.container.as_str(), Some(1)));
    assert_eq!(resumed.attach[..3], ["docker", "exec", "-it"]);
    // The attach command ran on the operator's terminal and reached the agent's capsule.
    assert!(shown.contains("capsule reached as 1000:1000"), "{shown}");
}

/// A session launched the way jackin launches one (real-host.md, "jackin's own launch
/// environment"): its own variables by `-e` and by an `--env-file` it deletes after the launch, a
/// credential among them, a sidecar on an internal network. A resume from a shell that holds only
/// the credential asks for nothing else, and the new container has every variable of the launch
/// with its launch value.
#[test]
fn a_session_launched_with_jackins_environment_needs_only_its_credential() {
    if !engine_available("jackins_environment") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("jkenv000", |_, _| Vec::new());
    with_agent_toml(&home, &inst);
    let image = role_image("jkenv000");
    let c = inst.container.clone();
    let sidecar = format!("{c}-dind");
    let env_file = home.tmp.path().join("jackin-launch.env");
    fs::write(
        &env_file,
        format!(
            "JACKIN=1\nJACKIN_CONTAINER_NAME={c}\nJACKIN_INSTANCE_ID=jkenv000\nJACKIN_AGENT=claude\n\
             JACKIN_ROLE=agent-smith\nJACKIN_WORKDIR=/workspace/my-app\nJACKIN_DIND_HOSTNAME={sidecar}\n\
             TESTCONTAINERS_HOST_OVERRIDE={sidecar}\nDOCKER_HOST=tcp://{sidecar}:2376\n\
             DOCKER_CERT_PATH=/certs/client\nDOCKER_TLS_VERIFY=1\nGIT_AUTHOR_NAME=Operator Name\n\
             GIT_AUTHOR_EMAIL=op@example.invalid\nMISE_TRUSTED_CONFIG_PATHS=/workspace/my-app\n\
             ANTHROPIC_API_KEY=sk-ant-launch-secret-77\n"
        ),
    )
    .unwrap();
    let env_file_arg = env_file.to_str().unwrap().to_owned();
    let _session = Session::launch(
        &c,
        SessionOptions {
            image: Some(&image),
            internal_network: true,
            env: vec![("TERM", "xterm-256color"), ("JACKIN_DEBUG", "0")],
            role_args: vec!["--env-file", &env_file_arg],
            ..Default::default()
        },
    );
    fs::remove_file(&env_file).unwrap();
    let launched_env = |container: &str| -> Vec<String> {
        let mut env: Vec<String> =
            serde_json::from_str(&docker(&["inspect", "-f", "{{json .Config.Env}}", container])).unwrap();
        env.sort();
        env
    };
    let launched = launched_env(&c);
    assert!(launched.iter().any(|e| e == "ANTHROPIC_API_KEY=sk-ant-launch-secret-77"), "{launched:?}");

    set_manifest(&home, &inst, |m| {
        m["docker"]["dind_container"] = Value::from(sidecar.clone());
        m["docker"]["certs_volume"] = Value::from(format!("{c}-dind-certs"));
    });
    // Kept as an operator keeps a detached session: the recipe captured, then torn down.
    let kept =
        home.cmd("jackin-keep").args(["--keep", "--stop"]).write_stdin(home.assess_lines(&[&c])).output().unwrap();
    assert_eq!(kept.status.code(), Some(0), "{}", common::stderr(&kept));
    assert!(docker_quiet(&["inspect", &c]).is_none() && docker_quiet(&["inspect", &sidecar]).is_none());
    let recipe = home.continuity(&inst.container).recipe.expect("a recipe");
    let source = |name: &str| -> String {
        let env = recipe["role"]["env"].as_array().unwrap();
        let binding = env.iter().find(|b| b["name"] == name).unwrap_or_else(|| panic!("{name}: {recipe}"));
        binding["source"].as_str().unwrap().to_owned()
    };
    assert_eq!(source("ANTHROPIC_API_KEY"), "env:ANTHROPIC_API_KEY", "a credential keeps its name only");
    for name in
        ["JACKIN", "JACKIN_DEBUG", "TESTCONTAINERS_HOST_OVERRIDE", "GIT_AUTHOR_NAME", "MISE_TRUSTED_CONFIG_PATHS"]
    {
        assert_eq!(source(name), "literal", "{name} is jackin's, not a secret");
    }
    no_file_holds(&home, "sk-ant-launch-secret-77");

    // A shell that holds only the credential: --plan is ready, the resume asks for nothing else.
    let only_the_credential = |args: &[&str], credential: Option<&str>| {
        let mut cmd = home.cmd("jackin-restore");
        cmd.env_clear().env("PATH", std::env::var("PATH").unwrap()).args(args).arg("--format=json");
        // The engine is the one thing of the environment it still needs (rootless: DOCKER_HOST).
        cmd.envs(common::docker::engine_env());
        if let Some(value) = credential {
            cmd.env("ANTHROPIC_API_KEY", value);
        }
        cmd.output().unwrap()
    };
    let without = only_the_credential(&[&c, "--plan"], None);
    let planned = restored(&without.stdout);
    assert_eq!(planned.missing, ["needs ANTHROPIC_API_KEY (from $ANTHROPIC_API_KEY)"], "named with its source");
    let plan = only_the_credential(&[&c, "--plan"], Some("sk-ant-launch-secret-77"));
    assert!(restored(&plan.stdout).missing.is_empty(), "{}", String::from_utf8_lossy(&plan.stdout));
    let out = only_the_credential(&[&c, "--yes"], Some("sk-ant-launch-secret-77"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(restored(&out.stdout).tier, Some(2));
    assert_eq!(launched_env(&c), launched, "every variable of the launch, with its launch value");
    assert_eq!(docker(&["network", "inspect", "-f", "{{.Internal}}", &format!("{c}-net")]), "true");
    no_file_holds(&home, "sk-ant-launch-secret-77");
}

/// A container's `docker inspect` object at `path` (`HostConfig`, `Config`, …), as JSON.
fn inspected(container: &str, path: &str) -> Value {
    serde_json::from_str(&docker(&["inspect", "-f", &format!("{{{{json .{path}}}}}"), container])).unwrap()
}

/// The network each network of a container is attached to, by ID.
fn network_ids(container: &str) -> Vec<String> {
    let format = "{{range $name, $endpoint := .NetworkSettings.Networks}}{{$name}}={{$endpoint.NetworkID}} {{end}}";
    docker(&["inspect", "-f", format, container]).split_whitespace().map(str::to_owned).collect()
}

fn wait_for_health(container: &str) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let status = docker(&["inspect", "-f", "{{if .State.Health}}{{.State.Health.Status}}{{end}}", container]);
        if status == "healthy" || std::time::Instant::now() > deadline {
            return status;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// Tier 1 after a prune: the stopped role container is there, its sidecar was removed, and
/// jackin's garbage collection took the network and the certs volume too. The plan says the
/// sidecar will be recreated, and the resume brings it back from the launch recipe, healthy in
/// the engine's own eyes, before the role container starts on the same network.
#[test]
fn tier_1_recreates_a_removed_sidecar_from_the_recipe_before_the_role_container_starts() {
    if !engine_available("tier_1_sidecar_removed") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("s1dgone0", |_, _| Vec::new());
    with_agent_toml(&home, &inst);
    let image = real_role_image("s1dgone0");
    let c = inst.container.clone();
    let (sidecar, net, volume) = (format!("{c}-dind"), format!("{c}-net"), format!("{c}-dind-certs"));
    let _session = Session::launch(
        &c,
        SessionOptions {
            image: Some(&image),
            sidecar_image: Some(TEST_REAL_DIND_IMAGE),
            internal_network: true,
            role_args: vec!["--user", "1000:1000", "--group-add", "0", "--cap-drop", "NET_RAW"],
            sidecar_args: vec!["--memory", "96m", "--pids-limit", "200", "--ulimit", "nofile=1024:2048"],
            ..Default::default()
        },
    );
    capture_and_keep(&home, &inst, true);
    let recipe = home.continuity(&inst.container).recipe.expect("a recipe")["sidecar"].clone();
    let launched_health = inspected(&sidecar, "Config.Healthcheck");
    docker(&["stop", "-t", "0", &c, &sidecar]);
    docker(&["rm", "-v", &sidecar]);
    docker(&["network", "rm", &net]);
    docker(&["volume", "rm", &volume]);

    let plan = restore_without_image_env(&home, &[&c, "--plan"], &[]);
    assert!(plan.status.success(), "{}", String::from_utf8_lossy(&plan.stderr));
    let planned = restored(&plan.stdout);
    assert_eq!(planned.tier, Some(1));
    let recreate = format!("recreate {sidecar} from the launch recipe (it was removed) and wait until it is healthy");
    let steps = [
        "rewrite agent.toml from the launch recipe".to_owned(),
        format!("create network {net} (internal)"),
        format!("create volume {volume}"),
        format!("connect {c} to network {net} again"),
        recreate,
        format!("start {c}"),
    ];
    assert_eq!(planned.actions, steps, "{planned:?}");
    assert!(planned.drift.iter().any(|d| d.starts_with(&format!("sidecar {sidecar} was removed"))), "{planned:?}");
    assert!(docker_quiet(&["inspect", &sidecar]).is_none(), "--plan creates nothing");

    let out = restore_without_image_env(&home, &[&c, "--yes"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(1));
    assert_eq!(rec.actions, steps, "the run does what the plan said");
    assert!(rec.drift.iter().any(|d| d.starts_with(&format!("sidecar {sidecar} was removed"))), "{rec:?}");

    // The sidecar, as the recipe has it: running, healthy by its own healthcheck, with its image,
    // command, labels, alias, certs volume and limits.
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &sidecar]), "true");
    assert_eq!(wait_for_health(&sidecar), "healthy");
    assert_eq!(inspected(&sidecar, "Config.Healthcheck"), launched_health);
    assert_eq!(docker(&["inspect", "-f", "{{.Image}}", &sidecar]), recipe["image_id"].as_str().unwrap());
    assert_eq!(inspected(&sidecar, "Config.Cmd"), recipe["cmd"]);
    let labels = inspected(&sidecar, "Config.Labels");
    for (key, value) in recipe["labels"].as_object().unwrap() {
        assert_eq!(&labels[key], value, "label {key}");
    }
    let alias_format = format!("{{{{json (index .NetworkSettings.Networks \"{net}\").Aliases}}}}");
    let aliases: Vec<String> = serde_json::from_str(&docker(&["inspect", "-f", &alias_format, &sidecar])).unwrap();
    assert!(aliases.iter().any(|a| a == "dind"), "{aliases:?}");
    let certs = docker(&[
        "inspect",
        "-f",
        "{{range .Mounts}}{{if eq .Destination \"/certs\"}}{{.Name}}{{end}}{{end}}",
        &sidecar,
    ]);
    assert_eq!(certs, volume);
    let recorded = recipe["host_config"].as_object().expect("the recipe records the sidecar's HostConfig");
    let host = inspected(&sidecar, "HostConfig");
    for field in ["Memory", "PidsLimit", "Ulimits"] {
        assert!(recorded.contains_key(field), "{field} recorded: {recorded:?}");
    }
    for (field, value) in recorded {
        assert_eq!(&host[field], value, "HostConfig.{field} of the recreated sidecar");
    }

    // The role container: running, on the sidecar's network (the one created again, internal).
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &c]), "true");
    let network = docker(&["network", "inspect", "-f", "{{.Id}}", &net]);
    assert_eq!(network_ids(&c), [format!("{net}={network}")]);
    assert_eq!(network_ids(&sidecar), [format!("{net}={network}")]);
    assert_eq!(docker(&["network", "inspect", "-f", "{{.Internal}}", &net]), "true", "no route out");
    assert_eq!(status_of(&home, &inst), ("active".into(), "active".into()));
    docker(&["rm", "-f", &c]);
    docker(&["rmi", &image]);
}

/// Where a restored container's `HostConfig` differs from the launched one's, a line per field.
/// `Binds` and `Mounts` are how the launch and the restore wrote the mounts (`-v` against the
/// API's mounts), compared as mounts instead; an empty list, an empty map and `null` all mean
/// nothing was set.
fn host_config_differences(what: &str, launched: &Value, restored: &Value) -> Vec<String> {
    let nothing = |v: &Value| match v {
        Value::Null => Value::Null,
        Value::Array(a) if a.is_empty() => Value::Null,
        Value::Object(o) if o.is_empty() => Value::Null,
        other => other.clone(),
    };
    let (launched, restored) = (launched.as_object().unwrap(), restored.as_object().unwrap());
    let mut fields: Vec<&String> = launched.keys().chain(restored.keys()).collect();
    fields.sort();
    fields.dedup();
    fields
        .into_iter()
        .filter(|field| !["Binds", "Mounts"].contains(&field.as_str()))
        .filter_map(|field| {
            let (before, after) =
                (launched.get(field).unwrap_or(&Value::Null), restored.get(field).unwrap_or(&Value::Null));
            (nothing(before) != nothing(after))
                .then(|| format!("{what} HostConfig.{field}: launched {before}, restored {after}"))
        })
        .collect()
}

/// The mounts of a container as (type, destination, read-write), sorted.
fn mount_shapes(container: &str) -> Vec<String> {
    let format = "{{range .Mounts}}{{.Type}}:{{.Destination}}:{{.RW}} {{end}}";
    let mut shapes: Vec<String> =
        docker(&["inspect", "-f", format, container]).split_whitespace().map(str::to_owned).collect();
    shapes.sort();
    shapes
}

/// The run shape as launched: the whole `HostConfig`, how the engine stops the container, its
/// healthcheck and its mounts.
struct Launched {
    host: Value,
    stop: (Value, Value),
    health: Value,
    mounts: Vec<String>,
}

impl Launched {
    fn of(container: &str) -> Launched {
        Launched {
            host: inspected(container, "HostConfig"),
            stop: (inspected(container, "Config.StopSignal"), inspected(container, "Config.StopTimeout")),
            health: inspected(container, "Config.Healthcheck"),
            mounts: mount_shapes(container),
        }
    }

    fn differences(&self, what: &str, container: &str) -> Vec<String> {
        let now = Launched::of(container);
        let mut differences = host_config_differences(what, &self.host, &now.host);
        let config = [("StopSignal", &self.stop.0, &now.stop.0), ("StopTimeout", &self.stop.1, &now.stop.1)];
        for (field, before, after) in config.into_iter().chain([("Healthcheck", &self.health, &now.health)]) {
            if before != after {
                differences.push(format!("{what} Config.{field}: launched {before}, restored {after}"));
            }
        }
        if self.mounts != now.mounts {
            differences.push(format!("{what} mounts: launched {:?}, restored {:?}", self.mounts, now.mounts));
        }
        differences
    }
}

/// Every limit the launch set comes back at tiers 2 and 3: the whole `HostConfig` of the role
/// container and of its sidecar, compared field by field with the launched one, and how the
/// engine stops each.
#[test]
fn tiers_2_and_3_recreate_every_limit_the_launch_set() {
    if !engine_available("limits_replayed") {
        return;
    }
    build_real_images();
    let mut home = Home::new();
    let id = "l1m1ts00";
    let inst = home.instance(id, |_, _| Vec::new());
    with_agent_toml(&home, &inst);
    let c = inst.container.clone();
    let sidecar = format!("{c}-dind");
    let image = format!("jackin-test-role-{id}:latest");
    let (_, bare, sha) = common::role_source(&home, "role-src", Some(&image));
    set_manifest(&home, &inst, |m| {
        m["role_source_git"] = Value::from(bare.to_str().unwrap());
        m["role_git_sha"] = Value::from(sha.clone());
        m["image_tag"] = Value::from(image.clone());
    });
    let role_limits = vec![
        "--ulimit",
        "nofile=1024:2048",
        "--ulimit",
        "nproc=512:1024",
        "--cpu-shares",
        "512",
        "--cpuset-cpus",
        "0",
        "--cpus",
        "1",
        "--memory-swap",
        "256m",
        "--memory-reservation",
        "32m",
        "--shm-size",
        "32m",
        "--init",
        "--stop-signal",
        "SIGUSR1",
        "--stop-timeout",
        "7",
        "--tmpfs",
        "/scratch:size=1m",
        "--read-only",
        "--security-opt",
        "no-new-privileges",
        "--device",
        "/dev/null:/dev/jackin-null",
        "--restart",
        "on-failure:3",
        "--pids-limit",
        "300",
        "--oom-score-adj",
        "100",
        "--dns-option",
        "ndots:2",
        "--cap-drop",
        "NET_RAW",
    ];
    // Not `--privileged` as jackin's DinD is: the engine these tests run on may not grant it.
    let sidecar_limits = vec![
        "--cap-add",
        "SYS_PTRACE",
        "--ulimit",
        "nofile=4096:8192",
        "--cpu-shares",
        "256",
        "--memory",
        "128m",
        "--memory-swap",
        "-1",
        "--shm-size",
        "16m",
        "--stop-signal",
        "SIGINT",
        "--stop-timeout",
        "11",
    ];
    let _session = Session::launch(
        &c,
        SessionOptions {
            image: Some(&image),
            sidecar_image: Some(TEST_REAL_DIND_IMAGE),
            internal_network: true,
            role_args: role_limits,
            sidecar_args: sidecar_limits,
            ..Default::default()
        },
    );
    let (role, dind) = (Launched::of(&c), Launched::of(&sidecar));
    assert_eq!(role.stop, (Value::from("SIGUSR1"), Value::from(7)), "launched as asked");
    capture_and_keep(&home, &inst, true);
    let recipe = home.continuity(&inst.container).recipe.expect("a recipe");
    assert_eq!(recipe["format"], 3);
    let recorded = recipe["role"]["host_config"].as_object().unwrap();
    for field in ["Ulimits", "CpuShares", "CpusetCpus", "MemorySwap", "ShmSize", "Init", "RestartPolicy", "Devices"] {
        assert!(recorded.contains_key(field), "the recipe records {field}: {recorded:?}");
    }
    for field in ["ContainerIDFile", "Links", "NetworkMode", "MaskedPaths", "LogConfig", "Runtime", "Binds"] {
        assert!(!recorded.contains_key(field), "{field} is the container's own or the engine's: {recorded:?}");
    }

    let resume = |tier: u8| {
        store(&home)
            .set_status(&InstanceName::parse(&c).unwrap(), Status::RestoreAvailable, "2026-11-29T10:00:00Z")
            .unwrap();
        let out = restore_without_image_env(&home, &[&c, "--yes"], &[]);
        assert!(out.status.success(), "tier {tier}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(restored(&out.stdout).tier, Some(tier));
        let mut differences = role.differences(&format!("tier {tier}: the role container's"), &c);
        differences.extend(dind.differences(&format!("tier {tier}: the sidecar's"), &sidecar));
        assert!(differences.is_empty(), "{}", differences.join("\n"));
    };
    remove_docker_side(&inst);
    resume(2);
    remove_docker_side(&inst);
    docker(&["rmi", "-f", &image]);
    resume(3);
    assert_eq!(docker(&["exec", &c, "cat", "/marker"]), "launched");
    docker(&["rm", "-f", &c]);
    docker(&["rmi", "-f", &image]);
}

/// A sidecar removed when no launch recipe can bring it back (none was captured, or the one
/// captured after it was gone does not hold it): the plan says the session would come back
/// without Docker-in-Docker, and the resume starts nothing.
#[test]
fn a_removed_sidecar_no_recipe_holds_stops_the_resume_at_tiers_1_and_2() {
    if !engine_available("sidecar_not_recreatable") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("s1dn0rec", |_, _| Vec::new());
    with_agent_toml(&home, &inst);
    let c = inst.container.clone();
    let sidecar = format!("{c}-dind");
    let _session = Session::launch(&c, SessionOptions::default());
    set_manifest(&home, &inst, |m| m["docker"]["dind_container"] = Value::from(sidecar.clone()));
    docker(&["stop", "-t", "0", &c, &sidecar]);
    docker(&["rm", "-v", &sidecar]);
    store(&home)
        .set_status(&InstanceName::parse(&c).unwrap(), Status::RestoreAvailable, "2026-11-29T10:00:00Z")
        .unwrap();

    let refused = |tier: u8, words: &str| {
        let plan = restore(&home, &[&c, "--plan"]);
        assert_eq!(plan.status.code(), Some(6), "{}", String::from_utf8_lossy(&plan.stderr));
        let planned = restored(&plan.stdout);
        assert_eq!(planned.tier, Some(tier));
        let expected = format!("sidecar {sidecar} {words}");
        assert!(
            planned.missing.iter().any(|m| m.starts_with(&expected) && m.ends_with("without Docker-in-Docker")),
            "{planned:?}"
        );
        let out = restore(&home, &[&c, "--yes"]);
        assert_eq!(out.status.code(), Some(6), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(docker_quiet(&["inspect", &sidecar]).is_none(), "no sidecar made up");
        assert_ne!(
            docker_quiet(&["inspect", "-f", "{{.State.Running}}", &c]).as_deref(),
            Some("true"),
            "nothing started"
        );
    };
    refused(1, "is gone and no launch recipe holds it");
    // Captured now, with the sidecar already gone: the recipe holds the role container alone.
    capture_and_keep(&home, &inst, true);
    let recipe = home.continuity(&inst.container).recipe.expect("a recipe");
    assert!(recipe["sidecar"].is_null(), "{recipe}");
    refused(1, "is gone and no launch recipe holds it");
    docker(&["rm", "-f", &c]);
    refused(2, "is not in the launch recipe");
}

/// A session kept to resume with its containers and network removed (tier 2), no mounts, its
/// recipe captured from a launch with `env`.
fn kept_at_tier_2(home: &mut Home, id: &str, env: Vec<(&'static str, &'static str)>) -> (Instance, Session) {
    let inst = home.instance(id, |_, _| Vec::new());
    with_agent_toml(home, &inst);
    let image = role_image(id);
    let session = Session::launch(
        &inst.container,
        SessionOptions { dind: false, image: Some(&image), env, ..Default::default() },
    );
    capture_and_keep(home, &inst, false);
    docker(&["rm", "-f", &inst.container]);
    docker(&["network", "rm", &format!("{}-net", inst.container)]);
    (inst, session)
}

/// jackin-restore with no controlling terminal and nothing on stdin, JSON out.
fn restore_detached(home: &Home, args: &[&str]) -> std::process::Output {
    home.detached("jackin-restore").args(args).arg("--format=json").stdin(std::process::Stdio::null()).output().unwrap()
}

/// A purge caught after its re-assessment holds the session's claim: a resume (and its plan) is
/// refused with exit 5 naming the purge, and recreates nothing; the resume list says it is not
/// ready and who is at work on it; the purge then finishes.
#[test]
fn a_restore_refuses_a_session_a_purge_is_at_work_on_and_changes_nothing() {
    if !engine_available("restore_refuses_while_purging") {
        return;
    }
    let mut home = Home::new();
    let (inst, _session) = kept_at_tier_2(&mut home, "c1a1m0p5", Vec::new());
    let c = inst.container.as_str();
    let mut purge = home.detached("jackin-purge");
    purge.args([c, "--format=json"]).stdin(std::process::Stdio::null());
    let paused = Paused::start(purge, Tool::Purge, "quarantined", home.tmp.path().join("purge.paused"));
    let holder = format!("jackin-purge (pid {})", paused.pid);
    let before = home.snapshot();
    for args in [&[c, "--yes"][..], &[c, "--plan"]] {
        let out = restore_detached(&home, args);
        assert_eq!(out.status.code(), Some(5), "{args:?}: {}", common::stderr(&out));
        let holder = common::holder_as_said(&holder);
        assert!(common::stderr(&out).contains(&holder), "{args:?} names the purge: {}", common::stderr(&out));
        let recs = envelopes(&out.stdout);
        assert_eq!(recs.len(), 1, "only the refusal: {}", String::from_utf8_lossy(&out.stdout));
        let error = recs[0].data::<ErrorRecord>();
        assert_eq!((error.code.as_str(), error.container_base.as_deref()), ("busy", Some(c)));
        assert!(error.message.contains(&holder), "{error:?}");
    }
    let listed = restore_detached(&home, &["--list"]);
    assert!(listed.status.success(), "{}", common::stderr(&listed));
    let candidates = records::<Candidate>(&listed.stdout);
    let busy = candidates.iter().find(|r| r.identity.container_base == c).expect("the session is listed");
    // Where the system does not name a lock's holder (a Mac, the portable build), it is not
    // known to be one of the tools: the session is said to be live instead (exit 5 either way).
    let says = match jackin::base::os::NAMES_LOCK_HOLDERS {
        true => format!("busy: {holder} is at work on it"),
        false => "the session is live: another process holds its lock".to_owned(),
    };
    assert!(!busy.ready && busy.missing == [says.clone()], "{busy:?}");
    assert!(busy.label.ends_with(&format!("cannot resume: {says}")), "{busy:?}");
    assert_eq!(home.snapshot(), before, "nothing of the session changed");
    assert!(docker_quiet(&["inspect", c]).is_none(), "nothing was recreated");
    assert!(docker_quiet(&["network", "inspect", &format!("{c}-net")]).is_none());
    let purged = paused.finish();
    assert_eq!(purged.status.code(), Some(0), "{}", common::stderr(&purged));
    assert!(!inst.dir.exists() && home.index_row(c).is_none(), "the purge finished the job");
}

/// A resume caught after it recreated the network holds the session's claim: a purge is
/// refused with exit 5 naming the restore and deletes nothing; the resume then finishes.
#[test]
fn a_purge_refuses_a_session_a_restore_is_recreating_and_the_restore_finishes() {
    if !engine_available("purge_refuses_while_restoring") {
        return;
    }
    let mut home = Home::new();
    let (inst, _session) = kept_at_tier_2(&mut home, "c1a1m0r5", Vec::new());
    let c = inst.container.as_str();
    let mut restore = home.detached("jackin-restore");
    restore.args([c, "--yes", "--format=json"]).stdin(std::process::Stdio::null());
    let paused = Paused::start(restore, Tool::Restore, "resources", home.tmp.path().join("restore.paused"));
    let holder = format!("jackin-restore (pid {})", paused.pid);
    let before = home.snapshot();
    for args in [&[c][..], &[c, "--stop", "--discard-unfinished"], &[c, "--dry-run"]] {
        let out = home.purge(args, "");
        assert_eq!(out.status.code(), Some(5), "{args:?}: {}", common::stderr(&out));
        let holder = common::holder_as_said(&holder);
        assert!(common::stderr(&out).contains(&holder), "{args:?} names the restore: {}", common::stderr(&out));
        let error = &records::<ErrorRecord>(&out.stdout)[0];
        assert_eq!(error.code, "busy");
        assert!(error.message.contains(&holder), "{error:?}");
    }
    assert_eq!(home.snapshot(), before, "nothing of the session was deleted");
    assert!(docker_quiet(&["network", "inspect", &format!("{c}-net")]).is_some(), "the restore's network stays");
    let out = paused.finish();
    assert_eq!(out.status.code(), Some(0), "{}", common::stderr(&out));
    assert_eq!(restored(&out.stdout).tier, Some(2));
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", c]), "true");
    assert_eq!(status_of(&home, &inst), ("active".into(), "active".into()));
    assert!(!home.home.join("data").join(format!("{c}.lock")).exists(), "the claim's lock file went with it");
}

/// Readiness comes before the acknowledgement: a session that needs a variable this shell does
/// not have is refused as not ready (exit 6, naming it) without a terminal and without --yes,
/// not asked about its preserved work first.
#[test]
fn a_session_that_cannot_be_resumed_is_refused_before_its_work_is_acknowledged() {
    if !engine_available("readiness_before_acknowledgement") {
        return;
    }
    let mut home = Home::new();
    let (inst, _session) = kept_at_tier_2(&mut home, "rdy0ack5", vec![("ACK_SECRET", "s3cret-ack")]);
    let c = inst.container.as_str();
    let before = home.snapshot();
    let out = home
        .detached("jackin-restore")
        .args([c, "--format=json"])
        .env_remove("ACK_SECRET")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let err = common::stderr(&out);
    assert_eq!(out.status.code(), Some(6), "{err}");
    assert!(err.contains("needs ACK_SECRET"), "{err}");
    assert!(!err.contains("no terminal"), "not asked to acknowledge first: {err}");
    let error = &records::<ErrorRecord>(&out.stdout)[0];
    assert_eq!(error.code, "not_ready");
    assert_eq!(home.snapshot(), before);
    assert!(docker_quiet(&["inspect", c]).is_none());
    // Ready, and still without a terminal: now the acknowledgement is what is missing.
    let out = home
        .detached("jackin-restore")
        .args([c])
        .env("ACK_SECRET", "s3cret-ack")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", common::stderr(&out));
    assert!(common::stderr(&out).contains("no terminal to show the preserved work on"));
}

/// Issue 54: a session kept by `jackin-assess C | jackin-keep --policy keep` on the exit hook's
/// path (its role container exited, the sidecar still up, no `--stop`) holds the recipe of both,
/// and its history says so; keep then frees Docker, so the resume is tier 2, and it brings the
/// sidecar back from that recipe, running and healthy, before the role container starts.
#[test]
fn a_session_kept_by_jackin_keep_gets_its_sidecar_back_from_the_recipe_keep_captured() {
    if !engine_available("kept_by_keep_sidecar_back") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance("k1dback0", |_, _| Vec::new());
    with_agent_toml(&home, &inst);
    let image = real_role_image("k1dback0");
    let c = inst.container.clone();
    let sidecar = format!("{c}-dind");
    set_manifest(&home, &inst, |m| {
        m["docker"]["dind_container"] = Value::from(sidecar.clone());
        m["docker"]["certs_volume"] = Value::from(format!("{c}-dind-certs"));
    });
    let _session = Session::launch(
        &c,
        SessionOptions { image: Some(&image), sidecar_image: Some(TEST_REAL_DIND_IMAGE), ..Default::default() },
    );
    docker(&["stop", "-t", "0", &c]);
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &sidecar]), "true", "the sidecar runs on");

    let mut keep = home.detached("jackin-keep");
    keep.args(["--policy=keep", "--format=json"]).stdin(std::process::Stdio::piped());
    keep.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped());
    let mut child = keep.spawn().unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), home.assess_lines(&[&c]).as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let continuity = home.continuity(&c);
    let recipe = continuity.recipe.expect("keep captured the launch recipe");
    assert_eq!(recipe["sidecar"]["name"], sidecar.as_str(), "with its sidecar");
    let kept = continuity.history.last().expect("a history entry");
    let common::records::Evidence::Kept(evidence) = &kept.evidence else { panic!("{kept:?}") };
    let held = evidence.recipe.as_ref().expect("the entry names the recipe it keeps");
    assert_eq!((held.captured_by.as_str(), held.sidecar), ("jackin-keep", true), "{held:?}");
    assert_eq!(held.captured_at, recipe["captured_at"].as_str().unwrap());
    assert!(docker_quiet(&["inspect", &sidecar]).is_none(), "keep freed Docker");

    let out = restore_without_image_env(&home, &[&c, "--yes"], &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let rec = restored(&out.stdout);
    assert_eq!(rec.tier, Some(2), "{rec:?}");
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &sidecar]), "true", "the sidecar is back");
    assert_eq!(wait_for_health(&sidecar), "healthy");
    assert_eq!(docker(&["inspect", "-f", "{{.State.Running}}", &c]), "true");
}

/// A flag of a resume given without a session to resume is refused (exit 2), before the engine
/// is reached and with nothing changed; before, each was ignored and the list printed (exit 0).
/// Without a terminal there is no picker to give the session, and `--plan`/`--dry-run` list
/// even on one.
#[test]
fn a_resume_flag_without_a_session_is_refused_not_ignored() {
    let mut home = Home::new();
    let kept = home.instance("rf7aaaaa", |_, _| Vec::new());
    home.set_status(&kept.container, "restore_available", None);
    let before = home.snapshot();
    let named = kept.container.as_str();
    let cases: [(&[&str], &str); 10] = [
        // A filter picks among the sessions of a list or a sweep: beside a named one it would pick
        // nothing.
        (&[named, "--workspace", "other"], "cannot be used with"),
        (&[named, "--role", "other", "--plan"], "cannot be used with"),
        (&["--as-is"], "--as-is resumes a session"),
        (&["--exec"], "--exec resumes a session"),
        (&["--yes"], "--yes resumes a session"),
        (&["--list", "--exec"], "--exec does nothing beside --list: it counts with a session named"),
        (&["--health-timeout", "5"], "--health-timeout resumes a session"),
        (&["--list", "--since", "1h"], "--since does nothing beside --list: it counts with --interrupted"),
        (&["--plan"], "--plan plans a resume"),
        (&["--list", "--dry-run"], "--dry-run plans a resume"),
    ];
    for (args, says) in cases {
        let out = home
            .cmd("jackin-restore")
            .args(args)
            .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {said}");
        assert!(said.contains(says), "{args:?}: {said}");
        assert!(out.stdout.is_empty(), "{args:?}");
        assert_eq!(home.snapshot(), before, "{args:?}: nothing changed");
    }
}
