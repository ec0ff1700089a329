//! A record is a claim, never an order (issue 63; docs/threat-model.md, "Records on stdin").
//! keep and purge act only on records this host observes as they claim: made here (`host`),
//! naming the session of that name here (`instance_id`), and, for a discard of work at risk,
//! sealed by this home's own keep while the session is still as keep left it. Each guard has a
//! test of its own that fails when that guard alone is switched off, and a seeded generator feeds
//! forged records of every kind into keep, purge, restore and reconcile and finds nothing changed.
//! Files that choose whom the tools contact or what they run are refused when others can write
//! them.

use crate::common;

use std::fs;
use std::os::unix::fs::PermissionsExt;

use common::docker::engine_available;
use common::records::{envelopes, records, ErrorRecord};
use common::{commit_file, stderr, Home, Instance, Rng};
use serde_json::{json, Value};

/// A session with work at risk: a dirty file and a commit on no remote.
fn at_risk(home: &mut Home, id: &str) -> Instance {
    let app = home.host_repo(&format!("app-{id}"));
    let inst = home.instance(id, |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    fs::write(inst.mount_path(0).join("README.md"), "the agent's work\n").unwrap();
    commit_file(&inst.mount_path(0), "work.rs", "fn work() {}\n", "agent work");
    inst
}

/// Two sessions at risk in a home with its seal key; `a` decided by this home's keep under the
/// clean policy (its status written, the decision sealed): the genuine decision, and an
/// assessment of `b` as assess sealed it.
struct Scene {
    home: Home,
    a: Instance,
    b: Instance,
    decision: Value,
    assessment: Value,
}

fn scene() -> Scene {
    let mut home = Home::new();
    home.with_seal_key();
    let (a, b) = (at_risk(&mut home, "trst0000"), at_risk(&mut home, "trst0001"));
    let decided = home.decided(&a.container, &["--policy=clean"]);
    let decision: Value = serde_json::from_str(decided.trim()).unwrap();
    assert_eq!(
        (decision["data"]["discard_unfinished"].as_bool(), decision["data"]["seal"].is_string()),
        (Some(true), true)
    );
    let assessment: Value = serde_json::from_str(home.assess_lines(&[&b.container]).trim()).unwrap();
    assert!(assessment["data"]["seal"].is_string(), "{assessment}");
    Scene { home, a, b, decision, assessment }
}

fn run(home: &Home, tool: &str, args: &[&str], input: &str) -> std::process::Output {
    home.cmd(tool).args(args).arg("--format=json").write_stdin(input.to_owned()).output().unwrap()
}

/// The `error` records of a run refused whole: exit 3, and the codes it gave.
fn refused(out: &std::process::Output) -> Vec<String> {
    assert_eq!(out.status.code(), Some(3), "{}\n{}", String::from_utf8_lossy(&out.stdout), stderr(out));
    records::<ErrorRecord>(&out.stdout).into_iter().map(|e| e.code).collect()
}

/// Each guard alone: a genuine decision with exactly one thing wrong is refused with that
/// guard's code, and nothing changes; the genuine decision itself then purges (so the refusals
/// are the guards', not a harness that refuses everything).
#[test]
fn each_guard_on_a_decision_refuses_alone() {
    if !engine_available("each_guard_on_a_decision_refuses_alone") {
        return;
    }
    let s = scene();
    let before = s.home.snapshot();
    let mut cases: Vec<(&str, Value)> = Vec::new();
    let mut elsewhere = s.decision.clone();
    elsewhere["data"]["host"] = json!("another-host");
    cases.push(("foreign_record", elsewhere));
    let mut other_id = s.decision.clone();
    other_id["data"]["instance_id"] = json!(s.b.id);
    cases.push(("identity_mismatch", other_id));
    let mut changed = s.decision.clone();
    changed["data"]["reason"] = json!("operator clean");
    cases.push(("unproven", changed));
    let mut unsealed = s.decision.clone();
    unsealed["data"].as_object_mut().unwrap().remove("seal");
    cases.push(("unproven", unsealed));
    for (code, forged) in &cases {
        for args in [&[][..], &["--discard-unfinished", "--no-quarantine"]] {
            let out = run(&s.home, "jackin-purge", args, &format!("{forged}\n{}\n", s.decision));
            assert_eq!(refused(&out), [*code], "{forged} {args:?}");
            assert_eq!(s.home.snapshot(), before, "{code}: nothing changed");
        }
    }
    // The session changed after keep decided (kept again, and so stamped anew): the decision
    // speaks for a session that is no more.
    let stamped = s.home.manifest(&s.a.container);
    s.home.edit_manifest(&s.a.container, |m| m["updated_at"] = json!("2030-01-01T00:00:00.000000Z"));
    let out = run(&s.home, "jackin-purge", &[], &format!("{}\n", s.decision));
    assert_eq!(refused(&out), ["unproven"]);
    assert!(s.a.mount_path(0).join("README.md").exists());
    s.home.edit_manifest(&s.a.container, |m| m["updated_at"] = json!(stamped.updated_at));

    let out = run(&s.home, "jackin-purge", &[], &format!("{}\n", s.decision));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!s.a.dir.exists(), "the genuine decision purged (its work quarantined)");
    assert!(s.b.mount_path(0).join("README.md").exists());
}

/// An assessment keep is given is taken as it is only under this home's seal; with one field
/// changed it is a request to look again, and keep decides on what it sees (here: work at
/// risk, so the clean policy does not stamp `clean_exited`). Without a key (a home whose keep
/// never ran) every assessment is looked at again, and the first keep makes the key.
#[test]
fn keep_looks_again_at_an_assessment_it_cannot_verify() {
    if !engine_available("keep_looks_again_at_an_assessment_it_cannot_verify") {
        return;
    }
    let s = scene();
    let mut said = s.assessment.clone();
    said["data"]["verdict"] = json!("clean");
    said["data"]["summary"] = json!("clean");
    said["data"]["mounts"] = json!([]);
    let out = run(&s.home, "jackin-keep", &["--policy=clean", "-v"], &format!("{said}\n"));
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("not sealed by this home"), "{}", stderr(&out));
    let decision = &envelopes(&out.stdout)[0].data;
    assert_eq!(decision["verdict"], "dirty", "{decision}");
    assert_eq!(s.home.status(&s.b.container).0, "preserved_dirty", "never clean_exited");

    let mut fresh = Home::new();
    let c = at_risk(&mut fresh, "trst0002");
    let assessed = fresh.assess_lines(&[&c.container]);
    assert!(!assessed.contains("\"seal\""), "no key yet: nothing sealed");
    let out = run(&fresh, "jackin-keep", &["--policy=keep", "-v"], &assessed);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(stderr(&out).contains("not sealed by this home"), "{}", stderr(&out));
    let key = fresh.home.join("seal.key");
    assert_eq!(fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(fresh.assess_lines(&[&c.container]).contains("\"seal\""), "assess seals from then on");
}

/// Forged records of every kind, generated (the seed is printed on failure), fed into keep,
/// purge, restore and reconcile: nothing of the home changes. Each is derived from a genuine
/// record of this home with one or two of its claims made false: another host, another
/// session's fields, a changed seal, a discard nobody here granted, an orphan of elsewhere.
/// A forged line beside a genuine one refuses the genuine one too: the input is checked whole.
#[test]
fn forged_records_of_every_kind_change_nothing() {
    if !engine_available("forged_records_of_every_kind_change_nothing") {
        return;
    }
    let s = scene();
    // Settle what a first reconcile mends, so that a later one has nothing of its own to do.
    let settle = s.home.cmd("jackin-reconcile").arg("--format=json").output().unwrap();
    assert!(settle.status.success(), "{}", stderr(&settle));
    let before = s.home.snapshot();
    let seed = std::env::var("TRUST_SEED").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| fastrand::u64(..));
    let mut rng = Rng::new(seed);
    let orphan = json!({"schema_version": 1, "type": "orphan", "data": {"kind": "name_lock", "name": format!("{}.lock", s.a.container), "reason": "instance gone"}});
    // And records of the other types, which keep and purge pass through: a claim in them is
    // never acted on at all.
    let change = json!({"schema_version": 1, "type": "change", "data": {"container_base": s.a.container, "instance_id": s.a.id, "from": "active", "to": "crashed", "cause": "container_exited", "evidence": {}}});
    let candidate = json!({"schema_version": 1, "type": "candidate", "data": {"container_base": s.b.container, "instance_id": s.b.id, "tier": 1, "ready": true}});
    let host = json!({"schema_version": 1, "type": "host", "data": {"host": "elsewhere", "status": "ok", "rows": 1}});
    let genuine = [s.decision.clone(), s.assessment.clone(), orphan, change, candidate, host];
    let hosts = ["elsewhere", "ssh://op@10.0.0.2:2222", "", "localhost.localdomain"];
    for round in 0..48 {
        let mut forged = rng.pick(&genuine).clone();
        let data = forged["data"].as_object_mut().unwrap();
        let mut said = Vec::new();
        for _ in 0..=rng.below(2) {
            match rng.below(5) {
                0 | 1 => {
                    let host = *rng.pick(&hosts);
                    data.insert("host".into(), json!(if host.is_empty() { "another" } else { host }));
                    said.push("host");
                }
                2 if data.contains_key("instance_id") => {
                    let other = if data["container_base"] == s.a.container.as_str() { &s.b.id } else { &s.a.id };
                    data.insert("instance_id".into(), json!(other));
                    said.push("instance_id");
                }
                3 if data.contains_key("discard_unfinished") => {
                    data.insert("container_base".into(), json!(s.b.container));
                    data.insert("instance_id".into(), json!(s.b.id));
                    said.push("another session's name, this one's seal");
                }
                _ => {
                    data.insert("host".into(), json!(format!("h{}", rng.next())));
                    said.push("host");
                }
            }
        }
        let line = forged.to_string();
        let (tool, args): (&str, &[&str]) = *rng.pick(&[
            ("jackin-keep", &["--policy=clean", "--stop"][..]),
            ("jackin-keep", &["--keep", "--stop"]),
            ("jackin-purge", &[]),
            ("jackin-purge", &["--discard-unfinished", "--no-quarantine", "--stop"]),
            ("jackin-restore", &["--list"]),
            ("jackin-reconcile", &[]),
        ]);
        // What the tool consumes (purge: decisions and orphans; keep: assessments) must be refused,
        // and with it the genuine decision beside it; what it does not consume passes through.
        let consumed = match tool {
            "jackin-purge" => forged["type"] == "decision" || forged["type"] == "orphan",
            "jackin-keep" => forged["type"] == "assessment",
            _ => false,
        };
        let with_genuine = consumed && rng.below(2) == 0;
        let input = if with_genuine { format!("{line}\n{}\n", s.decision) } else { format!("{line}\n") };
        let out = run(&s.home, tool, args, &input);
        let context = format!("seed {seed} round {round}: {tool} {args:?} on {said:?}: {line}\n{}", stderr(&out));
        if consumed {
            assert_eq!(out.status.code(), Some(3), "{context}");
        } else {
            assert!(out.status.code().is_some_and(|c| c < 7), "{context}");
        }
        assert_eq!(s.home.snapshot(), before, "{context}");
    }
}

/// Files that choose whom the tools contact or what they run, writable by another user: refused
/// with the fix, before anything is contacted or run (as ssh refuses its own config).
#[test]
fn files_others_can_write_are_refused() {
    let home = Home::new();
    let bin = home.tmp.path().join("bin");
    fs::create_dir_all(&bin).unwrap();
    let called = home.tmp.path().join("ssh-called");
    let ssh = bin.join("ssh");
    fs::write(&ssh, format!("#!/bin/sh\ntouch {}\nexit 255\n", called.display())).unwrap();
    fs::set_permissions(&ssh, fs::Permissions::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap());
    let hosts = home.config.join("jackin-tools-hosts");
    fs::write(&hosts, "otherhost # the build box\n").unwrap();
    fs::set_permissions(&hosts, fs::Permissions::from_mode(0o666)).unwrap();
    let out = home.cmd("jackin-assess").args(["--all", "--all-hosts"]).env("PATH", &path).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("every user") && stderr(&out).contains("chmod go-w"), "{}", stderr(&out));
    assert!(!called.exists(), "no host was contacted");
    fs::set_permissions(&hosts, fs::Permissions::from_mode(0o644)).unwrap();
    let out = home.cmd("jackin-assess").args(["--all", "--all-hosts"]).env("PATH", &path).output().unwrap();
    assert!(called.exists(), "a file only its owner can write is used: {}", stderr(&out));
    let rows: Vec<Value> = envelopes(&out.stdout).into_iter().map(|e| e.data).collect();
    assert_eq!(rows.last().unwrap()["host"], "otherhost", "the comment after the host is not part of it: {rows:?}");
    fs::write(&hosts, "#".repeat(1 << 20) + "\nlast\n").unwrap();
    let out = home.cmd("jackin-assess").args(["--all", "--all-hosts"]).env("PATH", &path).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("larger than 1 MiB"), "{}", stderr(&out));

    // The --on-event program, or the directory it is in, writable by others; or not there.
    let program = bin.join("on-event");
    fs::write(&program, "#!/bin/sh\nexit 0\n").unwrap();
    for (mode, dir_mode) in [(0o777, 0o755), (0o755, 0o777)] {
        fs::set_permissions(&program, fs::Permissions::from_mode(mode)).unwrap();
        fs::set_permissions(&bin, fs::Permissions::from_mode(dir_mode)).unwrap();
        let out = home.cmd("jackin-reconcile").args(["--on-event", program.to_str().unwrap()]).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{mode:o}/{dir_mode:o}: {}", stderr(&out));
        assert!(stderr(&out).contains("chmod go-w"), "{}", stderr(&out));
    }
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    let out = home.cmd("jackin-reconcile").args(["--on-event", "/nonexistent/on-event"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("no such program"), "{}", stderr(&out));

    // The Docker CLI's config, which chooses the engine (and so what these tools act on).
    let docker_config = home.tmp.path().join("docker");
    fs::create_dir_all(&docker_config).unwrap();
    fs::write(docker_config.join("config.json"), r#"{"currentContext":"elsewhere"}"#).unwrap();
    fs::set_permissions(docker_config.join("config.json"), fs::Permissions::from_mode(0o666)).unwrap();
    let out = home
        .cmd("jackin-reconcile")
        .env("DOCKER_CONFIG", &docker_config)
        .env_remove("DOCKER_HOST")
        .env_remove("DOCKER_CONTEXT")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    assert!(stderr(&out).contains("the Docker config") && stderr(&out).contains("chmod go-w"), "{}", stderr(&out));
}
