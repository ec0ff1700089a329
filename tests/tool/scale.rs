//! The views' work grows with the sessions, not with their square (issue 69): counted, not timed.
//! A home of N worktree sessions of one host repository; `jackin-restore --list -v` and
//! `--interrupted --plan -v` say how many repositories they opened and worktree registrations they
//! read (lib/engines/git/counted.rs). Per session, both stay the same from 10 sessions to 40, and
//! the list's calls to the engine stay the same in all (one listing of its containers).
//! And where every session holds a commit of its own, the commits `jackin-assess --all -v` reads
//! for its walks and the diffs it makes to compare patches stay the same per session too: each
//! session's walk hides every other session's tip, and each looks through the others' commits
//! for its own patch, so without one reading of the repository per run both grow with the square;
//! and the walks for the commits its patches are looked for among are one a run, not one a session.

use crate::common;

use common::docker::engine_available;
use common::{commit_file, stderr, Home};

/// A home of `n` worktree sessions of one repository.
fn sessions_of_one_repository(n: usize) -> Home {
    let mut home = Home::new();
    let host = home.host_repo("app");
    for i in 0..n {
        home.instance(&format!("sc{i:06}"), |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    }
    home
}

/// The line `-v` ends a run of `tool args` with.
fn cost_of(home: &Home, tool: &str, args: &[&str]) -> String {
    let out = home.cmd(tool).args(args).args(["-v", "--format", "json"]).output().unwrap();
    let said = stderr(&out);
    let line = said.lines().find(|l| l.contains("repository opens")).unwrap_or_else(|| panic!("{args:?}: {said}"));
    line.to_owned()
}

/// The number before `label` in a cost line.
fn count(line: &str, label: &str) -> u64 {
    let before = line.split(label).next().unwrap_or_else(|| panic!("{label}: {line}"));
    before.rsplit(|c: char| !c.is_ascii_digit()).find(|w| !w.is_empty()).unwrap().parse().unwrap()
}

/// The counts `-v` gives for the view `args`: (repository opens, registrations read).
fn work_of(home: &Home, args: &[&str]) -> (u64, u64) {
    let line = cost_of(home, "jackin-restore", args);
    (count(&line, " repository opens"), count(&line, " worktree registrations read"))
}

/// A home of `n` worktree sessions of one repository, each with a commit of its own: the same
/// file, grown by the same bytes (so that no size tells two patches apart and each is diffed).
fn sessions_with_work_of_their_own(n: usize) -> Home {
    let mut home = Home::new();
    let host = home.host_repo("app");
    for i in 0..n {
        let inst = home.instance(&format!("sw{i:06}"), |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
        commit_file(&inst.mount_path(0), "notes.txt", &format!("work of session {i:06}\n"), "work");
    }
    home
}

#[test]
fn the_commits_read_and_diffs_made_per_session_do_not_grow_with_a_fleet_holding_work() {
    let (small, large) = (10, 40);
    let (few, many) = (sessions_with_work_of_their_own(small), sessions_with_work_of_their_own(large));
    let (line_few, line_many) =
        (cost_of(&few, "jackin-assess", &["--all"]), cost_of(&many, "jackin-assess", &["--all"]));
    for label in [" commits read", " diffs"] {
        let (at_few, at_many) = (count(&line_few, label), count(&line_many, label));
        assert!(at_few >= small as u64, "{label}: each session's work is looked at: {line_few}");
        // Per session, at most twice as much at four times the sessions (a walk or a comparison
        // per pair of sessions is four times as much; two threads may diff one candidate at once,
        // and each diff counts).
        assert!(
            at_many as f64 / large as f64 <= at_few as f64 / small as f64 * 2.0,
            "{label}: {at_few} at {small} sessions, {at_many} at {large}"
        );
    }
    // The sessions build on one commit: one walk for the patch search serves them all, where
    // each used to walk through all the others' work.
    let (walks_few, walks_many) = (count(&line_few, " candidate walks"), count(&line_many, " candidate walks"));
    assert!(walks_few >= 1, "the patch search walks: {line_few}");
    assert_eq!(walks_many, walks_few, "candidate walks at {small} and at {large} sessions");
}

#[test]
fn the_lists_work_per_session_does_not_grow_with_the_sessions_of_one_repository() {
    if !engine_available("the_lists_work_per_session_does_not_grow") {
        return;
    }
    let (small, large) = (10, 40);
    let (few, many) = (sessions_of_one_repository(small), sessions_of_one_repository(large));
    for view in [&["--list"][..], &["--interrupted", "--plan"]] {
        let (opens_few, regs_few) = work_of(&few, view);
        let (opens_many, regs_many) = work_of(&many, view);
        // Per session, at most a tenth more work at four times the sessions (a walk of every
        // registration per session would be four times as much).
        let per = |work: u64, n: usize| work as f64 / n as f64;
        assert!(regs_few > 0 && opens_few > 0, "{view:?}: the counts count: {opens_few}, {regs_few}");
        assert!(
            per(regs_many, large) <= per(regs_few, small) * 1.1,
            "{view:?}: registrations read {regs_few} at {small} sessions, {regs_many} at {large}"
        );
        assert!(
            per(opens_many, large) <= per(opens_few, small) * 1.1,
            "{view:?}: repositories opened {opens_few} at {small} sessions, {opens_many} at {large}"
        );
    }
    // The list asks the engine for its containers once, not for each session's: these sessions'
    // containers are gone, and a gone one needs no call of its own.
    let calls = |home: &Home| count(&cost_of(home, "jackin-restore", &["--list"]), " engine API calls");
    let (calls_few, calls_many) = (calls(&few), calls(&many));
    assert!(calls_few > 0, "the list asks the engine: {calls_few}");
    assert_eq!(calls_many, calls_few, "engine calls of the list at {small} and at {large} sessions");
}
