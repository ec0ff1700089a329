//! One view across hosts (`--host`): the tools run on other machines over real ssh (an sshd on
//! loopback per host, each with its own jackin home), their rows merged after this host's, each
//! with its host; a host that is down, one without the tools and one whose tools speak another
//! protocol are each one row with the reason, never a failure of the view. A run that acts runs
//! on the one host named, and nowhere else.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::records::envelopes;
use common::ssh::{sshd_available, SshServer};
use common::{stderr, Home};
use serde_json::Value;

/// A host: its sshd, whose sessions use the jackin home `home` and find programs on `path`.
struct Host {
    server: SshServer,
    home: Home,
    dest: String,
}

fn host(dir: &Path, path: &str) -> Host {
    let home = Home::new();
    let config = format!(
        "SetEnv JACKIN_HOME_DIR={} JACKIN_CONFIG_DIR={} PATH={path}\n",
        home.home.display(),
        home.config.display()
    );
    let server = SshServer::start_with(dir, &config);
    let dest = format!("ssh://{}@127.0.0.1:{}", server.user, server.port);
    Host { server, home, dest }
}

fn executable(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(0o755)).unwrap();
}

/// The environment of this host's tools: an `ssh` first on PATH that trusts every test server's
/// key (OpenSSH reads ~/.ssh from the passwd entry, not $HOME) and one agent holding every key.
fn client_env(dir: &Path, hosts: &[&Host]) -> Vec<(String, String)> {
    let known: String =
        hosts.iter().map(|h| fs::read_to_string(h.server.home.join(".ssh/known_hosts")).unwrap()).collect();
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join("known_hosts"), known).unwrap();
    let wrapper =
        format!("#!/bin/sh\nexec /usr/bin/ssh -o UserKnownHostsFile={} \"$@\"\n", dir.join("known_hosts").display());
    executable(&dir.join("bin/ssh"), &wrapper);
    let agent = hosts[0].server.agent_socket.clone();
    for other in &hosts[1..] {
        let key = other.server.agent_socket.parent().unwrap().join("client_key");
        let added = std::process::Command::new("ssh-add").arg("-q").arg(key).env("SSH_AUTH_SOCK", &agent).status();
        assert!(added.unwrap().success());
    }
    let path = format!("{}:{}", dir.join("bin").display(), std::env::var("PATH").unwrap());
    vec![("PATH".into(), path), ("SSH_AUTH_SOCK".into(), agent.to_str().unwrap().to_owned())]
}

fn records_of(stdout: &[u8]) -> Vec<(String, Value)> {
    envelopes(stdout).into_iter().map(|e| (e.kind.clone(), e.data)).collect()
}

#[test]
fn a_view_across_two_hosts_and_one_that_is_down() {
    let test = "a_view_across_two_hosts_and_one_that_is_down";
    if !sshd_available(test) || !common::docker::engine_available(test) {
        return;
    }
    let local = Home::new();
    let tools = common::tools_dir().display().to_string();
    let a = host(&local.tmp.path().join("sshd-a"), &format!("{tools}:/usr/bin:/bin"));
    let b = host(&local.tmp.path().join("sshd-b"), &format!("{tools}:/usr/bin:/bin"));
    // A host whose jackin-assess speaks a newer protocol, and which has no other tool.
    let fake = local.tmp.path().join("fake-bin");
    executable(
        &fake.join("jackin-assess"),
        "#!/bin/sh\necho '{\"schema_version\":2,\"type\":\"assessment\",\"data\":{}}'\n",
    );
    let c = host(&local.tmp.path().join("sshd-c"), &format!("{}:/usr/bin:/bin", fake.display()));
    let down = {
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        format!("ssh://{}@127.0.0.1:{port}", a.server.user)
    };
    let mut local = local;
    let here = local.instance("hosta000", |_, _| Vec::new()).container;
    let mut a = a;
    let on_a = a.home.instance("hostb000", |_, _| Vec::new()).container;
    let mut b = b;
    let on_b = b.home.instance("hostc000", |_, _| Vec::new()).container;
    let env = client_env(&local.tmp.path().join("client"), &[&a, &b, &c]);

    let out = local
        .cmd("jackin-assess")
        .args(["--all", "--format", "json", "--hosts-timeout", "20s"])
        .args(["--host", &b.dest, "--host", &a.dest, "--host", &down, "--host", &c.dest])
        .envs(env.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), a.server.log(&local.tmp.path().join("sshd-a")));
    let rows = records_of(&out.stdout);
    // This host's rows first, without a host.
    assert_eq!(rows[0].0, "assessment");
    assert_eq!(rows[0].1["container_base"], here.as_str());
    assert!(rows[0].1.get("host").is_none());
    // Then each host in the order of their names, its rows with its host, then its `host` row.
    let mut expected: Vec<(&str, Option<&str>, &str)> = vec![
        (a.dest.as_str(), Some(on_a.as_str()), "ok"),
        (b.dest.as_str(), Some(on_b.as_str()), "ok"),
        (c.dest.as_str(), None, "protocol"),
        (down.as_str(), None, "unreachable"),
    ];
    expected.sort_by(|x, y| x.0.cmp(y.0));
    let mut at = 1;
    for (dest, session, status) in expected {
        if let Some(session) = session {
            assert_eq!(rows[at].0, "assessment", "{rows:?}");
            assert_eq!(
                (rows[at].1["container_base"].as_str(), rows[at].1["host"].as_str()),
                (Some(session), Some(dest))
            );
            at += 1;
        }
        assert_eq!(rows[at].0, "host", "{rows:?}");
        assert_eq!(
            (rows[at].1["host"].as_str(), rows[at].1["status"].as_str()),
            (Some(dest), Some(status)),
            "{rows:?}"
        );
        if status != "ok" {
            assert!(rows[at].1["reason"].as_str().is_some_and(|r| !r.is_empty()), "{rows:?}");
        }
        at += 1;
    }
    assert_eq!(at, rows.len(), "{rows:?}");

    // The same view as text: each host's rows after its name. A host without the tool: one row.
    let out = local
        .cmd("jackin-restore")
        .args(["--list", "--format", "text", "--host", &a.dest, "--host", &c.dest])
        .envs(env.clone())
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.contains(&format!("[{}] no_tools", c.dest)), "{text}\n{}", stderr(&out));
    assert!(text.contains(&format!("[{}] ok", a.dest)), "{text}");

    // Acting runs on the one host named, and nowhere else; two hosts for an act is a usage error.
    let before = (local.snapshot(), b.home.snapshot());
    let out = local
        .cmd("jackin-purge")
        .args(["--format", "json", "--host", &a.dest, &on_a])
        .envs(env.clone())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let acted = records_of(&out.stdout);
    assert_eq!(acted[0].0, "purged", "{acted:?}");
    let purged = (acted[0].1["container_base"].as_str(), acted[0].1["host"].as_str());
    assert_eq!(purged, (Some(on_a.as_str()), Some(a.dest.as_str())));
    assert!(!a.home.data(&on_a).exists(), "purged on a");
    assert_eq!((local.snapshot(), b.home.snapshot()), before, "nothing here or on b changed");
    let out = local.cmd("jackin-purge").args(["--host", &a.dest, "--host", &b.dest, &on_b]).envs(env).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(b.home.data(&on_b).exists());
}
