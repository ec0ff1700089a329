//! What the git engine's tests over generated histories share: git itself, run in a directory
//! (at a given commit date, for histories whose clocks the test sets), and a seeded generator
//! whose seed is printed, so that a failing history can be made again.

use std::path::Path;
use std::process::Command;

/// `git args` in `dir`, as user T, with `date` as both author and committer date when given;
/// its standard output, trimmed.
pub(super) fn git(dir: &Path, args: &[&str], date: Option<&str>) -> String {
    let mut command = Command::new("git");
    command.args(["-c", "user.name=T", "-c", "user.email=t@example.invalid", "-c", "init.defaultBranch=main"]);
    if let Some(date) = date {
        command.env("GIT_COMMITTER_DATE", date).env("GIT_AUTHOR_DATE", date);
    }
    let out = command.args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A number in `0..n` for each call, from the seed `$var` names (else the clock), printed with
/// what it generates: `var=<seed>` replays the run.
pub(super) fn seeded(var: &str, what: &str) -> (u64, impl FnMut(u64) -> u64) {
    let seed: u64 = std::env::var(var).ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    eprintln!("{what} seed: {seed} ({var}={seed} replays it)");
    let mut rng = fastrand::Rng::with_seed(seed);
    (seed, move |n: u64| rng.u64(..n))
}
