//! The generated work-loss oracle (the `work-loss oracle` row of tests/safety/reliability.rs).
//!
//! A seeded generator plays an agent on real worktrees and clones of a real host repository
//! that has an `origin` (and a submodule with an origin of its own): edits, deletes, renames,
//! mode changes, symlinks, untracked trees, hostile names, sparse and large files, commits,
//! amends, resets, rebases, cherry-picks, stashes, submodule commits, a submodule removed with
//! `git rm`, pushes, and the test acting as upstream (squash and rebase merges of the session's
//! work into origin's `main`).
//! Before the purge the oracle records with the git CLI what exists only in the session (its
//! commits and its changed files' bytes); after `jackin-assess | jackin-keep --policy=clean |
//! jackin-purge` or `jackin-purge --discard-unfinished` it checks that each of them still exists:
//! on a surviving ref, in the quarantine (bundles fetched with git, files compared byte for byte
//! under their own names), or, only where the assessment said so, as the same verbatim patch.
//!
//! Replay a failure with `JACKIN_ORACLE_SEED=<seed> JACKIN_RELIABILITY_ONLY=oracle cargo test
//! --test tests safety::reliability::`; `JACKIN_ORACLE_ONLY=<i>,<j>` plays only those histories of the seed (in
//! one batch), `JACKIN_ORACLE_ACTIONS=<name>;<name>` plays those actions in every history,
//! `JACKIN_ORACLE_COUNT=<n>` sets how many histories run, `JACKIN_ORACLE_LOG=1` prints each
//! history's actions and `JACKIN_ORACLE_KEEP=1` leaves each batch's directories in place
//! (docs/maintainers/reliability.md, "Replaying the work-loss oracle").

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::{long, panicked, run, tool, Tally};
use crate::common::{stderr, unique_id, Home, Rng};

// ---------------------------------------------------------------------------------------------
// what the generator may do

/// The session pushes its branch to origin, and upstream deletes that branch later (as a forge
/// does after a merge) while the mount still has the remote-tracking ref. Off: a clone's stale
/// remote-tracking ref counts as surviving, as the specification says (lifecycle.md; kept so in
/// docs/maintainers/decisions.md), so its commits are assessed clean and a purge deletes them.
const PUSHED_BRANCH_DELETED: bool = false;

/// A symlink inside a directory that took a tracked file's place (`rm README.md; mkdir
/// README.md; ln -s … README.md/link`). Every purge of such a session failed, "File exists"
/// (exit 6, nothing deleted), until the save stopped copying such an entry twice (fixed on main;
/// docs/maintainers/reliability.md). On: generated and checked.
const LINK_WHERE_A_FILE_WAS: bool = true;

/// Histories per jackin home (one host repository, its origin, one assess, keep and purge run).
const BATCH: usize = 20;
/// Batches run at once.
const WORKERS: usize = 2;
/// A sparse file's length: 1 GiB with a few bytes written.
const SPARSE_LEN: u64 = 1 << 30;
const MOUNT_DST: &str = "/workspace/my-app";
/// Where the second mount of an instance with two is (a clone).
const SECOND_DST: &str = "/workspace/second";
/// What a sparse file's name ends in: left out of every `git add` and stash (hashing 1 GiB).
const SPARSE_SUFFIX: &str = ".img";

fn histories() -> usize {
    match std::env::var("JACKIN_ORACLE_COUNT").ok().and_then(|n| n.parse().ok()) {
        Some(n) => n,
        None if long() => 5000,
        None => 200,
    }
}

fn seed() -> u64 {
    match std::env::var("JACKIN_ORACLE_SEED") {
        Ok(s) => {
            let s = s.trim();
            let parsed = match s.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => s.parse(),
            };
            parsed.unwrap_or_else(|_| panic!("JACKIN_ORACLE_SEED={s:?} is not a number"))
        }
        Err(_) => std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64,
    }
}

/// The seed of history `index` of a run seeded `seed` (splitmix64).
fn history_seed(seed: u64, index: usize) -> u64 {
    let mut z = seed.wrapping_add((index as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Worktree,
    Clone,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Route {
    /// `jackin-assess | jackin-keep --policy=clean | jackin-purge`.
    Pipe,
    /// `jackin-purge --discard-unfinished`.
    Discard,
}

/// Bytes as text for a message: printable ASCII as it is, everything else `\xNN`, so that no
/// generated name reaches a terminal as a control sequence.
fn show(bytes: &[u8]) -> String {
    let mut s = String::new();
    for &b in bytes {
        if (0x20..0x7f).contains(&b) && b != b'\\' {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s
}

fn os(bytes: &[u8]) -> &Path {
    Path::new(OsStr::from_bytes(bytes))
}

fn first_line(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let line = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("").trim();
    show(&line.as_bytes()[..line.len().min(120)])
}

/// A git command with the agent's (or upstream's) identity, a commit date from `clock`, no
/// editor, no hooks, and the file transport allowed (the submodule's origin is a path). No
/// optional locks: a `git status` does not write the stat data it refreshed back into the index,
/// so the tools find the index as the agent's last command left it, not as the oracle's look did.
fn git_command(dir: &Path, clock: u64) -> Command {
    let date = format!("{} +0000", 1_790_000_000 + clock);
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(["-c", "protocol.file.allow=always", "-c", "commit.gpgsign=false", "-c", "core.hooksPath=/dev/null"])
        .env("GIT_AUTHOR_NAME", "Agent")
        .env("GIT_AUTHOR_EMAIL", "agent@example.invalid")
        .env("GIT_COMMITTER_NAME", "Agent")
        .env("GIT_COMMITTER_EMAIL", "agent@example.invalid")
        .env("GIT_AUTHOR_DATE", &date)
        .env("GIT_COMMITTER_DATE", &date)
        .env("GIT_EDITOR", "true")
        .env("GIT_SEQUENCE_EDITOR", "true")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE");
    cmd
}

fn git_run(dir: &Path, clock: u64, args: &[&str], input: Option<&[u8]>) -> Output {
    let mut cmd = git_command(dir, clock);
    cmd.args(args);
    match input {
        Some(bytes) => run(cmd, bytes),
        None => cmd.stdin(Stdio::null()).output().expect("git runs"),
    }
}

/// Runs git where the oracle or the setup needs it to work: a failure is a failure of the test.
fn git_must(dir: &Path, args: &[&str], input: Option<&[u8]>) -> Vec<u8> {
    let out = git_run(dir, 0, args, input);
    assert!(out.status.success(), "git {args:?} in {}: {}", dir.display(), stderr(&out));
    out.stdout
}

fn git_text(dir: &Path, args: &[&str]) -> String {
    String::from_utf8_lossy(&git_must(dir, args, None)).trim().to_owned()
}

fn lines_set(bytes: &[u8]) -> BTreeSet<String> {
    String::from_utf8_lossy(bytes).lines().map(|l| l.trim().to_owned()).filter(|l| !l.is_empty()).collect()
}

// ---------------------------------------------------------------------------------------------
// the world of one batch: a jackin home, the host repository, its origin, the submodule's origin

struct World {
    home: Home,
    host: PathBuf,
    origin: PathBuf,
    sub_origin: PathBuf,
    /// Upstream's working clone of origin: where the squash and rebase merges are made.
    upstream: PathBuf,
}

impl World {
    /// The world of the histories `indices`: each has a tracked file of its own in the host
    /// (`src/part_<i>.rs`), which its edits prefer, so that upstream can merge one session's work
    /// without a conflict with another's as often as it could on one shared file.
    fn new(indices: &[usize]) -> World {
        let home = Home::new();
        let host = home.host_repo("app");
        let tmp = home.tmp.path().to_path_buf();
        let origin = tmp.join("app-origin.git");
        let sub_origin = tmp.join("sub-origin.git");
        let upstream = tmp.join("upstream");
        let path = |p: &Path| p.to_str().unwrap().to_owned();
        git_must(&tmp, &["init", "-q", "--bare", "-b", "main", &path(&sub_origin)], None);
        let sub_src = tmp.join("sub-src");
        fs::create_dir_all(&sub_src).unwrap();
        git_must(&sub_src, &["init", "-q", "-b", "main"], None);
        fs::write(sub_src.join("lib.txt"), "the submodule\n").unwrap();
        git_must(&sub_src, &["add", "-A"], None);
        git_must(&sub_src, &["commit", "-q", "-m", "the submodule's first commit"], None);
        git_must(&sub_src, &["push", "-q", &path(&sub_origin), "main"], None);

        git_must(&host, &["submodule", "add", "-q", &path(&sub_origin), "sub"], None);
        git_must(&host, &["commit", "-q", "-m", "add the submodule"], None);
        for i in indices {
            fs::write(
                host.join(format!("src/part_{i}.rs")),
                format!("// part {i}\npub fn part_{i}() -> u32 {{\n    {i}\n}}\n"),
            )
            .unwrap();
        }
        git_must(&host, &["add", "-A"], None);
        git_must(&host, &["commit", "-q", "-m", "a part for each session"], None);
        // A branch of the host that origin has, and one only the host has.
        git_must(&host, &["checkout", "-q", "-b", "feature"], None);
        fs::write(host.join("src/feature.rs"), "pub fn feature() {}\n").unwrap();
        git_must(&host, &["add", "-A"], None);
        git_must(&host, &["commit", "-q", "-m", "feature: a module"], None);
        fs::write(host.join("README.md"), "hello\nthe feature\n").unwrap();
        git_must(&host, &["commit", "-q", "-am", "feature: the README says so"], None);
        git_must(&host, &["push", "-q", "origin", "feature"], None);
        git_must(&host, &["checkout", "-q", "-b", "local-only", "main"], None);
        fs::write(host.join("local.txt"), "only the host has this\n").unwrap();
        git_must(&host, &["add", "-A"], None);
        git_must(&host, &["commit", "-q", "-m", "local-only work of the operator"], None);
        git_must(&host, &["checkout", "-q", "main"], None);
        git_must(&host, &["push", "-q", "origin", "main"], None);
        git_must(&tmp, &["clone", "-q", "--no-local", &path(&origin), &path(&upstream)], None);
        World { home, host, origin, sub_origin, upstream }
    }
}

// ---------------------------------------------------------------------------------------------
// the agent

struct Agent<'w> {
    world: &'w World,
    rng: Rng,
    index: usize,
    kind: Kind,
    mount: PathBuf,
    /// The worktree's scratch branch (`""` for a clone).
    scratch: String,
    clock: u64,
    n: usize,
    /// Files this history made (relative paths), whether or not they still exist.
    made: Vec<Vec<u8>>,
    /// Directories made where a file was (`file to directory`).
    turned: Vec<Vec<u8>>,
    log: Vec<String>,
}

type Action = (&'static str, u32, fn(&mut Agent<'_>) -> Result<String, String>);

/// The agent's actions and their weights (0: gated off).
const ACTIONS: &[Action] = &[
    ("edit", 12, |a| a.edit()),
    ("whitespace edit", 5, |a| a.whitespace_edit()),
    ("new file", 12, |a| a.new_file()),
    ("untracked tree", 4, |a| a.untracked_tree()),
    ("delete", 4, |a| a.delete()),
    ("git mv", 3, |a| a.git_mv()),
    ("mv", 3, |a| a.plain_mv()),
    ("chmod", 3, |a| a.chmod()),
    ("symlink", 4, |a| a.symlink()),
    ("file to directory", 2, |a| a.file_to_dir()),
    ("sparse file", 2, |a| a.sparse_file()),
    ("large file", 2, |a| a.large_file()),
    ("ignored file", 2, |a| a.ignored_file()),
    ("stage", 4, |a| a.stage()),
    ("staged, then changed", 3, |a| a.staged_then_changed()),
    ("commit", 16, |a| a.commit()),
    ("amend", 4, |a| a.amend()),
    ("reset --hard HEAD~1", 3, |a| a.reset_hard()),
    ("reset HEAD~1", 2, |a| a.reset_mixed()),
    ("rebase", 3, |a| a.rebase_self()),
    ("rebase onto origin/main", 3, |a| a.rebase_upstream()),
    ("cherry-pick a host branch", 3, |a| a.cherry_pick_host()),
    ("cherry-pick onto a host branch", 3, |a| a.cherry_pick_onto_host()),
    ("detach HEAD", 2, |a| a.detach()),
    ("back on the branch", 2, |a| a.reattach()),
    ("new branch", 2, |a| a.branch()),
    ("tag", 2, |a| a.tag()),
    ("stash", 5, |a| a.stash()),
    ("submodule update --init", 2, |a| a.submodule_init()),
    ("submodule commit", 4, |a| a.submodule_commit()),
    ("submodule file", 2, |a| a.submodule_file()),
    ("submodule removed (git rm)", 2, |a| a.submodule_rm()),
    ("upstream squash merge", 5, |a| a.upstream_squash()),
    ("upstream rebase merge", 2, |a| a.upstream_rebase_merge()),
    ("upstream commit", 2, |a| a.upstream_commit()),
    ("push a branch", if PUSHED_BRANCH_DELETED { 3 } else { 1 }, |a| a.push_branch()),
    ("fetch", 2, |a| a.fetch()),
];

/// Another history's own tracked file (`src/part_<j>.rs`): left to that history.
fn foreign_part(index: usize, path: &[u8]) -> bool {
    path.starts_with(b"src/part_") && path != format!("src/part_{index}.rs").as_bytes()
}

/// Names that are safe to put on git's command line (no pathspec magic, no option).
fn plain_name(bytes: &[u8]) -> bool {
    !bytes.is_empty()
        && bytes[0] != b'-'
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'/'))
}

impl<'w> Agent<'w> {
    fn git(&mut self, args: &[&str]) -> Result<Vec<u8>, String> {
        let mount = self.mount.clone();
        self.git_at(&mount, args, None)
    }

    fn git_at(&mut self, dir: &Path, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, String> {
        self.clock += 1;
        let out = git_run(dir, self.index as u64 * 100_000 + self.clock, args, input);
        if out.status.success() {
            Ok(out.stdout)
        } else {
            let said = if out.stderr.iter().all(u8::is_ascii_whitespace) { &out.stdout } else { &out.stderr };
            Err(format!("git {}: {}", args.first().copied().unwrap_or(""), first_line(said)))
        }
    }

    fn git_text(&mut self, args: &[&str]) -> Result<String, String> {
        self.git(args).map(|out| String::from_utf8_lossy(&out).trim().to_owned())
    }

    fn next_n(&mut self) -> usize {
        self.n += 1;
        self.n
    }

    fn path(&self, rel: &[u8]) -> PathBuf {
        self.mount.join(os(rel))
    }

    /// A generated file name: plain, with spaces, Unicode, control characters and ESC
    /// sequences, newlines, odd punctuation, long, and bytes that are not UTF-8.
    fn name(&mut self) -> Vec<u8> {
        let n = self.next_n();
        let i = self.index;
        let text = match self.rng.below(12) {
            0..=2 => format!("notes-{i}-{n}.txt"),
            3 => format!("my notes {i} {n}.md"),
            4 => (*self.rng.pick(&["résumé-{}.txt", "日本語-{}.rs", "\u{202e}gpj.{}exe", "emoji-\u{1f600}-{}"]))
                .replace("{}", &format!("{i}-{n}")),
            5 => (*self.rng.pick(&["ctl\u{1}\u{2}\u{7f}-{}", "bell\u{7}-{}", "nul-like\u{1b}\u{0}-{}"]))
                .replace('\u{0}', "0")
                .replace("{}", &format!("{i}-{n}")),
            6 => (*self.rng.pick(&["\u{1b}[31mred\u{1b}[0m-{}", "\u{1b}]0;pwned\u{7}-{}", "\u{1b}[2J\u{1b}[H-{}"]))
                .replace("{}", &format!("{i}-{n}")),
            7 => (*self.rng.pick(&["line\nbreak-{}", "cr\r-{}", "tab\t-{}", "two\n\nlines-{}"]))
                .replace("{}", &format!("{i}-{n}")),
            8 => (*self.rng.pick(&[
                "-rf-{}",
                " lead-{}",
                "trail-{} ",
                "back\\slash-{}",
                "\"quoted\"-{}",
                "star*-{}",
                "q?[x]-{}",
                ":(top)colon-{}",
                "#hash-{}",
                "~tilde-{}",
                "'single'-{}",
                "$dollar-{}",
            ]))
            .replace("{}", &format!("{i}-{n}")),
            9 => format!("{}-{i}-{n}", "long".repeat(1 + self.rng.below(40))),
            _ => {
                let bad: &[&[u8]] =
                    &[b"bad\xff\xfe-", b"caf\xe9-", b"\x80lone-", b"\xc0\xafoverlong-", b"\xed\xa0\x80sur-"];
                let mut bytes = self.rng.pick(bad).to_vec();
                bytes.extend(format!("{i}-{n}").as_bytes());
                return bytes;
            }
        };
        text.into_bytes()
    }

    /// A directory for a new file: the top, an existing one, or a new one with a generated name.
    fn dir(&mut self) -> Vec<u8> {
        match self.rng.below(6) {
            0..=2 => Vec::new(),
            3 => b"src/".to_vec(),
            4 => b"docs/deep dir/".to_vec(),
            _ => {
                let mut d = self.name();
                d.push(b'/');
                d
            }
        }
    }

    fn content(&mut self) -> Vec<u8> {
        let n = self.next_n();
        match self.rng.below(8) {
            0 => Vec::new(),
            1 => {
                let mut b: Vec<u8> = (0..64 + self.rng.below(300)).map(|_| self.rng.next() as u8).collect();
                b.push(0);
                b
            }
            2 => format!("line one {n}\r\nline two\r\n").into_bytes(),
            3 => format!("def f{n}():\n    return {n}\n\n\tindented with a tab\n").into_bytes(),
            _ => {
                let lines = 1 + self.rng.below(6);
                (0..lines)
                    .map(|l| format!("agent {} wrote line {l} of {n}\n", self.index))
                    .collect::<String>()
                    .into_bytes()
            }
        }
    }

    fn write(&mut self, rel: &[u8], bytes: &[u8]) -> Result<(), String> {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| format!("mkdir: {e}"))?;
        }
        fs::write(&path, bytes).map_err(|e| format!("write: {e}"))
    }

    /// `git ls-files -s -z`: the index's entries, mode and path.
    fn tracked(&mut self) -> Vec<(String, Vec<u8>)> {
        let Ok(out) = self.git(&["ls-files", "-s", "-z"]) else { return Vec::new() };
        out.split(|b| *b == 0)
            .filter(|e| !e.is_empty())
            .filter_map(|e| {
                let tab = e.iter().position(|b| *b == b'\t')?;
                let mode = String::from_utf8_lossy(&e[..6]).into_owned();
                Some((mode, e[tab + 1..].to_vec()))
            })
            .collect()
    }

    /// A regular file of the work tree to change: tracked ones (not `.gitmodules`, `.gitignore`,
    /// the submodule) and the ones this history made; never a sparse file.
    fn some_file(&mut self) -> Option<Vec<u8>> {
        let mut files: Vec<Vec<u8>> = self
            .tracked()
            .into_iter()
            .filter(|(mode, p)| mode.starts_with("100") && p != b".gitmodules" && p != b".gitignore")
            .map(|(_, p)| p)
            .collect();
        files.extend(self.made.iter().cloned());
        files.retain(|p| {
            !p.ends_with(SPARSE_SUFFIX.as_bytes())
                && !foreign_part(self.index, p)
                && fs::symlink_metadata(self.path(p)).is_ok_and(|m| m.is_file())
        });
        files.sort();
        files.dedup();
        let own = format!("src/part_{}.rs", self.index).into_bytes();
        if files.contains(&own) && self.rng.below(2) == 0 {
            return Some(own);
        }
        if files.is_empty() {
            return None;
        }
        Some(self.rng.pick(&files).clone())
    }

    fn gitdir(&mut self) -> PathBuf {
        PathBuf::from(self.git_text(&["rev-parse", "--absolute-git-dir"]).unwrap_or_default())
    }

    fn in_progress(&mut self) -> bool {
        let gitdir = self.gitdir();
        ["rebase-merge", "rebase-apply", "CHERRY_PICK_HEAD", "MERGE_HEAD"].iter().any(|f| gitdir.join(f).exists())
    }

    /// After a failed rebase or cherry-pick: abort it, or (one time in four) leave it half-done,
    /// as an agent that gave up would.
    fn after_conflict(&mut self, what: &str, why: String) -> Result<String, String> {
        if self.rng.below(4) == 0 {
            return Ok(format!("{what} stopped on a conflict and left so ({why})"));
        }
        let _ = self.git(&[what, "--abort"]);
        Err(format!("{why}; aborted"))
    }

    fn stage_all(&mut self) -> Result<Vec<u8>, String> {
        let exclude = format!(":(exclude)*{SPARSE_SUFFIX}");
        self.git(&["add", "-A", "--", ".", &exclude])
    }

    // --- the actions

    fn edit(&mut self) -> Result<String, String> {
        let file = self.some_file().ok_or("no file")?;
        let path = self.path(&file);
        let mut bytes = fs::read(&path).map_err(|e| e.to_string())?;
        let n = self.next_n();
        let how = match self.rng.below(4) {
            0 => {
                bytes = self.content();
                "rewritten"
            }
            1 => {
                let mut b = format!("agent {} first line {n}\n", self.index).into_bytes();
                b.extend(bytes);
                bytes = b;
                "a line in front"
            }
            _ => {
                bytes.extend(format!("agent {} appended {n}\n", self.index).as_bytes());
                "a line appended"
            }
        };
        fs::write(&path, &bytes).map_err(|e| e.to_string())?;
        Ok(format!("{} ({how})", show(&file)))
    }

    fn whitespace_edit(&mut self) -> Result<String, String> {
        let file = self.some_file().ok_or("no file")?;
        let path = self.path(&file);
        let before = fs::read(&path).map_err(|e| e.to_string())?;
        let mut after = before.clone();
        let how = match self.rng.below(4) {
            0 => {
                // Trailing spaces on the first line.
                let at = after.iter().position(|b| *b == b'\n').unwrap_or(after.len());
                after.splice(at..at, *b"  ");
                "trailing spaces"
            }
            1 => {
                after.push(b'\n');
                "a blank line at the end"
            }
            2 => {
                after.splice(0..0, *b"\t");
                "a tab in front"
            }
            _ => {
                match after.iter().position(|b| *b == b'\n') {
                    Some(at) => after.splice(at..at, *b"\r"),
                    None => after.splice(0..0, *b" "),
                };
                "a CR (or a space)"
            }
        };
        fs::write(&path, &after).map_err(|e| e.to_string())?;
        Ok(format!("{} ({how})", show(&file)))
    }

    fn new_file(&mut self) -> Result<String, String> {
        let mut rel = self.dir();
        rel.extend(self.name());
        let content = self.content();
        self.write(&rel, &content)?;
        self.made.push(rel.clone());
        Ok(format!("{} ({} bytes)", show(&rel), content.len()))
    }

    fn untracked_tree(&mut self) -> Result<String, String> {
        let mut root = self.dir();
        root.extend(self.name());
        let mut made = Vec::new();
        for _ in 0..2 + self.rng.below(3) {
            let mut rel = root.clone();
            for _ in 0..self.rng.below(3) {
                rel.push(b'/');
                rel.extend(self.name());
            }
            rel.push(b'/');
            rel.extend(self.name());
            let content = self.content();
            self.write(&rel, &content)?;
            self.made.push(rel.clone());
            made.push(show(&rel));
        }
        Ok(made.join(", "))
    }

    fn delete(&mut self) -> Result<String, String> {
        let file = self.some_file().ok_or("no file")?;
        if plain_name(&file) && self.rng.below(2) == 0 {
            let path = String::from_utf8(file.clone()).unwrap();
            if self.git(&["rm", "-q", "--", &path]).is_ok() {
                return Ok(format!("git rm {path}"));
            }
        }
        fs::remove_file(self.path(&file)).map_err(|e| e.to_string())?;
        Ok(format!("rm {}", show(&file)))
    }

    fn git_mv(&mut self) -> Result<String, String> {
        let files: Vec<Vec<u8>> = self
            .tracked()
            .into_iter()
            .filter(|(mode, p)| mode.starts_with("100") && plain_name(p) && p != b".gitmodules" && p != b".gitignore")
            .map(|(_, p)| p)
            .filter(|p| !foreign_part(self.index, p) && self.path(p).is_file())
            .collect();
        if files.is_empty() {
            return Err("no plain tracked file".into());
        }
        let from = String::from_utf8(self.rng.pick(&files).clone()).unwrap();
        let n = self.next_n();
        let to =
            if self.rng.below(2) == 0 { format!("moved-{}-{n}.txt", self.index) } else { format!("src/moved/{n}.rs") };
        if let Some(parent) = self.path(to.as_bytes()).parent() {
            fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        self.git(&["mv", "--", &from, &to])?;
        Ok(format!("{from} -> {to}"))
    }

    fn plain_mv(&mut self) -> Result<String, String> {
        let from = self.some_file().ok_or("no file")?;
        let mut to = self.dir();
        to.extend(self.name());
        let dst = self.path(&to);
        if let Some(parent) = dst.parent() {
            fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        fs::rename(self.path(&from), &dst).map_err(|e| e.to_string())?;
        self.made.push(to.clone());
        Ok(format!("{} -> {}", show(&from), show(&to)))
    }

    fn chmod(&mut self) -> Result<String, String> {
        let file = self.some_file().ok_or("no file")?;
        let path = self.path(&file);
        let mode = fs::metadata(&path).map_err(|e| e.to_string())?.permissions().mode();
        let new = if mode & 0o100 == 0 { 0o755 } else { 0o644 };
        fs::set_permissions(&path, fs::Permissions::from_mode(new)).map_err(|e| e.to_string())?;
        Ok(format!("{} {new:o}", show(&file)))
    }

    fn symlink(&mut self) -> Result<String, String> {
        let targets: &[&[u8]] = &[
            b"README.md",
            b"src/main.rs",
            b"../../../../../../etc/passwd",
            b"no-such-target",
            b"src",
            b"/tmp",
            b"\x1b[31mred target",
            b"bad\xfftarget",
            b"a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a",
        ];
        let target = self.rng.pick(targets).to_vec();
        // A tracked file turned into a link (a type change), or a new link.
        let replaced = if self.rng.below(3) == 0 { self.some_file() } else { None };
        let under_turned =
            |file: &Vec<u8>| self.turned.iter().any(|d| file.starts_with(d) && file.get(d.len()) == Some(&b'/'));
        let replaced = replaced.filter(|file| LINK_WHERE_A_FILE_WAS || !under_turned(file));
        let rel = match replaced {
            Some(file) => {
                fs::remove_file(self.path(&file)).map_err(|e| e.to_string())?;
                file
            }
            None => {
                let mut rel = self.dir();
                rel.extend(self.name());
                if let Some(parent) = self.path(&rel).parent() {
                    fs::create_dir_all(parent).map_err(|e| e.to_string())?;
                }
                rel
            }
        };
        std::os::unix::fs::symlink(os(&target), self.path(&rel)).map_err(|e| e.to_string())?;
        Ok(format!("{} -> {}", show(&rel), show(&target)))
    }

    /// A file removed and a directory of the same name made, with a file in it.
    fn file_to_dir(&mut self) -> Result<String, String> {
        let file = self.some_file().ok_or("no file")?;
        let path = self.path(&file);
        fs::remove_file(&path).map_err(|e| e.to_string())?;
        fs::create_dir(&path).map_err(|e| e.to_string())?;
        self.turned.push(file.clone());
        let mut rel = file.clone();
        rel.push(b'/');
        rel.extend(self.name());
        let content = self.content();
        self.write(&rel, &content)?;
        self.made.push(rel.clone());
        Ok(format!("{} is a directory now, with {}", show(&file), show(&rel)))
    }

    fn sparse_file(&mut self) -> Result<String, String> {
        use std::os::unix::fs::FileExt;
        let mut rel = self.dir();
        rel.extend(self.name());
        rel.extend(SPARSE_SUFFIX.as_bytes());
        let path = self.path(&rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(|e| e.to_string())?;
        }
        let file = fs::File::create(&path).map_err(|e| e.to_string())?;
        file.set_len(SPARSE_LEN).map_err(|e| e.to_string())?;
        let mut written = Vec::new();
        for _ in 0..1 + self.rng.below(3) {
            let at = self.next_u64() % (SPARSE_LEN - 100);
            let bytes = format!("data {} at {at}", self.index);
            file.write_at(bytes.as_bytes(), at).map_err(|e| e.to_string())?;
            written.push(at.to_string());
        }
        self.made.push(rel.clone());
        Ok(format!("{} (1 GiB, bytes at {})", show(&rel), written.join(", ")))
    }

    fn next_u64(&mut self) -> u64 {
        self.rng.next()
    }

    /// A file of a few MB: generated lines (so git and the tools do not spend the run deflating
    /// noise), binary (a NUL and a run of random bytes) one time in two.
    fn large_file(&mut self) -> Result<String, String> {
        let mut rel = self.dir();
        rel.extend(self.name());
        rel.extend(b".bin");
        let len = (2 << 20) + self.rng.below(2 << 20);
        let binary = self.rng.below(2) == 0;
        let mut bytes = Vec::with_capacity(len + 100);
        if binary {
            bytes.push(0);
            for _ in 0..512 {
                bytes.extend(self.rng.next().to_le_bytes());
            }
        }
        let mut line = 0;
        while bytes.len() < len {
            bytes.extend(format!("history {} line {line} of a large file\n", self.index).as_bytes());
            line += 1;
        }
        bytes.truncate(len);
        self.write(&rel, &bytes)?;
        self.made.push(rel.clone());
        Ok(format!("{} ({len} bytes{})", show(&rel), if binary { ", binary" } else { "" }))
    }

    fn ignored_file(&mut self) -> Result<String, String> {
        let n = self.next_n();
        let rel = if self.rng.below(2) == 0 {
            format!("build-{}-{n}.log", self.index)
        } else {
            format!("target/debug/out-{n}")
        };
        self.write(rel.as_bytes(), b"ignored output\n")?;
        Ok(rel)
    }

    /// A file staged and then removed or edited again, so that the index holds the only copy of
    /// the staged version (`AD`, `AM`, `MM`).
    fn staged_then_changed(&mut self) -> Result<String, String> {
        let file = match self.some_file() {
            Some(file) if self.rng.below(2) == 0 => file,
            _ => {
                let mut rel = self.dir();
                rel.extend(self.name());
                let content = self.content();
                self.write(&rel, &content)?;
                self.made.push(rel.clone());
                rel
            }
        };
        self.stage_all()?;
        let path = self.path(&file);
        if self.rng.below(2) == 0 {
            fs::remove_file(&path).map_err(|e| e.to_string())?;
            return Ok(format!("{}, then removed", show(&file)));
        }
        let mut bytes = fs::read(&path).map_err(|e| e.to_string())?;
        let n = self.next_n();
        bytes.extend(format!("after the staging, {n}\n").as_bytes());
        fs::write(&path, bytes).map_err(|e| e.to_string())?;
        Ok(format!("{}, then edited", show(&file)))
    }

    fn stage(&mut self) -> Result<String, String> {
        self.stage_all()?;
        Ok("git add -A".into())
    }

    fn commit(&mut self) -> Result<String, String> {
        let all = self.rng.below(4) != 0;
        if all {
            self.stage_all()?;
        }
        let n = self.next_n();
        let message = format!("agent work h{} #{n}", self.index);
        self.git(&["commit", "-q", "-m", &message])?;
        let id = self.git_text(&["rev-parse", "--short", "HEAD"])?;
        Ok(format!("{id}{}", if all { " (all)" } else { " (what was staged)" }))
    }

    fn amend(&mut self) -> Result<String, String> {
        if self.rng.below(2) == 0 {
            self.stage_all()?;
        }
        let n = self.next_n();
        let message = format!("amended h{} #{n}", self.index);
        self.git(&["commit", "-q", "--amend", "-m", &message])?;
        let id = self.git_text(&["rev-parse", "--short", "HEAD"])?;
        Ok(id)
    }

    fn reset_hard(&mut self) -> Result<String, String> {
        self.git(&["reset", "-q", "--hard", "HEAD~1"])?;
        self.git_text(&["rev-parse", "--short", "HEAD"])
    }

    fn reset_mixed(&mut self) -> Result<String, String> {
        let soft = self.rng.below(2) == 0;
        self.git(&["reset", "-q", if soft { "--soft" } else { "--mixed" }, "HEAD~1"])?;
        Ok(if soft { "--soft" } else { "--mixed" }.into())
    }

    fn rebase_self(&mut self) -> Result<String, String> {
        let k = 1 + self.rng.below(2);
        let onto = format!("HEAD~{k}");
        match self.git(&["rebase", "-q", "--autostash", "--force-rebase", &onto]) {
            Ok(_) => Ok(format!("--force-rebase {onto}")),
            Err(why) => self.after_conflict("rebase", why),
        }
    }

    fn rebase_upstream(&mut self) -> Result<String, String> {
        self.git(&["fetch", "-q", "origin"])?;
        match self.git(&["rebase", "-q", "--autostash", "origin/main"]) {
            Ok(_) => Ok("rebased".into()),
            Err(why) => self.after_conflict("rebase", why),
        }
    }

    fn cherry_pick_host(&mut self) -> Result<String, String> {
        let prefix = if self.kind == Kind::Clone { "origin/" } else { "" };
        let pick = format!("{prefix}{}", self.rng.pick(&["feature", "feature~1", "local-only"]));
        match self.git(&["cherry-pick", &pick]) {
            Ok(_) => Ok(pick),
            Err(why) => self.after_conflict("cherry-pick", why),
        }
    }

    /// The session's HEAD commit cherry-picked onto a new branch of the host repository, from
    /// inside the worktree (whose refs are the host's), then back where it was.
    fn cherry_pick_onto_host(&mut self) -> Result<String, String> {
        if self.kind != Kind::Worktree {
            return Err("a clone has no host branches".into());
        }
        if self.in_progress() {
            return Err("a rebase or cherry-pick is under way".into());
        }
        let committed = self.commit_for_review()?;
        let tracked_changes = self.git(&["status", "--porcelain", "-z", "--untracked-files=no"])?;
        if !tracked_changes.is_empty() {
            return Err("the work tree is not clean".into());
        }
        let head = self.git_text(&["rev-parse", "HEAD"])?;
        let back = self.git_text(&["symbolic-ref", "-q", "--short", "HEAD"]).unwrap_or_default();
        let n = self.next_n();
        let side = format!("side-h{}-{n}", self.index);
        self.git(&["checkout", "-q", "-b", &side, "origin/main"])?;
        let picked = self.git(&["cherry-pick", &head]);
        if picked.is_err() {
            let _ = self.git(&["cherry-pick", "--abort"]);
        }
        let returned = if back.is_empty() {
            self.git(&["checkout", "-q", "--detach", &head])
        } else {
            self.git(&["checkout", "-q", &back])
        };
        returned.map_err(|e| format!("could not go back: {e}"))?;
        picked.map(|_| format!("{committed}{} onto {side}", &head[..8]))
    }

    fn detach(&mut self) -> Result<String, String> {
        self.git(&["checkout", "-q", "--detach"])?;
        Ok("detached".into())
    }

    fn reattach(&mut self) -> Result<String, String> {
        let branch = if self.kind == Kind::Worktree { self.scratch.clone() } else { "main".to_owned() };
        self.git(&["checkout", "-q", &branch])?;
        Ok(branch)
    }

    fn branch(&mut self) -> Result<String, String> {
        let n = self.next_n();
        let name = format!("topic-h{}-{n}", self.index);
        if self.kind == Kind::Worktree {
            // A worktree's new branch is the host's: it survives the purge.
            self.git(&["branch", &name])?;
        } else {
            self.git(&["checkout", "-q", "-b", &name])?;
        }
        Ok(name)
    }

    fn tag(&mut self) -> Result<String, String> {
        let n = self.next_n();
        let name = format!("tag-h{}-{n}", self.index);
        self.git(&["tag", &name])?;
        Ok(name)
    }

    fn stash(&mut self) -> Result<String, String> {
        if self.kind != Kind::Clone {
            return Err("a worktree's stash is the host's".into());
        }
        match self.rng.below(5) {
            0 | 1 => {
                self.git(&["stash", "push", "-q"])?;
                Ok("push".into())
            }
            2 => {
                let exclude = format!(":(exclude)*{SPARSE_SUFFIX}");
                self.git(&["stash", "push", "-q", "-u", "--", ".", &exclude])?;
                Ok("push -u".into())
            }
            3 => {
                self.git(&["stash", "pop", "-q"])?;
                Ok("pop".into())
            }
            _ => {
                self.git(&["stash", "drop", "-q"])?;
                Ok("drop".into())
            }
        }
    }

    fn submodule_init(&mut self) -> Result<String, String> {
        if self.path(b"sub/.git").exists() {
            return Err("already checked out".into());
        }
        self.git(&["submodule", "update", "--init", "-q"])?;
        Ok("sub".into())
    }

    fn submodule_commit(&mut self) -> Result<String, String> {
        if !self.path(b"sub/.git").exists() {
            self.git(&["submodule", "update", "--init", "-q"])?;
        }
        let sub = self.path(b"sub");
        let mut rel = b"sub/".to_vec();
        rel.extend(self.name());
        let content = self.content();
        self.write(&rel, &content)?;
        self.git_at(&sub, &["add", "-A"], None)?;
        let n = self.next_n();
        let message = format!("submodule work h{} #{n}", self.index);
        self.git_at(&sub, &["commit", "-q", "-m", &message], None)?;
        let id =
            String::from_utf8_lossy(&self.git_at(&sub, &["rev-parse", "--short", "HEAD"], None)?).trim().to_owned();
        let bumped = self.rng.below(2) == 0 && self.git(&["add", "sub"]).is_ok() && {
            let message = format!("bump the submodule h{} #{n}", self.index);
            self.git(&["commit", "-q", "-m", &message]).is_ok()
        };
        Ok(format!("{id}{}", if bumped { ", the bump committed" } else { "" }))
    }

    fn submodule_file(&mut self) -> Result<String, String> {
        if !self.path(b"sub/.git").exists() {
            self.git(&["submodule", "update", "--init", "-q"])?;
        }
        if self.rng.below(2) == 0 {
            let content = self.content();
            self.write(b"sub/lib.txt", &content)?;
            return Ok("sub/lib.txt changed".into());
        }
        let mut rel = b"sub/".to_vec();
        rel.extend(self.name());
        let content = self.content();
        self.write(&rel, &content)?;
        Ok(show(&rel))
    }

    /// `git rm` of the checked-out submodule, sometimes committed: its work tree goes, its git
    /// directory stays in the mount's with a `core.worktree` that names nothing.
    fn submodule_rm(&mut self) -> Result<String, String> {
        if !self.path(b"sub/.git").exists() {
            return Err("not checked out".into());
        }
        self.git(&["rm", "-q", "-f", "sub"])?;
        if self.rng.below(2) == 0 {
            let n = self.next_n();
            self.git(&["commit", "-q", "-m", &format!("drop the submodule h{} #{n}", self.index)])?;
            return Ok("sub, committed".into());
        }
        Ok("sub".into())
    }

    /// Fetches what upstream did into the mount (and so, for a worktree, the host), and for a
    /// clone sometimes into the host repository too (or only there).
    fn see_upstream(&mut self) -> String {
        let host = self.world.host.clone();
        let mut seen = Vec::new();
        if self.rng.below(8) != 0 && self.git(&["fetch", "-q", "origin"]).is_ok() {
            seen.push("the mount fetched");
        }
        if self.kind == Kind::Clone
            && self.rng.below(2) == 0
            && self.git_at(&host, &["fetch", "-q", "origin"], None).is_ok()
        {
            seen.push("the host fetched");
        }
        if seen.is_empty() {
            "nobody fetched".into()
        } else {
            seen.join(", ")
        }
    }

    /// Writes `text` to `file` in upstream's clone; to a file of its own when an agent made that
    /// path something else (a directory) and upstream merged it.
    fn upstream_write(&mut self, up: &Path, file: &str, text: &str) -> Result<(), String> {
        let path = up.join(file);
        let path = if fs::symlink_metadata(&path).is_ok_and(|m| !m.is_file()) {
            up.join(format!("upstream-{}.txt", self.index))
        } else {
            path
        };
        fs::write(&path, text).map_err(|e| format!("upstream's write of {}: {e}", path.display()))
    }

    /// Upstream's clone at origin's `main`.
    fn upstream_fresh(&mut self) -> Result<PathBuf, String> {
        let up = self.world.upstream.clone();
        self.git_at(&up, &["fetch", "-q", "origin"], None)?;
        self.git_at(&up, &["reset", "-q", "--hard", "origin/main"], None)?;
        self.git_at(&up, &["clean", "-q", "-fdx"], None)?;
        Ok(up)
    }

    /// Applies `patch` in upstream's clone and commits it; undoes it on failure.
    fn upstream_apply(&mut self, up: &Path, patch: &[u8], message: &str) -> Result<(), String> {
        let applied = self
            .git_at(up, &["apply", "--index", "--binary", "-"], Some(patch))
            .or_else(|_| self.git_at(up, &["apply", "--3way", "--binary", "-"], Some(patch)));
        if let Err(e) = applied.and_then(|_| self.git_at(up, &["commit", "-q", "-m", message], None)) {
            let _ = self.git_at(up, &["reset", "-q", "--hard", "origin/main"], None);
            return Err(e);
        }
        Ok(())
    }

    /// Upstream squash-merges the session's committed work into origin's `main`: exactly, with
    /// an edit of its own in the squash (a whitespace change: no longer the same patch), or
    /// exactly and then a later commit of its own on top.
    fn upstream_squash(&mut self) -> Result<String, String> {
        let committed = self.commit_for_review()?;
        let base = self.git_text(&["merge-base", "HEAD", "origin/main"])?;
        let patch = self.git(&["diff", "--binary", "--full-index", &base, "HEAD"])?;
        if patch.is_empty() {
            return Err("nothing committed to merge".into());
        }
        let up = self.upstream_fresh()?;
        let message = format!("Squash merge of the session h{}", self.index);
        let variant = self.rng.below(3);
        let applied = self
            .git_at(&up, &["apply", "--index", "--binary", "-"], Some(&patch))
            .or_else(|_| self.git_at(&up, &["apply", "--3way", "--binary", "-"], Some(&patch)));
        if let Err(e) = applied {
            let _ = self.git_at(&up, &["reset", "-q", "--hard", "origin/main"], None);
            return Err(e);
        }
        let mut how = "exact";
        if variant == 1 {
            // Upstream's own edit in the squash: trailing spaces on a changed text file.
            let changed = self.git_at(&up, &["diff", "--cached", "--name-only", "-z", "--diff-filter=AM"], None)?;
            let text = changed
                .split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| up.join(os(p)))
                .find(|p| fs::read(p).is_ok_and(|b| !b.contains(&0) && b.len() < 100_000));
            if let Some(path) = text {
                let mut bytes = fs::read(&path).map_err(|e| e.to_string())?;
                bytes.extend(b"   \n");
                fs::write(&path, bytes).map_err(|e| e.to_string())?;
                self.git_at(&up, &["add", "-A"], None)?;
                how = "with upstream's whitespace edit";
            }
        }
        if let Err(e) = self.git_at(&up, &["commit", "-q", "-m", &message], None) {
            let _ = self.git_at(&up, &["reset", "-q", "--hard", "origin/main"], None);
            return Err(e);
        }
        if variant == 2 {
            let text = format!("hello\nupstream after the squash of h{}\n", self.index);
            self.upstream_write(&up, "README.md", &text)?;
            self.git_at(&up, &["add", "-A"], None)?;
            self.git_at(&up, &["commit", "-q", "-m", "upstream's later edit"], None)?;
            how = "exact, then an upstream commit";
        }
        self.git_at(&up, &["push", "-q", "origin", "HEAD:main"], None)?;
        let seen = self.see_upstream();
        Ok(format!("{committed}{how}; {seen}"))
    }

    /// Before a merge upstream: the work committed, as an agent does before it asks for review,
    /// when nothing is committed yet. Says so.
    fn commit_for_review(&mut self) -> Result<&'static str, String> {
        let ahead = self.git_text(&["rev-list", "--count", "origin/main..HEAD"])?;
        if ahead != "0" {
            return Ok("");
        }
        self.stage_all()?;
        let n = self.next_n();
        let message = format!("agent work for review h{} #{n}", self.index);
        self.git(&["commit", "-q", "-m", &message]).map_err(|_| "nothing to merge".to_owned())?;
        Ok("committed first; ")
    }

    /// Upstream rebase-merges the session's commits: each one's patch applied on origin's `main`.
    fn upstream_rebase_merge(&mut self) -> Result<String, String> {
        let committed = self.commit_for_review()?;
        let list = self.git_text(&["rev-list", "--reverse", "--no-merges", "origin/main..HEAD"])?;
        let commits: Vec<String> = list.lines().map(str::to_owned).collect();
        if commits.is_empty() {
            return Err("nothing committed to merge".into());
        }
        let up = self.upstream_fresh()?;
        for c in &commits {
            let patch = self.git(&["diff-tree", "-p", "--binary", "--full-index", &format!("{c}^"), c])?;
            if patch.is_empty() {
                continue;
            }
            self.upstream_apply(&up, &patch, &format!("rebase merge of {}", &c[..8]))?;
        }
        self.git_at(&up, &["push", "-q", "origin", "HEAD:main"], None)?;
        let seen = self.see_upstream();
        Ok(format!("{committed}{} commits; {seen}", commits.len()))
    }

    fn upstream_commit(&mut self) -> Result<String, String> {
        let up = self.upstream_fresh()?;
        let n = self.next_n();
        let file =
            if self.rng.below(2) == 0 { "README.md".to_owned() } else { format!("upstream-{}-{n}.txt", self.index) };
        self.upstream_write(&up, &file, &format!("hello from upstream {n}\n"))?;
        self.git_at(&up, &["add", "-A"], None)?;
        self.git_at(&up, &["commit", "-q", "-m", "upstream's own work"], None)?;
        self.git_at(&up, &["push", "-q", "origin", "HEAD:main"], None)?;
        let seen = if self.rng.below(2) == 0 { self.see_upstream() } else { "nobody fetched".into() };
        Ok(format!("{file}; {seen}"))
    }

    /// The session pushes HEAD to a branch of origin; upstream may delete that branch later (a
    /// forge deleting a merged or closed pull request's branch), the mount not told.
    fn push_branch(&mut self) -> Result<String, String> {
        if self.rng.below(3) == 0 {
            // Straight onto origin's main, when that is a fast-forward.
            self.git(&["push", "-q", "origin", "HEAD:refs/heads/main"])?;
            return Ok("HEAD to origin's main".into());
        }
        let n = self.next_n();
        let branch = format!("session-h{}-{n}", self.index);
        self.git(&["push", "-q", "origin", &format!("HEAD:refs/heads/{branch}")])?;
        if PUSHED_BRANCH_DELETED && self.rng.below(2) == 0 {
            let origin = self.world.origin.clone();
            self.git_at(&origin, &["branch", "-q", "-D", &branch], None)?;
            return Ok(format!("{branch}, then deleted on origin"));
        }
        Ok(branch)
    }

    fn fetch(&mut self) -> Result<String, String> {
        let prune = self.rng.below(2) == 0;
        self.git(if prune { &["fetch", "-q", "--prune", "origin"] } else { &["fetch", "-q", "origin"] })?;
        Ok(if prune { "--prune" } else { "" }.into())
    }

    /// Plays the history: up to 12 actions, each logged with what it did or why it could not.
    /// `JACKIN_ORACLE_ACTIONS=<name>;<name>…` plays those actions instead (to make a failure's
    /// history smaller by hand).
    fn play(&mut self) {
        let forced: Option<Vec<String>> =
            std::env::var("JACKIN_ORACLE_ACTIONS").ok().map(|l| l.split(';').map(|a| a.trim().to_owned()).collect());
        let count = match &forced {
            Some(list) => list.len(),
            None => match self.rng.below(12) {
                0 => 0,
                1..=2 => 1 + self.rng.below(3),
                _ => 3 + self.rng.below(10),
            },
        };
        // What only one kind can do is drawn only for that kind: a worktree's stash is the host's,
        // a clone has no host branches to cherry-pick onto.
        let only_for = |name: &str| match name {
            "stash" => Some(Kind::Clone),
            "cherry-pick onto a host branch" => Some(Kind::Worktree),
            _ => None,
        };
        let kind = self.kind;
        let actions: Vec<Action> =
            ACTIONS.iter().filter(|a| only_for(a.0).is_none_or(|k| k == kind)).copied().collect();
        let total: u32 = actions.iter().map(|a| a.1).sum();
        for step in 0..count {
            let mut at = self.rng.below(total as usize) as u32;
            let &(name, _, action) = match &forced {
                Some(list) => ACTIONS
                    .iter()
                    .find(|a| a.0 == list[step])
                    .unwrap_or_else(|| panic!("JACKIN_ORACLE_ACTIONS: no action {:?}", list[step])),
                None => actions
                    .iter()
                    .find(|a| {
                        if at < a.1 {
                            true
                        } else {
                            at -= a.1;
                            false
                        }
                    })
                    .unwrap(),
            };
            let entry = match action(self) {
                Ok(what) if what.is_empty() => name.to_owned(),
                Ok(what) => format!("{name} {what}"),
                Err(why) => format!("{name} (not done: {why})"),
            };
            self.log.push(entry);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// what the oracle records before the purge

/// What a changed file of the mount holds: a file's content (a digest that reads holes as
/// zeros, so a sparse file and its copy compare by content) and its executable bit, or a link's
/// target.
#[derive(Clone, PartialEq, Eq, Debug)]
enum Content {
    File { digest: [u8; 32], len: u64, exec: bool },
    Link(Vec<u8>),
}

impl Content {
    fn of(path: &Path) -> std::io::Result<Option<Content>> {
        let meta = fs::symlink_metadata(path)?;
        if meta.file_type().is_symlink() {
            return Ok(Some(Content::Link(fs::read_link(path)?.as_os_str().as_bytes().to_vec())));
        }
        if !meta.is_file() {
            return Ok(None);
        }
        let exec = meta.permissions().mode() & 0o100 != 0;
        Ok(Some(Content::File { digest: digest_file(path)?, len: meta.len(), exec }))
    }

    fn describe(&self) -> String {
        match self {
            Content::File { len, exec, .. } => format!("{len} bytes{}", if *exec { ", executable" } else { "" }),
            Content::Link(target) => format!("a link to {}", show(target)),
        }
    }
}

const BLOCK: u64 = 4096;

/// SHA-256 over a file's length and each non-zero 4 KiB block with its number: the same for
/// two files exactly when they hold the same bytes, whatever is a hole in either. Reads only the
/// blocks the file's data extents touch (SEEK_DATA, SEEK_HOLE), so a 1 GiB sparse file with a
/// few bytes in it costs a few blocks.
fn digest_file(path: &Path) -> std::io::Result<[u8; 32]> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::FileExt;
    let file = fs::File::open(path)?;
    let len = file.metadata()?.len();
    let fd = file.as_raw_fd();
    let mut blocks = BTreeSet::new();
    let mut at: i64 = 0;
    while (at as u64) < len {
        // SAFETY: lseek on a descriptor this function owns.
        let data = unsafe { libc::lseek(fd, at, libc::SEEK_DATA) };
        if data < 0 {
            if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENXIO) {
                break;
            }
            // No extents to tell: every block.
            blocks.extend(0..len.div_ceil(BLOCK));
            break;
        }
        let hole = unsafe { libc::lseek(fd, data, libc::SEEK_HOLE) };
        let hole = if hole < 0 { len as i64 } else { hole };
        blocks.extend(data as u64 / BLOCK..(hole as u64).div_ceil(BLOCK));
        at = hole.max(data + 1);
    }
    let mut hasher = Sha256::new();
    hasher.update(len.to_le_bytes());
    let mut buf = vec![0u8; BLOCK as usize];
    for block in blocks {
        let start = block * BLOCK;
        if start >= len {
            break;
        }
        let n = (len - start).min(BLOCK) as usize;
        file.read_exact_at(&mut buf[..n], start)?;
        if buf[..n].iter().any(|b| *b != 0) {
            hasher.update(block.to_le_bytes());
            hasher.update(&buf[..n]);
        }
    }
    Ok(hasher.finalize().into())
}

/// [`digest_file`] of bytes in memory (a blob).
fn digest_bytes(bytes: &[u8]) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update((bytes.len() as u64).to_le_bytes());
    for (block, chunk) in bytes.chunks(BLOCK as usize).enumerate() {
        if chunk.iter().any(|b| *b != 0) {
            hasher.update((block as u64).to_le_bytes());
            hasher.update(chunk);
        }
    }
    hasher.finalize().into()
}

/// One entry of `git status --porcelain -z --untracked-files=all`, read as bytes.
struct StatusEntry {
    /// The two status letters.
    xy: [u8; 2],
    /// The path (a rename's new path).
    path: Vec<u8>,
    /// A rename's (or copy's) old path.
    orig: Option<Vec<u8>>,
}

/// Both sides changed the path in a merge, rebase or cherry-pick that stopped on a conflict
/// (`DD`, `AU`, `UD`, `UA`, `DU`, `AA`, `UU`): the index holds its stages, not one version.
fn unmerged(xy: &[u8; 2]) -> bool {
    matches!(xy, b"DD" | b"AU" | b"UD" | b"UA" | b"DU" | b"AA" | b"UU")
}

fn status_entries(dir: &Path) -> Vec<StatusEntry> {
    let out = git_must(dir, &["status", "--porcelain", "-z", "--untracked-files=all"], None);
    let mut fields = out.split(|b| *b == 0);
    let mut entries = Vec::new();
    while let Some(entry) = fields.next() {
        if entry.len() < 4 {
            continue;
        }
        let orig = if matches!(entry[0], b'R' | b'C') { fields.next().map(<[u8]>::to_vec) } else { None };
        entries.push(StatusEntry { xy: [entry[0], entry[1]], path: entry[3..].to_vec(), orig });
    }
    entries
}

/// An index entry's mode and object (a blob, or a submodule's commit).
type IndexEntry = (String, String);

/// The index's entries (stage 0) by path: mode and blob.
fn index_entries(dir: &Path) -> HashMap<Vec<u8>, IndexEntry> {
    let out = git_must(dir, &["ls-files", "-s", "-z"], None);
    out.split(|b| *b == 0)
        .filter_map(|e| {
            let tab = e.iter().position(|b| *b == b'\t')?;
            let meta = String::from_utf8_lossy(&e[..tab]).into_owned();
            let fields: Vec<&str> = meta.split(' ').collect();
            (fields.len() == 3 && fields[2] == "0")
                .then(|| (e[tab + 1..].to_vec(), (fields[0].to_owned(), fields[1].to_owned())))
        })
        .collect()
}

/// The contents of `blobs`, read with one `git cat-file --batch`.
fn blob_contents(dir: &Path, blobs: &[String]) -> Vec<Vec<u8>> {
    let input = format!("{}\n", blobs.join("\n"));
    let out = git_must(dir, &["cat-file", "--batch"], Some(input.as_bytes()));
    let mut rest = out.as_slice();
    let mut contents = Vec::new();
    for _ in blobs {
        let end = rest.iter().position(|b| *b == b'\n').unwrap_or(rest.len());
        let header = String::from_utf8_lossy(&rest[..end]).into_owned();
        let size: usize = header.rsplit(' ').next().and_then(|n| n.parse().ok()).unwrap_or(0);
        let body = rest.get(end + 1..end + 1 + size).unwrap_or_default();
        contents.push(body.to_vec());
        rest = rest.get(end + 2 + size..).unwrap_or_default();
    }
    contents
}

fn rev_list(dir: &Path, args: &[&str], input: Option<&[u8]>) -> BTreeSet<String> {
    let mut all = vec!["rev-list"];
    all.extend(args);
    lines_set(&git_must(dir, &all, input))
}

/// The ids both sides of each line of a reflog name (none when there is no reflog).
fn reflog_ids(file: &Path) -> Vec<String> {
    let Ok(text) = fs::read(file) else { return Vec::new() };
    text.split(|b| *b == b'\n')
        .flat_map(|line| line.split(|b| *b == b' ').take(2).map(|id| String::from_utf8_lossy(id).into_owned()))
        .filter(|id| id.len() == 40 && id.bytes().any(|b| b != b'0'))
        .collect()
}

/// One generated history: how it was made, what the oracle recorded, what the tools said.
struct History {
    index: usize,
    kind: Kind,
    route: Route,
    container: String,
    data_dir: PathBuf,
    /// The mount's place among its instance's records, and its container path.
    mount_index: usize,
    mount_dst: String,
    mount: PathBuf,
    scratch: String,
    log: Vec<String>,
    /// Commits only the session has, before the purge.
    commits: BTreeSet<String>,
    /// Changed and untracked files (raw path relative to the mount) and what they hold.
    files: Vec<(Vec<u8>, Content)>,
    /// Commits only the submodule checked out in the mount has.
    sub_commits: BTreeSet<String>,
    /// Staged versions the work tree does not have: path, blob, and what it holds.
    staged: Vec<(Vec<u8>, String, Content)>,
    /// What the session's index held at each path it had a change staged at (a rename's old
    /// path too): mode and blob (a submodule's commit), or nothing (a staged deletion).
    staged_index: Vec<(Vec<u8>, Option<IndexEntry>)>,
    /// The paths `git status` listed that the work tree no longer has (deleted, renamed away),
    /// in the mount and in its submodule.
    deleted: Vec<Vec<u8>>,
    /// The assessment's data.
    assessment: Option<Value>,
    /// The commits the assessment had integrated.
    integrated: BTreeMap<String, Integration>,
}

impl History {
    /// The assessment's entry for this history's mount.
    fn assessed_mount(&self) -> Option<&Value> {
        self.assessment.as_ref()?["mounts"].as_array()?.iter().find(|m| m["mount_dst"] == self.mount_dst.as_str())
    }

    fn verdict(&self) -> &str {
        self.assessment.as_ref().and_then(|a| a["verdict"].as_str()).unwrap_or("none")
    }

    fn route(&self) -> &'static str {
        match self.route {
            Route::Pipe => "assess | keep --policy=clean | purge",
            Route::Discard => "purge --discard-unfinished",
        }
    }

    fn kind(&self) -> String {
        let kind = match self.kind {
            Kind::Worktree => "worktree",
            Kind::Clone => "clone",
        };
        if self.mount_index == 0 {
            kind.to_owned()
        } else {
            format!("{kind} at {}, the instance of the history before it", self.mount_dst)
        }
    }

    /// The message of a failure of this history: the seed, the history, its actions, and what.
    fn failure(&self, seed: u64, what: &str) -> String {
        format!(
            "seed {seed}, history {} ({}, {}, assessed {}): {what}; actions: [{}]; replay: JACKIN_ORACLE_SEED={seed} \
             JACKIN_ORACLE_ONLY={} JACKIN_RELIABILITY_ONLY=oracle cargo test --test tests safety::reliability::",
            self.index,
            self.kind(),
            self.route(),
            self.verdict(),
            self.log.join("; "),
            self.index,
        )
    }

    /// What the oracle finds at risk in the mount now, against the commits that survive.
    fn record(&mut self, surviving: &BTreeSet<String>, sub_surviving: &BTreeSet<String>) {
        let mount = &self.mount;
        let session = match self.kind {
            Kind::Clone => rev_list(mount, &["--reflog", "--all", "HEAD"], None),
            Kind::Worktree => {
                let scratch_ref = format!("refs/heads/{}", self.scratch);
                let gitdir = PathBuf::from(git_text(mount, &["rev-parse", "--absolute-git-dir"]));
                let common =
                    PathBuf::from(git_text(mount, &["rev-parse", "--path-format=absolute", "--git-common-dir"]));
                let mut tips = vec![git_text(mount, &["rev-parse", "HEAD"])];
                let scratch = git_run(mount, 0, &["rev-parse", "-q", "--verify", &scratch_ref], None);
                if scratch.status.success() {
                    tips.push(String::from_utf8_lossy(&scratch.stdout).trim().to_owned());
                }
                tips.extend(reflog_ids(&gitdir.join("logs/HEAD")));
                tips.extend(reflog_ids(&common.join("logs").join(&scratch_ref)));
                rev_list(mount, &["--stdin"], Some(format!("{}\n", tips.join("\n")).as_bytes()))
            }
        };
        self.commits = session.difference(surviving).cloned().collect();
        let mut staged = Vec::new();
        let mut staged_paths = Vec::new();
        for StatusEntry { xy, path: rel, orig } in status_entries(mount) {
            let path = mount.join(os(&rel));
            if !unmerged(&xy) && matches!(xy[0], b'A' | b'M' | b'R' | b'C' | b'T' | b'D') {
                staged_paths.extend(orig.iter().cloned());
                staged_paths.push(rel.clone());
            }
            for gone in [Some(&rel), orig.as_ref()].into_iter().flatten() {
                if fs::symlink_metadata(mount.join(os(gone))).is_err() {
                    self.deleted.push(gone.clone());
                }
            }
            if path.join(".git").exists() && fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                continue; // the submodule, below
            }
            let content = Content::of(&path).ok().flatten();
            if matches!(xy[0], b'A' | b'M' | b'R' | b'C' | b'T') && xy[1] != b' ' {
                staged.push((rel.clone(), content.clone()));
            }
            if let Some(content) = content {
                self.files.push((rel, content));
            }
        }
        let index = if staged_paths.is_empty() { HashMap::new() } else { index_entries(mount) };
        self.staged_index = staged_paths.into_iter().map(|p| (p.clone(), index.get(&p).cloned())).collect();
        if !staged.is_empty() {
            let staged: Vec<(Vec<u8>, Option<Content>, String, String)> = staged
                .into_iter()
                .filter_map(|(rel, content)| {
                    let (mode, blob) = index.get(&rel)?.clone();
                    (mode != "160000").then_some((rel, content, mode, blob))
                })
                .collect();
            let blobs: Vec<String> = staged.iter().map(|s| s.3.clone()).collect();
            for ((rel, in_tree, mode, blob), bytes) in staged.into_iter().zip(blob_contents(mount, &blobs)) {
                let version = if mode == "120000" {
                    Content::Link(bytes)
                } else {
                    Content::File { digest: digest_bytes(&bytes), len: bytes.len() as u64, exec: mode == "100755" }
                };
                if in_tree.as_ref() != Some(&version) {
                    self.staged.push((rel, blob, version));
                }
            }
        }
        let sub = mount.join("sub");
        // A submodule removed with `git rm` is its git directory alone, whose `core.worktree`
        // names nothing: git reads it with a work tree given.
        let removed = PathBuf::from(git_text(mount, &["rev-parse", "--absolute-git-dir"])).join("modules/sub");
        if !sub.join(".git").exists() && removed.join("HEAD").is_file() {
            let (git_dir, work_tree) =
                (format!("--git-dir={}", removed.display()), format!("--work-tree={}", removed.display()));
            let commits = lines_set(&git_must(
                mount,
                &[&git_dir, &work_tree, "rev-list", "--reflog", "--all", "HEAD", "--"],
                None,
            ));
            self.sub_commits = commits.difference(sub_surviving).cloned().collect();
        }
        if sub.join(".git").exists() {
            let commits = rev_list(&sub, &["--reflog", "--all", "HEAD"], None);
            self.sub_commits = commits.difference(sub_surviving).cloned().collect();
            for entry in status_entries(&sub) {
                let mut full = b"sub/".to_vec();
                full.extend(&entry.path);
                match Content::of(&mount.join(os(&full))) {
                    Ok(Some(content)) => self.files.push((full, content)),
                    Ok(None) => {}
                    Err(_) => self.deleted.push(full),
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// the same patch

/// What makes two diffs the same patch here: `git patch-id --verbatim` of the diff (whitespace
/// counts), and each changed path with the mode change the diff makes (none when it leaves the
/// mode as it was) and, for a binary file, its new blob (which a patch-id does not see).
#[derive(Clone, PartialEq, Eq, Debug)]
struct PatchKey {
    id: Option<String>,
    paths: Vec<String>,
}

/// The [`PatchKey`] of the diff from `from` (`None`: the empty tree) to `to`, in `repo`.
fn patch_key(repo: &Path, from: Option<&str>, to: &str) -> Result<PatchKey, String> {
    let mut args = vec!["diff-tree", "-r", "--no-renames", "--raw", "--numstat", "-p", "--binary", "--full-index"];
    match from {
        Some(from) => args.extend([from, to]),
        None => args.extend(["--root", to]),
    }
    let out = git_run(repo, 0, &args, None);
    if !out.status.success() {
        return Err(format!("git diff-tree {} {to}: {}", from.unwrap_or("--root"), first_line(&out.stderr)));
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let mut raw = Vec::new();
    let mut binary = BTreeSet::new();
    for line in text.lines() {
        if line.starts_with("diff --git") {
            break;
        }
        if let Some(rest) = line.strip_prefix(':') {
            let (meta, path) = rest.split_once('\t').unwrap_or((rest, ""));
            let fields: Vec<&str> = meta.split(' ').collect();
            // A mode is part of the change only where the change makes it (a new file, a
            // deletion, a chmod): a file whose mode the commit left as it was changes the same way
            // on a branch where that mode was already another (git's patch shows no mode then).
            let (old_mode, new_mode) = (fields.first().copied().unwrap_or(""), fields.get(1).copied().unwrap_or(""));
            let mode = if old_mode == new_mode { String::new() } else { format!("{old_mode}->{new_mode}") };
            raw.push((path.to_owned(), mode, fields.get(3).copied().unwrap_or("").to_owned()));
        } else if let Some(path) = line.strip_prefix("-\t-\t") {
            binary.insert(path.to_owned());
        }
    }
    let mut paths: Vec<String> = raw
        .into_iter()
        .map(
            |(path, mode, blob)| {
                if binary.contains(&path) {
                    format!("{path} {mode} {blob}")
                } else {
                    format!("{path} {mode}")
                }
            },
        )
        .collect();
    paths.sort();
    let pid = git_run(repo, 0, &["patch-id", "--verbatim"], Some(&out.stdout));
    let id = String::from_utf8_lossy(&pid.stdout).split_whitespace().next().map(str::to_owned);
    Ok(PatchKey { id, paths })
}

/// What the oracle knows, before the purge, of a commit the assessment had integrated.
struct Integration {
    as_commit: String,
    how: String,
    /// The patches that hold the commit's change: its own (`how` = patch), or each squash of the
    /// session's commits through it, from where the first-parent run left the surviving history.
    keys: Vec<PatchKey>,
    /// Whether `as_commit`'s patch is one of them, or why not.
    same: Result<(), String>,
}

impl Integration {
    fn of(h: &History, world: &World, commit: &str, as_commit: &str, how: &str) -> Integration {
        let keys = if how == "patch" {
            patch_key(&h.mount, Some(&format!("{commit}^")), commit).into_iter().collect()
        } else {
            squash_keys(h, commit)
        };
        let exists = |dir: &Path| {
            git_run(dir, 0, &["cat-file", "-e", &format!("{as_commit}^{{commit}}")], None).status.success()
        };
        let same = [&h.mount, &world.origin, &world.host]
            .into_iter()
            .find(|d| exists(d))
            .ok_or_else(|| format!("{as_commit} is in no repository"))
            .and_then(|at| patch_key(at, Some(&format!("{as_commit}^")), as_commit))
            .and_then(|theirs| {
                if keys.contains(&theirs) {
                    Ok(())
                } else {
                    Err(format!(
                        "{as_commit}'s patch {theirs:?} is none of the {} patches holding it: {keys:?}",
                        keys.len()
                    ))
                }
            });
        Integration { as_commit: as_commit.to_owned(), how: how.to_owned(), keys, same }
    }
}

/// The patches of the squashes of the session's commits through `commit`: for each session
/// commit that descends from it, the diff from the first commit outside the session on its
/// first-parent line to it.
fn squash_keys(h: &History, commit: &str) -> Vec<PatchKey> {
    let input = format!("{}\n", h.commits.iter().cloned().collect::<Vec<_>>().join("\n"));
    let out = git_must(&h.mount, &["log", "--no-walk=unsorted", "--format=%H %P", "--stdin"], Some(input.as_bytes()));
    let parents: HashMap<String, Vec<String>> = String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|l| {
            let mut ids = l.split_whitespace().map(str::to_owned);
            Some((ids.next()?, ids.collect()))
        })
        .collect();
    let reaches = |from: &str| {
        let mut stack = vec![from.to_owned()];
        let mut seen = BTreeSet::new();
        while let Some(id) = stack.pop() {
            if id == commit {
                return true;
            }
            if seen.insert(id.clone()) {
                stack.extend(parents.get(&id).cloned().unwrap_or_default());
            }
        }
        false
    };
    let mut keys = Vec::new();
    for end in h.commits.iter().filter(|e| reaches(e)) {
        let mut base = Some(end.clone());
        while let Some(id) = base.clone().filter(|id| h.commits.contains(id)) {
            base = parents.get(&id).and_then(|p| p.first().cloned());
        }
        keys.extend(patch_key(&h.mount, base.as_deref(), end));
    }
    keys
}

// ---------------------------------------------------------------------------------------------
// after the purge

/// Standard or URL-safe base64, padded or not (`path_bytes`); `None` when it is not base64.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' | b'-' => Some(62),
        b'/' | b'_' => Some(63),
        _ => None,
    };
    let mut out = Vec::new();
    let (mut acc, mut bits) = (0u32, 0);
    for c in text.bytes().filter(|c| *c != b'=') {
        acc = (acc << 6) | u32::from(value(c)?);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    Some(out)
}

/// The raw paths of the files an assessment's mount lists (`path_bytes` when it has them).
fn listed_paths(mount: &Value) -> Vec<Vec<u8>> {
    mount["files"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|f| match f["path_bytes"].as_str() {
            Some(b64) => base64_decode(b64),
            None => f["path"].as_str().map(|p| p.as_bytes().to_vec()),
        })
        .collect()
}

/// Whether `rel` (or a directory it is in, such as the submodule) is among `listed`.
fn is_listed(listed: &[Vec<u8>], rel: &[u8]) -> bool {
    listed.iter().any(|p| {
        // An untracked directory (a nested repository) is listed as `dir/`.
        let p = p.strip_suffix(b"/").unwrap_or(p);
        rel == p || (rel.starts_with(p) && rel.get(p.len()) == Some(&b'/'))
    })
}

/// Whether the quarantine's copy at `path` holds `content`; else what it holds.
fn saved_as(path: &Path, content: &Content) -> Result<(), String> {
    found_as(path, content, "the quarantine")
}

/// Whether the copy at `path` in `place` (the quarantine, the recovered worktree) holds
/// `content`; else what it holds.
fn found_as(path: &Path, content: &Content, place: &str) -> Result<(), String> {
    match Content::of(path) {
        Ok(Some(saved)) if saved == *content => Ok(()),
        Ok(Some(Content::File { digest, exec, .. })) if matches!(content, Content::File { digest: d, .. } if *d == digest) => {
            Err(format!("{place}'s copy has the bytes but the executable bit {exec}"))
        }
        Ok(Some(saved)) => Err(format!("{place}'s copy differs: {}", saved.describe())),
        Ok(None) => Err(format!("{place} has a directory or special file there")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!("not in {place}")),
        Err(e) => Err(format!("{place}'s copy cannot be read: {e}")),
    }
}

/// Each path of the surviving refs' tips → the (mode, blob) it has at each of them.
type Trees = HashMap<Vec<u8>, Vec<(String, String)>>;

/// The recovery repository: a fresh clone of origin, with the host's surviving refs, the
/// submodule's origin, and every bundle of the quarantines fetched as RECEIPT.txt says.
struct Recovered {
    repo: PathBuf,
    commits: BTreeSet<String>,
    /// `git patch-id --verbatim` → the recovered commits with that patch, read when first needed.
    patch_ids: Option<HashMap<String, Vec<String>>>,
    /// Path → (mode, blob) at the tips of the surviving refs, read when first needed.
    trees: Option<Trees>,
}

impl Recovered {
    /// Whether a recovered commit has one of `keys` as its patch.
    fn holds_patch(&mut self, keys: &[PatchKey]) -> bool {
        if keys.is_empty() {
            return false;
        }
        let repo = self.repo.clone();
        let ids = self.patch_ids.get_or_insert_with(|| {
            let args =
                ["log", "--all", "--no-merges", "-p", "--binary", "--full-index", "--no-renames", "--format=commit %H"];
            let log = git_must(&repo, &args, None);
            let out = git_run(&repo, 0, &["patch-id", "--verbatim"], Some(&log));
            let mut ids: HashMap<String, Vec<String>> = HashMap::new();
            for line in String::from_utf8_lossy(&out.stdout).lines() {
                if let Some((id, commit)) = line.split_once(' ') {
                    ids.entry(id.to_owned()).or_default().push(commit.to_owned());
                }
            }
            ids
        });
        keys.iter().any(|key| {
            let candidates = key.id.as_ref().and_then(|id| ids.get(id)).cloned().unwrap_or_default();
            candidates.iter().any(|c| {
                let theirs = patch_key(&repo, Some(&format!("{c}^")), c).or_else(|_| patch_key(&repo, None, c));
                theirs.as_ref() == Ok(key)
            })
        })
    }

    /// Whether a surviving ref's tip has `content` at `rel`.
    fn holds(&mut self, rel: &[u8], content: &Content) -> bool {
        let repo = self.repo.clone();
        let trees = self.trees.get_or_insert_with(|| {
            let tips = lines_set(&git_must(
                &repo,
                &["for-each-ref", "--format=%(objectname)", "refs/remotes", "refs/heads", "refs/tags", "refs/host"],
                None,
            ));
            let mut trees = Trees::new();
            for tip in tips {
                let out = git_run(&repo, 0, &["ls-tree", "-r", "-z", &tip], None);
                for entry in out.stdout.split(|b| *b == 0).filter(|e| !e.is_empty()) {
                    let Some(tab) = entry.iter().position(|b| *b == b'\t') else { continue };
                    let meta = String::from_utf8_lossy(&entry[..tab]).into_owned();
                    let fields: Vec<&str> = meta.split(' ').collect();
                    if fields.len() == 3 && fields[1] == "blob" {
                        trees
                            .entry(entry[tab + 1..].to_vec())
                            .or_default()
                            .push((fields[0].to_owned(), fields[2].to_owned()));
                    }
                }
            }
            trees
        });
        let Some(entries) = trees.get(rel) else { return false };
        entries.iter().any(|(mode, blob)| {
            let bytes = || git_run(&repo, 0, &["cat-file", "blob", blob], None).stdout;
            match content {
                Content::Link(target) => mode == "120000" && bytes() == *target,
                Content::File { digest, exec, .. } => {
                    (mode == "100755") == *exec && mode.starts_with("100") && digest_bytes(&bytes()) == *digest
                }
            }
        })
    }

    /// A lost commit's subject, and whether its object came back without a ref naming it.
    fn describe(&self, world: &World, commit: &str) -> String {
        let subject = [&self.repo, &world.host]
            .into_iter()
            .map(|dir| git_run(dir, 0, &["log", "-1", "--format=%s", commit], None))
            .find(|out| out.status.success())
            .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
            .unwrap_or_else(|| "?".into());
        let object =
            git_run(&self.repo, 0, &["cat-file", "-e", &format!("{commit}^{{commit}}")], None).status.success();
        let note = if object { "; its object came with a bundle, but no ref the fetch made names it" } else { "" };
        format!("{commit} ({subject:?}){note}")
    }
}

fn refs(dir: &Path) -> BTreeMap<String, String> {
    String::from_utf8_lossy(&git_must(dir, &["for-each-ref", "--format=%(refname) %(objectname)"], None))
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(r, o)| (r.to_owned(), o.to_owned())))
        .collect()
}

fn refs_changed(before: &BTreeMap<String, String>, after: &BTreeMap<String, String>) -> String {
    let gone: Vec<&String> = before.keys().filter(|r| !after.contains_key(*r)).collect();
    let moved: Vec<&String> =
        before.keys().filter(|r| after.get(*r).is_some_and(|a| Some(a) != before.get(*r))).collect();
    let new: Vec<&String> = after.keys().filter(|r| !before.contains_key(*r)).collect();
    format!("gone {gone:?}, moved {moved:?}, new {new:?}")
}

#[derive(Default)]
struct Stats {
    histories: usize,
    worktree: usize,
    clone: usize,
    pipe: usize,
    discard: usize,
    quarantined: usize,
    clean: usize,
    actions: usize,
    commits: usize,
    integrated: usize,
    claims: usize,
    files: usize,
    sub_commits: usize,
    staged: usize,
    /// Quarantines put back by `jackin-restore --recover`, and of them with `--into`.
    recovered: usize,
    recovered_into: usize,
    /// What was checked in what they put back.
    back_commits: usize,
    back_files: usize,
    back_deleted: usize,
    back_index: usize,
}

impl Stats {
    fn add(&mut self, o: &Stats) {
        self.histories += o.histories;
        self.worktree += o.worktree;
        self.clone += o.clone;
        self.pipe += o.pipe;
        self.discard += o.discard;
        self.quarantined += o.quarantined;
        self.clean += o.clean;
        self.actions += o.actions;
        self.commits += o.commits;
        self.integrated += o.integrated;
        self.claims += o.claims;
        self.files += o.files;
        self.sub_commits += o.sub_commits;
        self.staged += o.staged;
        self.recovered += o.recovered;
        self.recovered_into += o.recovered_into;
        self.back_commits += o.back_commits;
        self.back_files += o.back_files;
        self.back_deleted += o.back_deleted;
        self.back_index += o.back_index;
    }
}

#[derive(Default)]
struct BatchResult {
    cases: usize,
    failures: Vec<String>,
    stats: Stats,
}

impl BatchResult {
    fn case(&mut self, ok: bool, what: impl FnOnce() -> String) {
        self.cases += 1;
        if !ok {
            self.failures.push(what());
        }
    }
}

fn records_of(stdout: &[u8], kind: &str) -> Vec<Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == kind)
        .map(|v| v["data"].clone())
        .collect()
}

/// One batch: the histories `indices` of the run seeded `seed`, in one jackin home.
fn batch(seed: u64, indices: &[usize]) -> BatchResult {
    let mut t = BatchResult::default();
    let mut world = World::new(indices);
    let batch_failure = |what: String| format!("seed {seed}, histories {indices:?}: {what}");

    // Every mount first, from the host as it is before any work. A clone history may join the
    // history before it (when that one is alone) as the second mount of its instance: one
    // instance, a record each, the first one's route.
    let mut plans = Vec::new();
    let mut rngs = Vec::new();
    for &index in indices {
        let mut rng = Rng::new(history_seed(seed, index));
        let kind = if rng.below(2) == 0 { Kind::Worktree } else { Kind::Clone };
        let route = if rng.below(2) == 0 { Route::Pipe } else { Route::Discard };
        let joins = kind == Kind::Clone && rng.below(6) == 0;
        plans.push((index, kind, route, joins));
        rngs.push(rng);
    }
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for (at, &(_, _, _, joins)) in plans.iter().enumerate() {
        match groups.last_mut() {
            Some(group) if joins && group.len() == 1 => group.push(at),
            _ => groups.push(vec![at]),
        }
    }
    let mut histories = Vec::new();
    for group in &groups {
        let dst = |k: usize| if k == 0 { MOUNT_DST } else { SECOND_DST };
        let members: Vec<(Kind, &str)> = group.iter().enumerate().map(|(k, &at)| (plans[at].1, dst(k))).collect();
        let host = world.host.clone();
        let inst = world.home.instance(&unique_id(), move |h, c| {
            members
                .iter()
                .map(|&(kind, dst)| match kind {
                    Kind::Worktree => h.worktree_record(c, &host, dst),
                    Kind::Clone => h.clone_record(c, &host, dst),
                })
                .collect()
        });
        let route = plans[group[0]].2;
        for (k, &at) in group.iter().enumerate() {
            histories.push(History {
                index: plans[at].0,
                kind: plans[at].1,
                route,
                container: inst.container.clone(),
                data_dir: inst.dir.clone(),
                mount_index: k,
                mount_dst: dst(k).to_owned(),
                mount: inst.mount_path(k),
                scratch: inst.records[k]["scratch_branch"].as_str().unwrap_or("").to_owned(),
                log: Vec::new(),
                commits: BTreeSet::new(),
                files: Vec::new(),
                sub_commits: BTreeSet::new(),
                staged: Vec::new(),
                staged_index: Vec::new(),
                deleted: Vec::new(),
                assessment: None,
                integrated: BTreeMap::new(),
            });
        }
    }
    for (h, rng) in histories.iter_mut().zip(rngs) {
        let mut agent = Agent {
            world: &world,
            rng,
            index: h.index,
            kind: h.kind,
            mount: h.mount.clone(),
            scratch: h.scratch.clone(),
            clock: 0,
            n: 0,
            made: Vec::new(),
            turned: Vec::new(),
            log: Vec::new(),
        };
        agent.play();
        h.log = agent.log;
        if std::env::var("JACKIN_ORACLE_LOG").is_ok() {
            for entry in &h.log {
                eprintln!("oracle log: {} {:?} {entry}", h.index, h.kind);
            }
        }
    }

    // What survives the purge: origin's refs, the host's but the scratch branches, its HEAD.
    let scratch_refs: BTreeSet<String> =
        histories.iter().filter(|h| h.kind == Kind::Worktree).map(|h| format!("refs/heads/{}", h.scratch)).collect();
    let surviving_host = |world: &World| -> BTreeMap<String, String> {
        refs(&world.host).into_iter().filter(|(r, _)| !scratch_refs.contains(r)).collect()
    };
    let (host_before, origin_before) = (surviving_host(&world), refs(&world.origin));
    let mut tips: Vec<String> = host_before.values().cloned().collect();
    tips.push(git_text(&world.host, &["rev-parse", "HEAD"]));
    let mut surviving = rev_list(&world.host, &["--stdin"], Some(format!("{}\n", tips.join("\n")).as_bytes()));
    surviving.extend(rev_list(&world.origin, &["--all"], None));
    let sub_surviving = rev_list(&world.sub_origin, &["--all"], None);
    for h in &mut histories {
        h.record(&surviving, &sub_surviving);
    }

    // The assessment of every session, before anything is deleted.
    let names: Vec<&str> = histories.iter().map(|h| h.container.as_str()).collect();
    let mut assess = tool(&world.home, "jackin-assess", &["--format=json"]);
    assess.args(&names);
    let assessed = run(assess, b"");
    t.case(assessed.status.success() && !panicked(&assessed), || {
        batch_failure(format!("jackin-assess exited {:?}: {}", assessed.status, stderr(&assessed)))
    });
    let mut lines: HashMap<String, String> = HashMap::new();
    for line in String::from_utf8_lossy(&assessed.stdout).lines() {
        let Ok(record) = serde_json::from_str::<Value>(line) else { continue };
        if record["type"] == "assessment" {
            let container = record["data"]["container_base"].as_str().unwrap_or("").to_owned();
            lines.insert(container.clone(), line.to_owned());
            for h in histories.iter_mut().filter(|h| h.container == container) {
                h.assessment = Some(record["data"].clone());
            }
        }
    }
    let integrations: Vec<BTreeMap<String, Integration>> = histories
        .iter()
        .map(|h| {
            let mut integrated = BTreeMap::new();
            let unpushed_refs = h.assessed_mount().and_then(|m| m["unpushed"].as_array().cloned()).unwrap_or_default();
            for unpushed in unpushed_refs {
                for entry in unpushed["integrated"].as_array().cloned().unwrap_or_default() {
                    let field = |k: &str| entry[k].as_str().unwrap_or("").to_owned();
                    let (commit, as_commit, how) = (field("commit"), field("as"), field("how"));
                    let integration = Integration::of(h, &world, &commit, &as_commit, &how);
                    integrated.insert(commit, integration);
                }
            }
            integrated
        })
        .collect();
    for (h, integrated) in histories.iter_mut().zip(integrations) {
        h.integrated = integrated;
    }

    // The purges: the exit hook's pipe, and the operator's discard.
    let mut purged: HashMap<String, Option<String>> = HashMap::new();
    // The error records of the purges (and keep), by container: why one was not purged.
    let mut errors: HashMap<String, String> = HashMap::new();
    let mut note_errors = |stdout: &[u8]| {
        for data in records_of(stdout, "error") {
            let container = data["container_base"].as_str().unwrap_or("").to_owned();
            errors.insert(container, format!("{}: {}", data["code"].as_str().unwrap_or("?"), data["message"]));
        }
    };
    let containers = |route: Route| -> Vec<&str> {
        let mut names: Vec<&str> =
            histories.iter().filter(|h| h.route == route).map(|h| h.container.as_str()).collect();
        names.dedup();
        names
    };
    let pipe: String =
        containers(Route::Pipe).into_iter().filter_map(|c| lines.get(c)).map(|l| format!("{l}\n")).collect();
    if !pipe.is_empty() {
        let keep = run(tool(&world.home, "jackin-keep", &["--policy=clean", "--format=json"]), pipe.as_bytes());
        t.case(keep.status.success() && !panicked(&keep), || {
            batch_failure(format!("jackin-keep --policy=clean exited {:?}: {}", keep.status, stderr(&keep)))
        });
        let purge = run(tool(&world.home, "jackin-purge", &["--format=json"]), &keep.stdout);
        t.case(purge.status.success() && !panicked(&purge), || {
            batch_failure(format!("jackin-purge (piped) exited {:?}: {}", purge.status, stderr(&purge)))
        });
        note_errors(&keep.stdout);
        note_errors(&purge.stdout);
        for data in records_of(&purge.stdout, "purged") {
            purged.insert(
                data["container_base"].as_str().unwrap_or("").to_owned(),
                data["quarantine"].as_str().map(str::to_owned),
            );
        }
    }
    let discard = containers(Route::Discard);
    if !discard.is_empty() {
        let mut cmd = tool(&world.home, "jackin-purge", &["--discard-unfinished", "--format=json"]);
        cmd.args(&discard);
        let purge = run(cmd, b"");
        t.case(purge.status.success() && !panicked(&purge), || {
            batch_failure(format!("jackin-purge --discard-unfinished exited {:?}: {}", purge.status, stderr(&purge)))
        });
        note_errors(&purge.stdout);
        for data in records_of(&purge.stdout, "purged") {
            purged.insert(
                data["container_base"].as_str().unwrap_or("").to_owned(),
                data["quarantine"].as_str().map(str::to_owned),
            );
        }
    }

    // Nothing but the scratch branches went from the host, nothing from origin.
    let (host_after, origin_after) = (surviving_host(&world), refs(&world.origin));
    t.case(host_after == host_before, || {
        batch_failure(format!("the purges changed the host's other refs: {}", refs_changed(&host_before, &host_after)))
    });
    t.case(origin_after == origin_before, || {
        batch_failure(format!("the purges changed origin's refs: {}", refs_changed(&origin_before, &origin_after)))
    });

    // Bring back what can be brought back, as an operator would: a fresh clone of origin with
    // the host's surviving refs and the submodule's origin; then, per history, its quarantine's
    // bundles fetched on their own into a repository that borrows those objects.
    let tmp = world.home.tmp.path().to_path_buf();
    let base = tmp.join("recovered");
    let path = |p: &Path| p.to_str().unwrap().to_owned();
    git_must(&tmp, &["clone", "-q", "--no-local", &path(&world.origin), &path(&base)], None);
    git_must(&base, &["fetch", "-q", &path(&world.host), "+refs/*:refs/host/*"], None);
    git_must(&base, &["fetch", "-q", &path(&world.sub_origin), "+refs/*:refs/sub/*"], None);
    let bundles_of = |dir: &Path| -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = walkdir::WalkDir::new(dir)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file() && e.file_name().as_bytes().ends_with(b".bundle"))
            .map(|e| e.into_path())
            .collect();
        found.sort();
        found
    };
    let base_commits = rev_list(&base, &["--all"], None);
    let mut recovered = Recovered { repo: base.clone(), commits: base_commits.clone(), patch_ids: None, trees: None };
    let mut own_commits: HashMap<String, BTreeSet<String>> = HashMap::new();
    let mut own_repos: HashMap<String, PathBuf> = HashMap::new();
    for h in &histories {
        let Some(Some(quarantine)) = purged.get(&h.container) else { continue };
        let own = tmp.join(format!("recovered-{}", h.index));
        git_must(&tmp, &["init", "-q", "--bare", &path(&own)], None);
        fs::write(own.join("objects/info/alternates"), format!("{}\n", base.join(".git/objects").display())).unwrap();
        for (k, bundle) in bundles_of(Path::new(quarantine)).iter().enumerate() {
            let refspec = format!("+refs/*:refs/recovered/{k}/*");
            let fetched = git_run(&own, 0, &["fetch", "-q", &path(bundle), &refspec], None);
            if fetched.status.success() {
                t.case(true, String::new);
                continue;
            }
            t.case(false, || {
                let why = first_line(&fetched.stderr);
                h.failure(seed, &format!("git fetch {} 'refs/*:refs/recovered/*' failed: {why}", bundle.display()))
            });
        }
        own_commits.insert(h.container.clone(), rev_list(&own, &["--all"], None));
        own_repos.insert(h.container.clone(), own);
    }

    let kept_in_a_quarantine: BTreeSet<String> = own_commits.values().flatten().cloned().collect();
    for h in &histories {
        let stats = &mut t.stats;
        stats.histories += 1;
        stats.actions += h.log.len();
        match h.kind {
            Kind::Worktree => stats.worktree += 1,
            Kind::Clone => stats.clone += 1,
        }
        match h.route {
            Route::Pipe => stats.pipe += 1,
            Route::Discard => stats.discard += 1,
        }
        let Some(assessment) = &h.assessment else {
            t.case(false, || h.failure(seed, "jackin-assess gave no assessment"));
            continue;
        };
        let verdict = h.verdict();
        t.stats.clean += usize::from(verdict == "clean");
        t.case(verdict != "unknown", || {
            let error = h.assessed_mount().map(|m| m["error"].clone()).unwrap_or_default();
            h.failure(seed, &format!("the assessment could not read the mount: {error}"))
        });
        if verdict == "unknown" && h.route == Route::Pipe {
            // Kept (the clean policy keeps what cannot be read): nothing may be gone.
            t.case(h.mount.exists(), || h.failure(seed, "kept as unknown, yet the mount is gone"));
            continue;
        }
        let Some(quarantine) = purged.get(&h.container) else {
            let why = errors.get(&h.container).map_or(String::new(), |e| format!(": {e}"));
            t.case(false, || h.failure(seed, &format!("not purged{why}")));
            continue;
        };
        t.case(!h.data_dir.exists(), || h.failure(seed, "purged, yet the data directory is left"));
        let at_risk = verdict != "clean";
        // A discard also saves the commits that are only integrated (the same patch survives
        // elsewhere), of a session that is clean but for them.
        let integrated_anywhere = assessment["mounts"].as_array().into_iter().flatten().any(|m| {
            m["unpushed"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|u| u["integrated"].as_array().is_some_and(|i| !i.is_empty()))
        });
        let saves = at_risk || (h.route == Route::Discard && integrated_anywhere);
        t.stats.quarantined += usize::from(quarantine.is_some());
        t.case(quarantine.is_some() == saves, || {
            h.failure(
                seed,
                match (at_risk, saves) {
                    (true, _) => "work at risk, yet no quarantine",
                    (false, true) => "a discard of integrated commits, yet no quarantine",
                    (false, false) => "a quarantine of a clean session",
                },
            )
        });
        let saved_mount = quarantine.as_ref().and_then(|q| {
            fs::read_dir(q).ok()?.flatten().map(|e| e.path()).find(|p| {
                p.is_dir() && p.file_name().unwrap().as_bytes().starts_with(format!("{}-", h.mount_index).as_bytes())
            })
        });
        let said = if at_risk { "" } else { " (the assessment said clean: deleted without a quarantine)" };

        // Every commit the assessment called integrated: a commit on a surviving ref has its
        // patch (the one the assessment named, or another), whether or not a bundle saved it too.
        // A claim can rest on another session's scratch branch (docs/maintainers/decisions.md: that branch
        // survives this purge), which the purge of that session later in the batch deletes; the
        // claim held when this purge acted, and the commit it names is in that one's quarantine.
        let mut claims: BTreeMap<&String, Result<(), String>> = BTreeMap::new();
        recovered.commits = base_commits.clone();
        for (commit, i) in &h.integrated {
            t.stats.claims += 1;
            let named_kept = base_commits.contains(&i.as_commit) || kept_in_a_quarantine.contains(&i.as_commit);
            let holds = i.same.is_ok() && named_kept || recovered.holds_patch(&i.keys);
            let claim = if holds {
                Ok(())
            } else {
                let named = match &i.same {
                    Ok(()) => format!("{} did not survive", i.as_commit),
                    Err(e) => e.clone(),
                };
                Err(format!(
                    "the assessment had it integrated ({}) as {}, but {named}, and no surviving commit has its patch",
                    i.how, i.as_commit
                ))
            };
            t.case(claim.is_ok(), || h.failure(seed, &format!("commit {commit}: {}", claim.clone().unwrap_err())));
            claims.insert(commit, claim);
        }
        let own = own_commits.get(&h.container).cloned().unwrap_or_default();
        recovered.commits = base_commits.union(&own).cloned().collect();
        for commit in &h.commits {
            t.stats.commits += 1;
            if recovered.commits.contains(commit) {
                t.case(true, String::new);
                continue;
            }
            let why = match claims.get(commit) {
                Some(Ok(())) => {
                    t.stats.integrated += 1;
                    t.case(true, String::new);
                    continue;
                }
                Some(Err(e)) => e.clone(),
                None => {
                    let counted: Vec<String> = h
                        .assessed_mount()
                        .and_then(|m| m["unpushed"].as_array().cloned())
                        .unwrap_or_default()
                        .into_iter()
                        .map(|u| format!("{} {}", u["ref"].as_str().unwrap_or("?"), u["commits"]))
                        .collect();
                    format!("the assessment counted [{}]", counted.join(", "))
                }
            };
            let what = recovered.describe(&world, commit);
            t.case(false, || h.failure(seed, &format!("commit {what} lost{said}: {why}")));
        }

        let listed = h.assessed_mount().map(listed_paths).unwrap_or_default();
        for (rel, content) in &h.files {
            t.stats.files += 1;
            let saved = match &saved_mount {
                Some(m) => saved_as(&m.join("files").join(os(rel)), content),
                None => Err("no quarantine".into()),
            };
            let is_listed = is_listed(&listed, rel);
            let kept = saved.is_ok() || recovered.holds(rel, content);
            t.case(kept, || {
                let listing = if is_listed { "the assessment listed it" } else { "the assessment did not list it" };
                h.failure(
                    seed,
                    &format!(
                        "file {} ({}) lost{said}: {}; {listing}",
                        show(rel),
                        content.describe(),
                        saved.unwrap_err()
                    ),
                )
            });
            t.case(is_listed, || {
                h.failure(seed, &format!("the assessment does not list the changed file {}", show(rel)))
            });
        }

        // Staged versions: the same bytes under index/ (or files/), as an object the bundles
        // brought back, or on a surviving ref.
        let objects = own_repos.get(&h.container).unwrap_or(&base);
        for (rel, blob, version) in &h.staged {
            t.stats.staged += 1;
            let in_files = saved_mount.as_ref().is_some_and(|m| {
                ["index", "files"].iter().any(|dir| saved_as(&m.join(dir).join(os(rel)), version).is_ok())
            });
            let object = git_run(objects, 0, &["cat-file", "-e", &format!("{blob}^{{blob}}")], None).status.success();
            let kept = in_files || object;
            t.case(kept, || {
                h.failure(
                    seed,
                    &format!("the staged version of {} ({}, blob {blob}) lost{said}", show(rel), version.describe()),
                )
            });
        }

        for commit in &h.sub_commits {
            t.stats.sub_commits += 1;
            t.case(recovered.commits.contains(commit), || {
                h.failure(seed, &format!("submodule commit {commit} lost{said}: in no bundle of the quarantine"))
            });
        }
    }
    round_trip(seed, &world, &histories, &purged, &own_commits, &mut t);
    if std::env::var("JACKIN_ORACLE_KEEP").is_ok() {
        // For a look by hand: the home, the repositories and the recovery clone stay.
        eprintln!("oracle: histories {indices:?} kept in {}", world.home.tmp.path().display());
        std::mem::forget(world);
    }
    t
}

/// The refs `refs/jackin/recovered/<container>` and `<container>-…` of the repository (or git
/// directory) at `dir` (`refs/heads/jackin/recovered/…` in a new repository, `--into`), and the
/// commits they reach.
fn recovered_commits(dir: &Path, container: &str) -> BTreeSet<String> {
    let prefixes = [format!("refs/jackin/recovered/{container}"), format!("refs/heads/jackin/recovered/{container}")];
    let names: Vec<String> = refs(dir)
        .into_keys()
        .filter(|r| {
            prefixes
                .iter()
                .any(|prefix| r.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with('-')))
        })
        .collect();
    if names.is_empty() {
        return BTreeSet::new();
    }
    rev_list(dir, &["--stdin"], Some(format!("{}\n", names.join("\n")).as_bytes()))
}

/// What a recover must not change when it refuses: the refs of the host and of its submodule's
/// git directory, its worktrees, and what is beside it and in the batch's directory (where new
/// worktrees, repositories and `--into` directories go).
fn recover_footprint(world: &World) -> Vec<String> {
    let host = &world.host;
    let mut seen: Vec<String> = refs(host).into_iter().map(|(r, id)| format!("{r} {id}")).collect();
    let modules = host.join(".git/modules/sub");
    seen.extend(refs(&modules).into_iter().map(|(r, id)| format!("sub {r} {id}")));
    seen.push(String::from_utf8_lossy(&git_must(host, &["worktree", "list", "--porcelain"], None)).into_owned());
    for dir in [host.parent().unwrap(), world.home.tmp.path()] {
        let mut names: Vec<String> =
            fs::read_dir(dir).unwrap().flatten().map(|e| e.path().display().to_string()).collect();
        names.sort();
        seen.extend(names);
    }
    seen
}

/// The round trip: each quarantine put back with `jackin-restore --recover <dir>` (with `--into`
/// where the host repository lacks what its commits build on, or the commit the work tree was
/// on, as the refusal says), then checked as an operator would look: every commit only the
/// session had that the quarantine's bundles brought back is reachable from a
/// `jackin/recovered/<c>…` ref of the repository the record names, a submodule's from one of the
/// submodule's git directory it names; every file the quarantine holds is in the recovered
/// worktree under its own name with its bytes, mode and kind; what the session had deleted or
/// renamed away is not there; the recovered index holds at each path the session had a change
/// staged at what the session's held (or, for a staged deletion, nothing). A second recover of
/// the same quarantine refuses (exit 3) and changes nothing.
fn round_trip(
    seed: u64,
    world: &World,
    histories: &[History],
    purged: &HashMap<String, Option<String>>,
    own_commits: &HashMap<String, BTreeSet<String>>,
    t: &mut BatchResult,
) {
    let tmp = world.home.tmp.path();
    let base_objects = tmp.join("recovered/.git/objects");
    let mut done = BTreeSet::new();
    for first in histories {
        let Some(Some(quarantine)) = purged.get(&first.container) else { continue };
        if !done.insert(first.container.clone()) {
            continue;
        }
        let members: Vec<&History> = histories.iter().filter(|h| h.container == first.container).collect();
        let into = tmp.join(format!("recovered-into-{}", first.index));
        let recover = |with_into: bool| {
            let mut args = vec!["--recover", quarantine.as_str(), "--format=json"];
            if with_into {
                args.extend(["--into", into.to_str().unwrap()]);
            }
            run(tool(&world.home, "jackin-restore", &args), b"")
        };
        let mut out = recover(false);
        let unusable = ["lacks", "does not have the commit"];
        let with_into = out.status.code() == Some(3) && unusable.iter().any(|u| stderr(&out).contains(u));
        if with_into {
            out = recover(true);
        }
        let said = if with_into { " --into" } else { "" };
        t.case(out.status.success() && !panicked(&out), || {
            first.failure(seed, &format!("jackin-restore --recover{said} exited {:?}: {}", out.status, stderr(&out)))
        });
        if !out.status.success() {
            continue;
        }
        t.stats.recovered += 1;
        t.stats.recovered_into += usize::from(with_into);
        let records = records_of(&out.stdout, "recovered");
        // A new repository's commits build on what only the project's remotes have: the checks
        // walk them with the recovery clone's objects borrowed.
        let borrow = |objects: PathBuf| {
            fs::write(objects.join("info/alternates"), format!("{}\n", base_objects.display())).unwrap();
        };
        for record in &records {
            if with_into {
                borrow(PathBuf::from(record["repository"].as_str().unwrap_or("")).join(".git/objects"));
            }
            for sub in record["submodules"].as_array().into_iter().flatten().filter(|s| s["new_repository"] == true) {
                borrow(PathBuf::from(sub["repository"].as_str().unwrap_or("")).join("objects"));
            }
        }
        let own = own_commits.get(&first.container).cloned().unwrap_or_default();
        for h in &members {
            let Some(record) = records.iter().find(|r| r["mount_dst"] == h.mount_dst.as_str()) else {
                let saved = fs::read_dir(quarantine)
                    .into_iter()
                    .flatten()
                    .flatten()
                    .any(|e| e.file_name().as_bytes().starts_with(format!("{}-", h.mount_index).as_bytes()));
                t.case(!saved, || h.failure(seed, "the quarantine saved the mount, yet --recover has no record of it"));
                continue;
            };
            let path_of = |v: &Value| PathBuf::from(v.as_str().unwrap_or(""));
            let back = recovered_commits(&path_of(&record["repository"]), &h.container);
            for commit in h.commits.iter().filter(|c| own.contains(*c)) {
                t.stats.back_commits += 1;
                t.case(back.contains(commit), || {
                    h.failure(
                        seed,
                        &format!(
                            "commit {commit} is reachable from no jackin/recovered/{}… ref of {} after --recover{said}",
                            h.container,
                            path_of(&record["repository"]).display()
                        ),
                    )
                });
            }
            let mut sub_back = BTreeSet::new();
            for sub in record["submodules"].as_array().into_iter().flatten() {
                sub_back.extend(recovered_commits(&path_of(&sub["repository"]), &h.container));
            }
            for commit in h.sub_commits.iter().filter(|c| own.contains(*c)) {
                t.stats.back_commits += 1;
                t.case(sub_back.contains(commit), || {
                    h.failure(
                        seed,
                        &format!(
                            "submodule commit {commit} is reachable from no jackin/recovered/{}… ref of the submodule \
                             git directories the record names ({}) after --recover{said}",
                            h.container, record["submodules"]
                        ),
                    )
                });
            }
            let worktree = path_of(&record["worktree"]);
            let saved_mount = fs::read_dir(quarantine).into_iter().flatten().flatten().map(|e| e.path()).find(|p| {
                p.is_dir() && p.file_name().unwrap().as_bytes().starts_with(format!("{}-", h.mount_index).as_bytes())
            });
            for (rel, content) in &h.files {
                let saved =
                    saved_mount.as_ref().is_some_and(|m| saved_as(&m.join("files").join(os(rel)), content).is_ok());
                if !saved {
                    continue; // kept elsewhere (a surviving ref), which the checks above judged
                }
                t.stats.back_files += 1;
                let found = found_as(&worktree.join(os(rel)), content, "the recovered worktree");
                t.case(found.is_ok(), || {
                    h.failure(
                        seed,
                        &format!(
                            "after --recover{said}, file {} ({}): {}",
                            show(rel),
                            content.describe(),
                            found.unwrap_err()
                        ),
                    )
                });
            }
            for rel in &h.deleted {
                t.stats.back_deleted += 1;
                let there = fs::symlink_metadata(worktree.join(os(rel))).is_ok();
                t.case(!there, || {
                    h.failure(
                        seed,
                        &format!(
                            "after --recover{said}, {} is in the recovered worktree: the session had deleted it",
                            show(rel)
                        ),
                    )
                });
            }
            if !h.staged_index.is_empty() {
                let index = index_entries(&worktree);
                for (rel, theirs) in &h.staged_index {
                    t.stats.back_index += 1;
                    let ours = index.get(rel);
                    t.case(ours == theirs.as_ref(), || {
                        h.failure(
                            seed,
                            &format!(
                                "after --recover{said}, the recovered index has {ours:?} at {}, the session's had {theirs:?}",
                                show(rel)
                            ),
                        )
                    });
                }
            }
        }
        // Again: everything it would make exists now.
        let before = recover_footprint(world);
        let again = recover(with_into);
        t.case(again.status.code() == Some(3) && !panicked(&again), || {
            first.failure(
                seed,
                &format!("a second --recover{said} exited {:?}, not 3: {}", again.status, stderr(&again)),
            )
        });
        let after = recover_footprint(world);
        t.case(after == before, || {
            let changed: Vec<&String> = after.iter().filter(|l| !before.contains(l)).collect();
            first.failure(seed, &format!("a second --recover{said}, refused, changed {changed:?}"))
        });
    }
}

/// The `work-loss oracle` row.
pub(super) fn work_loss_oracle(t: &mut Tally) {
    let seed = seed();
    let only: Option<Vec<usize>> = std::env::var("JACKIN_ORACLE_ONLY")
        .ok()
        .map(|list| list.split(',').filter_map(|i| i.trim().parse().ok()).collect());
    let batches: Vec<Vec<usize>> = match only {
        Some(list) => vec![list],
        None => (0..histories()).collect::<Vec<_>>().chunks(BATCH).map(<[usize]>::to_vec).collect(),
    };
    let next = AtomicUsize::new(0);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..WORKERS {
            scope.spawn(|| loop {
                let b = next.fetch_add(1, Ordering::Relaxed);
                let Some(indices) = batches.get(b) else { break };
                let result = std::panic::catch_unwind(AssertUnwindSafe(|| batch(seed, indices))).unwrap_or_else(|e| {
                    let msg = e
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| e.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                        .unwrap_or_default();
                    BatchResult {
                        failures: vec![format!("seed {seed}, histories {indices:?}: the oracle itself failed: {msg}")],
                        ..Default::default()
                    }
                });
                results.lock().unwrap().push((b, result));
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(b, _)| *b);
    let mut stats = Stats::default();
    for (_, result) in results {
        t.cases += result.cases;
        t.failures.extend(result.failures);
        stats.add(&result.stats);
    }
    let gated: Vec<&str> = [
        (
            PUSHED_BRANCH_DELETED,
            "pushed branches deleted upstream (a clone's stale remote-tracking ref counts as surviving, the spec's rule)",
        ),
        (LINK_WHERE_A_FILE_WAS, "links in a directory where a tracked file was (every purge fails)"),
    ]
    .into_iter()
    .filter(|(on, _)| !on)
    .map(|(_, what)| what)
    .collect();
    let gated = if gated.is_empty() { String::new() } else { format!("; gated off: {}", gated.join("; ")) };
    let s = stats;
    t.note = format!(
        "seed {seed} (replay: JACKIN_ORACLE_SEED={seed}); {} histories ({} actions): {} worktree, {} clone; {} through \
         assess | keep --policy=clean | purge, {} purge --discard-unfinished; {} with a quarantine, {} assessed clean; \
         checked {} session-only commits ({} kept only as integrated: the same verbatim patch survives), {} integration claims of \
         the assessment, {} files, {} staged versions the work tree lacks, {} submodule commits; {} quarantines put back \
         with jackin-restore --recover ({} with --into), there checked {} commits on jackin/recovered refs, {} files, {} \
         deletions, {} staged index entries, and a second recover refused{gated}",
        s.histories, s.actions, s.worktree, s.clone, s.pipe, s.discard, s.quarantined, s.clean, s.commits, s.integrated, s.claims,
        s.files, s.staged, s.sub_commits, s.recovered, s.recovered_into, s.back_commits, s.back_files, s.back_deleted,
        s.back_index
    );
}
