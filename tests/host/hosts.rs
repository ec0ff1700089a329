//! One view across hosts (`jackin-hosts --host DEST TOOL ARGS`): the tools run on other machines over real ssh (an sshd on
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
    host_with(dir, path, "")
}

/// A host whose sshd takes `extra` configuration too.
fn host_with(dir: &Path, path: &str, extra: &str) -> Host {
    let home = Home::new();
    let config = format!(
        "SetEnv JACKIN_HOME_DIR={} JACKIN_CONFIG_DIR={} PATH={path}\n{extra}",
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

/// `jackin-hosts HOSTS_FLAGS TOOL --home … --config-dir … ARGS` for the home `local`.
fn across(local: &Home, hosts_flags: &[&str], tool: &str, args: &[&str]) -> std::process::Command {
    let mut cmd = std::process::Command::new(common::tool_path("jackin-hosts"));
    cmd.args(hosts_flags).arg(tool).arg("--home").arg(&local.home).arg("--config-dir").arg(&local.config).args(args);
    cmd.env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR");
    cmd
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

    let hosts = ["--hosts-timeout", "20s", "--host", &b.dest, "--host", &a.dest, "--host", &down, "--host", &c.dest];
    let out =
        across(&local, &hosts, "jackin-assess", &["--all", "--format", "json"]).envs(env.clone()).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{}\n{}", stderr(&out), a.server.log(&local.tmp.path().join("sshd-a")));
    let rows = records_of(&out.stdout);
    // This host's rows first, with this host's own name (every record says where it was made).
    assert_eq!(rows[0].0, "assessment");
    assert_eq!(rows[0].1["container_base"], here.as_str());
    assert_eq!(rows[0].1["host"].as_str(), Some(common::this_host().as_str()));
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
    // Through the tool's hidden --host, which says where it went and runs jackin-hosts.
    let out = local
        .cmd("jackin-restore")
        .args(["--list", "--format", "text", "--host", &a.dest, "--host", &c.dest])
        .envs(env.clone())
        .output()
        .unwrap();
    assert!(stderr(&out).contains("moved to `jackin-hosts`"), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout.clone()).unwrap();
    assert!(text.contains(&format!("[{}] no_tools", c.dest)), "{text}\n{}", stderr(&out));
    assert!(text.contains(&format!("[{}] ok", a.dest)), "{text}");

    // Acting runs on the one host named, and nowhere else; two hosts for an act is a usage error.
    let before = (local.snapshot(), b.home.snapshot());
    let out = across(&local, &["--host", &a.dest], "jackin-purge", &["--format", "json", &on_a])
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
    let out =
        across(&local, &["--host", &a.dest, "--host", &b.dest], "jackin-purge", &[&on_b]).envs(env).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(b.home.data(&on_b).exists());
}

/// A session here with work at risk: a worktree with a dirty file and a commit on no remote.
fn at_risk(home: &mut Home, id: &str) -> common::Instance {
    let app = home.host_repo(&format!("app-{id}"));
    let inst = home.instance(id, |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    fs::write(inst.mount_path(0).join("README.md"), "the agent's work\n").unwrap();
    common::commit_file(&inst.mount_path(0), "work.rs", "fn work() {}\n", "agent work");
    inst
}

/// A record is a claim, never an order (issue 63). Another host's tools print a `decision` that
/// names this host's session (clean, discard its unfinished work) and an assessment of it. In a
/// view across hosts the decision is left out (a view passes on only what it makes), and each
/// row that is passed on names the host it came from, whatever it claimed: piped into keep or
/// purge here, each is refused (exit 3) and nothing of this host changes, even with
/// `--discard-unfinished --no-quarantine`. Before, the pipe purged the session.
#[test]
fn a_row_from_another_host_changes_nothing_here() {
    let test = "a_row_from_another_host_changes_nothing_here";
    if !sshd_available(test) || !common::docker::engine_available(test) {
        return;
    }
    let mut local = Home::new();
    let c = at_risk(&mut local, "frgn0000");
    let d = at_risk(&mut local, "frgn0001");
    let mut claim: Value = serde_json::from_str(local.assess_lines(&[&c.container]).trim()).unwrap();
    claim["data"]["host"] = common::this_host().into();
    claim["data"]["verdict"] = "clean".into();
    let decision = {
        let mut d = common::clean_decision(&c.container, &c.id, true);
        d["data"]["host"] = common::this_host().into();
        d
    };
    let fake = local.tmp.path().join("fake-bin");
    executable(&fake.join("jackin-assess"), &format!("#!/bin/sh\ncat <<'EOF'\n{claim}\n{decision}\nEOF\n"));
    let a = host(&local.tmp.path().join("sshd-a"), &format!("{}:/usr/bin:/bin", fake.display()));
    let env = client_env(&local.tmp.path().join("client"), &[&a]);
    let before = local.snapshot();

    let view = across(&local, &["--host", &a.dest], "jackin-assess", &[&d.container, "--format", "json"])
        .envs(env.clone())
        .output()
        .unwrap();
    assert_eq!(view.status.code(), Some(0), "{}", stderr(&view));
    let rows = records_of(&view.stdout);
    assert!(rows.iter().all(|(kind, _)| kind != "decision"), "a view passes on only what it makes: {rows:?}");
    let from_a: Vec<_> = rows.iter().filter(|(_, data)| data["host"] == a.dest.as_str()).collect();
    assert_eq!(from_a.len(), 2, "the claimed assessment and the host row, both with a's name: {rows:?}");
    let closing = rows.iter().find(|(kind, _)| kind == "host").unwrap();
    assert_eq!(closing.1["left_out"], 1, "{closing:?}");

    let pipe = |tool: &str, args: &[&str], input: &[u8]| {
        local.cmd(tool).args(args).arg("--format=json").write_stdin(input.to_vec()).output().unwrap()
    };
    let kept = pipe("jackin-keep", &["--policy=keep", "--stop"], &view.stdout);
    assert_eq!(kept.status.code(), Some(3), "{}", stderr(&kept));
    let refused = records_of(&kept.stdout);
    assert!(
        refused
            .iter()
            .any(|(k, d)| k == "error" && d["code"] == "foreign_record" && d["container_base"] == c.container.as_str()),
        "{refused:?}"
    );
    // The same decision as another host's tools print it, relayed by a view (its host named).
    let mut relayed = decision.clone();
    relayed["data"]["host"] = a.dest.as_str().into();
    for args in [&[][..], &["--discard-unfinished", "--no-quarantine"]] {
        let purged = pipe("jackin-purge", args, format!("{relayed}\n").as_bytes());
        assert_eq!(purged.status.code(), Some(3), "{args:?}: {}", stderr(&purged));
        let refused = records_of(&purged.stdout);
        assert_eq!((refused[0].0.as_str(), refused[0].1["code"].as_str()), ("error", Some("foreign_record")));
    }
    assert_eq!(local.snapshot(), before, "nothing of this host changed");
    assert!(c.mount_path(0).join("README.md").exists() && d.mount_path(0).join("README.md").exists());
}

/// Arguments reach the other host's tool as they were typed, whatever they hold: words no shell
/// may read as they are travel encoded (engines/remote.rs), so an argument ending in a backslash
/// followed by one holding `; touch …` (what broke fish's quoting) runs nothing there. The other
/// host's session has exactly those words as its workspace and role: it is listed only when both
/// filters arrived intact.
#[test]
fn hostile_arguments_reach_the_other_host_intact() {
    let test = "hostile_arguments_reach_the_other_host_intact";
    if !sshd_available(test) || !common::docker::engine_available(test) {
        return;
    }
    let tools = common::tools_dir().display().to_string();
    let mut tried = Vec::new();
    for shell in ["/bin/sh", "/bin/bash", "/usr/bin/zsh", "/usr/bin/fish"] {
        if !Path::new(shell).exists() {
            assert!(std::env::var("CI").map_or(true, |ci| ci != "true"), "CI=true and no {shell}");
            continue;
        }
        // The login shell, as sshd runs the command with it: ForceCommand hands the command ssh
        // sent, untouched, to `shell -c`.
        let login = format!("ForceCommand exec {shell} -c \"$SSH_ORIGINAL_COMMAND\"\n");
        let local = Home::new();
        let mut a = host_with(&local.tmp.path().join("sshd-a"), &format!("{tools}:/usr/bin:/bin"), &login);
        let on_a = a.home.instance("hstl0000", |_, _| Vec::new()).container;
        let mark = local.tmp.path().join("ran");
        let (workspace, role) = ("my app\\".to_owned(), format!("; touch {} #'\"$(id)", mark.display()));
        let manifest = a.home.data(&on_a).join(".jackin/instance.json");
        let mut m: Value = serde_json::from_str(&fs::read_to_string(&manifest).unwrap()).unwrap();
        (m["workspace_name"], m["role_key"]) = (workspace.clone().into(), role.clone().into());
        fs::write(&manifest, serde_json::to_string_pretty(&m).unwrap()).unwrap();
        let mut index: Value = serde_json::from_str(&fs::read_to_string(a.home.index_path()).unwrap()).unwrap();
        for row in index["instances"].as_array_mut().unwrap() {
            (row["workspace_name"], row["role_key"]) = (workspace.clone().into(), role.clone().into());
        }
        fs::write(a.home.index_path(), serde_json::to_string_pretty(&index).unwrap()).unwrap();
        let env = client_env(&local.tmp.path().join("client"), &[&a]);
        let args = ["--list", "--workspace", &workspace, "--role", &role, "--format", "json"];
        let out = across(&local, &["--host", &a.dest], "jackin-restore", &args).envs(env).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{shell}: {}", stderr(&out));
        let rows = records_of(&out.stdout);
        let listed: Vec<&str> = rows
            .iter()
            .filter(|(kind, data)| kind == "candidate" && data["host"] == a.dest.as_str())
            .filter_map(|(_, data)| data["container_base"].as_str())
            .collect();
        assert_eq!(listed, [on_a.as_str()], "{shell}: both filters arrived as typed: {rows:?}\n{}", stderr(&out));
        assert!(!mark.exists(), "{shell}: nothing ran on the other host");
        tried.push(shell);
    }
    assert!(!tried.is_empty());
}

/// Peak resident memory of a process (its VmHWM), read until it exits.
fn peak_kib(mut child: std::process::Child) -> (std::process::ExitStatus, u64) {
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        if let Ok(text) = fs::read_to_string(&status_file) {
            let hwm = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches(" kB").parse().ok());
            peak = peak.max(hwm.unwrap_or(0));
        }
        if let Some(status) = child.try_wait().unwrap() {
            return (status, peak);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// What another host prints is read within bounds: a host whose tools print one 300 MiB line,
/// or print without end, is one `too_much` row, and the view stays under 64 MiB resident.
#[test]
fn a_host_that_prints_without_end_is_one_row_not_memory() {
    let test = "a_host_that_prints_without_end_is_one_row_not_memory";
    if !sshd_available(test) || !common::docker::engine_available(test) {
        return;
    }
    let local = Home::new();
    let fake = local.tmp.path().join("fake-bin");
    let row = r#"{"schema_version":1,"type":"assessment","data":{}}"#;
    executable(&fake.join("jackin-assess"), "#!/bin/sh\nhead -c 314572800 /dev/zero | tr '\\0' x\n");
    executable(&fake.join("jackin-restore"), &format!("#!/bin/sh\nexec yes '{row}'\n"));
    let a = host(&local.tmp.path().join("sshd-a"), &format!("{}:/usr/bin:/bin", fake.display()));
    let env = client_env(&local.tmp.path().join("client"), &[&a]);
    for (tool, args) in [("jackin-assess", &["--all"][..]), ("jackin-restore", &["--list"])] {
        let mut cmd = across(&local, &["--hosts-timeout", "30s", "--host", &a.dest], tool, args);
        cmd.args(["--format", "json"])
            .envs(env.clone())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let stdout = child.stdout.take().unwrap();
        let reading = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap());
        let (status, peak) = peak_kib(child);
        let out = reading.join().unwrap();
        assert_eq!(status.code(), Some(0), "{tool}: {out}");
        eprintln!("{tool} over a host past its bounds: peak resident {peak} KiB");
        assert!(peak < 64 * 1024, "{tool}: peak {peak} KiB");
        let rows = records_of(out.as_bytes());
        let closing = rows.iter().find(|(kind, _)| kind == "host").unwrap();
        assert_eq!(closing.1["status"], "too_much", "{tool}: {closing:?}");
        assert!(rows.len() < 2, "{tool}: no row of a host past its bounds is passed on: {}", rows.len());
    }
}

/// A view that names a session living on another host: that host answers it, this host does not
/// run the tool for a name it does not know, and `--exit-code` reports the other host's work at
/// risk (exit 1, no error anywhere). A name no host knows is one `unknown_instance` error of the
/// view (exit 6). Before, this host's `unknown_instance` made every such view exit 6.
#[test]
fn a_view_of_a_session_on_another_host_reports_its_work() {
    let test = "a_view_of_a_session_on_another_host_reports_its_work";
    if !sshd_available(test) || !common::docker::engine_available(test) {
        return;
    }
    let local = Home::new();
    let tools = common::tools_dir().display().to_string();
    let mut a = host(&local.tmp.path().join("sshd-a"), &format!("{tools}:/usr/bin:/bin"));
    let there = at_risk(&mut a.home, "hnam0000").container;
    let env = client_env(&local.tmp.path().join("client"), &[&a]);
    let view = |args: &[&str]| {
        let mut all = vec!["--exit-code", "--format", "json"];
        all.extend(args);
        across(&local, &["--host", &a.dest], "jackin-assess", &all).envs(env.clone()).output().unwrap()
    };

    let out = view(&[&there]);
    assert_eq!(out.status.code(), Some(1), "work at risk on a: {}", stderr(&out));
    let rows = records_of(&out.stdout);
    let kinds: Vec<&str> = rows.iter().map(|(kind, _)| kind.as_str()).collect();
    assert_eq!(kinds, ["assessment", "host"], "{rows:?}");
    assert_eq!(
        (rows[0].1["container_base"].as_str(), rows[0].1["verdict"].as_str()),
        (Some(there.as_str()), Some("dirty"))
    );
    assert_eq!((rows[1].1["rows"].as_u64(), rows[1].1["exit"].as_i64()), (Some(1), Some(1)), "{rows:?}");

    let nowhere = "jk-hnam9999-myapp-agentsmith";
    let out = view(&[&there, nowhere]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let errors: Vec<Value> =
        records_of(&out.stdout).into_iter().filter(|(k, _)| k == "error").map(|(_, d)| d).collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(
        (errors[0]["container_base"].as_str(), errors[0]["code"].as_str()),
        (Some(nowhere), Some("unknown_instance"))
    );
}
