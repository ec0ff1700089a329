//! The launchd agents of contrib/launchd/ (the macOS schedules) are property lists launchd can
//! load, and start what they say. Each parses (with `plutil -lint` too where it is installed,
//! which is on a Mac), its comments hold no `--` (XML forbids it there), its Label is its file
//! name, its paths are absolute (launchd expands no `~`), and every jackin command it holds, in
//! ProgramArguments or in its `/bin/sh -c` script (commented alternatives included), names one of
//! the tools with arguments that tool accepts: run with the agent's environment, an empty home
//! and an engine that cannot be reached, it exits 0 or 4, never 2. The copies `make install` puts
//! in PREFIX/share/jackin/launchd/ start PREFIX/bin/… and pass the same checks. The resume
//! agent's wait for an engine that is still starting is run with stand-ins for the tools.

use crate::common;

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{stderr, tools_dir};

/// The tools a schedule may start.
const TOOLS: [&str; 6] =
    ["jackin-assess", "jackin-keep", "jackin-purge", "jackin-reconcile", "jackin-restore", "jackin-idle"];
/// Where the agents as shipped start the tools (`make install` with the default PREFIX).
const SHIPPED_BIN: &str = "/usr/local/bin";

/// The `.plist` files of `dir`, in name order.
fn agents(dir: &Path) -> Vec<PathBuf> {
    let mut agents: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "plist"))
        .collect();
    agents.sort();
    agents
}

/// The jackin commands of an agent's ProgramArguments, each as its words: the arguments
/// themselves, or the commands of a `/bin/sh -c` script, commented-out alternatives included
/// (every word of the script that names a program in `bin` must begin one).
fn commands(name: &str, args: &[String], bin: &Path) -> Vec<Vec<String>> {
    if args[0] != "/bin/sh" {
        return vec![args.to_vec()];
    }
    assert!(args.len() == 3 && args[1] == "-c", "{name}: /bin/sh -c SCRIPT, nothing else");
    let script = &args[2];
    let syntax = Command::new("sh").arg("-n").arg("-c").arg(script).output().unwrap();
    assert!(syntax.status.success(), "{name}: the script is not sh: {}", stderr(&syntax));
    let prefix = format!("{}/", bin.display());
    let mut commands = Vec::new();
    for line in script.lines().map(|l| l.trim().trim_start_matches('#')) {
        for piece in line.split([';', '&', '|']) {
            let words: Vec<String> = piece.split_whitespace().map(str::to_owned).collect();
            let start =
                usize::from(matches!(words.first().map(String::as_str), Some("until" | "while" | "do" | "then")));
            if words.get(start).is_some_and(|w| w.starts_with(&prefix)) {
                commands.push(words[start..].to_vec());
            }
        }
    }
    let named = script.split_whitespace().filter(|w| w.trim_start_matches('#').starts_with(&prefix)).count();
    assert_eq!(commands.len(), named, "{name}: every tool the script names begins a command it runs");
    commands
}

/// One agent's checks. Its tools are named under `bin` and run from `run_from`.
fn check_agent(path: &Path, bin: &Path, run_from: &Path) {
    let name = path.file_name().unwrap().to_str().unwrap();
    let text = fs::read_to_string(path).unwrap();
    for comment in text.split("<!--").skip(1) {
        let body = comment.split("-->").next().unwrap();
        let line = body.lines().find(|l| l.contains("--"));
        assert!(line.is_none(), "{name}: `--` inside an XML comment: {line:?}");
    }
    let plist = plist::Value::from_file(path).unwrap_or_else(|e| panic!("{name}: not a property list: {e}"));
    let agent = plist.as_dictionary().unwrap_or_else(|| panic!("{name}: not a dictionary"));
    let string = |key: &str| agent.get(key).and_then(plist::Value::as_string);
    assert_eq!(string("Label"), name.strip_suffix(".plist"), "{name}: the Label is the file name");
    for key in ["StandardOutPath", "StandardErrorPath"] {
        let log = string(key).unwrap_or_else(|| panic!("{name}: no {key}"));
        assert!(log.starts_with('/'), "{name}: {key} {log} is not absolute (launchd expands no ~)");
    }
    let runs = agent.contains_key("StartInterval")
        || agent.contains_key("StartCalendarInterval")
        || agent.get("RunAtLoad").and_then(plist::Value::as_boolean) == Some(true);
    assert!(runs, "{name}: nothing starts it");
    let env: BTreeMap<String, String> = agent
        .get("EnvironmentVariables")
        .and_then(plist::Value::as_dictionary)
        .map(|d| d.iter().map(|(k, v)| (k.clone(), v.as_string().unwrap().to_owned())).collect())
        .unwrap_or_default();
    let args: Vec<String> = agent
        .get("ProgramArguments")
        .and_then(plist::Value::as_array)
        .unwrap_or_else(|| panic!("{name}: no ProgramArguments"))
        .iter()
        .map(|a| a.as_string().unwrap().to_owned())
        .collect();
    assert!(!args.is_empty(), "{name}: ProgramArguments is empty");

    let home = tempfile::tempdir().unwrap();
    fs::create_dir_all(home.path().join(".jackin/data")).unwrap();
    let commands = commands(name, &args, bin);
    assert!(!commands.is_empty(), "{name}: no jackin command");
    for command in commands {
        let program = Path::new(&command[0]);
        assert_eq!(program.parent(), Some(bin), "{name}: {} is not a tool in {}", command[0], bin.display());
        let tool = program.file_name().unwrap().to_str().unwrap();
        assert!(TOOLS.contains(&tool), "{name}: {tool} is none of the tools {TOOLS:?}");
        let out = Command::new(run_from.join(tool))
            .args(&command[1..])
            .env_clear()
            .envs(&env)
            .env("HOME", home.path())
            .env("DOCKER_HOST", "unix:///nonexistent.sock")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let code = out.status.code();
        assert!(
            matches!(code, Some(0 | 4)),
            "{name}: `{}` exited {code:?}, not 0 or 4 (2: it refused its arguments): {}",
            command.join(" "),
            stderr(&out)
        );
    }
}

/// `plutil -lint`, Apple's own check of a property list, where it is installed.
fn plutil_lint(agents: &[PathBuf]) {
    match Command::new("plutil").arg("-lint").args(agents).output() {
        Ok(out) => {
            assert!(out.status.success(), "plutil -lint: {}{}", String::from_utf8_lossy(&out.stdout), stderr(&out))
        }
        Err(_) => {
            eprintln!("plutil is not installed (it is on macOS): the agents are checked by the plist crate alone")
        }
    }
}

#[test]
fn the_launchd_agents_are_valid_plists_and_run_the_installed_tools() {
    let shipped = agents(&common::root().join("contrib/launchd"));
    let names: Vec<_> = shipped.iter().map(|p| p.file_name().unwrap().to_str().unwrap()).collect();
    assert_eq!(
        names,
        [
            "io.jackin.tools.idle.plist",
            "io.jackin.tools.purge.plist",
            "io.jackin.tools.reconcile.plist",
            "io.jackin.tools.resume-interrupted.plist"
        ]
    );
    plutil_lint(&shipped);
    for agent in &shipped {
        check_agent(agent, Path::new(SHIPPED_BIN), tools_dir());
    }

    let tmp = tempfile::tempdir().unwrap();
    let prefix = tmp.path().join("usr");
    common::make_install(&prefix);
    let installed = agents(&prefix.join("share/jackin/launchd"));
    assert_eq!(installed.len(), shipped.len(), "make install installs every agent");
    plutil_lint(&installed);
    for agent in &installed {
        let mode = fs::metadata(agent).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o644, "{}", agent.display());
        let text = fs::read_to_string(agent).unwrap();
        assert!(!text.contains(&format!("{SHIPPED_BIN}/jackin-")), "{}: still starts {SHIPPED_BIN}", agent.display());
        check_agent(agent, &prefix.join("bin"), &prefix.join("bin"));
    }
}

/// The resume agent's script, its tools and `sleep` replaced by stand-ins: jackin-reconcile
/// exits 4 (engine unreachable) `unreachable` times, then 0.
fn run_resume_script(unreachable: usize) -> (usize, usize, String) {
    let agent = common::root().join("contrib/launchd/io.jackin.tools.resume-interrupted.plist");
    let plist = plist::Value::from_file(&agent).unwrap();
    let args = plist.as_dictionary().unwrap().get("ProgramArguments").unwrap().as_array().unwrap();
    let script = args[2].as_string().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let stand_ins = [
        (
            "jackin-reconcile",
            format!("echo >> {0}/reconciled\n[ $(wc -l < {0}/reconciled) -gt {unreachable} ] || exit 4", dir.display()),
        ),
        ("jackin-restore", format!("echo \"$*\" >> {}/restored\nexit 6", dir.display())),
        ("sleep", format!("echo >> {}/slept", dir.display())),
    ];
    for (name, body) in stand_ins {
        let path = dir.join(name);
        fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    }
    let script = script.replace(&format!("{SHIPPED_BIN}/"), &format!("{}/", dir.display()));
    let out = Command::new("/bin/sh")
        .arg("-c")
        .arg(&script)
        .env("PATH", format!("{}:/usr/bin:/bin", dir.display()))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(6), "the agent exits with jackin-restore's code: {}", stderr(&out));
    let lines = |file: &str| fs::read_to_string(dir.join(file)).map(|t| t.lines().count()).unwrap_or(0);
    (lines("reconciled"), lines("slept"), fs::read_to_string(dir.join("restored")).unwrap())
}

#[test]
fn the_resume_agent_waits_for_an_engine_that_is_still_starting() {
    // The engine answers at the third try: two waits, then the sweep.
    let (reconciled, slept, restored) = run_resume_script(2);
    assert_eq!((reconciled, slept), (3, 2));
    assert_eq!(restored, "--interrupted --yes --format text\n");
    // It never answers: 21 tries (20 waits of 15 s, five minutes), then the sweep says so itself.
    let (reconciled, slept, restored) = run_resume_script(100);
    assert_eq!((reconciled, slept), (21, 20));
    assert_eq!(restored.lines().count(), 1);
}
