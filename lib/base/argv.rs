//! A tool's arguments as they travel to another host's tools over ssh (extras/hosts/): the remote
//! login shell may be any shell (sh, bash, zsh, fish, csh), so the command line holds only words
//! no shell gives a meaning to, and arguments that need any other character travel encoded in one
//! word (`--args-b64=…`), which every tool's driver decodes before it parses them. Both directions
//! live here, the one owner of the encoding.

use base64::prelude::{Engine as _, BASE64_URL_SAFE_NO_PAD};

/// The word that carries encoded arguments.
const ARGS_WORD: &str = "--args-b64=";

/// Whether every shell takes `word` as itself, unquoted: letters, digits and `_@+=:,./-`, and
/// not a leading `=` (zsh expands `=cmd`).
fn plain_word(word: &str) -> bool {
    !word.is_empty()
        && !word.starts_with('=')
        && word.bytes().all(|b| b.is_ascii_alphanumeric() || b"_@+=:,./-".contains(&b))
}

/// The remote command line for `program args…`: the words as they are when no shell can
/// misread them, else the arguments in one encoded word.
pub fn command_line(program: &str, args: &[String]) -> String {
    if args.iter().all(|a| plain_word(a)) {
        return std::iter::once(program).chain(args.iter().map(String::as_str)).collect::<Vec<_>>().join(" ");
    }
    format!("{program} {ARGS_WORD}{}", BASE64_URL_SAFE_NO_PAD.encode(args.join("\0")))
}

/// The arguments a tool was started with, after the program's name: decoded when they came as
/// [`command_line`]'s one encoded word, else as they are.
pub fn decoded_args(args: Vec<std::ffi::OsString>) -> Result<Vec<std::ffi::OsString>, String> {
    let [program, word] = args.as_slice() else { return Ok(args) };
    let Some(encoded) = word.to_str().and_then(|w| w.strip_prefix(ARGS_WORD)) else { return Ok(args) };
    let bytes = BASE64_URL_SAFE_NO_PAD.decode(encoded).map_err(|e| format!("{ARGS_WORD}: not base64: {e}"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{ARGS_WORD}: not UTF-8"))?;
    Ok(std::iter::once(program.clone()).chain(text.split('\0').map(Into::into)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    /// What the remote login shell makes of the command line, for each shell on this machine:
    /// the arguments arrive as they were, whatever they hold.
    #[test]
    fn arguments_survive_every_login_shell() {
        let hostile = [
            "plain",
            "with space",
            "it's",
            "$(touch /tmp/x)",
            "`x`",
            "a\"b",
            "'",
            "",
            "semi;colon",
            "a\\",
            "b\\",
            "{a,b}",
            "*",
            "~root",
            "(x)",
            "%x",
            "$status",
            "a\nb",
            "\u{1b}[31m",
            "-n",
            "--all",
        ];
        let args: Vec<String> = hostile.iter().map(|s| s.to_string()).collect();
        let line = command_line("printf", &args);
        assert!(line.bytes().all(|b| b.is_ascii_alphanumeric() || b"_@%+=:,./- ".contains(&b)), "{line}");
        let back = decoded_args(line.split(' ').map(Into::into).collect()).unwrap();
        assert_eq!(back[1..].iter().map(|a| a.to_str().unwrap()).collect::<Vec<_>>(), hostile);
        // Plain words go as they are (an older tool on the other host reads them).
        assert_eq!(
            command_line("jackin-assess", &["--all".into(), "--format".into(), "json".into()]),
            "jackin-assess --all --format json"
        );
        let words = line.split_once(' ').unwrap().1;
        for shell in ["sh", "bash", "zsh", "fish", "dash"] {
            let Ok(out) = Command::new(shell).arg("-c").arg(format!("printf '[%s]' {words}")).output() else {
                continue;
            };
            assert_eq!(String::from_utf8_lossy(&out.stdout), format!("[{words}]"), "{shell}");
        }
    }
}
