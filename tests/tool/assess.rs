//! jackin-assess against real git repositories: one test per repository state, each asserting
//! the verdict and the detail an operator would be shown.

use crate::common;

use std::fs;

use common::records::{envelopes, records, Assessment, Mount, Orphan, UnpushedRef};
use common::{commit_file, git, stderr, Home, Instance};
use serde_json::{json, Value};

/// A home with one host repository and one instance whose mounts `mounts` makes.
fn setup(mounts: impl FnOnce(&Home, &str, &std::path::Path) -> Vec<Value>) -> (Home, Instance, std::path::PathBuf) {
    let mut home = Home::new();
    let host = home.host_repo("app");
    let host_for_mounts = host.clone();
    let instance = home.instance("k7p9m2xq", |h, c| mounts(h, c, &host_for_mounts));
    (home, instance, host)
}

fn worktree_setup() -> (Home, Instance, std::path::PathBuf) {
    setup(|h, c, host| vec![h.worktree_record(c, host, "/workspace/my-app")])
}

fn clone_setup() -> (Home, Instance, std::path::PathBuf) {
    setup(|h, c, host| vec![h.clone_record(c, host, "/workspace/my-app")])
}

fn files(mount: &Mount) -> Vec<(String, String)> {
    mount.files.iter().map(|f| (f.status.clone(), f.path.clone())).collect()
}

fn unpushed(name: &str, commits: u64, upstream: Option<&str>) -> UnpushedRef {
    UnpushedRef { name: name.to_owned(), commits, upstream: upstream.map(str::to_owned), integrated: Vec::new() }
}

fn pair(status: &str, path: &str) -> (String, String) {
    (status.to_owned(), path.to_owned())
}

#[test]
fn clean_worktree() {
    let (home, inst, _) = worktree_setup();
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "clean");
    assert_eq!(a.summary, "clean");
    assert!(!a.in_place);
    assert_eq!(a.identity.container_base, inst.container);
    assert_eq!(a.identity.instance_id, "k7p9m2xq");
    assert_eq!(a.identity.workspace_name.as_deref(), Some("my-app"));
    assert_eq!(a.identity.role_key, "agent-smith");
    assert_eq!(a.identity.agent_runtime, "claude");
    let m = &a.mounts[0];
    assert_eq!(m.verdict, "clean");
    assert_eq!(m.isolation, "worktree");
    assert_eq!(m.mount_dst, "/workspace/my-app");
    assert_eq!(m.files, []);
    assert_eq!(m.unpushed, []);
    assert!(a.assessed_at.ends_with('Z'));
}

#[test]
fn modified_file_is_dirty() {
    let (home, inst, _) = worktree_setup();
    fs::write(inst.mount_path(0).join("README.md"), "changed\n").unwrap();
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "dirty");
    assert_eq!(files(&a.mounts[0]), [pair(" M", "README.md")]);
    assert_eq!(a.summary, "1 file dirty");
}

#[test]
fn untracked_file_is_dirty() {
    let (home, inst, _) = worktree_setup();
    fs::create_dir_all(inst.mount_path(0).join("notes")).unwrap();
    fs::write(inst.mount_path(0).join("notes/plan.md"), "plan\n").unwrap();
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "dirty");
    assert_eq!(files(&a.mounts[0]), [pair("??", "notes/plan.md")]);
}

#[test]
fn staged_new_file_is_dirty() {
    let (home, inst, _) = worktree_setup();
    fs::write(inst.mount_path(0).join("new.rs"), "x\n").unwrap();
    git(&inst.mount_path(0), &["add", "new.rs"]);
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "dirty");
    assert_eq!(files(&a.mounts[0]), [pair("A ", "new.rs")]);
}

#[test]
fn deleted_file_is_dirty() {
    let (home, inst, _) = worktree_setup();
    fs::remove_file(inst.mount_path(0).join("src/main.rs")).unwrap();
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "dirty");
    assert_eq!(files(&a.mounts[0]), [pair(" D", "src/main.rs")]);
}

#[test]
fn renamed_file_is_dirty_with_its_old_name() {
    let (home, inst, _) = worktree_setup();
    git(&inst.mount_path(0), &["mv", "README.md", "GUIDE.md"]);
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "dirty");
    let m = &a.mounts[0];
    assert_eq!(files(m), [pair("R ", "GUIDE.md")]);
    assert_eq!(m.files[0].orig_path.as_deref(), Some("README.md"));
    assert_eq!(m.files[0].from.as_deref(), Some("README.md"), "schema 1 keeps the field's first name");
}

/// `git status --porcelain=v1 -uall`, one entry a line (`XY path` or `XY orig -> path`).
fn git_status(dir: &std::path::Path) -> Vec<String> {
    let out = std::process::Command::new("git")
        .args(["status", "--porcelain=v1", "-uall"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let mut lines: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

/// The assessment's files in the same form.
fn status_lines(mount: &Mount) -> Vec<String> {
    let mut lines: Vec<String> = mount
        .files
        .iter()
        .map(|f| match &f.orig_path {
            Some(orig) => format!("{} {orig} -> {}", f.status, f.path),
            None => format!("{} {}", f.status, f.path),
        })
        .collect();
    lines.sort();
    lines
}

/// Renames in the index, with and without later edits, beside a deletion and an untracked file
/// that git does not pair: the files are exactly what `git status` prints.
#[test]
fn renames_are_listed_as_git_status_lists_them() {
    let (home, inst, _) = worktree_setup();
    let wt = inst.mount_path(0);
    let body: String = (0..40).map(|i| format!("line {i} of a file long enough to be recognised\n")).collect();
    for name in ["staged.txt", "edited.txt", "gone.txt", "docs/guide.txt"] {
        commit_file(&wt, name, &format!("{name}\n{body}"), name);
    }
    git(&wt, &["mv", "staged.txt", "staged-moved.txt"]);
    git(&wt, &["mv", "edited.txt", "edited-moved.txt"]);
    fs::write(wt.join("edited-moved.txt"), format!("edited.txt\n{body}one more line\n")).unwrap();
    fs::rename(wt.join("gone.txt"), wt.join("untracked-copy.txt")).unwrap();
    git(&wt, &["mv", "docs/guide.txt", "guide.txt"]);

    let a = home.assess(&inst.container);
    let m = &a.mounts[0];
    let expected = git_status(&wt);
    assert!(expected.iter().any(|l| l.starts_with("R  ") && l.contains(" -> ")), "{expected:?}");
    assert_eq!(status_lines(m), expected);

    let text = home.cmd("jackin-assess").arg(&inst.container).arg("--format=text").output().unwrap();
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("\n    R  staged.txt -> staged-moved.txt\n"), "{text}");
    assert!(text.contains("\n    R  docs/guide.txt -> guide.txt\n"), "{text}");
}

#[test]
fn commit_on_the_scratch_branch_is_unpushed() {
    let (home, inst, _) = worktree_setup();
    let wt = inst.mount_path(0);
    commit_file(&wt, "feature.rs", "a\n", "one");
    commit_file(&wt, "feature.rs", "b\n", "two");
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "unpushed");
    assert_eq!(a.mounts[0].unpushed, [unpushed(&format!("refs/heads/jackin/scratch/{}", inst.container), 2, None)]);
    assert_eq!(a.summary, "1 branch unpushed");
}

#[test]
fn the_same_commit_pushed_to_a_remote_branch_is_clean() {
    let (home, inst, _) = worktree_setup();
    let wt = inst.mount_path(0);
    commit_file(&wt, "feature.rs", "a\n", "one");
    git(&wt, &["push", "-q", "origin", "HEAD:refs/heads/feature"]);
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "clean", "{a:?}");
}

#[test]
fn a_commit_on_a_detached_head_is_unpushed() {
    let (home, inst, _) = worktree_setup();
    let wt = inst.mount_path(0);
    git(&wt, &["checkout", "-q", "--detach"]);
    commit_file(&wt, "probe.rs", "a\n", "detached work");
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "unpushed");
    assert_eq!(a.mounts[0].unpushed, [unpushed("HEAD", 1, None)]);
    assert_eq!(a.summary, "detached HEAD unpushed");
}

#[test]
fn an_unrelated_unpushed_host_branch_is_not_at_risk() {
    let (home, inst, host) = worktree_setup();
    git(&host, &["checkout", "-q", "-b", "operator-private"]);
    commit_file(&host, "private.txt", "mine\n", "operator's own work");
    git(&host, &["checkout", "-q", "main"]);
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "clean", "{a:?}");
}

#[test]
fn a_scratch_commit_that_another_host_branch_holds_is_not_at_risk() {
    let (home, inst, host) = worktree_setup();
    commit_file(&inst.mount_path(0), "feature.rs", "a\n", "one");
    git(&host, &["branch", "keep-this", &format!("jackin/scratch/{}", inst.container)]);
    assert_eq!(home.assess(&inst.container).verdict, "clean");
}

#[test]
fn a_local_commit_in_a_clone_is_unpushed_with_its_upstream() {
    let (home, inst, _) = clone_setup();
    commit_file(&inst.mount_path(0), "feature.rs", "a\n", "clone work");
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "unpushed");
    assert_eq!(a.mounts[0].unpushed, [unpushed("refs/heads/main", 1, Some("origin/main"))]);
    assert_eq!(a.mounts[0].stashes, 0);
}

#[test]
fn a_clone_commit_the_host_repo_also_has_is_clean() {
    let (home, inst, host) = clone_setup();
    let clone = inst.mount_path(0);
    commit_file(&clone, "feature.rs", "a\n", "clone work");
    git(&host, &["fetch", "-q", clone.to_str().unwrap(), "main:refs/heads/from-clone"]);
    assert_eq!(home.assess(&inst.container).verdict, "clean");
}

#[test]
fn a_clone_commit_that_only_a_descendant_in_the_host_holds_is_clean() {
    // The host has the clone's commit only under a later commit the clone never saw.
    let (home, inst, host) = clone_setup();
    let clone = inst.mount_path(0);
    commit_file(&clone, "feature.rs", "a\n", "clone work");
    git(&host, &["fetch", "-q", clone.to_str().unwrap(), "main:refs/heads/from-clone"]);
    git(&host, &["checkout", "-q", "from-clone"]);
    commit_file(&host, "later.rs", "b\n", "host builds on it");
    git(&host, &["checkout", "-q", "main"]);
    git(&host, &["branch", "-q", "-f", "from-clone", "main"]);
    git(&host, &["branch", "-q", "later", "HEAD@{1}"]);
    assert_eq!(home.assess(&inst.container).verdict, "clean");
}

#[test]
fn a_stash_in_a_clone_is_at_risk() {
    let (home, inst, _) = clone_setup();
    let clone = inst.mount_path(0);
    fs::write(clone.join("README.md"), "stashed change\n").unwrap();
    git(&clone, &["stash", "-q"]);
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "unpushed");
    let m = &a.mounts[0];
    assert_eq!(m.stashes, 1);
    assert_eq!(m.files, []);
    assert_eq!(m.unpushed, []);
    assert_eq!(a.summary, "1 stash");
}

#[test]
fn a_clone_commit_only_a_local_tag_reaches_is_unpushed() {
    let (home, inst, _) = clone_setup();
    let clone = inst.mount_path(0);
    commit_file(&clone, "feature.rs", "a\n", "tagged work");
    git(&clone, &["tag", "v1-experiment"]);
    git(&clone, &["reset", "-q", "--hard", "origin/main"]);
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "unpushed");
    assert_eq!(a.mounts[0].unpushed, [unpushed("refs/tags/v1-experiment", 1, None)]);
    assert_eq!(a.summary, "1 tag unpushed");
}

#[test]
fn a_clone_whose_host_repo_is_gone_is_still_assessed() {
    let (home, inst, host) = clone_setup();
    commit_file(&inst.mount_path(0), "feature.rs", "a\n", "clone work");
    fs::remove_dir_all(&host).unwrap();
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "unpushed");
    assert_eq!(a.mounts[0].unpushed[0].commits, 1);
}

#[test]
fn a_missing_worktree_path_is_unknown() {
    let (home, inst, _) = worktree_setup();
    fs::remove_dir_all(inst.mount_path(0)).unwrap();
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "unknown");
    let error = a.mounts[0].error.as_deref().unwrap();
    assert!(error.contains("is gone"), "{error}");
    assert!(a.summary.starts_with("cannot verify: "), "{a:?}");
}

#[test]
fn a_deleted_host_repo_under_a_worktree_is_unknown() {
    let (home, inst, host) = worktree_setup();
    fs::remove_dir_all(&host).unwrap();
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "unknown");
    let error = a.mounts[0].error.as_deref().unwrap();
    assert!(error.contains("cannot be read") || error.contains("is gone"), "{error}");
}

#[test]
fn a_corrupt_git_dir_is_unknown() {
    let (home, inst, _) = worktree_setup();
    fs::write(inst.mount_path(0).join(".git"), "this is not a gitdir line\n").unwrap();
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "unknown");
    assert!(a.mounts[0].error.as_deref().unwrap().contains("cannot be read"), "{a:?}");
}

#[test]
fn a_corrupt_clone_is_unknown() {
    let (home, inst, _) = clone_setup();
    fs::write(inst.mount_path(0).join(".git/HEAD"), "garbage").unwrap();
    assert_eq!(home.assess(&inst.container).verdict, "unknown");
}

#[test]
fn ignored_files_are_counted_not_at_risk() {
    let (home, inst, _) = worktree_setup();
    let wt = inst.mount_path(0);
    fs::create_dir_all(wt.join("target/debug")).unwrap();
    fs::write(wt.join("target/debug/app"), "bin").unwrap();
    fs::write(wt.join("build.log"), "log").unwrap();
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "clean");
    assert_eq!(a.mounts[0].ignored, 2);
    assert_eq!(a.mounts[0].files, []);
}

#[test]
fn a_two_mount_instance_takes_the_worst_verdict() {
    let mut home = Home::new();
    let app = home.host_repo("app");
    let lib = home.host_repo("lib");
    let inst = home.instance("m2x7q9ab", |h, c| {
        vec![h.worktree_record(c, &app, "/workspace/app"), h.clone_record(c, &lib, "/workspace/lib")]
    });
    fs::write(inst.mount_path(1).join("README.md"), "dirty in the clone\n").unwrap();
    commit_file(&inst.mount_path(0), "a.rs", "a\n", "worktree work");
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "dirty");
    assert_eq!(a.mounts[0].verdict, "unpushed");
    assert_eq!(a.mounts[1].verdict, "dirty");
    assert_eq!(a.summary, "1 file dirty · 1 branch unpushed");
}

#[test]
fn an_in_place_instance_is_clean_and_says_so() {
    let mut home = Home::new();
    let inst = home.instance("p1ace0ab", |_, _| Vec::new());
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "clean");
    assert!(a.in_place);
    assert_eq!(a.mounts, []);
}

#[test]
fn a_malformed_isolation_record_is_unknown_for_its_mount_only() {
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance("ma1f0rmd", |h, c| {
        vec![
            h.worktree_record(c, &app, "/workspace/app"),
            json!({"mount_dst": "/workspace/x", "isolation": "worktree"}),
        ]
    });
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "unknown");
    assert_eq!(a.mounts[0].verdict, "clean");
    assert_eq!(a.mounts[1].verdict, "unknown");
    assert_eq!(a.mounts[1].mount_dst, "/workspace/x");
    assert!(a.mounts[1].error.as_deref().unwrap().contains("malformed"));
}

#[test]
fn diff_adds_each_changed_files_patch() {
    let (home, inst, _) = worktree_setup();
    fs::write(inst.mount_path(0).join("README.md"), "hello\nmore\n").unwrap();
    fs::write(inst.mount_path(0).join("new.txt"), "brand new\n").unwrap();
    let out = home.cmd("jackin-assess").arg(&inst.container).arg("--diff").arg("--format=json").output().unwrap();
    let a = &records::<Assessment>(&out.stdout)[0];
    let files = &a.mounts[0].files;
    let readme = files.iter().find(|f| f.path == "README.md").unwrap();
    assert!(readme.diff.as_deref().unwrap().contains("+more"), "{readme:?}");
    let new = files.iter().find(|f| f.path == "new.txt").unwrap();
    assert!(new.diff.as_deref().unwrap().contains("+brand new"), "{new:?}");
}

#[test]
fn exit_code_reports_findings() {
    let (home, inst, _) = worktree_setup();
    home.cmd("jackin-assess").arg(&inst.container).arg("--exit-code").assert().code(0);
    fs::write(inst.mount_path(0).join("x"), "x").unwrap();
    home.cmd("jackin-assess").arg(&inst.container).arg("--exit-code").assert().code(1);
    home.cmd("jackin-assess").arg(&inst.container).assert().code(0);
}

#[test]
fn text_format_is_one_block_per_instance() {
    let (home, inst, _) = worktree_setup();
    commit_file(&inst.mount_path(0), "f.rs", "a\n", "one");
    fs::write(inst.mount_path(0).join("README.md"), "x\n").unwrap();
    let out = home.cmd("jackin-assess").arg(&inst.container).arg("--format=text").output().unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.starts_with(&format!("{} · 1 file dirty · 1 branch unpushed\n", inst.container)), "{text}");
    assert!(text.contains("\n     M README.md\n"), "{text}");
    assert!(text.contains(&format!("jackin/scratch/{} · 1 commit · no upstream", inst.container)), "{text}");
}

#[test]
fn all_and_id_prefixes_and_stdin_select_instances() {
    let mut home = Home::new();
    let app = home.host_repo("app");
    let a = home.instance("aaaa1111", |h, c| vec![h.worktree_record(c, &app, "/workspace/a")]);
    let b = home.instance("aaaa2222", |_, _| Vec::new());
    let names = |out: &std::process::Output| -> Vec<String> {
        records::<Assessment>(&out.stdout).into_iter().map(|r| r.identity.container_base).collect()
    };
    let all = home.cmd("jackin-assess").arg("--all").output().unwrap();
    assert_eq!(names(&all).len(), 2);

    let by_id = home.cmd("jackin-assess").arg("aaaa1111").output().unwrap();
    assert_eq!(names(&by_id), [a.container.as_str()]);
    let by_prefix = home.cmd("jackin-assess").arg("aaaa2").output().unwrap();
    assert_eq!(names(&by_prefix), [b.container.as_str()]);

    let ambiguous = home.cmd("jackin-assess").arg("aaaa").output().unwrap();
    assert_eq!(ambiguous.status.code(), Some(6));
    assert!(stderr(&ambiguous).contains("names 2 instances"));

    let input = format!(
        "{}\n{}\n",
        json!({"schema_version":1,"type":"change","data":{"container_base": b.container}}),
        json!({"schema_version":1,"type":"orphan","data":{"kind":"network","name":"x","reason":"r"}})
    );
    let piped = home.cmd("jackin-assess").arg("-").write_stdin(input).output().unwrap();
    assert!(piped.status.success());
    let recs = envelopes(&piped.stdout);
    assert_eq!(recs[0].data::<Assessment>().identity.container_base, b.container);
    assert_eq!(recs[1].data::<Orphan>().name, "x", "records that name no instance pass through");
    assert_eq!(recs.len(), 2);
}

/// `jackin-assess -` keeps its input's order: each record it passes through stays between the
/// assessments of the instances named before and after it, byte for byte (a CRLF line keeps its
/// carriage return).
#[test]
fn stdin_records_keep_their_place_and_their_bytes() {
    let mut home = Home::new();
    let a = home.instance("aaaa1111", |_, _| Vec::new());
    let b = home.instance("bbbb2222", |_, _| Vec::new());
    let orphan = |name: &str| {
        format!(r#"{{"schema_version":1,"type":"orphan","data":{{"kind":"network","name":"{name}","reason":"r"}}}}"#)
    };
    let change = |c: &str| json!({"schema_version":1,"type":"change","data":{"container_base": c}}).to_string();
    let input = format!(
        "{}\n{}\n{}\r\n{}\n{}\n{}\n",
        orphan("first"),
        change(&b.container),
        orphan("second"),
        change(&a.container),
        change(&b.container),
        orphan("third")
    );
    let out = home.cmd("jackin-assess").arg("-").write_stdin(input).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.split_inclusive('\n').collect();
    assert_eq!(lines.len(), 5, "{stdout}");
    assert_eq!(lines[0], format!("{}\n", orphan("first")));
    assert!(lines[1].contains(&format!(r#""type":"assessment","data":{{"container_base":"{}""#, b.container)));
    assert_eq!(lines[2], format!("{}\r\n", orphan("second")));
    assert!(lines[3].contains(&format!(r#""type":"assessment","data":{{"container_base":"{}""#, a.container)));
    assert_eq!(lines[4], format!("{}\n", orphan("third")));
}

#[test]
fn assess_writes_nothing() {
    let (home, inst, host) = worktree_setup();
    fs::write(inst.mount_path(0).join("README.md"), "x\n").unwrap();
    let worktree_index = host.join(".git/worktrees").join(&inst.container).join("index");
    let before = (home.snapshot(), fs::read(&worktree_index).unwrap(), fs::read(host.join(".git/index")).unwrap());
    home.cmd("jackin-assess").arg("--all").arg("--diff").assert().success();
    let after = (home.snapshot(), fs::read(&worktree_index).unwrap(), fs::read(host.join(".git/index")).unwrap());
    assert!(before == after, "assess changed a file");
}

#[test]
fn the_record_mirrors_refuse_a_field_they_do_not_list() {
    let (home, inst, _) = worktree_setup();
    fs::write(inst.mount_path(0).join("README.md"), "x\n").unwrap();
    let out = home.cmd("jackin-assess").arg(&inst.container).output().unwrap();
    let mut data = envelopes(&out.stdout)[0].data.clone();
    // Where it was made is every record's (the envelope's mirror takes it); the rest is the
    // assessment's own.
    assert!(data.as_object_mut().unwrap().remove("host").is_some());
    assert!(serde_json::from_value::<Assessment>(data.clone()).is_ok());
    let with = |edit: fn(&mut Value)| {
        let mut data = data.clone();
        edit(&mut data);
        serde_json::from_value::<Assessment>(data)
    };
    assert!(with(|d| d["unplanned"] = json!(1)).is_err(), "beside the identity's flattened fields");
    assert!(with(|d| d["mounts"][0]["unplanned"] = json!(1)).is_err(), "in a mount");
    assert!(with(|d| d["mounts"][0]["files"][0]["unplanned"] = json!(1)).is_err(), "in a file entry");
    assert!(with(|d| d["mounts"][0]["files"][0]["orig_path"] = json!("OLD.md")).is_ok(), "orig_path is planned");
}

/// `git status --porcelain=v1 -uall -z`, parsed: `XY path` or `XY orig -> path`, sorted.
fn git_status_z(dir: &std::path::Path) -> Vec<String> {
    let out = std::process::Command::new("git")
        .args(["status", "--porcelain=v1", "-uall", "-z"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    let mut fields = text.split('\0').filter(|f| !f.is_empty());
    let mut lines = Vec::new();
    while let Some(entry) = fields.next() {
        let (xy, path) = entry.split_at(3);
        if xy.starts_with('R') || xy.starts_with('C') {
            lines.push(format!("{xy}{} -> {path}", fields.next().unwrap()));
        } else {
            lines.push(entry.to_owned());
        }
    }
    lines.sort();
    lines
}

/// Whether the worktree's index caches a valid tree id for its root (the TREE extension's first
/// entry has an entry count, not -1).
fn cached_trees_valid(worktree: &std::path::Path) -> bool {
    let index = fs::read(worktree.join(git(worktree, &["rev-parse", "--git-path", "index"]))).unwrap();
    let Some(at) = index.windows(4).position(|w| w == b"TREE") else { return false };
    let root = &index[at + 8..];
    let count = &root[root.iter().position(|&b| b == 0).unwrap() + 1..];
    !count.starts_with(b"-1")
}

/// Copies whole crates of the cargo registry (the sources every build of this project unpacks)
/// into `dest` until at least `files` files are copied; returns the crate directories used.
fn copy_real_sources(dest: &std::path::Path, files: usize) -> Vec<std::path::PathBuf> {
    let registry = std::path::PathBuf::from(
        std::env::var("CARGO_HOME").unwrap_or_else(|_| format!("{}/.cargo", std::env::var("HOME").unwrap())),
    )
    .join("registry/src");
    let mut crates: Vec<std::path::PathBuf> = fs::read_dir(&registry)
        .unwrap_or_else(|e| panic!("{}: {e}", registry.display()))
        .flat_map(|index| fs::read_dir(index.unwrap().path()).unwrap())
        .map(|c| c.unwrap().path())
        .filter(|c| c.is_dir())
        .collect();
    crates.sort();
    let (mut copied, mut used) = (0, Vec::new());
    for krate in crates {
        if copied >= files {
            break;
        }
        let into = dest.join(krate.file_name().unwrap());
        for file in common::files_under(&krate) {
            let meta = fs::symlink_metadata(&file).unwrap();
            if !meta.is_file() {
                continue;
            }
            let target = into.join(file.strip_prefix(&krate).unwrap());
            fs::create_dir_all(target.parent().unwrap()).unwrap();
            fs::copy(&file, &target).unwrap();
            copied += 1;
        }
        used.push(into);
    }
    assert!(copied >= files, "only {copied} files under {}", registry.display());
    used
}

/// On a worktree of a repository made of real crate sources (their directory depth and their
/// own `.gitignore` files), every kind of change and every ignore source at once: the files are
/// exactly what `git status --porcelain=v1 -uall -z` prints.
#[test]
fn real_source_tree_matches_git_status_in_every_case() {
    use std::os::unix::fs::PermissionsExt;
    let mut home = Home::new();
    let host = home.host_repo("app");
    let crates = copy_real_sources(&host.join("crates"), 600);
    let tracked = |dir: &std::path::Path| -> Vec<String> {
        let listed = git(&host, &["ls-files", "-z", "--", dir.to_str().unwrap()]);
        listed.split('\0').filter(|p| p.ends_with(".rs")).map(str::to_owned).collect()
    };
    fs::write(host.join("crates/.gitignore"), "*.scratch\n!keep.scratch\n").unwrap();
    let nested = crates[1].join("src/.gitignore");
    fs::write(&nested, "/generated/\n").unwrap();
    git(&host, &["add", "-A"]);
    git(&host, &["commit", "-q", "-m", "real sources"]);
    git(&host, &["push", "-q", "origin", "main"]);
    fs::write(host.join(".git/info/exclude"), "*.excluded\n").unwrap();
    let global_excludes = host.parent().unwrap().join("excludes");
    fs::write(&global_excludes, "*.personal\n").unwrap();
    git(&host, &["config", "core.excludesFile", global_excludes.to_str().unwrap()]);
    let inst = home.instance("r3al7ree", |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    let wt = inst.mount_path(0);

    let mut sources = tracked(&host.join("crates")).into_iter();
    let mut next = || sources.next().expect("enough tracked .rs files");
    let append = |path: &str, text: &str| {
        let mut body = fs::read(wt.join(path)).unwrap();
        body.extend_from_slice(text.as_bytes());
        fs::write(wt.join(path), body).unwrap();
    };
    let modified = next();
    append(&modified, "// edited\n");
    let deleted = next();
    fs::remove_file(wt.join(&deleted)).unwrap();
    let mode = next();
    fs::set_permissions(wt.join(&mode), fs::Permissions::from_mode(0o755)).unwrap();
    fs::create_dir_all(wt.join("new dir/sous-dossier été")).unwrap();
    fs::write(wt.join("new dir/sous-dossier été/naïve file ✓.rs"), "fn main() {}\n").unwrap();
    fs::write(wt.join("new dir/plain.txt"), "x\n").unwrap();
    fs::write(wt.join("crates/a.scratch"), "ignored\n").unwrap();
    fs::write(wt.join("crates/keep.scratch"), "negated: untracked\n").unwrap();
    let nested_dir = nested.parent().unwrap().strip_prefix(&host).unwrap();
    fs::create_dir_all(wt.join(nested_dir).join("generated")).unwrap();
    fs::write(wt.join(nested_dir).join("generated/out.rs"), "ignored\n").unwrap();
    fs::write(wt.join("notes.excluded"), "info/exclude\n").unwrap();
    fs::write(wt.join("mine.personal"), "core.excludesFile\n").unwrap();
    std::os::unix::fs::symlink("README.md", wt.join("readme-link")).unwrap();
    fs::create_dir_all(wt.join("vendored")).unwrap();
    git(&wt.join("vendored"), &["init", "-q"]);
    fs::write(wt.join("vendored/inner.txt"), "inside a nested repository\n").unwrap();
    let to_symlink = next();
    fs::remove_file(wt.join(&to_symlink)).unwrap();
    std::os::unix::fs::symlink("README.md", wt.join(&to_symlink)).unwrap();
    let to_directory = next();
    fs::remove_file(wt.join(&to_directory)).unwrap();
    fs::create_dir(wt.join(&to_directory)).unwrap();
    fs::write(wt.join(&to_directory).join("inside.rs"), "// a file where a file was\n").unwrap();
    // A whole tracked directory gone: nothing left to list it from.
    assert!(crates.len() > 3, "the real tree should hold more than three crates: {crates:?}");
    let gone_crate = crates[crates.len() - 1].strip_prefix(&host).unwrap().to_owned();
    fs::remove_dir_all(wt.join(&gone_crate)).unwrap();
    let skipped = next();
    git(&wt, &["update-index", "--skip-worktree", &skipped]);
    append(&skipped, "// hidden by skip-worktree\n");
    let assumed = next();
    git(&wt, &["update-index", "--assume-unchanged", &assumed]);
    append(&assumed, "// hidden by assume-unchanged\n");
    // update-index drops the cached tree ids of the flagged paths' directories; write-tree puts
    // them back, as any later commit would.
    git(&wt, &["write-tree"]);
    // Racily clean: different bytes of the same size, with the mtime the index entry records,
    // in an index written no earlier. Only a content comparison can see it (ctime is not
    // trusted here, as on filesystems where it moves without a change).
    let racy = next();
    git(&host, &["config", "core.trustctime", "false"]);
    git(&wt, &["status", "--porcelain"]); // refreshes and writes the index
    let entry_mtime = fs::metadata(wt.join(&racy)).unwrap().modified().unwrap();
    let mut body = fs::read(wt.join(&racy)).unwrap();
    body[0] = if body[0] == b'X' { b'Y' } else { b'X' };
    fs::write(wt.join(&racy), &body).unwrap();
    fs::File::options().write(true).open(wt.join(&racy)).unwrap().set_modified(entry_mtime).unwrap();
    let index = wt.join(git(&wt, &["rev-parse", "--git-path", "index"]));
    fs::File::options().write(true).open(&index).unwrap().set_modified(entry_mtime).unwrap();

    // Nothing staged yet, the index's cached trees valid: the assessment may skip comparing
    // HEAD with the index and narrow libgit2's status to the paths whose stat data changed, and
    // must still equal git in every case.
    assert!(cached_trees_valid(&wt), "the index's TREE extension should hold the root's tree id");
    let unstaged = git_status_z(&wt);
    for line in [
        format!(" M {modified}"),
        format!(" D {deleted}"),
        format!(" M {mode}"),
        "?? new dir/sous-dossier été/naïve file ✓.rs".to_owned(),
        "?? crates/keep.scratch".to_owned(),
        "?? readme-link".to_owned(),
        "?? vendored/".to_owned(),
        format!(" M {racy}"),
        format!(" T {to_symlink}"),
        format!(" D {to_directory}"),
        format!("?? {to_directory}/inside.rs"),
    ] {
        assert!(unstaged.contains(&line), "git status lacks {line:?}: {unstaged:#?}");
    }
    let gone = format!(" D {}/", gone_crate.display());
    assert!(unstaged.iter().any(|line| line.starts_with(&gone)), "git status lacks {gone:?}…: {unstaged:#?}");
    assert_eq!(status_lines(&home.assess(&inst.container).mounts[0]), unstaged);
    let renamed = next();
    git(&wt, &["mv", &renamed, &format!("{renamed}.moved")]);
    let staged_then_edited = next();
    append(&staged_then_edited, "// staged\n");
    git(&wt, &["add", &staged_then_edited]);
    append(&staged_then_edited, "// and edited after\n");
    let a = home.assess(&inst.container);
    let expected = git_status_z(&wt);
    for line in [
        format!(" M {modified}"),
        format!(" D {deleted}"),
        format!(" M {mode}"),
        format!("R  {renamed} -> {renamed}.moved"),
        format!("MM {staged_then_edited}"),
        "?? new dir/sous-dossier été/naïve file ✓.rs".to_owned(),
        "?? crates/keep.scratch".to_owned(),
        "?? readme-link".to_owned(),
        "?? vendored/".to_owned(),
        format!(" M {racy}"),
    ] {
        assert!(expected.contains(&line), "git status lacks {line:?}: {expected:#?}");
    }
    for hidden in
        [&skipped, &assumed, &"crates/a.scratch".to_owned(), &"notes.excluded".to_owned(), &"mine.personal".to_owned()]
    {
        assert!(!expected.iter().any(|l| l.ends_with(hidden.as_str())), "git status lists {hidden}: {expected:#?}");
    }
    assert_eq!(status_lines(&a.mounts[0]), expected);
}

/// An intent-to-add entry (`git add -N`) is left out of the index's cached trees, so the index
/// still "matches" HEAD there, also once a commit has re-validated them: the file must be listed
/// all the same.
#[test]
fn an_intent_to_add_file_is_listed() {
    let (home, inst, _) = worktree_setup();
    let wt = inst.mount_path(0);
    fs::write(wt.join("planned.rs"), "fn planned() {}\n").unwrap();
    git(&wt, &["add", "-N", "planned.rs"]);
    commit_file(&wt, "other.txt", "committed beside it\n", "a commit that leaves planned.rs intent-to-add");
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "dirty");
    assert_eq!(files(&a.mounts[0]), vec![pair("AM", "planned.rs")]);
}
