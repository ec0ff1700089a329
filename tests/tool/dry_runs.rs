//! A dry run of every tool leaves the home byte-for-byte unchanged: every file with its bytes and
//! mode, every directory, every link, after each of `jackin-restore --plan` and `--list`,
//! `jackin-keep --dry-run`, `jackin-purge --dry-run` (by name, by selection, from records, slim,
//! expired quarantines), `jackin-reconcile --dry-run` and `jackin-assess`, over a home with
//! sessions of every kind. A dry run decides from what it observes: a short `role_git_sha` whose
//! role source is not in the cache is resolved at resume, never fetched by a plan.

use crate::common;

use std::fs;
use std::path::PathBuf;

use common::docker::{docker, engine_available, Session, SessionOptions};
use common::records::{envelopes, records_of, Candidate, ErrorRecord, Restored};
use common::{changed_paths, commit_file, snapshot_of, unique_id, Entry, Home, Instance};
use jackin::state::model::Status;
use jackin::state::names::InstanceName;
use jackin::state::store::{Roots, Store};
use serde_json::Value;

fn store(home: &Home) -> Store {
    Store::open(Roots { home: home.home.clone(), config_dir: home.config.clone() }).unwrap()
}

fn name(inst: &Instance) -> InstanceName {
    InstanceName::parse(&inst.container).unwrap()
}

fn set_manifest(home: &Home, inst: &Instance, edit: impl FnOnce(&mut Value)) {
    home.edit_manifest(&inst.container, edit);
}
/// A session kept as jackin-keep keeps one: its recipe captured, then its container removed.
fn keep_with_recipe(home: &Home, inst: &Instance) {
    common::docker::keep_with_recipe(home, &inst.container);
    docker(&["rm", "-f", &inst.container]);
}

/// A session kept with its recipe whose image is gone too, recorded with the 7 characters of its
/// role commit jackin records when it reused an image: only tier 3 brings it back.
fn kept_with_a_short_role_sha(home: &Home, inst: &Instance, dir: &str) -> (Session, String, String) {
    let image = format!("jackin-test-role-{}:latest", inst.id);
    let (_, bare, sha) = common::role_source(home, dir, Some(&image));
    let url = bare.to_str().unwrap().to_owned();
    let short = sha[..7].to_owned();
    set_manifest(home, inst, |m| {
        m["role_source_git"] = Value::from(url.as_str());
        m["role_git_sha"] = Value::from(short.as_str());
        m["image_tag"] = Value::from(image.as_str());
    });
    let session =
        Session::launch(&inst.container, SessionOptions { image: Some(&image), dind: false, ..Default::default() });
    keep_with_recipe(home, inst);
    docker(&["rmi", "-f", &image]);
    (session, url, sha)
}

/// Where the home caches the role source at `url` (`Store::role_source_cache`: `cache/role-sources/<key>`, every
/// byte of the URL but a letter or digit as `_`).
fn cache_of(home: &Home, url: &str) -> PathBuf {
    let key: String = url.bytes().map(|b| if b.is_ascii_alphanumeric() { b as char } else { '_' }).collect();
    home.home.join("cache/role-sources").join(key)
}

/// One dry run: its tool, arguments and stdin.
struct Run {
    tool: &'static str,
    args: Vec<String>,
    stdin: String,
}

fn run(tool: &'static str, args: &[&str]) -> Run {
    Run { tool, args: args.iter().map(|a| (*a).to_owned()).collect(), stdin: String::new() }
}

impl Run {
    fn stdin(mut self, stdin: &str) -> Run {
        self.stdin = stdin.to_owned();
        self
    }

    fn named(&self) -> String {
        format!("{} {}", self.tool, self.args.join(" "))
    }

    fn output(&self, home: &Home) -> std::process::Output {
        let mut cmd = home.cmd(self.tool);
        cmd.args(&self.args).write_stdin(self.stdin.clone()).timeout(std::time::Duration::from_secs(120));
        if !self.args.iter().any(|a| a.starts_with("--format")) {
            cmd.arg("--format=json");
        }
        cmd.output().unwrap()
    }
}

/// What changed under each watched root, one line per path (added, removed or changed); a
/// directory added or removed is one line with the count of the entries in it.
fn changes(before: &[(PathBuf, Vec<(PathBuf, Entry)>)], after: &[(PathBuf, Vec<(PathBuf, Entry)>)]) -> Vec<String> {
    let mut said: Vec<(PathBuf, &str, usize)> = Vec::new();
    for ((_, was), (_, now)) in before.iter().zip(after) {
        for path in changed_paths(was, now) {
            let old = was.iter().any(|(p, _)| *p == path);
            let new = now.iter().any(|(p, _)| *p == path);
            let how = match (old, new) {
                (false, true) => "added",
                (true, false) => "removed",
                _ => "changed",
            };
            match said.last_mut() {
                Some((top, top_how, inside)) if *top_how == how && how != "changed" && path.starts_with(&*top) => {
                    *inside += 1
                }
                _ => said.push((path, how, 0)),
            }
        }
    }
    said.into_iter()
        .map(|(path, how, inside)| match inside {
            0 => format!("{how} {}", path.display()),
            n => format!("{how} {} (and {n} entries in it)", path.display()),
        })
        .collect()
}

#[test]
fn a_dry_run_of_every_tool_leaves_the_home_byte_for_byte_unchanged() {
    if !engine_available("dry_runs") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let record = |h: &Home, c: &str| vec![h.worktree_record(c, &app, "/workspace/app")];

    // Clean and finished: what purge takes by name or with --terminal.
    let clean = home.instance(&unique_id(), record);
    // At risk: a dirty file and a commit only its scratch branch holds, its container exited
    // under a live status (reconcile would call it crashed).
    let at_risk = home.instance(&unique_id(), record);
    // Kept with its recipe: tier 2, with build outputs git ignores for a slim to take back.
    let kept = home.instance(&unique_id(), record);
    // Kept with a short role_git_sha whose role source, a local repository, is not in the cache.
    let short = home.instance(&unique_id(), |_, _| Vec::new());
    // The same, with its role source already in the cache (a resume fetched it before).
    let cached = home.instance(&unique_id(), |_, _| Vec::new());
    // Discarded for real before the dry runs: its quarantine, expired, is what
    // --expire-quarantine would delete.
    let discarded = home.instance(&unique_id(), record);

    let store = store(&home);
    store.set_status(&name(&clean), Status::CleanExited, "2026-11-29T08:00:00Z").unwrap();

    let work = at_risk.mount_path(0);
    commit_file(&work, "src/lib.rs", "pub fn half() {}\n", "half done");
    fs::write(work.join("notes.md"), "wip\n").unwrap();
    let at_risk_session = Session::launch(&at_risk.container, SessionOptions { dind: false, ..Default::default() });
    docker(&["stop", "-t", "0", &at_risk.container]);

    let kept_session = Session::launch(&kept.container, SessionOptions { dind: false, ..Default::default() });
    keep_with_recipe(&home, &kept);
    let kept_work = kept.mount_path(0);
    fs::create_dir_all(kept_work.join("target/debug")).unwrap();
    fs::write(kept_work.join("target/debug/app"), vec![7u8; 64 * 1024]).unwrap();
    fs::write(kept_work.join("build.log"), "compiled\n").unwrap();

    let (short_session, short_url, short_sha) = kept_with_a_short_role_sha(&home, &short, "role-short");
    let (cached_session, cached_url, cached_sha) = kept_with_a_short_role_sha(&home, &cached, "role-cached");
    let resolved =
        jackin::engines::git::role_commit(&cache_of(&home, &cached_url), &cached_url, &cached_sha[..7], true).unwrap();
    assert_eq!(resolved.as_deref(), Some(cached_sha.as_str()), "the cache holds the cached session's source");

    fs::write(discarded.mount_path(0).join("draft.md"), "unsaved\n").unwrap();
    let out = home
        .cmd("jackin-purge")
        .args(["--discard-unfinished", "--quarantine-days", "0", "--format=json", &discarded.container])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(home.quarantines().len(), 1, "the discarded work was saved to a quarantine");

    // Left behind by programs that are gone: an unheld name lock of an instance that no longer
    // exists, and a temp file whose writer is dead.
    let data = home.home.join("data");
    fs::write(data.join(format!("{}.lock", Home::container_name("g0neaaaa"))), "").unwrap();
    fs::write(data.join("instances.json.tmp.2147483646.0"), "{").unwrap();
    // jackin creates the index lock at its first index write: a real home has one.
    fs::write(data.join("instances.json.lock"), "").unwrap();

    // Inputs for the tools that read records, made by the tools themselves.
    let all = [&clean, &at_risk, &kept, &short, &cached];
    let names: Vec<&str> = all.iter().map(|i| i.container.as_str()).collect();
    let assessed = home.cmd("jackin-assess").args(&names).arg("--format=json").output().unwrap();
    assert!(assessed.status.success(), "{}", String::from_utf8_lossy(&assessed.stderr));
    let assessments = String::from_utf8(assessed.stdout).unwrap();
    let decided = home
        .cmd("jackin-keep")
        .args(["--policy=clean", "--discard-unfinished", "--dry-run", "--format=json"])
        .write_stdin(assessments.clone())
        .output()
        .unwrap();
    let reconciled = home.cmd("jackin-reconcile").args(["--dry-run", "--format=json"]).output().unwrap();
    // What keep and reconcile would have written, as a purge downstream reads them.
    let as_written = |stdout: &[u8]| -> String {
        String::from_utf8_lossy(stdout)
            .lines()
            .map(|line| {
                let mut record: Value = serde_json::from_str(line).unwrap();
                record["data"].as_object_mut().unwrap().remove("dry_run");
                // A dry run seals nothing: a discard it names is not one purge may take on its
                // word (an unsealed discard is refused whole, exit 3). `--discard-unfinished`
                // below is the operator's own discard instead.
                if record["type"] == "decision" {
                    record["data"]["discard_unfinished"] = false.into();
                }
                format!("{record}\n")
            })
            .collect()
    };
    let decisions = as_written(&decided.stdout);
    let orphans = as_written(&reconciled.stdout);
    assert!(decisions.contains("\"type\":\"decision\""), "{decisions}");
    assert!(orphans.contains("\"kind\":\"name_lock\"") && orphans.contains("\"kind\":\"temp_file\""), "{orphans}");

    let mut runs = Vec::new();
    for inst in [&short, &cached, &kept, &at_risk, &clean] {
        runs.push(run("jackin-restore", &["--plan", &inst.container]));
        runs.push(run("jackin-restore", &["--dry-run", &inst.container]));
    }
    runs.extend([
        run("jackin-restore", &["--plan", "--format=text", &short.container]),
        run("jackin-restore", &["--list"]),
        run("jackin-restore", &["--list", "--sort", "size", "--format=text"]),
        run("jackin-restore", &["--interrupted", "--dry-run"]),
        run("jackin-restore", &["--interrupted", "--plan"]),
        run("jackin-keep", &["--dry-run", "--answer=keep"]).stdin(&assessments),
        run("jackin-keep", &["--dry-run", "--policy=keep"]).stdin(&assessments),
        run("jackin-keep", &["--dry-run", "--policy=clean", "--discard-unfinished"]).stdin(&assessments),
        run("jackin-keep", &["--dry-run", "--keep", "--stop"]).stdin(&assessments),
        run("jackin-purge", &["--dry-run", &clean.container]),
        run("jackin-purge", &["--dry-run", &at_risk.container]),
        run("jackin-purge", &["--dry-run", "--discard-unfinished", &at_risk.container, &kept.container]),
        run("jackin-purge", &["--dry-run", "--terminal"]),
        run("jackin-purge", &["--dry-run", "--older-than", "1h"]),
        run("jackin-purge", &["--dry-run", "--keep-last", "1"]),
        run("jackin-purge", &["--dry-run"]).stdin(&decisions),
        run("jackin-purge", &["--dry-run", "--discard-unfinished"]).stdin(&decisions),
        run("jackin-purge", &["--dry-run"]).stdin(&orphans),
        run("jackin-reconcile", &["--dry-run"]),
        run("jackin-reconcile", &["--dry-run", &at_risk.container, &short.container]),
        run("jackin-assess", &["--all"]),
        run("jackin-assess", &["--all", "--diff", "--disk"]),
        run("jackin-purge", &["--slim", "--dry-run", &kept.container]),
        run("jackin-purge", &["--slim", "--kept", "--dry-run"]),
        run("jackin-purge", &["--slim-older-than", "1h", "--dry-run"]),
        run("jackin-purge", &["--expire-quarantine", "--dry-run"]),
    ]);

    // The home, and the host repository whose worktrees the sessions are (a worktree's index and
    // registration live in it).
    let watched = [home.home.clone(), app.clone()];
    let look = || watched.iter().map(|root| (root.clone(), snapshot_of(root))).collect::<Vec<_>>();
    let mut before = look();
    assert_eq!(before[0].1, home.snapshot());
    let mut changed = Vec::new();
    let mut outputs = Vec::new();
    for dry in &runs {
        let out = dry.output(&home);
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 5 | 6)),
            "{}: exit {code:?}: {}",
            dry.named(),
            String::from_utf8_lossy(&out.stderr)
        );
        let after = look();
        let said = changes(&before, &after);
        if !said.is_empty() {
            changed.push(format!("{} changed:\n    {}", dry.named(), said.join("\n    ")));
            before = after;
        }
        outputs.push((dry.named(), out));
    }
    assert!(changed.is_empty(), "a dry run wrote:\n  {}", changed.join("\n  "));
    assert!(!cache_of(&home, &short_url).exists(), "no plan fetched the short session's role source");

    // And they said what they would do. The short role_git_sha is resolved at resume: tier 3,
    // nothing known in the way, the plan stated (exit 0); `--list` does not call it ready.
    let output = |named: &str| &outputs.iter().find(|(n, _)| n == named).unwrap_or_else(|| panic!("{named}")).1;
    let plan = output(&format!("jackin-restore --plan {}", short.container));
    assert_eq!(plan.status.code(), Some(0), "{}", String::from_utf8_lossy(&plan.stderr));
    let planned = envelopes(&plan.stdout)[0].data::<Restored>();
    assert_eq!((planned.tier, planned.dry_run), (Some(3), true), "{planned:?}");
    assert!(planned.missing.is_empty(), "{planned:?}");
    let short_prefix = &short_sha[..7];
    assert!(
        planned.actions.iter().any(|a| a.contains(&format!("from {short_url} at {short_prefix}, resolved at resume"))),
        "{planned:?}"
    );
    assert!(records_of::<ErrorRecord>(&plan.stdout).is_empty(), "only the resume can fail on it");
    let text =
        String::from_utf8_lossy(&output(&format!("jackin-restore --plan --format=text {}", short.container)).stdout)
            .into_owned();
    assert!(text.contains("would resume (tier 3)") && text.contains(", resolved at resume"), "{text}");
    assert!(text.contains(&format!("\n  1. {}", planned.actions[0])), "the plan's steps, numbered: {text}");

    // The one whose source is cached is resolved there, and ready.
    let plan = output(&format!("jackin-restore --plan {}", cached.container));
    assert!(plan.status.success(), "{}", String::from_utf8_lossy(&plan.stderr));
    let planned = envelopes(&plan.stdout)[0].data::<Restored>();
    assert_eq!(planned.tier, Some(3));
    assert!(
        planned.actions.iter().any(|a| a.contains(&format!("at {} ({cached_sha})", &cached_sha[..7]))),
        "{planned:?}"
    );

    let listed = records_of::<Candidate>(&output("jackin-restore --list").stdout);
    let candidate = |inst: &Instance| {
        listed.iter().find(|c| c.identity.container_base == inst.container).unwrap_or_else(|| panic!("{listed:?}"))
    };
    let (k, s, c) = (candidate(&kept), candidate(&short), candidate(&cached));
    assert_eq!((k.tier, k.ready), (Some(2), true), "{k:?}");
    assert_eq!((c.tier, c.ready), (Some(3), true), "{c:?}");
    assert_eq!((s.tier, s.ready), (Some(3), false), "{s:?}");
    assert!(
        s.missing.is_empty()
            && s.label.ends_with(&format!(
                "is resolved at resume: the role-source cache does not hold it, and only a resume fetches {short_url}"
            )),
        "{s:?}"
    );
    let crashed = candidate(&at_risk);
    assert_eq!(crashed.status, "crashed", "as reconciliation would have left it: {crashed:?}");
    assert_eq!(home.manifest(&at_risk.container).status, "active", "and did not");

    drop((at_risk_session, kept_session, short_session, cached_session));
}
