//! `jackin-assess --disk` and `jackin-purge --slim`, on real git work trees with real sizes:
//! what a kept session costs on disk, and taking back only what git ignores.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

use common::docker::{engine_available, Session, SessionOptions};
use common::records::{records, Assessment, ErrorRecord, Purged};
use common::{git, stderr, unique_id, Home, Instance};
use serde_json::json;

const MB: usize = 1024 * 1024;

fn run(home: &Home, tool: &str, args: &[&str]) -> Output {
    home.cmd(tool).args(args).arg("--format=json").output().unwrap()
}

/// `du -sb`: apparent bytes, links not followed, each hard-linked file once.
fn du(paths: &[&Path]) -> u64 {
    let mut cmd = std::process::Command::new("du");
    cmd.args(["-sbc"]).args(paths);
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let text = String::from_utf8(out.stdout).unwrap();
    text.lines().last().unwrap().split_whitespace().next().unwrap().parse().unwrap()
}

fn within_one_percent(ours: u64, reference: u64) -> bool {
    (ours as f64 - reference as f64).abs() <= reference as f64 * 0.01
}

fn filled(path: &Path, bytes: usize, byte: u8) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, vec![byte; bytes]).unwrap();
}

/// A kept session whose worktree holds a 50 MB ignored `target/` (with a hard link, and a symlink
/// to a directory outside the home), an ignored `build.log`, an ignored `.env.local` (by the host's
/// `info/exclude`), an untracked notes file and a dirty tracked file.
struct Scene {
    home: Home,
    inst: Instance,
    worktree: PathBuf,
    outside: PathBuf,
}

fn scene() -> Scene {
    let mut home = Home::new();
    let app = home.host_repo("app");
    fs::write(app.join(".git/info/exclude"), ".env.local\n").unwrap();
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    home.set_status(&inst.container, "preserved_dirty", Some("2026-08-20T09:00:03Z"));
    let worktree = inst.mount_path(0);
    filled(&worktree.join("target/debug/app"), 40 * MB, 1);
    filled(&worktree.join("target/debug/deps/libdep.rlib"), 10 * MB, 2);
    fs::hard_link(worktree.join("target/debug/app"), worktree.join("target/debug/deps/app-linked")).unwrap();
    let outside = home.tmp.path().join("outside");
    filled(&outside.join("keep.bin"), 3 * MB, 3);
    std::os::unix::fs::symlink(&outside, worktree.join("target/outside")).unwrap();
    filled(&worktree.join("build.log"), 4096, b'l');
    std::os::unix::fs::symlink(outside.join("keep.bin"), worktree.join("latest.log")).unwrap();
    fs::write(worktree.join(".env.local"), "API_URL=http://localhost:8080\n").unwrap();
    fs::write(worktree.join("notes.md"), "what to do tomorrow\n").unwrap();
    fs::write(worktree.join("README.md"), "hello, changed\n").unwrap();
    filled(&inst.dir.join("home/.claude/history.jsonl"), 256 * 1024, b'h');
    Scene { home, inst, worktree, outside }
}

#[test]
fn disk_sizes_match_du_and_slim_takes_back_only_what_git_ignores() {
    if !engine_available("disk_sizes_match_du_and_slim_takes_back_only_what_git_ignores") {
        return;
    }
    let Scene { home, inst, worktree, outside } = scene();
    let status_before = git(&worktree, &["status", "--porcelain=v1", "-uall"]);
    let before = home.assess_disk(&inst.container);
    let disk = before.disk.expect("--disk adds the bytes on disk");
    let mount_disk = before.mounts[0].disk.expect("and per mount");
    assert!(within_one_percent(disk.total, du(&[&inst.dir])), "{disk:?} vs du {}", du(&[&inst.dir]));
    let ignored =
        [worktree.join("target"), worktree.join("build.log"), worktree.join("latest.log"), worktree.join(".env.local")];
    let ignored_du = du(&ignored.iter().map(PathBuf::as_path).collect::<Vec<_>>());
    assert!(within_one_percent(disk.ignored, ignored_du), "{disk:?} vs du {ignored_du}");
    assert!(disk.ignored >= 50 * MB as u64 && disk.ignored < 51 * MB as u64, "the hard link counts once: {disk:?}");
    let env_local = fs::metadata(worktree.join(".env.local")).unwrap().len();
    assert_eq!(disk.rebuildable, disk.ignored - env_local, ".env.local is ignored, not rebuildable");
    assert_eq!(disk.total, disk.data + disk.work + disk.ignored);
    assert!(disk.data >= 256 * 1024 && disk.data < 300 * 1024, "the agent home, outside the mounts: {disk:?}");
    assert_eq!((mount_disk.work, mount_disk.ignored), (disk.work, disk.ignored));
    let text = home.cmd("jackin-assess").args(["--disk", "--format=text", &inst.container]).output().unwrap();
    let first_line = String::from_utf8_lossy(&text.stdout).lines().next().unwrap_or_default().to_owned();
    assert!(first_line.ends_with(" MiB (50.0 MiB rebuildable)"), "{first_line}");
    let without = home.assess(&inst.container);
    assert!(without.disk.is_none() && without.mounts[0].disk.is_none(), "no walk without --disk");

    // --dry-run lists and measures, and changes nothing.
    let snapshot = home.snapshot();
    let out = run(&home, "jackin-purge", &["--slim", "--dry-run", &inst.container]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let planned = records::<Purged>(&out.stdout).remove(0);
    assert!(planned.slimmed && planned.dry_run);
    assert_eq!(planned.freed_bytes, disk.rebuildable);
    let mut names: Vec<&str> = planned.removed.iter().map(|r| r.name.as_str()).collect();
    names.sort();
    let target = format!("{}/", worktree.canonicalize().unwrap().join("target").display());
    let log = worktree.canonicalize().unwrap().join("build.log").to_string_lossy().into_owned();
    let link = worktree.canonicalize().unwrap().join("latest.log").to_string_lossy().into_owned();
    assert_eq!(names, [log.as_str(), link.as_str(), target.as_str()]);
    assert!(planned.removed.iter().all(|r| r.kind == "ignored"));
    assert!(home.snapshot() == snapshot, "a dry run changed a file");

    let continuity_len = || fs::metadata(inst.dir.join(".jackin/continuity.json")).map_or(0, |m| m.len());
    let continuity_before = continuity_len();
    let out = run(&home, "jackin-purge", &["--slim", &inst.container]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let slimmed = records::<Purged>(&out.stdout).remove(0);
    assert!(slimmed.slimmed && !slimmed.dry_run);
    assert_eq!(slimmed.freed_bytes, disk.rebuildable);
    assert!(!worktree.join("target").exists() && !worktree.join("build.log").exists());
    assert!(fs::symlink_metadata(worktree.join("latest.log")).is_err(), "an ignored link goes as a link");
    assert_eq!(fs::read_to_string(worktree.join(".env.local")).unwrap(), "API_URL=http://localhost:8080\n");
    assert_eq!(fs::read_to_string(worktree.join("notes.md")).unwrap(), "what to do tomorrow\n");
    assert_eq!(fs::read_to_string(worktree.join("README.md")).unwrap(), "hello, changed\n");
    assert_eq!(fs::metadata(outside.join("keep.bin")).unwrap().len(), 3 * MB as u64, "the link's target stays");
    assert_eq!(git(&worktree, &["status", "--porcelain=v1", "-uall"]), status_before);

    let after = home.assess_disk(&inst.container);
    assert_eq!(after.verdict, before.verdict);
    assert_eq!(after.summary, before.summary);
    assert_eq!(after.status.as_deref(), Some("preserved_dirty"), "still kept");
    let comparable = |a: &Assessment| {
        a.mounts.iter().map(|m| (m.verdict.clone(), m.files.clone(), m.unpushed.clone(), m.stashes)).collect::<Vec<_>>()
    };
    assert_eq!(comparable(&after), comparable(&before), "the same work, only `ignored` differs");
    let after_disk = after.disk.unwrap();
    assert_eq!((after_disk.ignored, after_disk.rebuildable), (env_local, 0));
    // The data directory changed by the slim's own record in the tools' file, nothing else.
    let recorded = continuity_len() - continuity_before;
    assert_eq!((after_disk.work, after_disk.data), (disk.work, disk.data + recorded));

    let again = run(&home, "jackin-purge", &["--slim", &inst.container]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    let again = records::<Purged>(&again.stdout).remove(0);
    assert_eq!((again.freed_bytes, again.removed.len()), (0, 0), "a second run frees nothing");
}

#[test]
fn a_file_tracked_despite_an_ignore_rule_is_work() {
    if !engine_available("a_file_tracked_despite_an_ignore_rule_is_work") {
        return;
    }
    let Scene { home, inst, worktree, .. } = scene();
    fs::write(worktree.join("target/RELEASE-NOTES"), "tracked with git add -f\n").unwrap();
    git(&worktree, &["add", "-f", "target/RELEASE-NOTES"]);
    let out = run(&home, "jackin-purge", &["--slim", &inst.container]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(fs::read_to_string(worktree.join("target/RELEASE-NOTES")).unwrap(), "tracked with git add -f\n");
    assert!(!worktree.join("target/debug").exists(), "what git ignores under it went");
    // libgit2 lists a partly tracked ignored directory's ignored subdirectories but not its
    // other direct entries (here the link `target/outside`): those stay, the safe way to be wrong.
    let ignored = git(&worktree, &["status", "--porcelain=v1", "--ignored"]);
    assert!(!ignored.contains("target/debug"), "{ignored}");
}

#[test]
fn live_and_unkept_sessions_are_refused_and_nothing_changes() {
    if !engine_available("live_and_unkept_sessions_are_refused_and_nothing_changes") {
        return;
    }
    let Scene { home, inst, worktree, .. } = scene();
    let _session = Session::launch(&inst.container, SessionOptions { dind: false, ..Default::default() });
    let snapshot = home.snapshot();
    let out = run(&home, "jackin-purge", &["--slim", &inst.container]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "live");
    assert!(home.snapshot() == snapshot && worktree.join("target/debug/app").exists());
    drop(_session);

    let lock = fs::File::create(home.home.join("data").join(format!("{}.lock", inst.container))).unwrap();
    fs2::FileExt::lock_exclusive(&lock).unwrap();
    let out = run(&home, "jackin-purge", &["--slim", &inst.container]);
    assert_eq!(out.status.code(), Some(5), "{}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "busy");
    drop(lock);

    home.set_status(&inst.container, "active", Some("2026-08-20T09:00:03Z"));
    let snapshot = home.snapshot();
    let out = run(&home, "jackin-purge", &["--slim", &inst.container]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "not_kept");
    assert!(home.snapshot() == snapshot && worktree.join("target/debug/app").exists());
}

#[test]
fn slim_older_than_picks_only_old_kept_sessions() {
    if !engine_available("slim_older_than_picks_only_old_kept_sessions") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let mut make = |status: &str, updated: &str| {
        let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
        filled(&inst.mount_path(0).join("target/out.bin"), 64 * 1024, 7);
        (inst, status.to_owned(), updated.to_owned())
    };
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    let made = [
        make("restore_available", "2026-01-01T00:00:00Z"),
        make("restore_available", &now),
        make("clean_exited", "2026-01-01T00:00:00Z"),
    ];
    for (inst, status, updated) in &made {
        home.set_status(&inst.container, status, Some(updated));
    }
    let out = run(&home, "jackin-purge", &["--slim-older-than", "7d"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let slimmed: Vec<String> = records::<Purged>(&out.stdout).into_iter().map(|p| p.identity.container_base).collect();
    assert_eq!(slimmed, [made[0].0.container.clone()]);
    assert!(!made[0].0.mount_path(0).join("target").exists());
    assert!(made[1].0.mount_path(0).join("target/out.bin").exists(), "recent: kept whole");
    assert!(made[2].0.mount_path(0).join("target/out.bin").exists(), "not kept: not slimmed");

    // Slimmed once after each keep: the next day's run leaves it alone, until it is kept again
    // after its last slim (here: a slim recorded before its last update).
    let slimmed = home.continuity(&made[0].0.container).slimmed.expect("the slim is recorded");
    assert_eq!(slimmed.freed_bytes, records::<Purged>(&out.stdout)[0].freed_bytes);
    let again = run(&home, "jackin-purge", &["--slim-older-than", "7d"]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert!(
        records::<Purged>(&again.stdout).is_empty(),
        "slimmed since its keep: {}",
        String::from_utf8_lossy(&again.stdout)
    );
    home.edit_continuity(&made[0].0.container, |c| c["slimmed"]["at"] = json!("2025-12-31T00:00:00Z"));
    let after_a_new_keep = run(&home, "jackin-purge", &["--slim-older-than", "7d"]);
    let slimmed: Vec<String> =
        records::<Purged>(&after_a_new_keep.stdout).into_iter().map(|p| p.identity.container_base).collect();
    assert_eq!(slimmed, [made[0].0.container.clone()]);
    // Named, or with --kept, a session is slimmed whenever asked.
    let named = run(&home, "jackin-purge", &["--slim", &made[0].0.container]);
    assert_eq!(records::<Purged>(&named.stdout).len(), 1, "{}", stderr(&named));

    let usage = run(&home, "jackin-purge", &["--slim"]);
    assert_eq!(usage.status.code(), Some(2), "{}", stderr(&usage));
}

#[test]
fn the_resume_list_sorts_by_size() {
    if !engine_available("the_resume_list_sorts_by_size") {
        return;
    }
    let mut home = Home::new();
    let app = home.host_repo("app");
    let mut make = |bytes: usize, updated: &str| {
        let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
        filled(&inst.mount_path(0).join("target/out.bin"), bytes, 7);
        (inst, updated.to_owned())
    };
    let made =
        [make(MB, "2026-08-20T09:00:00Z"), make(3 * MB, "2026-08-19T09:00:00Z"), make(2 * MB, "2026-08-21T09:00:00Z")];
    for (inst, updated) in &made {
        home.set_status(&inst.container, "restore_available", Some(updated));
    }
    let listed = |sort: &str| {
        let out = run(&home, "jackin-restore", &["--list", "--sort", sort]);
        assert!(out.status.success(), "{}", stderr(&out));
        records::<common::records::Candidate>(&out.stdout)
    };
    let names = |list: &[common::records::Candidate]| {
        list.iter().map(|c| c.identity.container_base.clone()).collect::<Vec<_>>()
    };
    let by_size = listed("size");
    assert_eq!(
        names(&by_size),
        [made[1].0.container.as_str(), made[2].0.container.as_str(), made[0].0.container.as_str()]
    );
    assert!(by_size[0].label.contains(" · 3.0 MiB (3.0 MiB rebuildable) · "), "{:?}", by_size[0].label);
    assert_eq!(
        names(&listed("age")),
        [made[2].0.container.as_str(), made[0].0.container.as_str(), made[1].0.container.as_str()]
    );
}

/// A filesystem mounted inside an ignored directory (a bind mount, a tmpfs for a build cache) is
/// never entered: the slim stops there with an error and the mounted files stay.
#[test]
fn a_filesystem_mounted_inside_target_is_not_entered() {
    if !engine_available("a_filesystem_mounted_inside_target_is_not_entered") {
        return;
    }
    let Scene { home, inst, worktree, .. } = scene();
    let mount_point = worktree.join("target/zz-cache");
    fs::create_dir_all(&mount_point).unwrap();
    let test = "a_filesystem_mounted_inside_target_is_not_entered";
    let Some(tmpfs) = common::Tmpfs::mount(test, &mount_point, "size=4m") else {
        return;
    };
    fs::write(mount_point.join("other-fs.txt"), "not this session's disk\n").unwrap();
    let out = run(&home, "jackin-purge", &["--slim", &inst.container]);
    let kept = fs::read_to_string(mount_point.join("other-fs.txt"));
    tmpfs.unmount();
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert!(stderr(&out).contains("mount point of another filesystem"), "{}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "slim_failed");
    assert_eq!(kept.unwrap(), "not this session's disk\n");
    let again = run(&home, "jackin-purge", &["--slim", &inst.container]);
    assert_eq!(again.status.code(), Some(0), "once unmounted: {}", stderr(&again));
    assert!(!worktree.join("target").exists());
}

/// A mount whose directory is gone has nothing to slim and stops nothing; one whose path cannot be
/// resolved for another reason (here a link that points at itself) is an error, never "nothing
/// there", and the session is left as it was.
#[test]
fn a_mount_gone_is_nothing_to_slim_and_one_that_cannot_be_read_is_an_error() {
    if !engine_available("a_mount_gone_is_nothing_to_slim_and_one_that_cannot_be_read_is_an_error") {
        return;
    }
    let Scene { home, inst, worktree, .. } = scene();
    let moved = worktree.with_file_name("moved-away");
    fs::rename(&worktree, &moved).unwrap();
    let out = run(&home, "jackin-purge", &["--slim", &inst.container]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let slimmed = records::<Purged>(&out.stdout).remove(0);
    assert!(slimmed.slimmed && slimmed.removed.is_empty() && slimmed.freed_bytes == 0, "{slimmed:?}");
    assert!(moved.join("target/debug/app").exists());

    std::os::unix::fs::symlink(&worktree, &worktree).unwrap();
    let before = home.snapshot();
    let out = run(&home, "jackin-purge", &["--slim", &inst.container]);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "slim_failed");
    assert!(stderr(&out).contains("cannot read"), "{}", stderr(&out));
    assert_eq!(home.snapshot(), before, "nothing changed");
    assert!(moved.join("target/debug/app").exists());
}

/// Ignored entries whose names are not UTF-8 (an ignored directory `cache-<0xFF>/`, an ignored
/// `run-<0xFE>.log`) are measured and taken back like any other, and named in the `purged`
/// record by their bytes (`name_bytes`). Before names were bytes, they were looked for under a
/// lossy name: counted as 0 bytes and left on disk.
#[test]
fn ignored_entries_with_names_that_are_not_utf8_are_measured_and_slimmed() {
    if !engine_available("ignored_entries_with_names_that_are_not_utf8_are_measured_and_slimmed") {
        return;
    }
    use base64::Engine;
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let mut home = Home::new();
    let app = home.host_repo("app");
    fs::write(app.join(".git/info/exclude"), "cache-*/\n").unwrap();
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    home.set_status(&inst.container, "preserved_dirty", Some("2026-08-20T09:00:03Z"));
    let worktree = inst.mount_path(0);
    fs::write(worktree.join("notes.md"), "work\n").unwrap();
    let cache = worktree.join(std::ffi::OsStr::from_bytes(b"cache-\xff"));
    let log = worktree.join(std::ffi::OsStr::from_bytes(b"run-\xfe.log"));
    filled(&cache.join("blob"), 2 * MB, 7);
    filled(&log, MB, 8);

    let disk = home.assess_disk(&inst.container).disk.expect("--disk");
    assert!(disk.rebuildable >= 3 * MB as u64, "both counted: {disk:?}");
    let out = run(&home, "jackin-purge", &["--slim", &inst.container]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let slimmed = records::<Purged>(&out.stdout).remove(0);
    assert_eq!(slimmed.freed_bytes, disk.rebuildable);
    assert!(!cache.exists() && !log.exists(), "both taken back");
    assert_eq!(fs::read_to_string(worktree.join("notes.md")).unwrap(), "work\n");
    let root = worktree.canonicalize().unwrap();
    let mut named: Vec<Vec<u8>> = slimmed
        .removed
        .iter()
        .map(|r| {
            base64::engine::general_purpose::STANDARD.decode(r.name_bytes.as_deref().expect("name_bytes")).unwrap()
        })
        .collect();
    named.sort();
    let mut cache_shown = root.join(cache.file_name().unwrap()).into_os_string().into_vec();
    cache_shown.push(b'/');
    let log_shown = root.join(log.file_name().unwrap()).into_os_string().into_vec();
    assert_eq!(named, [cache_shown, log_shown]);
    assert!(slimmed.removed.iter().all(|r| r.name.contains("\\37")), "{:?}", slimmed.removed);
}
