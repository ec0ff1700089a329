//! The deletion guards of jackin-purge that the other purge tests do not reach: quarantine
//! expiry (by receipt, and by mtime for a save that died half-way), the whole-directory save of
//! one unreadable mount, the refusal to copy through a symlinked directory, the refusal to
//! delete a branch that is not the session's scratch branch, a host repository that is gone,
//! commits only a reflog holds, sparse files, a quarantine that will not fit, and what libgit2
//! alone reads as clean or waits on (a path past PATH_MAX, a FIFO rule file).
//! Each test checks what is on disk afterwards, so that it fails when the guard is taken away.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use common::docker::{engine_available, Session, SessionOptions};
use common::records::{records, ErrorRecord, Purged};
use common::{branches, commit_file, git, snapshot_of, stderr, unique_id, write_json, Entry, Home, Instance};
use serde_json::{json, Value};

const DAY: u64 = 86_400;

/// Sets the modification time of `path` (not following a link) `days` into the past.
fn age(path: &Path, days: u64) {
    let when = SystemTime::now() - Duration::from_secs(days * DAY);
    let secs = when.duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs();
    let out = std::process::Command::new("touch")
        .arg("-h")
        .arg("-m")
        .arg("-d")
        .arg(format!("@{secs}"))
        .arg(path)
        .output()
        .unwrap();
    assert!(out.status.success(), "touch {}: {}", path.display(), stderr(&out));
}

fn rfc3339(at: SystemTime) -> String {
    humantime::format_rfc3339_seconds(at).to_string()
}

// --- 1. --expire-quarantine ---------------------------------------------------------------

/// A quarantine directory as jackin-purge leaves one: a receipt (when the save finished) and
/// the saved files. `expires_at` is `None` for a save that died before its receipt.
fn quarantine(home: &Home, dir_name: &str, expires_at: Option<SystemTime>) -> PathBuf {
    let dir = home.home.join("quarantine").join(dir_name);
    fs::create_dir_all(dir.join("0-workspace-app/files/notes")).unwrap();
    fs::write(dir.join("0-workspace-app/files/notes/plan.md"), format!("the plan of {dir_name}\n")).unwrap();
    if let Some(expires_at) = expires_at {
        let container = dir_name.trim_start_matches(".partial-").split("-2026").next().unwrap();
        let receipt = json!({
            "version": 1,
            "container_base": container, "instance_id": "abcdefgh", "workspace_name": "my-app",
            "workspace_label": "my-app", "role_key": "agent-smith", "agent_runtime": "test-runtime",
            "saved_at": rfc3339(SystemTime::now() - Duration::from_secs(30 * DAY)),
            "expires_at": rfc3339(expires_at),
            "verdict": "dirty", "summary": "1 file dirty",
            "mounts": [{
                "mount_dst": "/workspace/app", "isolation": "worktree", "path": "/nowhere/app",
                "original_src": "/nowhere/src/app", "verdict": "dirty", "bundle": null,
                "bundle_contents": null, "files_dir": "0-workspace-app/files",
                "files": [{"status": "??", "path": "notes/plan.md", "saved": true}],
                "tree": null, "note": null
            }]
        });
        write_json(&dir.join("receipt.json"), &receipt);
        fs::write(dir.join("RECEIPT.txt"), "jackin-purge saved the unfinished work\n").unwrap();
    }
    dir
}

fn removed_quarantines(out: &std::process::Output) -> Vec<String> {
    let mut names: Vec<String> = records::<Purged>(&out.stdout)
        .into_iter()
        .flat_map(|p| p.removed)
        .map(|r| {
            assert_eq!(r.kind, "quarantine");
            r.name
        })
        .collect();
    names.sort();
    names
}

fn path_text(path: &Path) -> String {
    path.to_str().unwrap().to_owned()
}

/// The receipt decides: a quarantine whose `expires_at` has passed is deleted even though its
/// directory was modified a moment ago (its mtime alone would keep it another 14 days), and the
/// record names the instance the receipt names.
#[test]
fn an_expired_quarantine_is_deleted_by_its_receipt_though_its_mtime_is_fresh() {
    let home = Home::new();
    let past = SystemTime::now() - Duration::from_secs(DAY);
    let expired = quarantine(&home, "jk-expired1-myapp-agentsmith-20260101T000000Z", Some(past));

    let out = home.purge(&["--expire-quarantine"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(!expired.exists(), "the expired quarantine is still there");
    let recs = records::<Purged>(&out.stdout);
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0].identity.container_base, "jk-expired1-myapp-agentsmith", "the identity comes from the receipt");
    assert_eq!(removed_quarantines(&out), [path_text(&expired)]);
    assert!(recs[0].freed_bytes > 0);
    assert!(home.quarantines().is_empty());
}

/// The receipt decides the other way too: a quarantine whose `expires_at` is still ahead
/// survives byte for byte, even when its directory was last modified long ago (by mtime alone
/// it would have expired).
#[test]
fn an_unexpired_quarantine_survives_expiry_byte_for_byte_though_its_mtime_is_old() {
    let home = Home::new();
    let future = SystemTime::now() + Duration::from_secs(3 * DAY);
    let kept = quarantine(&home, "jk-unexpird-myapp-agentsmith-20260101T000000Z", Some(future));
    age(&kept, 400);
    let before = snapshot_of(&kept);

    let out = home.purge(&["--expire-quarantine"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(records::<Purged>(&out.stdout).is_empty(), "nothing expired");
    assert_eq!(snapshot_of(&kept), before, "the unexpired quarantine changed");
    // Days given to the expiry are a later run's word against the receipt's: they count only
    // for a leftover without a receipt, never for saved work.
    let out = home.purge(&["--expire-quarantine", "--quarantine-days", "0"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(records::<Purged>(&out.stdout).is_empty(), "nothing expired");
    assert_eq!(snapshot_of(&kept), before, "the unexpired quarantine changed");
    assert_eq!(home.quarantines(), vec![kept]);
}

/// A save that died half-way leaves a directory without a receipt; it expires
/// `--quarantine-days` after its mtime. An old one goes (the `.partial-` name of an unfinished
/// save and a finished name alike), a fresh one stays byte for byte, and a longer
/// `--quarantine-days` keeps the old one too.
#[test]
fn a_quarantine_without_a_receipt_expires_quarantine_days_after_its_mtime() {
    let home = Home::new();
    let old_partial = quarantine(&home, ".partial-jk-oldpartl-myapp-agentsmith-20260101T000000Z-4242", None);
    let old_named = quarantine(&home, "jk-oldnamed-myapp-agentsmith-20260101T000000Z", None);
    let fresh = quarantine(&home, ".partial-jk-freshprt-myapp-agentsmith-20260101T000000Z-4243", None);
    age(&old_partial, 20);
    age(&old_named, 20);
    age(&fresh, 2);
    let fresh_before = snapshot_of(&fresh);
    let old_before = (snapshot_of(&old_partial), snapshot_of(&old_named));

    // 20 days old is within 30 days: nothing expires.
    let out = home.purge(&["--expire-quarantine", "--quarantine-days", "30"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(records::<Purged>(&out.stdout).is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
    assert_eq!((snapshot_of(&old_partial), snapshot_of(&old_named)), old_before);

    // The default 14 days: the two 20-day-old ones go, the 2-day-old one stays.
    let out = home.purge(&["--expire-quarantine"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut expected = vec![path_text(&old_partial), path_text(&old_named)];
    expected.sort();
    assert_eq!(removed_quarantines(&out), expected);
    assert!(!old_partial.exists() && !old_named.exists(), "an old quarantine without a receipt survived");
    assert_eq!(snapshot_of(&fresh), fresh_before, "the fresh one changed");
    for rec in records::<Purged>(&out.stdout) {
        assert!(rec.freed_bytes > 0, "{rec:?}");
    }
}

/// `--dry-run` lists exactly what would expire (by receipt and by mtime) and removes nothing;
/// the real run then removes exactly those. What is not a quarantine (not named `jk-…`) is
/// never touched, however old.
#[test]
fn a_dry_run_of_expiry_lists_what_would_go_and_removes_nothing() {
    let home = Home::new();
    let past = SystemTime::now() - Duration::from_secs(DAY);
    let future = SystemTime::now() + Duration::from_secs(DAY);
    let by_receipt = quarantine(&home, "jk-byrecpt1-myapp-agentsmith-20260101T000000Z", Some(past));
    let by_mtime = quarantine(&home, ".partial-jk-bymtime1-myapp-agentsmith-20260101T000000Z-7", None);
    let unexpired = quarantine(&home, "jk-unexpird-myapp-agentsmith-20260101T000000Z", Some(future));
    let fresh = quarantine(&home, ".partial-jk-freshprt-myapp-agentsmith-20260101T000000Z-8", None);
    let not_ours = home.home.join("quarantine/operator-notes");
    fs::create_dir_all(&not_ours).unwrap();
    fs::write(not_ours.join("keep.txt"), "the operator's\n").unwrap();
    for dir in [&by_mtime, &unexpired, &not_ours] {
        age(dir, 100);
    }

    let before = home.snapshot();
    let out = home.purge(&["--expire-quarantine", "--dry-run"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let mut expected = vec![path_text(&by_receipt), path_text(&by_mtime)];
    expected.sort();
    assert_eq!(removed_quarantines(&out), expected);
    for rec in records::<Purged>(&out.stdout) {
        assert!(rec.dry_run, "{rec:?}");
        assert!(rec.freed_bytes > 0, "a dry run says what it would free: {rec:?}");
    }
    assert_eq!(home.snapshot(), before, "a dry run removed something");
    assert!(by_receipt.exists() && by_mtime.exists());

    let out = home.purge(&["--expire-quarantine"], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(removed_quarantines(&out), expected);
    let mut left = vec![unexpired, fresh, not_ours.clone()];
    left.sort();
    assert_eq!(home.quarantines(), left);
    assert_eq!(fs::read_to_string(not_ours.join("keep.txt")).unwrap(), "the operator's\n");
}

// --- purge fixtures -------------------------------------------------------------------------

fn scratch_branch(inst: &Instance) -> String {
    format!("jackin/scratch/{}", inst.container)
}

fn agent_identity(wt: &Path) {
    git(wt, &["config", "user.email", "agent@example.invalid"]);
    git(wt, &["config", "user.name", "Agent"]);
}

fn only_quarantine(home: &Home, out: &std::process::Output) -> PathBuf {
    let recs = records::<Purged>(&out.stdout);
    assert_eq!(recs.len(), 1, "{recs:?}");
    let q = PathBuf::from(recs[0].quarantine.as_deref().expect("a quarantine path in the record"));
    assert_eq!(home.quarantines(), vec![q.clone()]);
    q
}

fn is_gone(home: &Home, inst: &Instance) -> bool {
    !inst.dir.exists() && home.index_row(&inst.container).is_none()
}

/// Every regular file's bytes under `dir`, as (path relative to `dir`, bytes).
fn files_relative(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    snapshot_of(dir)
        .into_iter()
        .filter_map(|(path, entry)| match entry {
            Entry::File { bytes, .. } => Some((path.strip_prefix(dir).unwrap().to_path_buf(), bytes)),
            _ => None,
        })
        .collect()
}

// --- 2. one unreadable mount, readable isolation records ------------------------------------

/// One mount git cannot read (its `.git` file names a gitdir that does not exist) while the
/// isolation records parse: a discard moves that mount's whole directory into the quarantine,
/// every file's bytes with it, and the receipt says so for that mount alone; the readable mount
/// beside it is saved file by file as usual, and no `git_tree` is claimed.
#[test]
fn one_unreadable_mount_is_moved_whole_into_the_quarantine() {
    if !engine_available("one_unreadable_mount_is_moved_whole_into_the_quarantine") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let lib = home.host_repo("lib");
    let inst = home.instance(&unique_id(), |h, c| {
        vec![h.worktree_record(c, &app, "/workspace/app"), h.worktree_record(c, &lib, "/workspace/lib")]
    });
    let broken = inst.mount_path(0);
    let readable = inst.mount_path(1);
    fs::write(broken.join("README.md"), "changed by the agent\n").unwrap();
    fs::create_dir_all(broken.join("notes")).unwrap();
    fs::write(broken.join("notes/plan.md"), "the plan\n").unwrap();
    let dot_git = "gitdir: /nonexistent/jackin-test/worktrees/gone\n";
    fs::write(broken.join(".git"), dot_git).unwrap();
    fs::write(readable.join("lib-notes.md"), "lib notes\n").unwrap();
    let before_files = files_relative(&broken);
    assert_eq!(home.isolation(&inst.container).records.len(), 2, "the records parse");

    let before = home.snapshot();
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(6), "an unreadable mount is at risk: {}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "at_risk");
    assert_eq!(home.snapshot(), before, "a refusal changes nothing");

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    assert!(is_gone(&home, &inst), "the instance was not purged");

    let receipt = common::state::receipt(&q);
    assert!(receipt.git_tree.is_none(), "not the whole git/ tree: {receipt:#?}");
    let mounts = &receipt.mounts;
    assert_eq!(mounts.len(), 2, "{receipt:#?}");
    let whole = &mounts[0];
    assert_eq!(whole.mount_dst, "/workspace/app");
    assert_eq!(whole.verdict, "unknown");
    assert_eq!(whole.path, path_text(&broken));
    assert_eq!(whole.tree.as_deref(), Some("0-workspace-app/tree"));
    assert_eq!(whole.note.as_deref(), Some("could not be read; the whole directory was moved here"));
    assert!(whole.bundle.is_none() && whole.files_dir.is_none(), "{whole:#?}");
    let saved = q.join("0-workspace-app/tree");
    assert_eq!(files_relative(&saved), before_files, "the whole directory, byte for byte");
    assert_eq!(fs::read_to_string(saved.join(".git")).unwrap(), dot_git);
    assert_eq!(fs::read_to_string(saved.join("notes/plan.md")).unwrap(), "the plan\n");

    let by_file = &mounts[1];
    assert_eq!(by_file.mount_dst, "/workspace/lib");
    assert_eq!(by_file.verdict, "dirty");
    assert!(by_file.tree.is_none(), "{by_file:#?}");
    assert_eq!(
        fs::read_to_string(q.join(by_file.files_dir.as_deref().unwrap()).join("lib-notes.md")).unwrap(),
        "lib notes\n"
    );

    let text = fs::read_to_string(q.join("RECEIPT.txt")).unwrap();
    assert!(text.contains(&format!("the whole directory is in {}/0-workspace-app/tree", q.display())), "{text}");
    assert!(!text.contains("git/ tree of the instance"), "{text}");
    assert!(!branches(&app).contains(&scratch_branch(&inst)) && !branches(&lib).contains(&scratch_branch(&inst)));
}

/// The whole-directory save of an unreadable worktree keeps its commits too: they live in the
/// host repository, on the scratch branch the purge deletes and in the worktree's detached HEAD
/// whose registration it prunes, not in the directory moved. Both come back from the bundle.
#[test]
fn an_unreadable_worktree_s_commits_are_saved_before_its_branch_and_registration_go() {
    if !engine_available("an_unreadable_worktree_s_commits_are_saved_before_its_branch_and_registration_go") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    git(&app, &["branch", "feature/x"]);
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = inst.mount_path(0);
    agent_identity(&wt);
    let commit = commit_file(&wt, "src/feature.rs", "fn feature() {}\n", "agent work");
    git(&wt, &["checkout", "-q", "--detach"]);
    let detached = commit_file(&wt, "src/more.rs", "fn more() {}\n", "more agent work, detached");
    fs::write(wt.join(".git"), "gitdir: /nonexistent/jackin-test/worktrees/gone\n").unwrap();
    let heads =
        git(&app, &["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/main", "refs/heads/feature"]);

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    assert!(is_gone(&home, &inst));
    assert!(!branches(&app).contains(&scratch_branch(&inst)));

    let receipt = common::state::receipt(&q);
    let mount = &receipt.mounts[0];
    let bundle = mount.bundle.as_deref().unwrap_or_else(|| panic!("no bundle of the scratch branch: {receipt:#?}"));
    let fresh = home.tmp.path().join("fresh");
    let origin = git(&app, &["remote", "get-url", "origin"]);
    git(home.tmp.path(), &["clone", "-q", &origin, fresh.to_str().unwrap()]);
    let bundle = q.join(bundle);
    git(&fresh, &["fetch", "-q", bundle.to_str().unwrap(), "refs/*:refs/recovered/*"]);
    let recovered = git(&fresh, &["rev-parse", &format!("refs/recovered/heads/{}", scratch_branch(&inst))]);
    assert_eq!(recovered, commit);
    let listed = git(&fresh, &["bundle", "list-heads", bundle.to_str().unwrap()]);
    // Under refs/, so the receipt's one fetch brings it back too.
    assert!(listed.contains(&format!("{detached} refs/jackin/HEAD")), "the detached HEAD is in the bundle: {listed}");
    assert_eq!(git(&fresh, &["show", "refs/recovered/jackin/HEAD:src/more.rs"]), "fn more() {}");
    assert_eq!(
        mount.tree.as_deref(),
        Some("0-workspace-app/tree"),
        "the directory is moved whole as well: {receipt:#?}"
    );
    assert_eq!(
        git(&app, &["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/main", "refs/heads/feature"]),
        heads,
        "the host's other branches are untouched"
    );
}

// --- 3. no copy through a symlinked directory -----------------------------------------------

/// git listed `src/main.rs` (tracked, now deleted) because the agent replaced the directory
/// `src` by a link to a directory outside the home that has a `main.rs` of its own. The quarantine
/// saves the link as a link and records `src/main.rs` as not saved; it never copies the outside
/// file's content, and the outside file is untouched.
#[test]
fn a_changed_path_beneath_a_symlinked_directory_is_not_copied_through_the_link() {
    if !engine_available("a_changed_path_beneath_a_symlinked_directory_is_not_copied_through_the_link") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = inst.mount_path(0);
    let outside = home.tmp.path().join("outside");
    fs::create_dir_all(&outside).unwrap();
    let secret = "the outside file, not the session's\n";
    fs::write(outside.join("main.rs"), secret).unwrap();
    let outside_before = snapshot_of(&outside);
    fs::write(wt.join("README.md"), "changed by the agent\n").unwrap();
    fs::remove_dir_all(wt.join("src")).unwrap();
    std::os::unix::fs::symlink(&outside, wt.join("src")).unwrap();

    let out = home.cmd("jackin-assess").arg(&inst.container).arg("--format=json").output().unwrap();
    let listed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(listed.contains("\"src/main.rs\""), "git lists the path beneath the link: {listed}");

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    assert!(is_gone(&home, &inst));
    assert_eq!(snapshot_of(&outside), outside_before, "the outside directory changed");

    let receipt = common::state::receipt(&q);
    let mount = &receipt.mounts[0];
    let files = q.join(mount.files_dir.as_deref().unwrap());
    let saved: Vec<(&str, bool)> = mount.files.iter().map(|f| (f.path.as_str(), f.saved)).collect();
    assert!(saved.contains(&("src/main.rs", false)), "src/main.rs is not saved through the link: {saved:?}");
    assert!(saved.contains(&("README.md", true)), "{saved:?}");
    assert_eq!(fs::read_to_string(files.join("README.md")).unwrap(), "changed by the agent\n");
    assert_eq!(fs::read_link(files.join("src")).unwrap(), outside, "the link is saved as a link");
    for (path, entry) in snapshot_of(&q) {
        assert!(
            !matches!(&entry, Entry::File { bytes, .. } if bytes == secret.as_bytes()),
            "the outside file's content was copied into the quarantine at {}",
            path.display()
        );
    }
}

// --- 4. a record naming a branch that is not the scratch branch -----------------------------

/// An isolation record whose `scratch_branch` names another branch of the host repository
/// (`main`): the purge refuses with that message and deletes neither that branch nor anything
/// else on disk. A rerun after the record is put right re-assesses the session, so the commit
/// only the real scratch branch has is still found at risk, and it lands in the quarantine
/// before the branch is deleted.
#[test]
fn a_record_naming_another_branch_is_refused_and_the_branch_survives() {
    if !engine_available("a_record_naming_another_branch_is_refused_and_the_branch_survives") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    git(&app, &["branch", "feature/x"]);
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = inst.mount_path(0);
    agent_identity(&wt);
    let commit = commit_file(&wt, "src/feature.rs", "fn feature() {}\n", "agent work");
    let session =
        Session::launch(&inst.container, SessionOptions { dind: false, running: false, ..Default::default() });
    let isolation_path = inst.dir.join(".jackin/isolation.json");
    let good_record = fs::read_to_string(&isolation_path).unwrap();

    for named in ["main", "feature/x"] {
        home.edit_isolation(&inst.container, |isolation| isolation["records"][0]["scratch_branch"] = json!(named));
        let heads = git(&app, &["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"]);
        let worktrees = git(&app, &["worktree", "list", "--porcelain"]);
        let before = home.snapshot();

        let out = home.purge(&["--discard-unfinished", &inst.container], "");
        assert_eq!(out.status.code(), Some(6), "{named}: {}", stderr(&out));
        let message = format!(
            "the isolation record names branch \"{named}\", not this instance's scratch branch {}",
            scratch_branch(&inst)
        );
        assert!(stderr(&out).contains(&message), "{named}: {}", stderr(&out));
        let errors = records::<ErrorRecord>(&out.stdout);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].message.contains(&message), "{errors:?}");

        assert_eq!(
            git(&app, &["for-each-ref", "--format=%(refname) %(objectname)", "refs/heads"]),
            heads,
            "{named}: a branch of the host repository changed"
        );
        assert_eq!(git(&app, &["worktree", "list", "--porcelain"]), worktrees, "{named}");
        assert_eq!(home.snapshot(), before, "{named}: the refusal changed the home");
        assert_eq!(home.status(&inst.container), ("active".into(), "active".into()), "{named}");
        assert!(home.quarantines().is_empty(), "{named}: nothing was saved, since nothing is deleted");
        assert!(Session::exists("container", &session.container), "{named}: the refusal comes before Docker");
    }

    // Put right, the record lets the purge finish, and the real scratch branch's commit is
    // found at risk and saved before that branch goes.
    fs::write(&isolation_path, &good_record).unwrap();
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(6), "the commit is at risk: {}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "at_risk");
    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    assert!(is_gone(&home, &inst));
    assert!(!Session::exists("container", &session.container));
    let b = branches(&app);
    assert!(!b.contains(&scratch_branch(&inst)), "{b:?}");
    assert!(b.contains(&"main".to_owned()) && b.contains(&"feature/x".to_owned()), "{b:?}");
    let receipt = common::state::receipt(&q);
    let bundle = q.join(receipt.mounts[0].bundle.as_deref().unwrap());
    let fresh = home.tmp.path().join("fresh");
    let origin = git(&app, &["remote", "get-url", "origin"]);
    git(home.tmp.path(), &["clone", "-q", &origin, fresh.to_str().unwrap()]);
    git(&fresh, &["fetch", "-q", bundle.to_str().unwrap(), "refs/*:refs/recovered/*"]);
    assert_eq!(git(&fresh, &["rev-parse", &format!("refs/recovered/heads/{}", scratch_branch(&inst))]), commit);
}

// --- 5. the host repository gone --------------------------------------------------------------

/// The host repository of a clean worktree was deleted before the purge. Its worktree can no
/// longer be read (its refs and objects lived in the host), so it is `unknown`, which is at risk:
/// without a discard nothing is deleted. With `--discard-unfinished` the purge finishes, with no
/// host repository to change: exit 0, the worktree directory in the quarantine, no data dir and
/// no index row left.
#[test]
fn a_session_whose_host_repository_is_gone_still_purges_on_a_discard() {
    if !engine_available("a_session_whose_host_repository_is_gone_still_purges_on_a_discard") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let session =
        Session::launch(&inst.container, SessionOptions { dind: false, running: false, ..Default::default() });
    let wt = inst.mount_path(0);
    let out = home.purge(&["--dry-run", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "clean while the host is there: {}", stderr(&out));
    fs::remove_dir_all(&app).unwrap();

    let before = home.snapshot();
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let errors = records::<ErrorRecord>(&out.stdout);
    assert_eq!(errors[0].code, "at_risk", "{errors:?}");
    assert!(errors[0].message.contains("cannot verify"), "{errors:?}");
    assert_eq!(home.snapshot(), before);

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    assert!(is_gone(&home, &inst), "the data dir or the row is left");
    assert!(!Session::exists("container", &session.container));
    let kinds: Vec<String> = records::<Purged>(&out.stdout)[0].removed.iter().map(|r| r.kind.clone()).collect();
    assert!(!kinds.iter().any(|k| k == "worktree" || k == "branch"), "no host repository to change: {kinds:?}");
    let receipt = common::state::receipt(&q);
    assert_eq!(receipt.mounts[0].tree.as_deref(), Some("0-workspace-app/tree"), "{receipt:#?}");
    let saved = q.join("0-workspace-app/tree");
    assert_eq!(fs::read_to_string(saved.join("README.md")).unwrap(), "hello\n");
    assert!(!wt.exists());
}

/// The host repository gone, with work in the worktree: on a discard that work lands in the
/// quarantine, every file's bytes, before the directory is deleted.
#[test]
fn work_in_a_worktree_whose_host_repository_is_gone_lands_in_the_quarantine() {
    if !engine_available("work_in_a_worktree_whose_host_repository_is_gone_lands_in_the_quarantine") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = inst.mount_path(0);
    fs::write(wt.join("README.md"), "changed by the agent\n").unwrap();
    fs::create_dir_all(wt.join("notes")).unwrap();
    fs::write(wt.join("notes/plan.md"), "the plan\n").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", wt.join("notes/link")).unwrap();
    fs::remove_dir_all(&app).unwrap();
    let before_files = files_relative(&wt);

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    assert!(is_gone(&home, &inst));
    let receipt = common::state::receipt(&q);
    let mount = &receipt.mounts[0];
    assert_eq!(mount.verdict, "unknown");
    assert_eq!(mount.tree.as_deref(), Some("0-workspace-app/tree"), "{receipt:#?}");
    let saved = q.join("0-workspace-app/tree");
    assert_eq!(files_relative(&saved), before_files);
    assert_eq!(fs::read_to_string(saved.join("README.md")).unwrap(), "changed by the agent\n");
    assert_eq!(fs::read_link(saved.join("notes/link")).unwrap(), Path::new("/etc/hostname"));
}

// --- 6. commits only the reflog holds -------------------------------------------------------

/// A commit the agent made and then moved away from (`git reset --hard HEAD~1`, `git commit
/// --amend`) is reachable only from the reflogs of the worktree or clone, which the purge deletes
/// with the worktree's registration, its scratch branch or the clone's directory.
fn fresh_clone_of_origin(home: &Home, host: &Path) -> PathBuf {
    let fresh = home.tmp.path().join("fresh");
    let origin = git(host, &["remote", "get-url", "origin"]);
    git(home.tmp.path(), &["clone", "-q", &origin, fresh.to_str().unwrap()]);
    fresh
}

/// The commits of `ids` that `repo` has, after fetching every ref of `bundle` into it.
fn fetched_from_bundle(repo: &Path, bundle: &Path, ids: &[&str]) -> Vec<String> {
    git(repo, &["bundle", "verify", "-q", bundle.to_str().unwrap()]);
    git(repo, &["fetch", "-q", bundle.to_str().unwrap(), "refs/*:refs/recovered/*"]);
    ids.iter()
        .filter(|id| {
            std::process::Command::new("git")
                .args(["cat-file", "-e", &format!("{id}^{{commit}}")])
                .current_dir(repo)
                .status()
                .unwrap()
                .success()
        })
        .map(|id| id.to_string())
        .collect()
}

/// The receipt's refs that it says hold commits only the reflog reached.
fn reflog_refs_of(mount: &common::state::SavedMount) -> Vec<String> {
    mount.bundle_contents.as_ref().map(|b| b.from_reflog.clone()).unwrap_or_default()
}

/// A worktree whose one commit was reset away holds nothing on its branch, but the commit exists
/// nowhere else: the session is at risk ("1 commit only in the reflog"), a plain purge refuses
/// and changes nothing, and a discard bundles the commit under a ref the receipt says came from
/// the reflog; fetched into a fresh clone of origin, the commit is there.
#[test]
fn a_commit_reset_away_in_a_worktree_is_at_risk_and_saved_from_the_reflog() {
    if !engine_available("a_commit_reset_away_in_a_worktree_is_at_risk_and_saved_from_the_reflog") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = inst.mount_path(0);
    agent_identity(&wt);
    let dropped = commit_file(&wt, "src/dropped.rs", "fn dropped() {}\n", "work the agent reset away");
    git(&wt, &["reset", "-q", "--hard", "HEAD~1"]);

    let assessment = home.assess(&inst.container);
    assert_eq!(assessment.verdict, "unpushed", "{assessment:?}");
    assert_eq!(assessment.summary, "1 commit only in the reflog");

    let before = home.snapshot();
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let recs = records::<ErrorRecord>(&out.stdout);
    assert_eq!(recs[0].code, "at_risk");
    assert!(recs[0].message.contains("1 commit only in the reflog"), "{recs:?}");
    assert_eq!(home.snapshot(), before, "nothing changed");

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    assert!(is_gone(&home, &inst));
    let receipt = common::state::receipt(&q);
    let mount = &receipt.mounts[0];
    let bundle = q.join(mount.bundle.as_deref().unwrap_or_else(|| panic!("no bundle: {receipt:#?}")));
    let from_reflog = reflog_refs_of(mount);
    assert_eq!(from_reflog, ["refs/jackin/reflog/0"], "{receipt:#?}");
    let fresh = fresh_clone_of_origin(&home, &app);
    assert_eq!(fetched_from_bundle(&fresh, &bundle, &[&dropped]), [dropped.as_str()]);
    assert_eq!(git(&fresh, &["rev-parse", "refs/recovered/jackin/reflog/0"]), dropped);
    let text = fs::read_to_string(q.join("RECEIPT.txt")).unwrap();
    assert!(text.contains(&format!("refs/jackin/reflog/0 {dropped} (from the reflog)")), "{text}");
}

/// An amended commit in a worktree: the amended one is on the scratch branch, the one before the
/// amend only in the reflog. A discard saves both.
#[test]
fn a_commit_amended_in_a_worktree_is_saved_with_the_one_before_the_amend() {
    if !engine_available("a_commit_amended_in_a_worktree_is_saved_with_the_one_before_the_amend") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = inst.mount_path(0);
    agent_identity(&wt);
    let before_amend = commit_file(&wt, "src/feature.rs", "fn first_try() {}\n", "agent work");
    fs::write(wt.join("src/feature.rs"), "fn second_try() {}\n").unwrap();
    git(&wt, &["commit", "-q", "-a", "--amend", "-m", "agent work, amended"]);
    let amended = git(&wt, &["rev-parse", "HEAD"]);

    let summary = home.assess(&inst.container).summary;
    assert_eq!(summary, "1 branch unpushed · 1 commit only in the reflog");

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    let receipt = common::state::receipt(&q);
    let mount = &receipt.mounts[0];
    let bundle = q.join(mount.bundle.as_deref().unwrap());
    assert_eq!(reflog_refs_of(mount), ["refs/jackin/reflog/0"], "{receipt:#?}");
    let fresh = fresh_clone_of_origin(&home, &app);
    assert_eq!(fetched_from_bundle(&fresh, &bundle, &[&before_amend, &amended]), [before_amend.clone(), amended]);
    assert_eq!(git(&fresh, &["show", &format!("{before_amend}:src/feature.rs")]), "fn first_try() {}");
}

/// The same in a clone, whose reflogs are in its own `.git/logs/`: a commit reset away and the
/// commit before an amend are at risk, a plain purge refuses, and a discard saves both (with the
/// amended commit on its branch).
#[test]
fn commits_reset_away_and_amended_in_a_clone_are_saved_from_its_reflogs() {
    if !engine_available("commits_reset_away_and_amended_in_a_clone_are_saved_from_its_reflogs") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.clone_record(c, &app, "/workspace/app")]);
    let clone = inst.mount_path(0);
    let dropped = commit_file(&clone, "src/dropped.rs", "fn dropped() {}\n", "work the agent reset away");
    git(&clone, &["reset", "-q", "--hard", "HEAD~1"]);
    assert_eq!(home.assess(&inst.container).summary, "1 commit only in the reflog");

    let before_amend = commit_file(&clone, "src/feature.rs", "fn first_try() {}\n", "agent work");
    fs::write(clone.join("src/feature.rs"), "fn second_try() {}\n").unwrap();
    git(&clone, &["commit", "-q", "-a", "--amend", "-m", "agent work, amended"]);
    let amended = git(&clone, &["rev-parse", "HEAD"]);
    assert_eq!(home.assess(&inst.container).summary, "1 branch unpushed · 2 commits only in the reflog");

    let before = home.snapshot();
    let out = home.purge(&[&inst.container], "");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "at_risk");
    assert_eq!(home.snapshot(), before, "nothing changed");

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    assert!(is_gone(&home, &inst));
    let receipt = common::state::receipt(&q);
    let mount = &receipt.mounts[0];
    let bundle = q.join(mount.bundle.as_deref().unwrap());
    assert_eq!(reflog_refs_of(mount).len(), 2, "one ref per reflog-only tip: {receipt:#?}");
    let fresh = fresh_clone_of_origin(&home, &app);
    let ids = [dropped.as_str(), before_amend.as_str(), amended.as_str()];
    assert_eq!(fetched_from_bundle(&fresh, &bundle, &ids), ids);
}

// --- 7. sparse files, and a quarantine that does not fit ------------------------------------

const GIB: u64 = 1 << 30;

/// A 4 GiB `disk.img` with three small extents of data (the rest holes), untracked in a
/// worktree: the offsets and what is written there.
fn sparse_disk_image(wt: &Path) -> Vec<(u64, Vec<u8>)> {
    use std::os::unix::fs::FileExt;
    let extents = vec![
        (0, b"the first extent".to_vec()),
        (2 * GIB + 12_345, b"one in the middle".to_vec()),
        (4 * GIB - 17, b"the last 17 bytes".to_vec()),
    ];
    let file = fs::File::create(wt.join("disk.img")).unwrap();
    file.set_len(4 * GIB).unwrap();
    for (at, bytes) in &extents {
        file.write_at(bytes, *at).unwrap();
    }
    extents
}

fn allocated_bytes(path: &Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    fs::symlink_metadata(path).unwrap().blocks() * 512
}

/// A sparse file is saved sparse: the copy in `files/` has the same size and the same bytes at
/// every data offset, and its allocated blocks stay a few pages, not 4 GiB.
#[test]
fn a_sparse_file_is_saved_with_its_holes() {
    if !engine_available("a_sparse_file_is_saved_with_its_holes") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let extents = sparse_disk_image(&inst.mount_path(0));
    assert!(allocated_bytes(&inst.mount_path(0).join("disk.img")) < GIB, "the original is sparse");

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    let saved = q.join("0-workspace-app/files/disk.img");
    assert_eq!(fs::metadata(&saved).unwrap().len(), 4 * GIB);
    let allocated = allocated_bytes(&saved);
    assert!(allocated <= 1 << 20, "the copy holds {allocated} bytes of blocks");
    let file = fs::File::open(&saved).unwrap();
    for (at, bytes) in &extents {
        let mut read = vec![0; bytes.len()];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut read, *at).unwrap();
        assert_eq!(&read, bytes, "at offset {at}");
    }
}

/// A quarantine on a filesystem too small for the files to save (a 4 MiB tmpfs; 8 MiB of data)
/// is refused before anything is deleted: `quarantine_failed`, nothing changed in the home, the
/// quarantine empty. A sparse 4 GiB image in place of the data is counted by its blocks, and
/// fits.
#[test]
fn a_quarantine_that_will_not_fit_is_refused_before_anything_is_deleted() {
    let test = "a_quarantine_that_will_not_fit_is_refused_before_anything_is_deleted";
    if !engine_available(test) {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let Some(_quarantine) = common::Tmpfs::mount(test, &home.home.join("quarantine"), "mode=0700,size=4m") else {
        return;
    };
    let wt = inst.mount_path(0);
    let data: Vec<u8> = (0..8u32 << 20).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    fs::write(wt.join("build-output.bin"), &data).unwrap();

    let before = home.snapshot();
    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let recs = records::<ErrorRecord>(&out.stdout);
    assert_eq!(recs[0].code, "quarantine_failed", "{recs:?}");
    assert!(recs[0].message.contains("does not fit"), "{recs:?}");
    assert_eq!(home.snapshot(), before, "nothing changed");
    assert_eq!(fs::read_dir(home.home.join("quarantine")).unwrap().count(), 0);

    fs::remove_file(wt.join("build-output.bin")).unwrap();
    sparse_disk_image(&wt);
    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "the sparse image alone fits: {}", stderr(&out));
    assert!(is_gone(&home, &inst));
}

// --- 8. names that are not UTF-8 ------------------------------------------------------------

/// A name's bytes from its wire form: `<field>_bytes` (base64) when present, else the text.
fn wire_name(entry: &Value, field: &str) -> Vec<u8> {
    use base64::Engine;
    match entry[format!("{field}_bytes")].as_str() {
        Some(b64) => base64::engine::general_purpose::STANDARD.decode(b64).expect("base64"),
        None => entry[field].as_str().expect("a name").as_bytes().to_vec(),
    }
}

fn os(bytes: &[u8]) -> &std::ffi::OsStr {
    std::os::unix::ffi::OsStrExt::from_bytes(bytes)
}

/// The agent names files with any bytes. An untracked `notes-<0xFF>.txt` beside a UTF-8
/// `notes-\377.txt` (the text the first one is written as), a directory `d<0xFE>/` with a file in
/// it, a tracked file renamed to `old-<0xC3>.rs` and a name with a newline and an escape: the
/// assessment lists each as its own entry whose bytes come back exactly from the record, and a
/// discard saves each under its own bytes with its own content, the receipt naming them the same
/// way. Before names were bytes, the first was listed as `notes-\u{FFFD}.txt`, looked for under
/// that name, recorded as "nothing to save", and deleted.
#[test]
fn names_that_are_not_utf8_are_listed_losslessly_and_saved_under_their_own_bytes() {
    if !engine_available("names_that_are_not_utf8_are_listed_losslessly_and_saved_under_their_own_bytes") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = inst.mount_path(0);
    let files: [(&[u8], &str); 4] = [
        (b"notes-\xff.txt", "the invalid one\n"),
        (b"notes-\\377.txt", "the UTF-8 one that reads the same\n"),
        (b"d\xfe/inner.txt", "inside a directory with an invalid name\n"),
        (b"line\nbreak-\x1b[31m.txt", "a newline and an escape\n"),
    ];
    for (name, content) in files {
        let path = wt.join(os(name));
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, content).unwrap();
    }
    git(&wt, &["mv", "README.md", "old-\u{1}.rs"]);
    let renamed = std::process::Command::new("git")
        .current_dir(&wt)
        .arg("mv")
        .arg("old-\u{1}.rs")
        .arg(os(b"old-\xc3.rs"))
        .status()
        .unwrap();
    assert!(renamed.success());

    let listed = home.cmd("jackin-assess").args(["--format=json", &inst.container]).output().unwrap();
    assert!(listed.status.success(), "{}", stderr(&listed));
    let assessment: Value = serde_json::from_slice(listed.stdout.split(|b| *b == b'\n').next().unwrap()).unwrap();
    let entries = assessment["data"]["mounts"][0]["files"].as_array().unwrap().clone();
    let names: Vec<Vec<u8>> = entries.iter().map(|e| wire_name(e, "path")).collect();
    for (name, _) in files {
        assert!(names.contains(&name.to_vec()), "{:?} missing from {entries:?}", String::from_utf8_lossy(name));
    }
    let invalid = entries.iter().find(|e| wire_name(e, "path") == b"notes-\xff.txt").unwrap();
    assert_eq!(invalid["path"], "notes-\\377.txt", "the text form escapes the invalid byte");
    let utf8 = entries.iter().find(|e| wire_name(e, "path") == b"notes-\\377.txt").unwrap();
    assert!(utf8.get("path_bytes").is_none(), "a UTF-8 name has no second field: {utf8}");
    let rename = entries.iter().find(|e| e["status"].as_str().unwrap().starts_with('R')).expect("the rename");
    assert_eq!(wire_name(rename, "path"), b"old-\xc3.rs");
    assert_eq!(wire_name(rename, "orig_path"), b"README.md");

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    let saved_dir = q.join("0-workspace-app/files");
    for (name, content) in files {
        let saved = fs::read(saved_dir.join(os(name)));
        assert_eq!(saved.ok().as_deref(), Some(content.as_bytes()), "{:?}", String::from_utf8_lossy(name));
    }
    assert_eq!(fs::read_to_string(saved_dir.join(os(b"old-\xc3.rs"))).unwrap(), "hello\n");
    let receipt = common::state::receipt(&q);
    let saved: Vec<(Vec<u8>, bool)> = receipt.mounts[0].files.iter().map(|f| (f.name(), f.saved)).collect();
    for (name, _) in files {
        assert!(saved.contains(&(name.to_vec(), true)), "{:?} not saved: {saved:?}", String::from_utf8_lossy(name));
    }
}

// --- 9. commits inside a submodule ----------------------------------------------------------

/// The agent commits inside the submodule checked out in its mount, then (`moved_back`) checks
/// the submodule out at the commit the parent records, so the parent reads clean and the commit
/// is only in the submodule's reflog. Either way the submodule's git directory (a clone's
/// `.git/modules/`, a worktree's `<host>/.git/worktrees/<c>/modules/`) goes with the mount: the
/// session is at risk ("1 commit in submodules"), a plain purge refuses and changes nothing, and
/// a discard bundles the commit, which a fresh clone of the submodule's origin fetches back.
/// Before, the parent's files were saved and the submodule's commit was deleted.
#[test]
fn commits_inside_a_submodule_are_at_risk_and_bundled_on_a_discard() {
    if !engine_available("commits_inside_a_submodule_are_at_risk_and_bundled_on_a_discard") {
        return;
    }
    for (is_clone, moved_back) in [(false, false), (false, true), (true, false), (true, true)] {
        let case = format!("clone: {is_clone}, moved back: {moved_back}");
        let mut home = Home::new();
        let (host, lib_origin) = common::host_with_submodule(&home);
        let inst = home.instance(&unique_id(), |h, c| {
            vec![if is_clone {
                h.clone_record(c, &host, "/workspace/app")
            } else {
                h.worktree_record(c, &host, "/workspace/app")
            }]
        });
        let mount = inst.mount_path(0);
        git(&mount, &["-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init"]);
        let sub = mount.join("vendor/lib");
        git(&sub, &["config", "user.email", "agent@example.invalid"]);
        git(&sub, &["config", "user.name", "Agent"]);
        let recorded = git(&sub, &["rev-parse", "HEAD"]);
        let commit = commit_file(&sub, "lib.rs", "pub fn lib() -> u8 { 42 }\n", "the agent's fix");
        if moved_back {
            git(&sub, &["checkout", "-q", &recorded]);
            assert_eq!(git(&mount, &["status", "--porcelain"]), "", "{case}: the parent reads clean");
        }

        let assessment = home.assess(&inst.container);
        assert_ne!(assessment.verdict, "clean", "{case}: {assessment:?}");
        assert!(assessment.summary.contains("1 commit in submodules"), "{case}: {}", assessment.summary);
        let listed = &assessment.mounts[0].submodules;
        assert_eq!(listed.len(), 1, "{case}: {listed:?}");
        assert_eq!(listed[0].path, "vendor/lib");

        let before = home.snapshot();
        let out = home.purge(&[&inst.container], "");
        assert_eq!(out.status.code(), Some(6), "{case}: {}", stderr(&out));
        assert_eq!(home.snapshot(), before, "{case}: a refused purge changed nothing");

        let out = home.purge(&["--discard-unfinished", &inst.container], "");
        assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(&out));
        assert!(is_gone(&home, &inst), "{case}");
        let q = only_quarantine(&home, &out);
        let receipt = common::state::receipt(&q);
        let saved = &receipt.mounts[0].submodules[0];
        assert_eq!(saved.path, "vendor/lib", "{case}: {receipt:?}");
        let bundle = q.join(&saved.bundle);
        let fresh = home.tmp.path().join("fresh-lib");
        git(home.tmp.path(), &["clone", "-q", lib_origin.to_str().unwrap(), fresh.to_str().unwrap()]);
        assert_eq!(fetched_from_bundle(&fresh, &bundle, &[&commit]), std::slice::from_ref(&commit), "{case}");
        let text = fs::read_to_string(q.join("RECEIPT.txt")).unwrap();
        assert!(text.contains("submodule vendor/lib"), "{case}: {text}");
    }
}

// --- 10. a bundle stands alone --------------------------------------------------------------

/// A bundle holds every object its commits need beyond its prerequisites: here session A's
/// commit adds an empty file, whose blob session B's surviving commit also holds. The bundle
/// left that blob out (B's commit was among what survives) without naming B's commit as a
/// prerequisite, so a fresh clone of origin could not fetch it ("did not send all necessary
/// objects") once B was purged too.
#[test]
fn a_bundle_holds_the_objects_another_sessions_commit_shares() {
    if !engine_available("a_bundle_holds_the_objects_another_sessions_commit_shares") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let a = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let b = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    commit_file(&b.mount_path(0), "b-empty.txt", "", "b's empty file");
    let commit = commit_file(&a.mount_path(0), "a-empty.txt", "", "a's empty file");
    let out = home.purge(&["--discard-unfinished", &a.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    let fresh = fresh_clone_of_origin(&home, &app);
    let bundle = q.join("0-workspace-app/commits.bundle");
    assert_eq!(fetched_from_bundle(&fresh, &bundle, &[&commit]), std::slice::from_ref(&commit));
    git(&fresh, &["fsck", "--no-dangling", "--connectivity-only"]);
}

// --- 11. staged versions the work tree no longer has ------------------------------------------

/// The index can hold the only copy of a version: a new file staged and then removed from the
/// work tree (`AD`), a file staged and then edited again (`AM`, `MM`). A discard saves each
/// staged version under `index/`, beside the work tree's under `files/`. Before, only the work
/// tree was copied: the `AD` file was "deleted: nothing to save" and its only copy went with the
/// worktree's index (found by the work-loss oracle).
#[test]
fn staged_versions_the_work_tree_no_longer_has_are_saved() {
    if !engine_available("staged_versions_the_work_tree_no_longer_has_are_saved") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = inst.mount_path(0);
    fs::write(wt.join("only-staged.rs"), "fn staged_only() {}\n").unwrap();
    git(&wt, &["add", "only-staged.rs"]);
    fs::remove_file(wt.join("only-staged.rs")).unwrap();
    fs::write(wt.join("README.md"), "staged version\n").unwrap();
    git(&wt, &["add", "README.md"]);
    fs::write(wt.join("README.md"), "edited after staging\n").unwrap();
    let status = git(&wt, &["status", "--porcelain"]);
    assert!(status.contains("AD only-staged.rs") && status.contains("MM README.md"), "{status}");

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    let mount = q.join("0-workspace-app");
    assert_eq!(fs::read_to_string(mount.join("index/only-staged.rs")).unwrap(), "fn staged_only() {}\n");
    assert_eq!(fs::read_to_string(mount.join("index/README.md")).unwrap(), "staged version\n");
    assert_eq!(fs::read_to_string(mount.join("files/README.md")).unwrap(), "edited after staging\n");
    let receipt = common::state::receipt(&q);
    assert_eq!(receipt.mounts[0].index_dir.as_deref(), Some("0-workspace-app/index"));
    let staged: Vec<&str> = receipt.mounts[0].files.iter().filter(|f| f.staged).map(|f| f.path.as_str()).collect();
    assert_eq!(staged.len(), 2, "{receipt:#?}");
}

/// A submodule left behind: the parent reset to before the commit that added it, so `.gitmodules`
/// no longer names it and `vendor/lib/` is an untracked directory whose repository lives in the
/// mount's git directory (`modules/vendor/lib`). Its commits are at risk and bundled on a discard
/// all the same. Before, only `.gitmodules` was read: the quarantine copied the work tree and a
/// `.git` file pointing at what the purge deletes (found by the work-loss oracle).
#[test]
fn a_submodule_left_behind_by_a_reset_is_still_at_risk_and_bundled() {
    if !engine_available("a_submodule_left_behind_by_a_reset_is_still_at_risk_and_bundled") {
        return;
    }
    submodule_left_behind(false);
}

/// The same submodule removed with its work tree (`git rm`): its git directory stays in the
/// mount's, with a `core.worktree` that resolves to nothing. It did not open, so its commit was
/// neither at risk nor bundled, and the purge deleted it with the mount.
#[test]
fn a_submodule_removed_with_git_rm_is_still_at_risk_and_bundled() {
    if !engine_available("a_submodule_removed_with_git_rm_is_still_at_risk_and_bundled") {
        return;
    }
    submodule_left_behind(true);
}

/// A clone session vendoring a library as a submodule, a commit of the agent's in it, then the
/// submodule left behind (`removed`: by `git rm`; else by a reset of the parent): assessed at
/// risk, and the commit fetched back from the discard's submodule bundle.
fn submodule_left_behind(removed: bool) {
    let mut home = Home::new();
    let host = home.host_repo("app");
    let lib_origin = home.tmp.path().join("lib-origin.git");
    let lib = home.tmp.path().join("lib-work");
    git(home.tmp.path(), &["init", "-q", "--bare", "-b", "main", lib_origin.to_str().unwrap()]);
    git(home.tmp.path(), &["init", "-q", "-b", "main", lib.to_str().unwrap()]);
    commit_file(&lib, "lib.rs", "pub fn lib() {}\n", "the library");
    git(&lib, &["push", "-q", lib_origin.to_str().unwrap(), "main"]);
    let h = host.clone();
    let inst = home.instance(&unique_id(), move |home, c| vec![home.clone_record(c, &h, "/workspace/app")]);
    let mount = inst.mount_path(0);
    let sub_add =
        ["-c", "protocol.file.allow=always", "submodule", "add", "-q", lib_origin.to_str().unwrap(), "vendor/lib"];
    git(&mount, &sub_add);
    git(&mount, &["commit", "-q", "-m", "vendor the library"]);
    let sub = mount.join("vendor/lib");
    let commit = commit_file(&sub, "lib.rs", "pub fn lib() -> u8 { 42 }\n", "the agent's fix");
    if removed {
        git(&mount, &["rm", "-q", "-f", "vendor/lib"]);
        assert!(!sub.exists(), "removed with its work tree");
    } else {
        git(&mount, &["reset", "-q", "--hard", "origin/main"]);
        assert!(!mount.join(".gitmodules").exists() && sub.join(".git").is_file(), "left behind");
    }

    let assessment = home.assess(&inst.container);
    assert!(assessment.summary.contains("in submodules"), "{}", assessment.summary);
    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    let receipt = common::state::receipt(&q);
    let bundle = q.join(&receipt.mounts[0].submodules.first().expect("a submodule bundle").bundle);
    let fresh = home.tmp.path().join("fresh-lib");
    git(home.tmp.path(), &["clone", "-q", lib_origin.to_str().unwrap(), fresh.to_str().unwrap()]);
    assert_eq!(fetched_from_bundle(&fresh, &bundle, &[&commit]), std::slice::from_ref(&commit));
}

// --- 12. a directory where a tracked file was -------------------------------------------------

/// A tracked file replaced by a directory holding a symlink (`rm README.md; mkdir README.md; ln -s
/// x README.md/link`): `git status` lists the deleted `README.md` and the untracked
/// `README.md/link`. The save copies the directory for the first and met the link again for the
/// second: every purge of the session failed, "File exists", nothing deleted (found by the
/// work-loss oracle). Each is saved once now.
#[test]
fn a_directory_where_a_tracked_file_was_is_saved_once() {
    if !engine_available("a_directory_where_a_tracked_file_was_is_saved_once") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = inst.mount_path(0);
    fs::remove_file(wt.join("README.md")).unwrap();
    fs::create_dir(wt.join("README.md")).unwrap();
    std::os::unix::fs::symlink("x", wt.join("README.md/link")).unwrap();
    fs::write(wt.join("README.md/notes.txt"), "inside\n").unwrap();

    let out = home.purge(&["--discard-unfinished", &inst.container], "");
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let q = only_quarantine(&home, &out);
    let files = q.join("0-workspace-app/files");
    assert_eq!(fs::read_link(files.join("README.md/link")).unwrap(), Path::new("x"));
    assert_eq!(fs::read_to_string(files.join("README.md/notes.txt")).unwrap(), "inside\n");
}

// --- every ref namespace --------------------------------------------------------------------

/// A commit no branch, tag, HEAD or reflog holds, made in `repo` (its tree HEAD's), under `ref`:
/// a ref git writes without a reflog, or a pseudo-ref file (`MERGE_HEAD`) in `git_dir`, or a
/// loose ref file whose name git itself would refuse.
fn commit_only_under(repo: &Path, git_dir: &Path, reference: &[u8], message: &str) -> String {
    let commit = git(repo, &["commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", message]);
    let name = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(reference);
    let file = git_dir.join(name);
    fs::create_dir_all(file.parent().unwrap()).unwrap();
    fs::write(&file, format!("{commit}\n")).unwrap();
    commit
}

/// Commits reachable only from a ref of another namespace than branches and tags (`refs/wip/*`,
/// `refs/notes/*`, `refs/original/*`, a pseudo-ref such as `MERGE_HEAD`; a worktree's own
/// `refs/worktree/*` and `refs/bisect/*`, kept in the registration a purge prunes) or from a ref
/// whose name git refuses (an escape character) are at risk, and a discard bundles them and
/// succeeds. Each case failed before: the commits were deleted unsaved, or the discard failed.
#[test]
fn every_ref_namespace_keeps_its_commits() {
    if !engine_available("every_ref_namespace_keeps_its_commits") {
        return;
    }
    let clone_refs: [&[u8]; 6] = [
        b"refs/wip/agent",
        b"refs/notes/commits",
        b"refs/original/refs/heads/main",
        b"MERGE_HEAD",
        b"refs/jackin-agent/anything",
        b"refs/heads/esc\x1bape",
    ];
    let worktree_refs: [&[u8]; 4] = [b"refs/worktree/wip", b"refs/bisect/bad", b"MERGE_HEAD", b"refs/worktree/esc\x1b"];
    let cases = clone_refs.iter().map(|r| (true, *r)).chain(worktree_refs.iter().map(|r| (false, *r)));
    for (clone, reference) in cases {
        let shown = format!("{} {}", if clone { "clone" } else { "worktree" }, String::from_utf8_lossy(reference));
        let mut home = Home::new();
        let app = home.host_repo("app");
        let inst = home.instance(&unique_id(), |h, c| {
            vec![if clone {
                h.clone_record(c, &app, "/workspace/app")
            } else {
                h.worktree_record(c, &app, "/workspace/app")
            }]
        });
        let mount = inst.mount_path(0);
        agent_identity(&mount);
        let git_dir = PathBuf::from(git(&mount, &["rev-parse", "--absolute-git-dir"]));
        let commit = commit_only_under(&mount, &git_dir, reference, &format!("only under {shown}"));

        let assessed = home.assess(&inst.container);
        assert_ne!(assessed.verdict, "clean", "{shown}: at risk: {}", assessed.summary);
        let out = home.purge(&["--discard-unfinished", &inst.container], "");
        assert_eq!(out.status.code(), Some(0), "{shown}: {}", stderr(&out));
        let q = only_quarantine(&home, &out);
        assert!(is_gone(&home, &inst), "{shown}");
        let receipt = common::state::receipt(&q);
        let bundle = receipt.mounts[0].bundle.as_deref().unwrap_or_else(|| panic!("{shown}: no bundle: {receipt:#?}"));
        let fresh = fresh_clone_of_origin(&home, &app);
        assert_eq!(fetched_from_bundle(&fresh, &q.join(bundle), &[&commit]), vec![commit.clone()], "{shown}: saved");
    }
}

/// The bytes of the file at `rel` below `root`, reached one directory at a time.
fn read_deep(root: &Path, rel: &[u8]) -> Option<Vec<u8>> {
    use rustix::fs::{open, openat, Mode, OFlags};
    let mut dir = open(root, OFlags::DIRECTORY, Mode::empty()).ok()?;
    let parts: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
    for name in &parts[..parts.len() - 1] {
        dir = openat(&dir, *name, OFlags::DIRECTORY, Mode::empty()).ok()?;
    }
    let file = openat(&dir, *parts.last().unwrap(), OFlags::RDONLY, Mode::empty()).ok()?;
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut fs::File::from(file), &mut bytes).ok()?;
    Some(bytes)
}

/// What libgit2 alone read as clean or waited on, through the tools: an untracked file whose
/// path is longer than PATH_MAX (libgit2 took its directory for absent, and the purge deleted it
/// unsaved), and a `.gitignore` FIFO in an untracked directory (every tool hung). Each is
/// `unknown` now, a purge refuses it, and a discard moves the whole mount into the quarantine,
/// the deep file's bytes with it.
#[test]
fn a_path_past_path_max_and_a_fifo_rule_file_are_never_clean() {
    if !engine_available("a_path_past_path_max_and_a_fifo_rule_file_are_never_clean") {
        return;
    }
    for case in ["deep", "fifo"] {
        let mut home = Home::new();
        let app = home.host_repo("app");
        let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
        let mount = inst.mount_path(0);
        let mut rel = b"notes/".to_vec();
        while mount.as_os_str().len() + rel.len() < 4200 {
            rel.extend_from_slice(&[b'd'; 100]);
            rel.push(b'/');
        }
        rel.extend_from_slice(b"plan.md");
        match case {
            "deep" => common::make_deep(&mount, &rel, b"the deep plan\n"),
            _ => {
                fs::create_dir_all(mount.join("notes/sub")).unwrap();
                fs::write(mount.join("notes/sub/plan.md"), "the plan\n").unwrap();
                assert!(std::process::Command::new("mkfifo")
                    .arg(mount.join("notes/sub/.gitignore"))
                    .status()
                    .unwrap()
                    .success());
            }
        }
        let assessed = home.assess(&inst.container);
        assert_eq!(assessed.verdict, "unknown", "{case}: {}", assessed.summary);

        let out = home.purge(&[&inst.container], "");
        assert_eq!(out.status.code(), Some(6), "{case}: at risk: {}", stderr(&out));
        assert!(mount.join("notes").is_dir(), "{case}: a refusal deletes nothing");

        let out = home.purge(&["--discard-unfinished", &inst.container], "");
        assert_eq!(out.status.code(), Some(0), "{case}: {}", stderr(&out));
        let q = only_quarantine(&home, &out);
        assert!(is_gone(&home, &inst), "{case}");
        let receipt = common::state::receipt(&q);
        assert_eq!(receipt.mounts[0].verdict, "unknown", "{case}: {receipt:#?}");
        let tree = q.join(receipt.mounts[0].tree.as_deref().unwrap_or_else(|| panic!("{case}: {receipt:#?}")));
        match case {
            "deep" => assert_eq!(read_deep(&tree, &rel).as_deref(), Some(&b"the deep plan\n"[..]), "{case}: saved"),
            _ => assert_eq!(fs::read_to_string(tree.join("notes/sub/plan.md")).unwrap(), "the plan\n"),
        }
    }
}
