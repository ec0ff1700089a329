//! The agent cannot drive the operator's terminal: a session whose agent named files with escape
//! sequences, a right-to-left override, an OSC 52 clipboard write, a C1 control and invalid
//! UTF-8, wrote escapes into a file's content and into a commit subject, is shown inert by every
//! tool's text format, on stderr, on both screens and in the Inspect pager (protocol/inert.rs).
//! JSON keeps the exact names (tests/safety/guards.rs, "names that are not UTF-8").

use crate::common;

use std::ffi::OsStr;
use std::fs;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Output, Stdio};

use common::docker::engine_available;
use common::{git, stderr, tool_path, Home, Instance};
use rexpect::session::PtySession;

/// The untracked files' names, as bytes.
const NAMES: [&[u8]; 6] = [
    b"x\x1b[2A\x1b[2K\x1b[1GALL CLEAN\x1b[8m",
    "invoice\u{202E}fdp.exe".as_bytes(),
    b"clip\x1b]52;c;SGVsbG8=\x07",
    "c1-\u{9b}2J".as_bytes(),
    b"bad-\xff",
    b"new\nline",
];

/// What must never reach a terminal from the agent: the sequences it wrote, byte for byte.
const AGENT_SEQUENCES: [&[u8]; 7] = [
    b"\x1b[1GALL CLEAN",
    b"\x1b[8m",
    b"\x1b]52;",
    b"\x1b]0;",
    "\u{202E}".as_bytes(),
    "\u{9b}2J".as_bytes(),
    b"\x1b[31mred",
];

struct Scene {
    home: Home,
    inst: Instance,
}

/// A worktree session with the hostile names untracked, README.md changed to hold escapes, and a
/// commit whose subject holds them.
fn scene() -> Scene {
    let mut home = Home::new();
    let app = home.host_repo("app");
    let inst = home.instance(&common::unique_id(), |h, c| vec![h.worktree_record(c, &app, "/workspace/app")]);
    let wt = inst.mount_path(0);
    fs::write(wt.join("feature.rs"), "fn feature() {}\n").unwrap();
    git(&wt, &["add", "feature.rs"]);
    let committed = Command::new("git")
        .current_dir(&wt)
        .args(["commit", "-q", "-m", "fix \x1b[31mred\x1b[0m \u{202E}gnp.exe \x1b]0;owned\x07"])
        .status()
        .unwrap();
    assert!(committed.success());
    for name in NAMES {
        fs::write(wt.join(OsStr::from_bytes(name)), "agent work\n").unwrap();
    }
    fs::write(wt.join("README.md"), "hello \x1b]0;title\x07 \x1b[2J cleared\n").unwrap();
    Scene { home, inst }
}

/// Where `bytes` drives a terminal: a C0 control but newline and tab (and the carriage return a
/// pseudo-terminal adds), DEL, a C1 control, a bidirectional control.
fn control_bytes(bytes: &[u8], on_a_terminal: bool) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let mut found = Vec::new();
    for c in text.chars() {
        let allowed = c == '\n' || c == '\t' || (on_a_terminal && c == '\r');
        let bidi = matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}');
        if (c.is_control() && !allowed) || bidi {
            found.push(format!("U+{:04X}", c as u32));
        }
    }
    found
}

fn run(home: &Home, tool: &str, args: &[&str], stdin: &[u8]) -> Output {
    let mut child = home
        .detached(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

fn assert_inert(what: &str, out: &Output) {
    for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        let found = control_bytes(bytes, false);
        assert!(found.is_empty(), "{what}: {stream} holds {found:?}:\n{}", String::from_utf8_lossy(bytes));
    }
}

/// The text format of every tool over the hostile session, and their messages on stderr, hold
/// no control byte but newline and tab; the names are there, escaped as git quotes them.
#[test]
fn every_text_format_and_every_message_is_inert() {
    if !engine_available("every_text_format_and_every_message_is_inert") {
        return;
    }
    let Scene { home, inst } = scene();
    let c = inst.container.as_str();
    let assessed = run(&home, "jackin-assess", &["--format=text", c], b"");
    assert!(assessed.status.success(), "{}", stderr(&assessed));
    assert_inert("assess", &assessed);
    let text = String::from_utf8_lossy(&assessed.stdout);
    for shown in ["x\\033[2A\\033[2K\\033[1GALL CLEAN\\033[8m", "invoice<U+202E>fdp.exe", "bad-\\377", "new\\nline"] {
        assert!(text.contains(shown), "{shown} is not in:\n{text}");
    }
    assert_inert("assess --diff", &run(&home, "jackin-assess", &["--format=text", "--diff", c], b""));
    assert_inert("assess --disk", &run(&home, "jackin-assess", &["--format=text", "--disk", c], b""));
    assert_inert("assess --all", &run(&home, "jackin-assess", &["--format=text", "--all"], b""));
    // A name argument the agent could have chosen, in the error message.
    let bad = run(&home, "jackin-assess", &["--format=text", "jk-\x1b[2J\u{202E}"], b"");
    assert!(!bad.status.success());
    assert_inert("assess of a hostile name", &bad);
    let records = run(&home, "jackin-assess", &["--format=json", c], b"").stdout;
    assert_inert("purge without a discard", &run(&home, "jackin-purge", &["--format=text", c], b""));
    assert_inert(
        "purge --dry-run",
        &run(&home, "jackin-purge", &["--format=text", "--dry-run", "--discard-unfinished", c], b""),
    );
    assert_inert(
        "keep, passing the assessment through",
        &run(&home, "jackin-keep", &["--format=text", "--policy=keep"], &records),
    );
    assert_inert("reconcile", &run(&home, "jackin-reconcile", &["--format=text"], b""));
    assert_inert("restore --list", &run(&home, "jackin-restore", &["--format=text", "--list"], b""));
    assert_inert(
        "purge --slim --dry-run",
        &run(&home, "jackin-purge", &["--format=text", "--slim", "--dry-run", c], b""),
    );
    let out = run(&home, "jackin-purge", &["--format=text", "--discard-unfinished", c], b"");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_inert("purge --discard-unfinished", &out);
    let quarantine = home.quarantines().pop().expect("a quarantine");
    let receipt = fs::read(quarantine.join("RECEIPT.txt")).unwrap();
    let found = control_bytes(&receipt, false);
    assert!(found.is_empty(), "RECEIPT.txt holds {found:?}");
    assert!(String::from_utf8_lossy(&receipt).contains("x\\033[2A"), "the receipt names the file, escaped");
}

/// The pseudo-terminal's output so far, collected as rexpect hands it over (Latin-1: one char a
/// byte), so that what was matched is checked too.
struct Screen {
    pty: PtySession,
    seen: String,
}

impl Screen {
    fn expect(&mut self, text: &str) {
        let before = self.pty.exp_string(text).unwrap_or_else(|e| panic!("{text:?} not shown: {e}\n{:?}", self.seen));
        self.seen.push_str(&before);
        self.seen.push_str(text);
    }

    fn send(&mut self, keys: &str) {
        self.pty.send(keys).unwrap();
        self.pty.flush().unwrap();
    }

    /// Waits for the end; every byte the terminal was sent, as bytes.
    fn finish(mut self) -> Vec<u8> {
        self.seen.push_str(&self.pty.exp_eof().unwrap());
        self.seen.chars().map(|c| c as u32 as u8).collect()
    }
}

fn on_pty(cmd: Command, stdin: &[u8], home: &Home, screens: bool, env: &[(&str, &str)]) -> Screen {
    let input = home.tmp.path().join(format!("pty-in-{}", common::unique_id()));
    fs::write(&input, stdin).unwrap();
    let mut shell = Command::new("sh");
    shell.arg("-c").arg("stty rows 30 cols 120 </dev/tty && exec \"$0\" \"$@\"").arg(cmd.get_program());
    shell.args(cmd.get_args()).env_remove("JACKIN_HOME_DIR").env_remove("JACKIN_CONFIG_DIR");
    shell.env("TERM", if screens { "xterm-256color" } else { "dumb" }).env_remove("NO_COLOR");
    shell.env_remove("PAGER").envs(env.iter().copied());
    shell.stdin(fs::File::open(&input).unwrap()).stdout(fs::File::create(input.with_extension("out")).unwrap());
    Screen { pty: rexpect::session::spawn_command(shell, Some(30_000)).unwrap(), seen: String::new() }
}

fn tool(home: &Home, name: &str, args: &[&str]) -> Command {
    let mut cmd = Command::new(tool_path(name));
    cmd.arg("--home").arg(&home.home).arg("--config-dir").arg(&home.config).args(args);
    cmd
}

fn assert_no_agent_sequence(what: &str, shown: &[u8]) {
    for sequence in AGENT_SEQUENCES {
        let at = shown.windows(sequence.len()).position(|w| w == sequence);
        assert!(at.is_none(), "{what}: the agent's {:?} reached the terminal", String::from_utf8_lossy(sequence));
    }
}

/// The exit dialog, drawn (ratatui) and as numbered text, and the Inspect pager: the mount's
/// verdict line is there, the names and the diff escaped, and none of the agent's sequences
/// reaches the terminal.
#[test]
fn the_exit_dialog_and_the_pager_show_hostile_names_and_contents_inert() {
    if !engine_available("the_exit_dialog_and_the_pager_show_hostile_names_and_contents_inert") {
        return;
    }
    let Scene { home, inst } = scene();
    let records = run(&home, "jackin-assess", &["--format=json", &inst.container], b"").stdout;
    let keep = || tool(&home, "jackin-keep", &["--format=json", "--policy=ask"]);

    // Drawn: screen 1, Enter, Inspect (`cat` as the pager), then Return to agent.
    let mut screen = on_pty(keep(), &records, &home, true, &[("JACKIN_PAGER", "cat")]);
    screen.expect("unfinished");
    screen.expect("dirty");
    // ratatui moves the cursor over spaces: words are matched one by one.
    screen.expect("x\\033[2A\\033[2K\\033[1GALL");
    screen.expect("read");
    screen.send("\r");
    screen.expect("Inspect");
    screen.send("i");
    screen.send("\r");
    screen.expect("cleared");
    screen.expect("Inspect");
    screen.send("1");
    screen.send("\r");
    let shown = screen.finish();
    assert_no_agent_sequence("the screens", &shown);
    let text = String::from_utf8_lossy(&shown);
    assert!(text.contains("\\033[2A"), "the name is shown escaped");
    assert!(text.contains("\\033]0;title\\007"), "the diff is shown escaped");

    // Numbered text (TERM=dumb), with the full diffs.
    let mut screen = on_pty(keep(), &records, &home, false, &[]);
    screen.expect("has unfinished work");
    screen.expect("Press Enter");
    screen.send("\r");
    screen.expect("Choose [1]");
    screen.send("d\r");
    screen.expect("cleared");
    screen.expect("Choose [1]");
    screen.send("\r");
    let shown = screen.finish();
    assert_no_agent_sequence("the numbered dialog", &shown);
    let text = String::from_utf8_lossy(&shown);
    assert!(text.contains("x\\033[2A\\033[2K\\033[1GALL CLEAN"), "{text}");
    assert!(text.contains("invoice<U+202E>fdp.exe") && text.contains("new\\nline"), "{text}");
}

/// The resume picker shows a workspace's name inert (one named with escapes).
#[test]
fn the_picker_shows_a_hostile_label_inert() {
    if !engine_available("the_picker_shows_a_hostile_label_inert") {
        return;
    }
    let mut home = Home::new();
    let inst = home.instance(&common::unique_id(), |_, _| Vec::new());
    let label = "evil\x1b[1GALL CLEAN\u{202E}";
    home.edit_manifest(&inst.container, |manifest| {
        manifest["workspace_label"] = serde_json::json!(label);
        manifest["status"] = serde_json::json!("restore_available");
    });
    let mut index = home.index();
    index["instances"][0]["workspace_label"] = serde_json::json!(label);
    index["instances"][0]["status"] = serde_json::json!("restore_available");
    common::write_json(&home.index_path(), &index);

    let mut screen = on_pty(tool(&home, "jackin-restore", &["--format=json"]), b"", &home, true, &[]);
    screen.expect("Pick");
    // `w` filters by the next workspace, and the hint names it.
    screen.send("w");
    screen.expect("evil\\033[1GALL");
    screen.send("q");
    let shown = screen.finish();
    assert_no_agent_sequence("the picker", &shown);
    assert!(String::from_utf8_lossy(&shown).contains("CLEAN<U+202E>"));
}
