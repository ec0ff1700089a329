//! Session names in the shell completions: what tests/docs/generated_docs.rs adds to
//! clap_complete's scripts so that INSTANCE completes to the sessions a listing of the tools prints
//! (`jackin::face::manual::SessionListing`). The listing only reads; it is given 3 seconds
//! (`timeout`, where there is one), its stderr is dropped, and when it fails (no engine, no home)
//! nothing is offered. Flags complete as clap_complete makes them.

use clap_complete::Shell;
use jackin::face::manual::SessionListing;

/// The names in a listing's JSON Lines: the `container_base` of each record of type `type`, only
/// when it is a jackin name (`jk-` and lowercase letters, digits and dashes), so nothing else
/// reaches the command line. The envelope comes first and `container_base` first in `data`.
const NAMES_OF_RECORDS: &str = r#"index($0, type) { n = split($0, part, "\"container_base\":\""); if (n > 1) { split(part[2], name, "\""); if (name[1] ~ /^jk-[0-9a-z-]+$/) print name[1] } }"#;

/// `script`, clap_complete's completion of `cmd` for `shell`, with session names where INSTANCE
/// goes.
pub fn added(shell: Shell, cmd: &clap::Command, listing: &SessionListing, script: &str) -> String {
    let name = cmd.get_name();
    match shell {
        Shell::Bash => bash(name, &value_options(cmd), listing, script),
        Shell::Zsh => zsh(name, cmd, listing, script),
        Shell::Fish => fish(name, &value_options(cmd), listing, script),
        other => panic!("no session names for {other}"),
    }
}

/// The options whose next word is their value, never a session: `--home`, `-x`.
fn value_options(cmd: &clap::Command) -> Vec<String> {
    let mut options = Vec::new();
    for arg in cmd.get_arguments().filter(|arg| !arg.is_positional() && arg.get_action().takes_values()) {
        options.extend(arg.get_long().map(|long| format!("--{long}")));
        options.extend(arg.get_short().map(|short| format!("-{short}")));
    }
    options
}

/// The listing's words as one line of shell words: record type, then the command.
fn listing_words(listing: &SessionListing) -> String {
    format!("{} {}", listing.record, listing.command.join(" "))
}

const BASH_NAMES: &str = r#"
# Session names where INSTANCE goes: the container_base of each record a listing of the tools
# prints. The listing only reads; it gets 3 seconds, and when it fails nothing is offered.
_jackin_session_names() {
    local record="$1"
    shift
    local listing=("$@")
    if command -v timeout >/dev/null 2>&1; then
        listing=(timeout 3 "${listing[@]}")
    fi
    "${listing[@]}" --format json --quiet 2>/dev/null </dev/null |
        awk -v type="\"type\":\"$record\"" '@AWK@'
}

@FUNCTION@_with_sessions() {
    @FUNCTION@ "$@"
    local cur="${COMP_WORDS[COMP_CWORD]}" prev="${COMP_WORDS[COMP_CWORD-1]}"
    case "$cur" in -*) return 0 ;; esac
    case "$prev" in @VALUE_OPTIONS@|=) return 0 ;; esac
    @ONLY_AFTER@COMPREPLY+=($(compgen -W "$(_jackin_session_names @LISTING@)" -- "$cur"))
}

"#;

fn bash(name: &str, value_options: &[String], listing: &SessionListing, script: &str) -> String {
    let function = script
        .lines()
        .find_map(|line| line.trim().strip_prefix("complete -F ")?.split(' ').next())
        .expect("clap_complete registers a function");
    let only_after = match listing.only_after {
        Some(flag) => format!("[[ \" ${{COMP_WORDS[*]:0:COMP_CWORD}} \" == *\" {flag} \"* ]] || return 0\n    "),
        None => String::new(),
    };
    let names = BASH_NAMES
        .replace("@AWK@", NAMES_OF_RECORDS)
        .replace("@FUNCTION@", function)
        .replace("@VALUE_OPTIONS@", &value_options.join("|"))
        .replace("@ONLY_AFTER@", &only_after)
        .replace("@LISTING@", &listing_words(listing));
    let registration = script.find("if [[ \"${BASH_VERSINFO[0]}\" -eq 4").expect("clap_complete's registration");
    let (body, register) = script.split_at(registration);
    let register = register.replace(&format!("-F {function} "), &format!("-F {function}_with_sessions "));
    assert!(register.contains(name), "{name}: the registration names the command");
    format!("{body}{}{register}", names.trim_start_matches('\n'))
}

const ZSH_NAMES: &str = r#"# Session names where INSTANCE goes: the container_base of each record a listing of the tools
# prints. The listing only reads; it gets 3 seconds, and when it fails nothing is offered.
(( $+functions[_jackin_session_names] )) ||
_jackin_session_names() {
    local record=$1
    shift
    local -a listing
    listing=("$@")
    (( $+commands[timeout] )) && listing=(timeout 3 "${listing[@]}")
    "${listing[@]}" --format json --quiet 2>/dev/null </dev/null |
        awk -v type="\"type\":\"$record\"" '@AWK@'
}

(( $+functions[@FUNCTION@_sessions] )) ||
@FUNCTION@_sessions() {
    @ONLY_AFTER@local -a sessions
    sessions=(${(f)"$(_jackin_session_names @LISTING@)"})
    _wanted sessions expl 'session' compadd -a sessions
}

"#;

fn zsh(name: &str, cmd: &clap::Command, listing: &SessionListing, script: &str) -> String {
    let function = format!("_{name}");
    let positional = cmd.get_positionals().next().expect("every tool takes INSTANCE").get_id().to_string();
    let mut found = false;
    let lines: Vec<String> = script
        .lines()
        .map(|line| {
            let spec =
                line.starts_with(&format!("'::{positional} -- ")) || line.starts_with(&format!("'*::{positional} -- "));
            match (spec, line.strip_suffix(":_default' \\")) {
                (true, Some(start)) => {
                    found = true;
                    format!("{start}:{function}_sessions' \\")
                }
                _ => line.to_owned(),
            }
        })
        .collect();
    assert!(found, "{name}: clap_complete's spec of {positional}");
    let script = lines.join("\n") + "\n";
    let only_after = match listing.only_after {
        Some(flag) => format!("(( ${{+opt_args[{flag}]}} )) || return 1\n    "),
        None => String::new(),
    };
    let names = ZSH_NAMES
        .replace("@AWK@", NAMES_OF_RECORDS)
        .replace("@FUNCTION@", &function)
        .replace("@ONLY_AFTER@", &only_after)
        .replace("@LISTING@", &listing_words(listing));
    let dispatch =
        script.find(&format!("if [ \"$funcstack[1]\" = \"{function}\" ]")).expect("clap_complete's dispatch");
    format!("{}{names}{}", &script[..dispatch], &script[dispatch..])
}

const FISH_NAMES: &str = r#"
# Session names where INSTANCE goes: the container_base of each record a listing of the tools
# prints. The listing only reads; it gets 3 seconds, and when it fails nothing is offered.
function __jackin_session_names --argument-names record
    set -l listing $argv[2..-1]
    if command -sq timeout
        set listing timeout 3 $listing
    end
    command $listing --format json --quiet 2>/dev/null </dev/null | awk -v type="\"type\":\"$record\"" '@AWK@'
end

function @FUNCTION@_wants_session
    string match -q -- '-*' (commandline -ct); and return 1
    set -l words (commandline -opc)
    contains -- $words[-1] @VALUE_OPTIONS@; and return 1
    @ONLY_AFTER@return 0
end

complete -c @NAME@ -f -n @FUNCTION@_wants_session -a '(__jackin_session_names @LISTING@)'
"#;

fn fish(name: &str, value_options: &[String], listing: &SessionListing, script: &str) -> String {
    let only_after = match listing.only_after {
        Some(flag) => format!("contains -- {flag} $words; or return 1\n    "),
        None => String::new(),
    };
    let names = FISH_NAMES
        .replace("@AWK@", NAMES_OF_RECORDS)
        .replace("@FUNCTION@", &format!("__{}", name.replace('-', "_")))
        .replace("@NAME@", name)
        .replace("@VALUE_OPTIONS@", &value_options.join(" "))
        .replace("@ONLY_AFTER@", &only_after)
        .replace("@LISTING@", &listing_words(listing));
    format!("{script}{names}")
}
