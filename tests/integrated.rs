//! Work merged by "Squash and merge" or "Rebase and merge" is safe: an at-risk commit whose patch
//! a surviving ref holds is integrated (real git repositories; the git CLI plays the pull request
//! and is the reference through `git cherry`).

mod common;

use std::fs;
use std::path::{Path, PathBuf};

use common::docker::engine_available;
use common::records::{records, Assessment, ErrorRecord, Integrated, Purged};
use common::{clean_decision, commit_file, git, stderr, unique_id, Home, Instance};

/// A host repository with a bare origin, one session on it, and the session's three commits.
struct Scene {
    home: Home,
    inst: Instance,
    host: PathBuf,
    /// Another clone of origin: where the pull request is merged.
    reviewer: PathBuf,
    /// The session's commits, oldest first.
    commits: Vec<String>,
}

impl Scene {
    fn worktree() -> Scene {
        Scene::new(|h, c, host| h.worktree_record(c, host, "/workspace/app"))
    }

    fn clone() -> Scene {
        Scene::new(|h, c, host| h.clone_record(c, host, "/workspace/app"))
    }

    fn new(mount: impl FnOnce(&Home, &str, &Path) -> serde_json::Value) -> Scene {
        let mut home = Home::new();
        let host = home.host_repo("app");
        let inst = home.instance(&unique_id(), |h, c| vec![mount(h, c, &host)]);
        let work = inst.mount_path(0);
        git(&work, &["config", "user.email", "agent@example.invalid"]);
        git(&work, &["config", "user.name", "Agent"]);
        let commits = vec![
            commit_file(&work, "src/feature.rs", "fn feature() {}\n", "add the feature"),
            commit_file(&work, "src/feature.rs", "fn feature() -> u8 { 1 }\n", "feature returns one"),
            commit_file(&work, "docs/feature.md", "# Feature\n", "document the feature"),
        ];
        let origin = git(&host, &["remote", "get-url", "origin"]);
        let reviewer = home.tmp.path().join("reviewer");
        git(home.tmp.path(), &["clone", "-q", "-b", "main", &origin, reviewer.to_str().unwrap()]);
        git(&reviewer, &["config", "user.email", "reviewer@example.invalid"]);
        git(&reviewer, &["config", "user.name", "Reviewer"]);
        // The pull request's branch, as the forge sees it.
        git(&reviewer, &["fetch", "-q", work.to_str().unwrap(), "HEAD:refs/heads/pr"]);
        // main moves on before the merge, as it does.
        commit_file(&reviewer, "CHANGELOG.md", "unrelated\n", "someone else's change");
        Scene { home, inst, host, reviewer, commits }
    }

    /// "Squash and merge" of the pull request up to `tip`, pushed; the host fetches.
    fn squash_merge(&self, tip: &str) -> String {
        git(&self.reviewer, &["merge", "-q", "--squash", tip]);
        git(&self.reviewer, &["commit", "-q", "-m", "Squashed pull request"]);
        self.publish()
    }

    /// "Rebase and merge": the commits replayed onto main with new ids, pushed; the host fetches.
    fn rebase_merge(&self, commits: &[&str]) -> String {
        for commit in commits {
            git(&self.reviewer, &["cherry-pick", commit]);
        }
        self.publish()
    }

    fn publish(&self) -> String {
        git(&self.reviewer, &["push", "-q", "origin", "main"]);
        git(&self.host, &["fetch", "-q", "origin"]);
        git(&self.reviewer, &["rev-parse", "HEAD"])
    }

    fn assess(&self) -> Assessment {
        self.home.assess(&self.inst.container)
    }

    fn text(&self) -> String {
        let out = self.home.cmd("jackin-assess").arg(&self.inst.container).arg("--format=text").output().unwrap();
        String::from_utf8(out.stdout).unwrap()
    }

    fn scratch_ref(&self) -> String {
        format!("refs/heads/jackin/scratch/{}", self.inst.container)
    }

    /// `git cherry`'s verdict per session commit, oldest first: `-` when upstream has its patch.
    fn git_cherry(&self, upstream: &str) -> Vec<String> {
        let branch = format!("jackin/scratch/{}", self.inst.container);
        git(&self.host, &["cherry", upstream, &branch]).lines().map(str::to_owned).collect()
    }
}

fn integrated(commit: &str, as_commit: &str, into: &str, how: &str) -> Integrated {
    Integrated { commit: commit.into(), as_commit: as_commit.into(), into: into.into(), how: how.into() }
}

#[test]
fn a_squash_merge_of_the_whole_branch_is_clean_with_the_evidence() {
    let scene = Scene::worktree();
    let squash = scene.squash_merge("pr");
    let a = scene.assess();
    assert_eq!(a.verdict, "clean", "{a:?}");
    assert_eq!(a.summary, "clean · 3 commits integrated");
    let entry = &a.mounts[0].unpushed[0];
    assert_eq!((entry.name.as_str(), entry.commits), (scene.scratch_ref().as_str(), 0));
    let main = "refs/remotes/origin/main";
    let want: Vec<Integrated> = scene.commits.iter().rev().map(|c| integrated(c, &squash, main, "squash")).collect();
    assert_eq!(entry.integrated, want);
    let text = scene.text();
    let line = format!("jackin/scratch/{} · 3 commits integrated into origin/main (squash)", scene.inst.container);
    assert!(text.contains(&line), "{text}");
}

#[test]
fn a_rebase_merge_is_clean_commit_by_commit_as_git_cherry_says() {
    let scene = Scene::worktree();
    let c = &scene.commits;
    scene.rebase_merge(&[&c[0], &c[1], &c[2]]);
    assert_eq!(scene.git_cherry("origin/main"), c.iter().map(|c| format!("- {c}")).collect::<Vec<_>>());
    let a = scene.assess();
    assert_eq!(a.verdict, "clean", "{a:?}");
    let entry = &a.mounts[0].unpushed[0];
    assert_eq!(entry.commits, 0);
    let replayed: Vec<String> = git(&scene.reviewer, &["rev-list", "-3", "main"]).lines().map(str::to_owned).collect();
    let want: Vec<Integrated> = c
        .iter()
        .rev()
        .zip(&replayed)
        .map(|(commit, new)| integrated(commit, new, "refs/remotes/origin/main", "patch"))
        .collect();
    assert_eq!(entry.integrated, want);
    assert!(scene.text().contains("3 commits integrated into origin/main (same patch)"), "{}", scene.text());
}

#[test]
fn a_squash_of_the_first_two_commits_leaves_the_third_at_risk() {
    let scene = Scene::worktree();
    let squash = scene.squash_merge("pr~1");
    let a = scene.assess();
    assert_eq!(a.verdict, "unpushed", "{a:?}");
    assert_eq!(a.summary, "1 branch unpushed · 2 commits integrated");
    let entry = &a.mounts[0].unpushed[0];
    assert_eq!(entry.commits, 1);
    let c = &scene.commits;
    let main = "refs/remotes/origin/main";
    assert_eq!(
        entry.integrated,
        [integrated(&c[1], &squash, main, "squash"), integrated(&c[0], &squash, main, "squash")]
    );
    let text = scene.text();
    let line = format!(
        "jackin/scratch/{} · 1 commit · no upstream · 2 commits integrated into origin/main (squash)",
        scene.inst.container
    );
    assert!(text.contains(&line), "{text}");
}

#[test]
fn only_an_equal_patch_counts_not_the_message_nor_the_paths() {
    let scene = Scene::worktree();
    let c = &scene.commits;
    scene.rebase_merge(&[&c[0], &c[1]]);
    // The third commit's message and file, with other content: not the same patch.
    commit_file(&scene.reviewer, "docs/feature.md", "# The feature\n", "document the feature");
    scene.publish();
    let cherry = scene.git_cherry("origin/main");
    assert_eq!(cherry, [format!("- {}", c[0]), format!("- {}", c[1]), format!("+ {}", c[2])]);
    let a = scene.assess();
    assert_eq!(a.verdict, "unpushed", "{a:?}");
    let entry = &a.mounts[0].unpushed[0];
    assert_eq!(entry.commits, 1);
    let covered: Vec<&str> = entry.integrated.iter().map(|i| i.commit.as_str()).collect();
    assert_eq!(covered, [c[1].as_str(), c[0].as_str()]);
    assert!(entry.integrated.iter().all(|i| i.how == "patch"));
}

#[test]
fn a_commit_whose_patch_is_on_no_surviving_ref_stays_at_risk() {
    let scene = Scene::worktree();
    // The reviewer merges the same patches but never pushes: nothing the host has holds them.
    let c = &scene.commits;
    for commit in c {
        git(&scene.reviewer, &["cherry-pick", commit]);
    }
    git(&scene.host, &["fetch", "-q", "origin"]);
    let a = scene.assess();
    assert_eq!(a.verdict, "unpushed", "{a:?}");
    assert_eq!(a.mounts[0].unpushed[0].commits, 3);
    assert_eq!(a.mounts[0].unpushed[0].integrated, []);
    assert_eq!(a.summary, "1 branch unpushed");
}

#[test]
fn a_binary_file_with_other_content_is_not_the_same_patch() {
    // libgit2's patch-id reads "Binary files differ" for any binary change: the blobs decide.
    let mut home = Home::new();
    let host = home.host_repo("app");
    let inst = home.instance(&unique_id(), |h, c| vec![h.worktree_record(c, &host, "/workspace/app")]);
    let work = inst.mount_path(0);
    fs::write(work.join("logo.bin"), b"\0\x01agent's logo\0").unwrap();
    git(&work, &["add", "logo.bin"]);
    git(&work, &["commit", "-q", "-m", "logo"]);
    git(&host, &["checkout", "-q", "-b", "other"]);
    fs::write(host.join("logo.bin"), b"\0\x02another logo\0").unwrap();
    git(&host, &["add", "logo.bin"]);
    git(&host, &["commit", "-q", "-m", "logo"]);
    git(&host, &["checkout", "-q", "main"]);
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "unpushed", "{a:?}");
    assert_eq!(a.mounts[0].unpushed[0].integrated, []);

    // The same bytes on the other branch are the same patch.
    git(&host, &["checkout", "-q", "-b", "same"]);
    fs::write(host.join("logo.bin"), b"\0\x01agent's logo\0").unwrap();
    git(&host, &["add", "logo.bin"]);
    git(&host, &["commit", "-q", "-m", "the agent's logo, cherry-picked by hand"]);
    git(&host, &["checkout", "-q", "main"]);
    let a = home.assess(&inst.container);
    assert_eq!(a.verdict, "clean", "{a:?}");
    assert_eq!(a.mounts[0].unpushed[0].integrated[0].into, "refs/heads/same");
}

#[test]
fn a_clone_session_squash_merged_is_clean_through_the_host_fetch() {
    // The clone itself never fetched: the host's remote-tracking ref is the evidence.
    let scene = Scene::clone();
    let squash = scene.squash_merge("pr");
    let a = scene.assess();
    assert_eq!(a.verdict, "clean", "{a:?}");
    let entry = &a.mounts[0].unpushed[0];
    assert_eq!((entry.name.as_str(), entry.commits), ("refs/heads/main", 0));
    let main = "refs/remotes/origin/main";
    let want: Vec<Integrated> = scene.commits.iter().rev().map(|c| integrated(c, &squash, main, "squash")).collect();
    assert_eq!(entry.integrated, want);
}

#[test]
fn a_clone_session_partly_squashed_keeps_the_rest_at_risk_and_its_own_fetch_counts() {
    let scene = Scene::clone();
    let squash = scene.squash_merge("pr~1");
    let clone = scene.inst.mount_path(0);
    // Now the clone fetches too: its own remote-tracking ref holds the squash.
    git(&clone, &["fetch", "-q", "origin"]);
    let a = scene.assess();
    assert_eq!(a.verdict, "unpushed", "{a:?}");
    let entry = &a.mounts[0].unpushed[0];
    assert_eq!(entry.commits, 1);
    assert_eq!(entry.upstream.as_deref(), Some("origin/main"));
    assert!(entry.integrated.iter().all(|i| i.as_commit == squash && i.how == "squash"), "{entry:?}");
    assert_eq!(entry.integrated.len(), 2);
    let text = scene.text();
    assert!(
        text.contains("main · 1 commit ahead of origin/main · 2 commits integrated into origin/main (squash)"),
        "{text}"
    );
}

/// jackin-purge fed the decision an "Exit and clean up" makes, without `discard_unfinished`.
fn purge(home: &Home, inst: &Instance) -> std::process::Output {
    home.purge(&[], &format!("{}\n", clean_decision(&inst.container, &inst.id, false)))
}

#[test]
fn purge_deletes_a_squash_merged_session_without_discarding_and_refuses_a_partial_one() {
    if !engine_available("purge_deletes_a_squash_merged_session_without_discarding_and_refuses_a_partial_one") {
        return;
    }
    let merged = Scene::worktree();
    merged.squash_merge("pr");
    let out = purge(&merged.home, &merged.inst);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let purged = records::<Purged>(&out.stdout);
    assert_eq!(purged[0].quarantine, None);
    assert!(merged.home.quarantines().is_empty());
    assert!(!merged.inst.dir.exists());
    let scratch = format!("jackin/scratch/{}", merged.inst.container);
    assert!(!git(&merged.host, &["branch", "--format=%(refname:short)"]).lines().any(|b| b == scratch));

    let partial = Scene::worktree();
    partial.squash_merge("pr~1");
    let before = partial.home.snapshot();
    let out = purge(&partial.home, &partial.inst);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    let refused = records::<ErrorRecord>(&out.stdout);
    assert_eq!(refused[0].code, "at_risk");
    assert!(refused[0].message.contains("1 branch unpushed · 2 commits integrated"), "{refused:?}");
    assert_eq!(partial.home.snapshot(), before, "nothing changed");
    assert!(partial.inst.dir.exists());
}

#[test]
fn the_exit_dialog_and_the_resume_list_show_what_was_integrated() {
    use std::os::unix::process::CommandExt;
    if !engine_available("the_exit_dialog_and_the_resume_list_show_what_was_integrated") {
        return;
    }
    let scene = Scene::worktree();
    scene.squash_merge("pr~1");
    let out = scene.home.cmd("jackin-assess").arg(&scene.inst.container).arg("--format=json").output().unwrap();
    let input = scene.home.tmp.path().join("assessment.jsonl");
    fs::write(&input, &out.stdout).unwrap();
    let decided = scene.home.tmp.path().join("decision.jsonl");
    let mut keep = std::process::Command::new(common::tool_path("jackin-keep"));
    keep.arg("--home").arg(&scene.home.home).arg("--config-dir").arg(&scene.home.config);
    keep.args(["--format=json", "--policy=ask"]).env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR");
    // The numbered text of a terminal that cannot draw: its words are matched line by line.
    keep.env("TERM", "dumb");
    keep.stdin(fs::File::open(&input).unwrap()).stdout(fs::File::create(&decided).unwrap());
    // SAFETY: setsid is async-signal-safe; the pty rexpect opens becomes the controlling terminal.
    unsafe {
        keep.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    let mut pty = rexpect::session::spawn_command(keep, Some(30_000)).unwrap();
    pty.exp_string("has unfinished work").unwrap();
    // rexpect reads bytes as Latin-1, so the "·" between the words is matched around.
    pty.exp_string(" 1 commit ").unwrap();
    pty.exp_string(" 2 commits integrated into origin/main (squash)").unwrap();
    pty.exp_string("Press Enter once you have read this").unwrap();
    pty.send_line("").unwrap();
    pty.exp_string("Choose [1]").unwrap();
    pty.send_line("2").unwrap();
    pty.exp_eof().unwrap();
    let decision: serde_json::Value =
        serde_json::from_str(fs::read_to_string(&decided).unwrap().lines().next().unwrap()).unwrap();
    assert_eq!(decision["data"]["outcome"], "keep", "{decision}");

    let out = scene.home.cmd("jackin-restore").args(["--list", "--format=json"]).output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let candidates = records::<common::records::Candidate>(&out.stdout);
    let ours = candidates.iter().find(|c| c.identity.container_base == scene.inst.container).expect("listed");
    assert_eq!(ours.summary, "1 branch unpushed · 2 commits integrated");
    assert!(ours.label.contains(" · 1 branch unpushed · 2 commits integrated · "), "{ours:?}");
}

#[test]
fn a_branch_updated_from_main_then_squash_merged_is_clean() {
    // "Update branch": main is merged into the pull request before it is squashed onto main.
    let scene = Scene::worktree();
    scene.publish();
    let work = scene.inst.mount_path(0);
    git(&work, &["merge", "-q", "--no-edit", "origin/main"]);
    let after_merge = commit_file(&work, "docs/feature.md", "# Feature\n\nMore.\n", "after the update");
    git(&scene.reviewer, &["fetch", "-q", work.to_str().unwrap(), "+HEAD:refs/heads/pr"]);
    let squash = scene.squash_merge("pr");
    let a = scene.assess();
    assert_eq!(a.verdict, "clean", "{a:?}");
    let entry = &a.mounts[0].unpushed[0];
    assert_eq!(entry.commits, 0);
    // The three commits, the merge and the commit after it.
    assert_eq!(entry.integrated.len(), 5, "{entry:?}");
    assert_eq!(entry.integrated[0].commit, after_merge);
    assert!(entry.integrated.iter().all(|i| i.as_commit == squash && i.how == "squash"), "{entry:?}");
}
