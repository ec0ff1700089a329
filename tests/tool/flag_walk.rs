//! The flag walk (issue 66): no flag is silently ignored. Every visible flag of every tool's clap
//! definition, in every mode of the tool (a base command line: a view, or an acting mode in its
//! dry run, over one home with sessions of every kind), either changes what the run says (its exit
//! code, stdout or stderr) or is refused (exit 2, nothing on stdout). Then every pair of flags the
//! mode takes: the two together are refused, or differ from each of the two alone (each still does
//! something beside the other).
//!
//! The flags come from clap (`CommandFactory`), so a new flag is walked without a word here; the
//! walk only needs a value for one that takes a value (`VALUES`) and fails until it has one. A few
//! flags are exempt in some modes, each with its reason (`EXEMPT`); an exemption that is no
//! longer needed fails the walk too.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::Output;
use std::time::Duration;

use clap::CommandFactory;
use common::docker::{docker, engine_available, engine_env, Session, SessionOptions};
use common::{commit_file, tool_path, unique_id, Home, Instance};
use jackin::face::cli::{AssessArgs, KeepArgs, PurgeArgs, ReconcileArgs, RestoreArgs};
use jackin::state::model::Status;
use jackin::state::names::InstanceName;
use jackin::state::store::{Roots, Store};
use serde_json::Value;

/// A value for each flag that takes one, chosen to differ from the default. `{other_home}` and
/// `{other_config}` are directories of the walk's own (an empty home, a config jackin cannot
/// read); `{quarantine}` and `{record}` name the fixture's.
const VALUES: &[(&str, &str)] = &[
    ("home", "{other_home}"),
    ("config-dir", "{other_config}"),
    ("format", "text"),
    ("docker-host", "unix:///nonexistent/docker.sock"),
    ("policy", "clean"),
    ("answer", "clean"),
    ("older-than", "1m"),
    ("keep-last", "1"),
    ("quarantine-days", "0"),
    ("record-days", "0"),
    ("conversation-path", "notes"),
    ("conversation-cap", "1"),
    ("slim-older-than", "1m"),
    ("warn-before", "400d"),
    ("retention", "1d"),
    ("workspace", "elsewhere"),
    ("role", "elsewhere"),
    ("agent", "elsewhere"),
    ("workdir", "/elsewhere"),
    ("sort", "size"),
    ("record", "{record}"),
    ("recover", "{quarantine}"),
    ("into", "{other_home}/recovered"),
    ("since", "1s"),
    ("jobs", "1"),
    ("health-timeout", "1"),
    ("fetch-timeout", "1"),
];

/// The flags whose walk value points the run elsewhere: walked alone.
const ELSEWHERE: [&str; 3] = ["home", "config-dir", "docker-host"];

/// Why a flag may change nothing in a mode of the walk's home: a test that shows what it does
/// where it counts (the file must hold the test and the flag), or a reason.
#[derive(Debug, Clone, Copy)]
enum Why {
    Witness(&'static str, &'static str),
    Reason(&'static str),
}

const NOT_READ: Why = Why::Reason(
    "this mode reads nothing of jackin's config directory; every tool takes --config-dir so that one \
     set of flags serves a whole pipe (docs/reference.md, \"Every tool\")",
);
const NOTHING_TO_WARN: Why =
    Why::Reason("this mode has nothing to warn of in the walk's home: --quiet drops warnings only");
const RECORD: Why = Why::Witness(
    "tests/tool/records.rs",
    "a_purge_leaves_a_record_with_the_conversation_copied_and_it_expires_on_its_own",
);
const STOP: Why = Why::Witness("tests/tool/purge.rs", "a_running_session_is_refused_without_stop");
const QUARANTINE_DAYS: Why = Why::Witness("tests/tool/purge.rs", "expired_quarantines_are_deleted");
const AS_IS: Why = Why::Witness(
    "tests/tool/restore_drift.rs",
    "a_role_container_on_another_image_is_replaced_from_the_recipe_or_started_as_it_is",
);
const HEALTH: Why = Why::Witness(
    "tests/safety/restore_faults.rs",
    "a_sidecar_that_never_becomes_healthy_stops_tier_1_before_the_role_starts_and_a_rerun_resumes",
);
const FETCH: Why =
    Why::Witness("tests/tool/restore.rs", "a_role_source_that_never_answers_is_given_up_on_after_the_fetch_timeout");
const SWEEP: Why = Why::Witness(
    "tests/host/reboot.rs",
    "after_a_host_kill_one_command_resumes_every_interrupted_session_that_can_come_back",
);

/// (tool, mode label, flag or `first+second` for a pair, why it may change nothing there). A
/// label `*` is every mode of the tool. What a dry run cannot show (a wait, a record's days, a
/// stop of a container the mode's session does not have) is shown by the witness's real run.
const EXEMPT: &[(&str, &str, &str, Why)] = &[
    ("jackin-assess", "*", "config-dir", NOT_READ),
    ("jackin-purge", "*", "config-dir", NOT_READ),
    ("jackin-reconcile", "*", "config-dir", Why::Reason("read only to capture a running session's recipe, which a dry run does not")),
    ("jackin-keep", "clean", "config-dir", Why::Reason("read for the ask policy and to capture the recipe of a session keep stops; --policy clean asks nothing, and a dry run stops nothing")),
    ("jackin-restore", "interrupted", "config-dir", Why::Reason("read for a resume's variables; the walk's interrupted session has none")),
    ("jackin-restore", "quarantined", "config-dir", NOT_READ),
    ("jackin-restore", "records", "config-dir", NOT_READ),
    ("jackin-restore", "record", "config-dir", NOT_READ),
    ("jackin-restore", "recover", "config-dir", NOT_READ),
    ("jackin-keep", "*", "quiet", NOTHING_TO_WARN),
    ("jackin-reconcile", "*", "quiet", NOTHING_TO_WARN),
    ("jackin-restore", "quarantined", "quiet", NOTHING_TO_WARN),
    ("jackin-restore", "records", "quiet", NOTHING_TO_WARN),
    ("jackin-restore", "record", "quiet", NOTHING_TO_WARN),
    ("jackin-restore", "recover", "quiet", NOTHING_TO_WARN),
    ("jackin-keep", "*", "discard-unfinished", Why::Witness("tests/tool/keep.rs", "the_dialog_refuses_to_clean_unreadable_work_without_the_flag")),
    ("jackin-purge", "named", "stop", STOP),
    ("jackin-purge", "terminal", "stop", STOP),
    ("jackin-purge", "records", "stop", STOP),
    ("jackin-purge", "terminal", "discard-unfinished", Why::Reason("a terminal session's work is clean in the walk's home")),
    ("jackin-purge", "records", "discard-unfinished", Why::Reason("the decision on stdin is of a clean session")),
    ("jackin-purge", "named", "quarantine-days", QUARANTINE_DAYS),
    ("jackin-purge", "terminal", "quarantine-days", QUARANTINE_DAYS),
    ("jackin-purge", "records", "quarantine-days", QUARANTINE_DAYS),
    ("jackin-purge", "expire", "quarantine-days", QUARANTINE_DAYS),
    ("jackin-purge", "named", "record-days", RECORD),
    ("jackin-purge", "named", "conversation-path", RECORD),
    ("jackin-purge", "named", "conversation-cap", RECORD),
    ("jackin-purge", "terminal", "record-days", RECORD),
    ("jackin-purge", "terminal", "conversation-path", RECORD),
    ("jackin-purge", "terminal", "conversation-cap", RECORD),
    ("jackin-purge", "records", "record-days", RECORD),
    ("jackin-purge", "records", "conversation-path", RECORD),
    ("jackin-purge", "records", "conversation-cap", RECORD),
    ("jackin-purge", "*", "older-than+keep-last", Why::Reason("the walk's home has two kept sessions: either flag alone picks the older")),
    ("jackin-restore", "resume", "as-is", AS_IS),
    ("jackin-restore", "resume", "health-timeout", HEALTH),
    ("jackin-restore", "resume", "fetch-timeout", FETCH),
    ("jackin-restore", "interrupted", "as-is", AS_IS),
    ("jackin-restore", "interrupted", "health-timeout", HEALTH),
    ("jackin-restore", "interrupted", "fetch-timeout", FETCH),
    ("jackin-restore", "interrupted", "since", SWEEP),
    ("jackin-restore", "interrupted", "jobs", SWEEP),
];

/// One mode of a tool: its arguments and what it reads on stdin.
struct Mode {
    tool: &'static str,
    label: &'static str,
    args: Vec<String>,
    stdin: String,
}

impl Mode {
    fn named(&self) -> String {
        format!("{} {}", self.tool, self.args.join(" "))
    }
}

/// What a run said.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Said {
    exit: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Said {
    fn refused(&self) -> bool {
        self.exit == Some(2) && self.stdout.is_empty()
    }
}

struct Walk {
    home: Home,
    other_home: std::path::PathBuf,
    other_config: std::path::PathBuf,
    names: BTreeMap<&'static str, String>,
    runs: usize,
}

impl Walk {
    fn value(&self, flag: &str) -> String {
        let (_, value) = VALUES
            .iter()
            .find(|(long, _)| *long == flag)
            .unwrap_or_else(|| panic!("the walk has no value for --{flag}: add one to VALUES"));
        let mut value = value.replace("{other_home}", self.other_home.to_str().unwrap());
        value = value.replace("{other_config}", self.other_config.to_str().unwrap());
        for (key, name) in &self.names {
            value = value.replace(&format!("{{{key}}}"), name);
        }
        value
    }

    fn run(&mut self, mode: &Mode, flags: &[&Flag]) -> Said {
        self.runs += 1;
        let mut cmd = assert_cmd::Command::new(tool_path(mode.tool));
        cmd.args(&mode.args);
        for flag in flags {
            cmd.arg(&flag.spelled);
            if flag.takes_value {
                cmd.arg(self.value(&flag.long));
            }
        }
        cmd.env("JACKIN_HOME_DIR", &self.home.home).env("JACKIN_CONFIG_DIR", &self.home.config);
        cmd.env_remove("JACKIN_KEPT_RETENTION").env_remove("JACKIN_INTERRUPTED_SINCE");
        if let Some((key, value)) = engine_env() {
            cmd.env(key, value);
        }
        cmd.write_stdin(mode.stdin.clone()).timeout(Duration::from_secs(4));
        match cmd.output() {
            Ok(Output { status, stdout, stderr }) => Said {
                exit: status.code(),
                stdout: timeless(&String::from_utf8_lossy(&stdout)),
                stderr: timeless(&String::from_utf8_lossy(&stderr)),
            },
            // A run that does not end by itself (--watch) is a run changed.
            Err(_) => Said { exit: None, stdout: "(still running after 4 s)".into(), stderr: String::new() },
        }
    }
}

/// The text with every moment (`2026-12-06T20:47:28.577165Z`) as `<time>` and every count of
/// seconds until one (`"expires_in_secs":1209599`) as `<secs>`: two runs of one command differ in
/// them and in nothing else.
fn timeless(text: &str) -> String {
    let mut text = moments_out(text);
    let key = "_in_secs\":";
    let mut from = 0;
    while let Some(at) = text[from..].find(key).map(|i| from + i + key.len()) {
        let end = at + text[at..].find(|c: char| !(c.is_ascii_digit() || c == '-')).unwrap_or(text.len() - at);
        text.replace_range(at..end, "<secs>");
        from = at;
    }
    text
}

fn moments_out(text: &str) -> String {
    let bytes = text.as_bytes();
    let shape = b"dddd-dd-ddTdd:dd:dd";
    let at = |i: usize| {
        i + shape.len() <= bytes.len()
            && shape.iter().zip(&bytes[i..]).all(|(s, b)| if *s == b'd' { b.is_ascii_digit() } else { s == b })
    };
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < bytes.len() {
        if at(i) {
            let mut end = i + shape.len();
            while end < bytes.len() && (bytes[end].is_ascii_digit() || b".Z+:".contains(&bytes[end])) {
                end += 1;
            }
            out.push_str("<time>");
            i = end;
        } else {
            let c = text[i..].chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// A flag of a tool, as clap defines it.
#[derive(Debug, Clone)]
struct Flag {
    long: String,
    spelled: String,
    takes_value: bool,
}

fn flags_of(command: clap::Command) -> Vec<Flag> {
    command
        .get_arguments()
        .filter(|arg| !arg.is_hide_set() && !arg.is_positional())
        .filter(|arg| !matches!(arg.get_id().as_str(), "help" | "version"))
        .map(|arg| {
            let long = arg.get_long().expect("every flag has a long name").to_owned();
            let takes_value = arg.get_action().takes_values();
            Flag { spelled: format!("--{long}"), long, takes_value }
        })
        .collect()
}

fn exempt(mode: &Mode, flag: &str) -> Option<Why> {
    EXEMPT
        .iter()
        .find(|(tool, label, f, _)| *tool == mode.tool && (*label == "*" || *label == mode.label) && *f == flag)
        .map(|(_, _, _, why)| *why)
}

/// A witness names a test that exists and runs the flag.
fn check_witness(flag: &str, why: Why) {
    if let Why::Reason(reason) = why {
        assert!(reason.split(' ').count() > 5, "--{flag}: say why it may change nothing: {reason:?}");
    }
    if let Why::Witness(file, test) = why {
        let source = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file)).unwrap();
        assert!(source.contains(&format!("fn {test}(")), "{file} has no test {test}");
        let spelled = format!("--{}", flag.split('+').next().unwrap());
        assert!(source.contains(&spelled), "{file} never runs {spelled}");
    }
}

fn store(home: &Home) -> Store {
    Store::open(Roots { home: home.home.clone(), config_dir: home.config.clone() }).unwrap()
}

fn name(inst: &Instance) -> InstanceName {
    InstanceName::parse(&inst.container).unwrap()
}
/// A session kept as jackin-keep keeps one: its recipe captured, then its container removed.
fn keep_with_recipe(home: &Home, inst: &Instance) {
    common::docker::keep_with_recipe(home, &inst.container);
    docker(&["rm", "-f", &inst.container]);
}

/// The home every mode runs over: a clean finished session, one at risk whose container exited
/// under a live status, one kept with its recipe (and build outputs for a slim), one running, a
/// quarantine with its session record, and an index row with a name no tool accepts (every tool
/// that reads the index warns of it, so that `--quiet` has a warning to keep quiet).
struct Fixture {
    walk: Walk,
    modes: Vec<Mode>,
    _sessions: Vec<Session>,
}

fn fixture() -> Fixture {
    let mut home = Home::new();
    let app = home.host_repo("app");
    let record = |h: &Home, c: &str| vec![h.worktree_record(c, &app, "/workspace/app")];
    let clean = home.instance(&unique_id(), record);
    let at_risk = home.instance(&unique_id(), record);
    let kept = home.instance(&unique_id(), record);
    let live = home.instance(&unique_id(), record);
    let discarded = home.instance(&unique_id(), record);
    // An older kept session of the same workspace, role and agent: what --keep-last 1 purges.
    let older = home.instance(&unique_id(), record);
    // Every row is written; from here the tools' own writes change them.
    let store = store(&home);
    store.set_status(&name(&older), Status::RestoreAvailable, "2026-11-20T10:00:00Z").unwrap();
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

    let live_session = Session::launch(&live.container, SessionOptions { dind: false, ..Default::default() });
    fs::write(live.mount_path(0).join("draft.md"), "in progress\n").unwrap();

    fs::write(discarded.mount_path(0).join("draft.md"), "unsaved\n").unwrap();
    let out = home
        .cmd("jackin-purge")
        .args(["--discard-unfinished", "--quarantine-days", "0", "--format=json", &discarded.container])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let quarantine = home.quarantines().pop().expect("the discard left a quarantine");

    // A row no tool accepts: every tool that reads the index warns of it.
    let index_path = home.index_path();
    let mut index: Value = serde_json::from_str(&fs::read_to_string(&index_path).unwrap()).unwrap();
    let mut bad = index["instances"].as_array().unwrap()[0].clone();
    bad["container_base"] = "../not-a-name".into();
    bad["instance_id"] = "zzzzzzzz".into();
    index["instances"].as_array_mut().unwrap().push(bad);
    fs::write(&index_path, serde_json::to_string_pretty(&index).unwrap()).unwrap();

    let assessed = home
        .cmd("jackin-assess")
        .args([live.container.as_str(), at_risk.container.as_str(), clean.container.as_str(), "--format=json"])
        .output()
        .unwrap();
    assert!(assessed.status.success(), "{}", String::from_utf8_lossy(&assessed.stderr));
    let assessments = String::from_utf8(assessed.stdout).unwrap();
    let decided = home
        .cmd("jackin-keep")
        .args(["--policy=clean", "--dry-run", "--format=json"])
        .write_stdin(assessments.clone())
        .output()
        .unwrap();
    let decisions: String = String::from_utf8_lossy(&decided.stdout)
        .lines()
        .map(|line| {
            let mut record: Value = serde_json::from_str(line).unwrap();
            record["data"].as_object_mut().unwrap().remove("dry_run");
            format!("{record}\n")
        })
        // A discard is taken only with keep's seal, which a dry run does not give: the clean
        // session's decision is the one a purge acts on.
        .filter(|line: &String| !line.contains("\"discard_unfinished\":true"))
        .collect();
    assert!(decisions.contains("\"type\":\"decision\""), "{decisions}");

    let other_home = home.tmp.path().join("other-home");
    fs::create_dir_all(other_home.join("data")).unwrap();
    let other_config = home.tmp.path().join("other-config");
    fs::create_dir_all(&other_config).unwrap();
    fs::write(other_config.join("config.toml"), "[[[ not toml\n").unwrap();

    let mode = |tool: &'static str, label: &'static str, args: &[&str], stdin: &str| Mode {
        tool,
        label,
        args: args.iter().map(|a| (*a).to_owned()).collect(),
        stdin: stdin.to_owned(),
    };
    let (c_live, c_kept, c_at_risk) = (live.container.as_str(), kept.container.as_str(), at_risk.container.as_str());
    let modes = vec![
        mode("jackin-assess", "assess C", &[c_live], ""),
        mode("jackin-assess", "all", &["--all"], ""),
        mode("jackin-keep", "ask", &["--dry-run"], &assessments),
        mode("jackin-keep", "clean", &["--dry-run", "--policy=clean"], &assessments),
        mode("jackin-purge", "named", &["--dry-run", c_at_risk], ""),
        mode("jackin-purge", "terminal", &["--dry-run", "--terminal"], ""),
        mode("jackin-purge", "records", &["--dry-run"], &decisions),
        mode("jackin-purge", "slim", &["--dry-run", "--slim", "--kept"], ""),
        mode("jackin-purge", "expire", &["--dry-run", "--expire-quarantine"], ""),
        mode("jackin-reconcile", "dry-run", &["--dry-run"], ""),
        mode("jackin-restore", "list", &["--list"], ""),
        mode("jackin-restore", "resume", &["--plan", c_kept], ""),
        mode("jackin-restore", "interrupted", &["--interrupted", "--plan"], ""),
        mode("jackin-restore", "quarantined", &["--quarantined"], ""),
        mode("jackin-restore", "records", &["--records"], ""),
        mode("jackin-restore", "record", &["--record", &discarded.container], ""),
        mode("jackin-restore", "recover", &["--plan", "--recover", quarantine.to_str().unwrap()], ""),
    ];
    let names =
        BTreeMap::from([("record", discarded.container.clone()), ("quarantine", quarantine.display().to_string())]);
    Fixture {
        walk: Walk { home, other_home, other_config, names, runs: 0 },
        modes,
        _sessions: vec![at_risk_session, kept_session, live_session],
    }
}

fn flags_of_tool(tool: &str) -> Vec<Flag> {
    flags_of(match tool {
        "jackin-assess" => AssessArgs::command(),
        "jackin-keep" => KeepArgs::command(),
        "jackin-purge" => PurgeArgs::command(),
        "jackin-reconcile" => ReconcileArgs::command(),
        "jackin-restore" => RestoreArgs::command(),
        other => panic!("{other}"),
    })
}

#[test]
fn every_flag_of_every_tool_changes_the_run_or_is_refused_alone_and_beside_every_other() {
    if !engine_available("every_flag_of_every_tool_changes_the_run_or_is_refused") {
        return;
    }
    let Fixture { mut walk, modes, _sessions } = fixture();
    let mut ignored = Vec::new();
    let mut stale = Vec::new();
    for mode in &modes {
        let base = walk.run(mode, &[]);
        assert!(!base.refused(), "{}: the mode itself is refused: {}", mode.named(), base.stderr);
        if std::env::var_os("JACKIN_FLAG_WALK_SHOW").is_some() {
            eprintln!("{}: {base:?}", mode.named());
        }
        assert_eq!(walk.run(mode, &[]), base, "{}: two runs of the mode say the same", mode.named());
        let flags = flags_of_tool(mode.tool);
        // The flags the mode takes, each with what it said alone.
        let mut taken: Vec<(&Flag, Said)> = Vec::new();
        for flag in &flags {
            if mode.args.contains(&flag.spelled) {
                continue;
            }
            let said = walk.run(mode, &[flag]);
            let why = exempt(mode, &flag.long);
            why.into_iter().for_each(|why| check_witness(&flag.long, why));
            match (said.refused(), said == base, why.is_some()) {
                (true, _, false) => {}
                (false, false, false) => taken.push((flag, said)),
                (false, true, false) => ignored.push(format!("{} {}", mode.named(), flag.spelled)),
                (_, true, true) => {}
                (_, false, true) => stale.push(format!("{} {}", mode.named(), flag.spelled)),
            }
        }
        // Beside a flag that points the run elsewhere (an empty home, a config jackin cannot read,
        // an engine that is not there) the others have nothing to act on: those are walked alone.
        // So has every flag beside one that left the run nothing to say (a filter that matches
        // no session): its pairs would all look alike.
        taken.retain(|(flag, alone)| !ELSEWHERE.contains(&flag.long.as_str()) && !alone.stdout.trim().is_empty());
        for (i, (first, alone_first)) in taken.iter().enumerate() {
            for (second, alone_second) in &taken[i + 1..] {
                let said = walk.run(mode, &[first, second]);
                let pair = format!("{}+{}", first.long, second.long);
                if said.refused() || exempt(mode, &pair).is_some() {
                    continue;
                }
                for (kept, lost, alone) in [(first, second, alone_first), (second, first, alone_second)] {
                    if said == *alone {
                        ignored.push(format!(
                            "{} {} {} ({} ignored beside {})",
                            mode.named(),
                            first.spelled,
                            second.spelled,
                            lost.spelled,
                            kept.spelled
                        ));
                    }
                }
            }
        }
    }
    eprintln!("flag walk: {} runs over {} modes", walk.runs, modes.len());
    assert!(stale.is_empty(), "exempt, but changed the run (drop the exemption):\n  {}", stale.join("\n  "));
    assert!(ignored.is_empty(), "{} silently ignored:\n  {}", ignored.len(), ignored.join("\n  "));
}
