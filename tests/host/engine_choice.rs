//! Which Docker engine the tools reach: the one the docker CLI reaches in the same shell. Contexts
//! are made with `docker context create` in a config directory of the test's own, pointing at a
//! second engine of the test's own.

use crate::common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::docker::{docker_quiet, engine_available, engine_host, OwnEngine, DEFAULT_SOCKET, TEST_IMAGE};
use common::records::{records_of, Change};
use common::tls::Authority;
use common::{stderr, Home};

/// `docker …` with the test's config directory (its contexts), which must succeed.
fn docker_with(config: &Path, args: &[&str]) -> String {
    let out = Command::new("docker").env("DOCKER_CONFIG", config).args(args).output().expect("docker runs");
    assert!(out.status.success(), "docker {args:?}: {}", stderr(&out));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A role container of jackin's on the engine `host` that ran and exited with `code`.
fn exited_role(host: &str, name: &str, code: u8) {
    drop(docker_quiet(&["-H", host, "rm", "-f", name]));
    let script = format!("exit {code}");
    let mut args = vec!["-H", host, "create", "--name", name, "--network", "none"];
    args.extend(["--label", "jackin.managed=true", "--label", "jackin.kind=role", TEST_IMAGE, "sh", "-c", &script]);
    common::docker::docker(&args);
    common::docker::docker(&["-H", host, "start", name]);
    common::docker::docker(&["-H", host, "wait", name]);
}

/// The exit code reconcile saw on the role container of `container` (a dry run: nothing written).
/// Without a context, DOCKER_HOST or the flag, the engine is the default socket: the tests' main
/// engine when it listens there (exit code 7 seen), else (scripts/test-docker-host hides it) a
/// run that says it cannot reach `unix:///var/run/docker.sock`.
fn no_context_is_the_default_socket(home: &Home, container: &str, config_dir: &str) {
    if engine_host() == DEFAULT_SOCKET {
        assert_eq!(exit_code_seen(home, container, &[("DOCKER_CONFIG", config_dir)], &[]), 7, "no context");
        return;
    }
    let mut cmd = home.cmd("jackin-reconcile");
    cmd.args(["--format", "json", "--dry-run"]).env("DOCKER_CONFIG", config_dir).env_remove("DOCKER_HOST");
    let out = cmd.env_remove("DOCKER_CONTEXT").output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains(DEFAULT_SOCKET), "{}", stderr(&out));
}

fn exit_code_seen(home: &Home, container: &str, env: &[(&str, &str)], args: &[&str]) -> i64 {
    let mut cmd = home.cmd("jackin-reconcile");
    cmd.args(["--format", "json", "--dry-run"]).args(args);
    for name in ["DOCKER_HOST", "DOCKER_CONTEXT", "DOCKER_TLS_VERIFY", "DOCKER_CERT_PATH"] {
        cmd.env_remove(name);
    }
    for (name, value) in env {
        cmd.env(name, value);
    }
    let out = cmd.output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{env:?} {args:?}: {}", stderr(&out));
    let changes = records_of::<Change>(&out.stdout);
    let change = changes.iter().find(|c| c.identity.container_base == container).expect("the exited session changes");
    change.evidence.role().exit_code.unwrap()
}

#[test]
fn a_context_reaches_its_engine_and_not_the_default() {
    let test = "a_context_reaches_its_engine_and_not_the_default";
    if !engine_available(test) || !common::have_dockerd(test) {
        return;
    }
    let engine =
        OwnEngine::start_with_test_image(tempfile::Builder::new().prefix("jk-context-").tempdir().unwrap(), Vec::new());
    let host = engine.host();
    let mut home = Home::new();
    let inst = home.instance("cx7aaaaa", |_, _| Vec::new());
    // The same name on both engines, with different exit codes: the code seen says which engine.
    exited_role(&host, &inst.container, 4);
    exited_role(&engine_host(), &inst.container, 7);
    let _removed = RemovedOnDrop(inst.container.clone());
    let config = tempfile::tempdir().unwrap();
    let config_dir = config.path().to_str().unwrap();
    docker_with(config.path(), &["context", "create", "second", "--docker", &format!("host={host}")]);

    let by_env = [("DOCKER_CONFIG", config_dir), ("DOCKER_CONTEXT", "second")];
    assert_eq!(exit_code_seen(&home, &inst.container, &by_env, &[]), 4, "DOCKER_CONTEXT");
    no_context_is_the_default_socket(&home, &inst.container, config_dir);
    docker_with(config.path(), &["context", "use", "second"]);
    assert_eq!(exit_code_seen(&home, &inst.container, &[("DOCKER_CONFIG", config_dir)], &[]), 4, "context use");
    // DOCKER_HOST and the flag come before any context, as for the docker CLI.
    let main_engine = engine_host();
    let default_host = [("DOCKER_CONFIG", config_dir), ("DOCKER_HOST", main_engine.as_str())];
    assert_eq!(exit_code_seen(&home, &inst.container, &default_host, &[]), 7, "DOCKER_HOST");
    let flag = ["--docker-host", main_engine.as_str()];
    assert_eq!(exit_code_seen(&home, &inst.container, &by_env, &flag), 7, "--docker-host");
    let flag = ["--docker-host", host.as_str()];
    assert_eq!(exit_code_seen(&home, &inst.container, &[], &flag), 4, "--docker-host");

    // jackin-keep too: a session running on the context's engine only is live there (exit 5,
    // untouched), and not on the default engine (the `default` context).
    let live = home.instance("cx7ccccc", |_, _| Vec::new());
    let mut run = vec!["-H", host.as_str(), "run", "-d", "--name", &live.container, "--network", "none"];
    run.extend(["--label", "jackin.managed=true", "--label", "jackin.kind=role", TEST_IMAGE, "sleep", "3600"]);
    common::docker::docker(&run);
    let assessment = home.assess_lines(&[&live.container]);
    // The `default` context is the default socket: the tests' engine, unless DOCKER_HOST moved it
    // (scripts/test-docker-host), when it answers nothing (exit 4).
    let on_default = if engine_host() == DEFAULT_SOCKET { 0 } else { 4 };
    for (context, code) in [("second", 5), ("default", on_default)] {
        let out = home
            .cmd("jackin-keep")
            .args(["--policy=keep", "--dry-run", "--format=json"])
            .env("DOCKER_CONFIG", config_dir)
            .env("DOCKER_CONTEXT", context)
            .env_remove("DOCKER_HOST")
            .write_stdin(assessment.clone())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(code), "keep on {context}: {}", stderr(&out));
    }

    // Restore reaches the same engine: with the default engine's container gone, its plan still
    // starts the container that exists on the context's engine.
    drop(docker_quiet(&["rm", "-f", &inst.container]));
    let out = home
        .cmd("jackin-restore")
        .args(["--plan", "--format", "json", &inst.container])
        .env("DOCKER_CONFIG", config_dir)
        .env_remove("DOCKER_HOST")
        .env_remove("DOCKER_CONTEXT")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let start = format!("\"actions\":[\"start {}\"]", inst.container);
    assert!(stdout.contains(&start), "restore saw the context's engine: {stdout}");
    drop(engine);
}

/// A container of the default engine, removed when the test ends, passed or failed.
struct RemovedOnDrop(String);

impl Drop for RemovedOnDrop {
    fn drop(&mut self) {
        drop(docker_quiet(&["rm", "-f", &self.0]));
    }
}

/// Every Docker tool on a context that does not answer: exit 4 naming the context, nothing changed.
#[test]
fn a_context_that_does_not_answer_is_unavailable_and_an_unknown_one_is_a_usage_error() {
    let mut home = Home::new();
    let inst = home.instance("cx7bbbbb", |_, _| Vec::new());
    let config = tempfile::tempdir().unwrap();
    let dead = format!("unix://{}/docker.sock", config.path().display());
    docker_with(config.path(), &["context", "create", "gone", "--docker", &format!("host={dead}")]);
    let before = home.snapshot();
    let runs: [(&str, &[&str]); 4] =
        [("jackin-reconcile", &[]), ("jackin-reconcile", &["--watch"]), ("jackin-restore", &[]), ("jackin-purge", &[])];
    for (context, code, named) in [("gone", 4, "context \"gone\""), ("nowhere", 2, "\"nowhere\"")] {
        for (tool, args) in runs {
            let mut cmd = home.cmd(tool);
            cmd.args(args);
            if !args.contains(&"--watch") {
                cmd.arg(&inst.container);
            }
            let out = cmd
                .env("DOCKER_CONFIG", config.path())
                .env("DOCKER_CONTEXT", context)
                .env_remove("DOCKER_HOST")
                .timeout(std::time::Duration::from_secs(60))
                .output()
                .unwrap();
            let stderr = stderr(&out);
            assert_eq!(out.status.code(), Some(code), "{tool} {context}: {stderr}");
            assert!(stderr.contains(named), "{tool} {context}: {stderr}");
            assert_eq!(home.snapshot(), before, "{tool} {context}: nothing changed");
        }
    }
    // The context chosen by `docker context use` is checked the same way.
    std::fs::write(config.path().join("config.json"), r#"{"currentContext": "nowhere"}"#).unwrap();
    let out = home.cmd("jackin-reconcile").env("DOCKER_CONFIG", config.path()).env_remove("DOCKER_HOST").output();
    let out = out.unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("unknown Docker context \"nowhere\""));
}

/// A free port on the loopback interface, for an engine's TLS listener.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

#[test]
fn a_tls_engine_is_reached_with_the_clis_tls_settings_and_a_wrong_ca_is_refused() {
    let test = "a_tls_engine_is_reached_with_the_clis_tls_settings_and_a_wrong_ca_is_refused";
    if !engine_available(test) || !common::have_dockerd(test) {
        return;
    }
    let certs = tempfile::tempdir().unwrap();
    let authority = Authority::new("jackin test CA");
    authority.write_server(&certs.path().join("server"));
    authority.write_client(&certs.path().join("client"), &authority);
    let stranger = Authority::new("another CA");
    authority.write_client(&certs.path().join("wrong-ca"), &stranger);
    let server = certs.path().join("server");
    let tcp = format!("tcp://127.0.0.1:{}", free_port());
    let file = |name: &str| server.join(name).display().to_string();
    let tls_args = vec![
        "--tlsverify".to_owned(),
        format!("--tlscacert={}", file("ca.pem")),
        format!("--tlscert={}", file("server-cert.pem")),
        format!("--tlskey={}", file("server-key.pem")),
        format!("--host={tcp}"),
    ];
    let engine =
        OwnEngine::start_with_test_image(tempfile::Builder::new().prefix("jk-tls-").tempdir().unwrap(), tls_args);
    let mut home = Home::new();
    let inst = home.instance("tl7aaaaa", |_, _| Vec::new());
    exited_role(&engine.host(), &inst.container, 4);
    exited_role(&engine_host(), &inst.container, 7);
    let _removed = RemovedOnDrop(inst.container.clone());
    let config = tempfile::tempdir().unwrap();
    let config_dir = config.path().to_str().unwrap();
    let client = certs.path().join("client").display().to_string();
    let by_env = |cert_path: &str| {
        vec![
            ("DOCKER_CONFIG", config_dir.to_owned()),
            ("DOCKER_HOST", tcp.clone()),
            ("DOCKER_TLS_VERIFY", "1".to_owned()),
            ("DOCKER_CERT_PATH", cert_path.to_owned()),
        ]
    };
    let env = |pairs: &[(&'static str, String)]| pairs.iter().map(|(n, v)| (*n, v.clone())).collect::<Vec<_>>();
    let pairs = env(&by_env(&client));
    let borrowed: Vec<(&str, &str)> = pairs.iter().map(|(n, v)| (*n, v.as_str())).collect();
    assert_eq!(exit_code_seen(&home, &inst.container, &borrowed, &[]), 4, "DOCKER_TLS_VERIFY");

    let context_docker = format!("host={tcp},ca={client}/ca.pem,cert={client}/cert.pem,key={client}/key.pem");
    docker_with(config.path(), &["context", "create", "tls", "--docker", &context_docker]);
    let by_context = [("DOCKER_CONFIG", config_dir), ("DOCKER_CONTEXT", "tls")];
    assert_eq!(exit_code_seen(&home, &inst.container, &by_context, &[]), 4, "a context's TLS files");

    // Restore plans through the TLS engine (the default engine's container is gone).
    drop(docker_quiet(&["rm", "-f", &inst.container]));
    let out = home
        .cmd("jackin-restore")
        .args(["--plan", "--format", "json", &inst.container])
        .envs(borrowed.iter().copied())
        .output()
        .unwrap();
    let start = format!("\"actions\":[\"start {}\"]", inst.container);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&start), "{}", stderr(&out));
    // And reconcile writes through it.
    let out = home.cmd("jackin-reconcile").args(["--format", "json"]).envs(borrowed.iter().copied()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(home.status(&inst.container), ("crashed".into(), "crashed".into()));

    // A CA that did not sign the engine's certificate: exit 4 with the reason, nothing changed.
    let before = home.snapshot();
    let wrong = certs.path().join("wrong-ca").display().to_string();
    for tool in ["jackin-reconcile", "jackin-restore"] {
        let out = home.cmd(tool).arg(&inst.container).envs(env(&by_env(&wrong))).output().unwrap();
        let stderr = stderr(&out);
        assert_eq!(out.status.code(), Some(4), "{tool}: {stderr}");
        assert!(stderr.contains(&tcp) && stderr.contains("certificate"), "{tool}: {stderr}");
        assert_eq!(home.snapshot(), before, "{tool}: nothing changed");
    }
    // The TLS engine is reached through the docker CLI (`docker system dial-stdio`): without it on
    // PATH, or without one of its three files, exit 4 saying which, and nothing changed.
    let out = home.cmd("jackin-reconcile").envs(env(&by_env(&client))).env("PATH", "/nonexistent").output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("cannot run docker system dial-stdio"), "{}", stderr(&out));
    let keyless = certs.path().join("keyless");
    fs::create_dir(&keyless).unwrap();
    for name in ["ca.pem", "cert.pem"] {
        fs::copy(certs.path().join("client").join(name), keyless.join(name)).unwrap();
    }
    let out = home.cmd("jackin-reconcile").envs(env(&by_env(&keyless.display().to_string()))).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    assert!(stderr(&out).contains("key.pem"), "{}", stderr(&out));
    assert_eq!(home.snapshot(), before, "nothing changed");
    drop(engine);
}

/// An engine on another machine by ssh, with a port (`DOCKER_HOST=ssh://user@127.0.0.1:PORT`):
/// the tools reach the engine behind the test's own sshd on loopback (a second dockerd, whose
/// socket the sshd's sessions name, through the docker CLI's `dial-stdio` there), not the default
/// one, as `docker -H ssh://…` does. A key the server refuses is exit 4 with ssh's own reason.
#[test]
fn an_ssh_engine_with_a_port_is_reached_through_its_sshd() {
    let test = "an_ssh_engine_with_a_port_is_reached_through_its_sshd";
    if !engine_available(test) || !common::have_dockerd(test) || !common::ssh::sshd_available(test) {
        return;
    }
    let engine =
        OwnEngine::start_with_test_image(tempfile::Builder::new().prefix("jk-ssh-").tempdir().unwrap(), Vec::new());
    let host = engine.host();
    let mut home = Home::new();
    let sshd_dir = home.tmp.path().join("sshd");
    let server = common::ssh::SshServer::start_with(&sshd_dir, &format!("SetEnv DOCKER_HOST={host}\n"));
    let inst = home.instance("ssh4aaaa", |_, _| Vec::new());
    exited_role(&host, &inst.container, 4);
    exited_role(&engine_host(), &inst.container, 7);
    let _removed = RemovedOnDrop(inst.container.clone());

    let address = format!("ssh://{}@127.0.0.1:{}", server.user, server.port);
    // OpenSSH reads ~/.ssh from the user's passwd entry, not $HOME: an `ssh` first on PATH names
    // the test's known_hosts, then runs the real one with the tool's arguments.
    let bin = home.tmp.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let known_hosts = server.home.join(".ssh/known_hosts");
    let wrapper = format!("#!/bin/sh\nexec /usr/bin/ssh -o UserKnownHostsFile={} \"$@\"\n", known_hosts.display());
    std::fs::write(bin.join("ssh"), wrapper).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(bin.join("ssh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let (agent, user_home) = (server.agent_socket.to_str().unwrap(), server.home.to_str().unwrap());
    let env = [("DOCKER_HOST", address.as_str()), ("PATH", &path), ("SSH_AUTH_SOCK", agent), ("HOME", user_home)];
    assert_eq!(
        exit_code_seen(&home, &inst.container, &env, &[]),
        4,
        "the engine behind sshd: {}",
        server.log(&sshd_dir)
    );
    let flag = ["--docker-host", address.as_str()];
    assert_eq!(exit_code_seen(&home, &inst.container, &env[1..], &flag), 4, "--docker-host");

    // Restore's plan reads the same engine: the default engine's container gone, it still starts
    // the one behind sshd.
    drop(docker_quiet(&["rm", "-f", &inst.container]));
    let out = home
        .cmd("jackin-restore")
        .args(["--plan", "--format", "json", &inst.container])
        .envs(env)
        .env_remove("DOCKER_CONTEXT")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains(&format!("\"actions\":[\"start {}\"]", inst.container)), "{stdout}{}", stderr(&out));

    // No key the server accepts (no agent, no key file): unavailable, ssh's reason named, nothing
    // waited on and nothing changed.
    let before = home.snapshot();
    let out = home
        .cmd("jackin-reconcile")
        .args(["--dry-run", "--format", "json"])
        .env("DOCKER_HOST", &address)
        .env("PATH", &path)
        .env("HOME", user_home)
        .env_remove("SSH_AUTH_SOCK")
        .env_remove("DOCKER_CONTEXT")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let message = stderr(&out);
    assert!(message.contains(&address) && message.contains("Permission denied"), "{message}");
    assert_eq!(home.snapshot(), before, "nothing changed");
    drop(engine);
}
