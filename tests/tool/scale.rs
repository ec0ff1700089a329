//! The views' work grows with the sessions, not with their square (issue 69): counted, not timed.
//! A home of N worktree sessions of one host repository; `jackin-restore --list -v` and
//! `--interrupted --plan -v` say how many repositories they opened and worktree registrations they
//! read (lib/engines/git/counted.rs). Per session, both stay the same from 10 sessions to 40.

use crate::common;

use common::docker::engine_available;
use common::{stderr, Home};

/// A home of `n` worktree sessions of one repository.
fn sessions_of_one_repository(n: usize) -> Home {
    let mut home = Home::new();
    let host = home.host_repo("app");
    for i in 0..n {
        home.instance(&format!("sc{i:06}"), |h, c| vec![h.worktree_record(c, &host, "/workspace/my-app")]);
    }
    home
}

/// The counts `-v` gives for the view `args`: (repository opens, registrations read).
fn work_of(home: &Home, args: &[&str]) -> (u64, u64) {
    let out = home.cmd("jackin-restore").args(args).args(["-v", "--format", "json"]).output().unwrap();
    let said = stderr(&out);
    let line = said.lines().find(|l| l.contains("repository opens")).unwrap_or_else(|| panic!("{args:?}: {said}"));
    let count = |label: &str| -> u64 {
        let before = line.split(label).next().unwrap_or_else(|| panic!("{label}: {line}"));
        before.rsplit(|c: char| !c.is_ascii_digit()).find(|w| !w.is_empty()).unwrap().parse().unwrap()
    };
    (count(" repository opens"), count(" worktree registrations read"))
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
}
