//! Work merged by "Squash and merge" or "Rebase and merge" is safe: an at-risk commit whose patch
//! a surviving ref holds is integrated (real git repositories; the git CLI plays the pull request
//! and is the reference through `git cherry`, and through `git patch-id --verbatim` where only
//! whitespace differs, which `git cherry` ignores).

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::docker::engine_available;
use common::records::{records, Assessment, ErrorRecord, Integrated, Purged};
use common::{clean_decision, commit_file, git, stderr, unique_id, Home, Instance, Rng};

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
        Scene::with_work(mount, &[], |work| {
            vec![
                commit_file(work, "src/feature.rs", "fn feature() {}\n", "add the feature"),
                commit_file(work, "src/feature.rs", "fn feature() -> u8 { 1 }\n", "feature returns one"),
                commit_file(work, "docs/feature.md", "# Feature\n", "document the feature"),
            ]
        })
    }

    /// A worktree session on a host whose main first gets `base` (file, content), committing
    /// what `work` commits (it returns the commits, oldest first).
    fn worktree_with(base: &[(&str, &str)], work: impl FnOnce(&Path) -> Vec<String>) -> Scene {
        Scene::with_work(|h, c, host| h.worktree_record(c, host, "/workspace/app"), base, work)
    }

    fn with_work(
        mount: impl FnOnce(&Home, &str, &Path) -> serde_json::Value,
        base: &[(&str, &str)],
        session_commits: impl FnOnce(&Path) -> Vec<String>,
    ) -> Scene {
        let mut home = Home::new();
        let host = home.host_repo("app");
        for (file, content) in base {
            commit_file(&host, file, content, "the app");
        }
        if !base.is_empty() {
            git(&host, &["push", "-q", "origin", "main"]);
        }
        let inst = home.instance(&unique_id(), |h, c| vec![mount(h, c, &host)]);
        let work = inst.mount_path(0);
        git(&work, &["config", "user.email", "agent@example.invalid"]);
        git(&work, &["config", "user.name", "Agent"]);
        let commits = session_commits(&work);
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

    /// "Squash and merge" of the pull request up to `tip` where the reviewer's editor left
    /// `content` in `file`: the squash commit holds those bytes, not the session's.
    fn squash_merge_as(&self, tip: &str, file: &str, content: &str) -> String {
        git(&self.reviewer, &["merge", "-q", "--squash", tip]);
        fs::write(self.reviewer.join(file), content).unwrap();
        git(&self.reviewer, &["add", file]);
        git(&self.reviewer, &["commit", "-q", "-m", "Squashed pull request"]);
        self.publish()
    }

    /// "Rebase and merge" whose last commit is replayed with `content` in `file`.
    fn rebase_merge_as(&self, commits: &[&str], file: &str, content: &str) -> String {
        let (last, before) = commits.split_last().expect("a commit to replay");
        for commit in before {
            git(&self.reviewer, &["cherry-pick", commit]);
        }
        git(&self.reviewer, &["cherry-pick", "-n", last]);
        fs::write(self.reviewer.join(file), content).unwrap();
        git(&self.reviewer, &["add", file]);
        git(&self.reviewer, &["commit", "-q", "-C", last]);
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

/// A discard bundles integrated commits too (cheap insurance: "the same patch" is a judgement,
/// the commits are the fact), also of a session with nothing else at risk, and the receipt says
/// which were integrated, as what and where. A purge without a discard of the same clean session
/// saves nothing (above).
#[test]
fn a_discard_bundles_integrated_commits_and_the_receipt_says_they_were_integrated() {
    if !engine_available("a_discard_bundles_integrated_commits_and_the_receipt_says_they_were_integrated") {
        return;
    }
    for (tip, integrated) in [("pr", 3), ("pr~1", 2)] {
        let scene = Scene::worktree();
        scene.squash_merge(tip);
        let out = scene.home.purge(&["--discard-unfinished", &scene.inst.container], "");
        assert_eq!(out.status.code(), Some(0), "{tip}: {}", stderr(&out));
        let purged = records::<Purged>(&out.stdout);
        let q = PathBuf::from(purged[0].quarantine.as_deref().unwrap_or_else(|| panic!("{tip}: no quarantine")));
        assert!(!scene.inst.dir.exists());
        let receipt = common::state::receipt(&q);
        let mount = &receipt.mounts[0];
        let listed: Vec<&str> = mount.integrated.iter().map(|i| i.commit.as_str()).collect();
        assert_eq!(listed.len(), integrated, "{tip}: {mount:?}");
        assert!(listed.iter().all(|id| scene.commits.iter().any(|c| c == id)), "{tip}: {listed:?}");
        let text = fs::read_to_string(q.join("RECEIPT.txt")).unwrap();
        assert_eq!(text.matches("was integrated as").count(), integrated, "{tip}: {text}");

        let fresh = scene.home.tmp.path().join("fresh");
        let origin = git(&scene.host, &["remote", "get-url", "origin"]);
        git(scene.home.tmp.path(), &["clone", "-q", &origin, fresh.to_str().unwrap()]);
        let bundle = q.join(mount.bundle.as_deref().expect("a bundle"));
        git(&fresh, &["fetch", "-q", bundle.to_str().unwrap(), "refs/*:refs/recovered/*"]);
        for commit in &scene.commits {
            git(&fresh, &["cat-file", "-e", &format!("{commit}^{{commit}}")]);
        }
    }
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

// ---------------------------------------------------------------------------------------------
// Whitespace is part of the patch: a merge that changed only whitespace holds other bytes (in
// Python, another program), so the session's commits stay at risk. The reference is git's own
// whitespace-sensitive patch-id, `git patch-id --verbatim`, run on the same repositories.

const PYTHON: &str = "app.py";

/// `git patch-id` of `git diff from to` in `repo`: `--verbatim` reads every whitespace byte,
/// `--stable` drops whitespace as `git cherry` does.
fn patch_id(repo: &Path, from: &str, to: &str, mode: &str) -> String {
    use std::io::Write;
    use std::process::{Command, Stdio};
    // Not through `git()`: its output is trimmed, and a diff's last line may end in blanks.
    let diff = Command::new("git").args(["diff", "--no-color", "--no-renames", from, to]).current_dir(repo).output();
    let diff = diff.unwrap();
    assert!(diff.status.success(), "git diff {from} {to}: {}", String::from_utf8_lossy(&diff.stderr));
    let mut child = Command::new("git")
        .args(["patch-id", mode])
        .current_dir(repo)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&diff.stdout).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "git patch-id {mode}");
    String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap_or_default().to_owned()
}

impl Scene {
    /// The session's commits (newest first, as the assessment lists them) that `git patch-id
    /// --verbatim` finds on origin/main: by their own patch, or squashed from the merge base.
    fn integrated_by_verbatim_patch_id(&self) -> Vec<String> {
        let branch = self.scratch_ref();
        let base = git(&self.host, &["merge-base", "origin/main", &branch]);
        let merged = git(&self.host, &["rev-list", "--no-merges", &format!("{base}..origin/main")]);
        let upstream: std::collections::HashSet<String> =
            merged.lines().map(|u| patch_id(&self.host, &format!("{u}^"), u, "--verbatim")).collect();
        let mut covered = std::collections::HashSet::new();
        for (k, commit) in self.commits.iter().enumerate() {
            if upstream.contains(&patch_id(&self.host, &format!("{commit}^"), commit, "--verbatim")) {
                covered.insert(commit);
            }
            if k > 0 && upstream.contains(&patch_id(&self.host, &base, commit, "--verbatim")) {
                covered.extend(&self.commits[..=k]);
            }
        }
        self.commits.iter().rev().filter(|c| covered.contains(c)).cloned().collect()
    }

    /// The assessment says integrated exactly what `git patch-id --verbatim` says, and at risk
    /// the rest.
    fn assert_integrated_as_verbatim_patch_id_says(&self, case: &str) -> Assessment {
        let want = self.integrated_by_verbatim_patch_id();
        let a = self.assess();
        let entry = &a.mounts[0].unpushed[0];
        let got: Vec<&str> = entry.integrated.iter().map(|i| i.commit.as_str()).collect();
        assert_eq!(got, want, "{case}: integrated, against git patch-id --verbatim; {a:?}");
        assert_eq!(entry.commits as usize, self.commits.len() - want.len(), "{case}: commits at risk");
        let verdict = if want.len() == self.commits.len() { "clean" } else { "unpushed" };
        assert_eq!(a.verdict, verdict, "{case}: {a:?}");
        a
    }
}

/// The session's patch `from..to` and the merged commit `merged` differ only in whitespace:
/// `git patch-id --verbatim` tells them apart, and (except for an added blank line, whose `+`
/// stays) the whitespace-blind patch-id `git cherry` compares takes them for one patch.
fn assert_whitespace_only(scene: &Scene, edit: Whitespace, (from, to): (&str, &str), merged: &str, case: &str) {
    let id = |from: &str, to: &str, mode| patch_id(&scene.host, from, to, mode);
    let parent = format!("{merged}^");
    assert_ne!(id(from, to, "--verbatim"), id(&parent, merged, "--verbatim"), "{case}: the edit changed bytes");
    let blind_same = id(from, to, "--stable") == id(&parent, merged, "--stable");
    assert_eq!(blind_same, edit != Whitespace::BlankLineAdded, "{case}: git's whitespace-blind patch-id");
}

/// The seed of this run's generated cases: `JACKIN_TEST_SEED`, or the clock; every failure
/// message names the seed that replays it. One seed for the whole run, so that one
/// `JACKIN_TEST_SEED` replays every test of it.
fn run_seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| match std::env::var("JACKIN_TEST_SEED") {
        Ok(seed) => seed.parse().expect("JACKIN_TEST_SEED is a number"),
        Err(_) => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64,
    })
}

/// The generator of case `n` of a run: each case has its own, so a failing one is replayed
/// alone by the same seed whatever ran before it.
fn case_rng(seed: u64, n: usize) -> Rng {
    Rng::new(seed ^ (n as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
}

/// The commit that added a line of app.py: main before the session, or the session's first or
/// second commit.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
enum Author {
    Main,
    First,
    Second,
}

/// app.py's lines (text, line ending, author) once the session's two commits are made: main's
/// functions (none: the session creates the file), the first commit's function inserted among
/// them, the second's appended.
#[derive(Clone, Debug)]
struct Program(Vec<(String, &'static str, Author)>);

impl Program {
    fn generate(rng: &mut Rng) -> Program {
        let mut functions: Vec<(Author, Vec<String>)> =
            (0..rng.below(3)).map(|n| (Author::Main, function(rng, &format!("setup_{n}")))).collect();
        let at = rng.below(functions.len() + 1);
        functions.insert(at, (Author::First, function(rng, "handle")));
        functions.push((Author::Second, function(rng, "finish")));
        let mut lines = Vec::new();
        for (i, (author, body)) in functions.iter().enumerate() {
            if i > 0 {
                // The blank line between two functions came with the later of the two.
                let later = if functions[i - 1].0 > *author { functions[i - 1].0 } else { *author };
                lines.push((String::new(), "\n", later));
            }
            lines.extend(body.iter().map(|text| (text.clone(), "\n", *author)));
        }
        Program(lines)
    }

    /// app.py once `upto` has committed.
    fn text(&self, upto: Author) -> String {
        self.0.iter().filter(|(_, _, a)| *a <= upto).map(|(text, end, _)| format!("{text}{end}")).collect()
    }

    /// The whole of app.py with `edit` made to one line that `by` added (chosen by `rng`), and
    /// what the edit did.
    fn edited(&self, edit: Whitespace, by: &[Author], rng: &mut Rng) -> (String, String) {
        let mut lines = self.0.clone();
        let fits = |text: &str| match edit {
            Whitespace::Indentation | Whitespace::TabForSpaces => text.starts_with("    "),
            Whitespace::SpaceInsideLine => text.trim_start().contains(' '),
            _ => !text.is_empty(),
        };
        let candidates: Vec<usize> = match edit {
            Whitespace::NoFinalNewline => vec![lines.len() - 1],
            _ => (0..lines.len()).filter(|i| by.contains(&lines[*i].2) && fits(&lines[*i].0)).collect(),
        };
        let i = *rng.pick(&candidates);
        let before = format!("{}{}", lines[i].0, lines[i].1);
        let text = &mut lines[i].0;
        let indent = text.len() - text.trim_start().len();
        match edit {
            Whitespace::Indentation => {
                let to = *rng.pick(&[indent - 4, indent - 2, indent + 2, indent + 4]);
                *text = format!("{}{}", " ".repeat(to), text.trim_start());
            }
            Whitespace::TabForSpaces => {
                let group = 4 * rng.below(indent / 4);
                text.replace_range(group..group + 4, "\t");
            }
            Whitespace::TrailingBlank => {
                let blank = *rng.pick(&[" ", "  ", "\t", " \t"]);
                text.push_str(blank);
            }
            Whitespace::SpaceInsideLine => {
                let spaces: Vec<usize> = text.match_indices(' ').map(|(at, _)| at).filter(|at| *at > indent).collect();
                text.insert(*rng.pick(&spaces), ' ');
            }
            Whitespace::CrlfEnding => lines[i].1 = "\r\n",
            Whitespace::BlankLineAdded => lines.insert(i + 1, (String::new(), "\n", lines[i].2)),
            Whitespace::NoFinalNewline => lines[i].1 = "",
        }
        let after: String = lines[i..].iter().take(2).map(|(text, end, _)| format!("{text}{end}")).collect();
        let what = format!("line {}: {before:?} became {after:?}", i + 1);
        (Program(lines).text(Author::Second), what)
    }
}

/// One function as an agent writes it: a condition and its block, then a return.
fn function(rng: &mut Rng, name: &str) -> Vec<String> {
    const FIELDS: [&str; 4] = ["kind", "size", "owner", "retries"];
    const CALLS: [&str; 5] = ["notify", "record", "retry", "audit", "flush"];
    let mut lines =
        vec![format!("def {name}(event, ctx):"), format!("    if event.{} == {}:", rng.pick(&FIELDS), rng.below(100))];
    for _ in 0..=rng.below(3) {
        lines.push(format!("        {}(event, ctx)", rng.pick(&CALLS)));
    }
    lines.push(format!("    return {}(event)", rng.pick(&CALLS)));
    lines
}

/// An edit of whitespace only: bytes change, no token does.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Whitespace {
    /// A statement moved into or out of its block (Python reads another program).
    Indentation,
    TabForSpaces,
    TrailingBlank,
    SpaceInsideLine,
    CrlfEnding,
    BlankLineAdded,
    NoFinalNewline,
}

const WHITESPACE_EDITS: [Whitespace; 7] = [
    Whitespace::Indentation,
    Whitespace::TabForSpaces,
    Whitespace::TrailingBlank,
    Whitespace::SpaceInsideLine,
    Whitespace::CrlfEnding,
    Whitespace::BlankLineAdded,
    Whitespace::NoFinalNewline,
];

/// A session that committed `program` in two commits (main holding its own functions first).
fn python_scene(program: &Program) -> Scene {
    let main = program.text(Author::Main);
    let base: &[(&str, &str)] = if main.is_empty() { &[] } else { &[(PYTHON, &main)] };
    Scene::worktree_with(base, |work| {
        vec![
            commit_file(work, PYTHON, &program.text(Author::First), "handle events"),
            commit_file(work, PYTHON, &program.text(Author::Second), "finish events"),
        ]
    })
}

/// Runs every case with its own generator, then fails naming the cases that failed (each one's
/// own message is above), so one run shows every kind of edit that is mistaken.
fn every_case<T: std::fmt::Debug>(cases: &[T], run: impl Fn(&T, Rng, &str)) {
    let seed = run_seed();
    let failed: Vec<&T> = cases
        .iter()
        .enumerate()
        .filter(|(n, case)| {
            let replay = format!("JACKIN_TEST_SEED={seed} replays it");
            let run = std::panic::AssertUnwindSafe(|| run(case, case_rng(seed, *n), &replay));
            std::panic::catch_unwind(run).is_err()
        })
        .map(|(_, case)| case)
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {} cases failed: {failed:?}; JACKIN_TEST_SEED={seed} replays them",
        failed.len(),
        cases.len()
    );
}

#[test]
fn a_squash_merge_that_changed_only_whitespace_leaves_the_commits_at_risk() {
    every_case(&WHITESPACE_EDITS, |edit, mut rng, replay| {
        let program = Program::generate(&mut rng);
        let scene = python_scene(&program);
        let (content, what) = program.edited(*edit, &[Author::First, Author::Second], &mut rng);
        let squash = scene.squash_merge_as("pr", PYTHON, &content);
        let case = format!("{edit:?}, {what} ({replay})");
        let base = git(&scene.host, &["merge-base", "origin/main", &scene.scratch_ref()]);
        assert_whitespace_only(&scene, *edit, (&base, &scene.commits[1]), &squash, &case);
        let a = scene.assert_integrated_as_verbatim_patch_id_says(&case);
        assert_eq!(a.mounts[0].unpushed[0].integrated, [], "{case}");
        assert_eq!(a.summary, "1 branch unpushed", "{case}");
    });
}

#[test]
fn a_rebase_merge_that_changed_only_whitespace_leaves_that_commit_at_risk() {
    every_case(&WHITESPACE_EDITS, |edit, mut rng, replay| {
        let program = Program::generate(&mut rng);
        let scene = python_scene(&program);
        // The first commit replayed byte for byte, the second with the edit in its own lines.
        let (content, what) = program.edited(*edit, &[Author::Second], &mut rng);
        let c = &scene.commits;
        let replayed = scene.rebase_merge_as(&[&c[0], &c[1]], PYTHON, &content);
        let case = format!("{edit:?}, {what} ({replay})");
        assert_whitespace_only(&scene, *edit, (&format!("{}^", c[1]), &c[1]), &replayed, &case);
        let a = scene.assert_integrated_as_verbatim_patch_id_says(&case);
        let first = git(&scene.reviewer, &["rev-parse", "HEAD^"]);
        let main = "refs/remotes/origin/main";
        assert_eq!(a.mounts[0].unpushed[0].integrated, [integrated(&c[0], &first, main, "patch")], "{case}");
        assert_eq!(a.summary, "1 branch unpushed · 1 commit integrated", "{case}");
    });
}

#[test]
fn the_same_change_merged_byte_for_byte_is_still_integrated() {
    every_case(&["program 1", "program 2", "program 3"], |name, mut rng, replay| {
        let case = format!("{name} ({replay})");
        let program = Program::generate(&mut rng);

        let squashed = python_scene(&program);
        let squash = squashed.squash_merge_as("pr", PYTHON, &program.text(Author::Second));
        let a = squashed.assert_integrated_as_verbatim_patch_id_says(&case);
        let main = "refs/remotes/origin/main";
        let want: Vec<Integrated> =
            squashed.commits.iter().rev().map(|c| integrated(c, &squash, main, "squash")).collect();
        assert_eq!(a.mounts[0].unpushed[0].integrated, want, "{case}");
        assert_eq!(a.summary, "clean · 2 commits integrated", "{case}");

        let rebased = python_scene(&program);
        let c = &rebased.commits;
        rebased.rebase_merge_as(&[&c[0], &c[1]], PYTHON, &program.text(Author::Second));
        let a = rebased.assert_integrated_as_verbatim_patch_id_says(&case);
        assert!(a.mounts[0].unpushed[0].integrated.iter().all(|i| i.how == "patch"), "{case}: {a:?}");
        assert_eq!(a.summary, "clean · 2 commits integrated", "{case}");
    });
}

#[test]
fn a_line_the_merge_moved_out_of_its_if_block_is_at_risk_and_purge_keeps_the_branch() {
    // The agent's `b()` runs only when X; the merged one always does. git cherry takes the two
    // for one patch.
    let scene =
        Scene::worktree_with(&[], |work| vec![commit_file(work, PYTHON, "if X:\n    a()\n    b()\n", "b when X")]);
    scene.squash_merge_as("pr", PYTHON, "if X:\n    a()\nb()\n");
    assert_eq!(scene.git_cherry("origin/main"), [format!("- {}", scene.commits[0])]);
    let a = scene.assert_integrated_as_verbatim_patch_id_says("the dedented b()");
    assert_eq!(a.summary, "1 branch unpushed");
    if !engine_available("a_line_the_merge_moved_out_of_its_if_block_is_at_risk_and_purge_keeps_the_branch") {
        return;
    }
    let out = purge(&scene.home, &scene.inst);
    assert_eq!(out.status.code(), Some(6), "{}", stderr(&out));
    assert_eq!(records::<ErrorRecord>(&out.stdout)[0].code, "at_risk");
    let scratch = format!("jackin/scratch/{}", scene.inst.container);
    assert!(git(&scene.host, &["branch", "--format=%(refname:short)"]).lines().any(|b| b == scratch));
    assert!(scene.inst.dir.exists());
}

#[test]
fn a_rebase_merge_onto_moved_lines_is_the_same_patch_unless_its_whitespace_changed() {
    // main gains lines above the session's change before the merge: the replayed diff has other
    // line numbers and other blobs around the same bytes, so only the patch-id can tell.
    let base: String = (1..=20).map(|n| format!("step_{n}()\n")).collect();
    let changed = base.replace("step_15()\n", "if ready:\n    step_15()\n");
    let header: String = (1..=5).map(|n| format!("# note {n}\n")).collect();
    for (merged, verdict) in [(changed.clone(), "clean"), (changed.replace("    step_15", "\tstep_15"), "unpushed")] {
        let scene = Scene::worktree_with(&[(PYTHON, &base)], |work| {
            vec![commit_file(work, PYTHON, &changed, "step 15 when ready")]
        });
        commit_file(&scene.reviewer, PYTHON, &format!("{header}{base}"), "notes on top");
        scene.rebase_merge_as(&[&scene.commits[0]], PYTHON, &format!("{header}{merged}"));
        let a = scene.assert_integrated_as_verbatim_patch_id_says(verdict);
        assert_eq!(a.verdict, verdict, "{a:?}");
    }
}
