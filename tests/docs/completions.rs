//! The completions in completions/ offer session names where INSTANCE goes and flags as before,
//! tried in bash, zsh and fish against a home with resumable sessions (tests/docs/two_sessions.rs);
//! with the tools' listing failing (no engine, no home) they offer no names and print nothing.
//! bash's completion function is called as bash calls it; fish's `complete -C` lists what it
//! offers; zsh completes a line typed into an interactive zsh on a pseudo-terminal (zpty).

use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use jackin::base::tool::Tool;

use super::two_sessions::TwoSessions;
use crate::common::docker::engine_available;
use crate::common::{self, prerequisite};

/// What one completion is asked: the words before the cursor and the word being completed.
#[derive(Clone, Copy)]
struct Case {
    tool: Tool,
    before: &'static [&'static str],
    current: &'static str,
    /// Whether session names are offered.
    names: bool,
    /// A flag that must be offered too.
    flag: Option<&'static str>,
}

const fn case(
    tool: Tool,
    before: &'static [&'static str],
    current: &'static str,
    names: bool,
    flag: Option<&'static str>,
) -> Case {
    Case { tool, before, current, names, flag }
}

const CASES: [Case; 9] = [
    case(Tool::Restore, &[], "", true, Some("--list")),
    case(Tool::Restore, &[], "jk-", true, None),
    case(Tool::Restore, &["--yes"], "", true, None),
    case(Tool::Restore, &[], "--l", false, Some("--list")),
    case(Tool::Restore, &["--home"], "", false, None),
    case(Tool::Assess, &["--format", "text"], "", true, None),
    case(Tool::Purge, &["--dry-run"], "jk-", true, None),
    case(Tool::Reconcile, &[], "jk-", true, None),
    case(Tool::Keep, &[], "jk-", false, None),
];

fn completion_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("completions").join(name)
}

/// `words` as shell words (single-quoted; none holds a quote).
fn quoted(words: &[&str]) -> String {
    words.iter().map(|word| format!("'{word}'")).collect::<Vec<_>>().join(" ")
}

/// A shell of the home: the tools on `PATH`, the home's variables, `more` on top.
fn shell(sessions: &TwoSessions, program: &[&str], script: &str, more: &[(&str, &Path)]) -> Output {
    let path = format!("{}:{}", common::tools_dir().display(), std::env::var("PATH").unwrap());
    let mut command = Command::new(program[0]);
    command
        .args(&program[1..])
        .arg(script)
        .env("PATH", path)
        .env("JACKIN_HOME_DIR", &sessions.home.home)
        .env("JACKIN_CONFIG_DIR", &sessions.home.config)
        .current_dir(sessions.home.tmp.path())
        .stdin(Stdio::null());
    for (name, value) in more {
        command.env(name, value);
    }
    command.output().unwrap()
}

/// The candidates a shell printed, one a line; its stderr must be empty.
fn candidates(out: &Output, what: &str) -> Vec<String> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && stderr.is_empty(), "{what}: {:?}, stderr:\n{stderr}", out.status);
    // fish gives `candidate<TAB>description`.
    String::from_utf8_lossy(&out.stdout).lines().map(|l| l.split('\t').next().unwrap().to_owned()).collect()
}

fn bash_candidates(sessions: &TwoSessions, case: &Case, more: &[(&str, &Path)]) -> Vec<String> {
    let tool = case.tool.name();
    let words: Vec<&str> = [tool].iter().chain(case.before).chain([&case.current]).copied().collect();
    let script = format!(
        r#"source '{file}'
COMP_WORDS=({words})
COMP_CWORD={cword}
COMP_LINE="${{COMP_WORDS[*]}}"
COMP_POINT=${{#COMP_LINE}}
function=$(complete -p {tool} | sed -n 's/.* -F \([^ ]*\) .*/\1/p')
"$function" {tool} '{current}' '{previous}'
printf '%s\n' "${{COMPREPLY[@]}}""#,
        file = completion_file(&format!("{tool}.bash")).display(),
        words = quoted(&words),
        cword = words.len() - 1,
        current = case.current,
        previous = words[words.len() - 2],
    );
    candidates(&shell(sessions, &["bash", "--norc", "--noprofile", "-c"], &script, more), &script)
}

fn fish_candidates(sessions: &TwoSessions, case: &Case, more: &[(&str, &Path)]) -> Vec<String> {
    let tool = case.tool.name();
    let line: Vec<&str> = [tool].iter().chain(case.before).chain([&case.current]).copied().collect();
    let script =
        format!("source '{}'; complete -C '{}'", completion_file(&format!("{tool}.fish")).display(), line.join(" "));
    // fish keeps its variables and history under these: the test's own, not the operator's.
    let mut more = more.to_vec();
    let own = sessions.home.tmp.path().join("fish");
    more.extend([("XDG_CONFIG_HOME", own.as_path()), ("XDG_DATA_HOME", own.as_path())]);
    candidates(&shell(sessions, &["fish", "--no-config", "-c"], &script, &more), &script)
}

/// What an interactive zsh (in a pseudo-terminal of zsh's own zpty) shows when the case's line is
/// typed and Tab pressed: the line as completed, and any list of candidates. The line is then
/// made a no-op and run with a marker after it, which is read for. Only the screen's text is
/// returned; a completion that printed an error would be on it.
fn zsh_screen(sessions: &TwoSessions, case: &Case, more: &[(&str, &Path)]) -> String {
    let line: Vec<&str> = [case.tool.name()].iter().chain(case.before).chain([&case.current]).copied().collect();
    let script = format!(
        r#"zmodload zsh/zpty
zpty typing zsh -f -i
zpty -w typing 'PS1="> "; fpath=('{completions}' $fpath); autoload -U compinit; compinit -u -D; unsetopt list_ambiguous'
zpty -w -n typing $'{line}\t'
zpty -w typing $'\x01: \x05; print -r -- ${{:-DO}}NE'
zpty -r typing screen '*DONE*'
zpty -d typing
print -r -- "$screen""#,
        completions = completion_file("").display(),
        line = line.join(" "),
    );
    // A completion that never comes would leave zpty reading for ever.
    let out = shell(sessions, &["timeout", "30", "zsh", "-f", "-c"], &script, more);
    let screen = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success() && out.stderr.is_empty(), "zsh: {script}\n{:?}\n{screen}", out.status);
    assert!(!screen.contains("error") && !screen.contains("not found"), "zsh: {script}\n{screen}");
    screen
}

/// Whether `program` runs here; under CI=true it must.
fn have(program: &str, test: &str) -> bool {
    let present = Command::new(program).arg("--version").output().is_ok_and(|o| o.status.success());
    prerequisite(test, present, &format!("there is no {program} (apt-get install {program})"))
}

/// Whether `offered` (a session's name or a flag: is it offered?) answers as the case wants. fish
/// and zsh offer flags only for a word that starts with `-`.
fn check(shell: &str, case: &Case, offered: impl Fn(&str) -> bool, sessions: &TwoSessions, shown: &dyn Debug) {
    let what = format!("{shell}: {} {} {:?}", case.tool.name(), case.before.join(" "), case.current);
    for session in [&sessions.kept.container, &sessions.discarded.container] {
        assert_eq!(offered(session), case.names, "{what}: {session} offered? {shown:#?}");
    }
    let flags_offered = shell == "bash" || case.current.starts_with('-');
    if let Some(flag) = case.flag.filter(|_| flags_offered) {
        assert!(offered(flag), "{what}: {flag} not offered: {shown:#?}");
    }
}

/// Each case in each shell here (bash always; under CI=true zsh and fish too).
fn check_every_shell(sessions: &TwoSessions, cases: &[Case], more: &[(&str, &Path)]) {
    let (zsh, fish) = (have("zsh", "completions: zsh"), have("fish", "completions: fish"));
    for case in cases {
        let bash_offers = bash_candidates(sessions, case, more);
        check("bash", case, |word| bash_offers.iter().any(|o| o == word), sessions, &bash_offers);
        if fish {
            let fish_offers = fish_candidates(sessions, case, more);
            check("fish", case, |word| fish_offers.iter().any(|o| o == word), sessions, &fish_offers);
        }
        if zsh {
            let screen = zsh_screen(sessions, case, more);
            check("zsh", case, |word| screen.contains(word), sessions, &screen);
        }
    }
}

#[test]
fn instance_completes_to_session_names_and_flags_still_complete() {
    if !engine_available("completions") {
        return;
    }
    let sessions = TwoSessions::new("cmpc0000", "cmpd0000");
    check_every_shell(&sessions, &CASES, &[]);
}

#[test]
fn zshs_spec_completes_instance_with_the_session_action_and_keeps_the_flags() {
    // keep reads its sessions from stdin: it takes no INSTANCE to complete.
    for tool in Tool::PROGRAMS.into_iter().filter(|&tool| jackin::extras::manual(tool).sessions.is_some()) {
        let name = tool.name();
        let script = std::fs::read_to_string(completion_file(&format!("_{name}"))).unwrap();
        let action = format!(":_{name}_sessions' \\");
        let spec = script.lines().find(|line| line.starts_with("'::") || line.starts_with("'*::"));
        assert!(spec.is_some_and(|line| line.ends_with(&action)), "{name}: INSTANCE's spec {spec:?}");
        assert!(script.contains("'--home=["), "{name}: the flags' specs");
    }
}

/// With no engine for jackin-restore and no home for jackin-assess, their listings fail: no names,
/// nothing on the terminal, the flags still there.
#[test]
fn a_failing_listing_offers_no_names_and_prints_nothing() {
    if !engine_available("completions") {
        return;
    }
    let sessions = TwoSessions::new("cmfc0000", "cmfd0000");
    let nowhere = sessions.home.tmp.path().join("nowhere");
    let no_engine = [("DOCKER_HOST", Path::new("unix:///nonexistent/docker.sock"))];
    let no_home = [("JACKIN_HOME_DIR", nowhere.as_path())];
    let restore =
        [case(Tool::Restore, &[], "", false, Some("--list")), case(Tool::Restore, &[], "--l", false, Some("--list"))];
    check_every_shell(&sessions, &restore, &no_engine);
    let assess =
        [case(Tool::Assess, &[], "", false, Some("--all")), case(Tool::Assess, &[], "--a", false, Some("--all"))];
    check_every_shell(&sessions, &assess, &no_home);
}
