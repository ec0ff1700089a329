//! The files a repository's configuration makes libgit2 read besides itself, each opened by name
//! with a blocking `open`: the targets of `include.path` and `includeIf.<condition>.path`, read
//! while the repository is opened, and `core.excludesFile` and `core.attributesFile`, read at a
//! status. The agent writes a clone's configuration (and a worktree's `config.worktree`): a FIFO
//! it names there, or a device of the host (`/dev/tty`, `/dev/zero`), would stop the tool for
//! ever. One that is not a regular file refuses the repository, named.
//!
//! The includes are found by reading the configuration's text before libgit2 does, without
//! following them (libgit2 has no way to read a file without its includes): only section and
//! variable names and the values of `path` variables matter, and the syntax of git-config(1)
//! for those is parsed here whole (quotes, escapes, continued lines, comments). A text that does
//! not parse is refused: libgit2 refuses it too.

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use super::error::WOULD_WAIT;

/// libgit2 follows includes this deep (`MAX_INCLUDE_DEPTH`), and fails beyond.
const MOST_INCLUDE_DEPTH: usize = 10;

/// The largest configuration file read to find its includes; a larger one is refused.
const MOST_CONFIG_BYTES: u64 = 1 << 20;

/// Refuses the configuration file at `config` when it, or a file it includes at any depth, names
/// an include that is not a regular file (a link judged by what it leads to). A file that is not
/// there includes nothing.
pub(super) fn includes_checked(config: &Path) -> Result<(), git2::Error> {
    let mut pending = vec![(config.to_path_buf(), 0)];
    while let Some((file, depth)) = pending.pop() {
        let Some(text) = read_config(&file)? else { continue };
        let dir = file.parent().unwrap_or(Path::new("/"));
        for target in include_paths(&text).map_err(|line| refused(&file, format_args!("line {line} does not parse")))? {
            let target = resolve(dir, &target);
            if depth < MOST_INCLUDE_DEPTH {
                pending.push((target, depth + 1));
            }
        }
    }
    Ok(())
}

/// The rule files the configuration names (`core.excludesFile`, `core.attributesFile`), read at
/// every status: refused when one is not a regular file.
pub(super) fn rule_files_checked(repo: &git2::Repository) -> Result<(), git2::Error> {
    let config = repo.config()?;
    for name in ["core.excludesFile", "core.attributesFile"] {
        let Ok(path) = config.get_path(name) else { continue };
        for path in [Some(path.clone()), repo.workdir().map(|w| w.join(&path))].into_iter().flatten() {
            if let Ok(meta) = fs::metadata(&path) {
                if !(meta.is_file() || meta.is_dir()) {
                    return Err(refused(&path, format_args!("({name}) {WOULD_WAIT}")));
                }
            }
        }
    }
    Ok(())
}

/// The text of a configuration file, judged by the handle opened (never waiting on a FIFO; a
/// link followed, as libgit2 follows it): `None` when there is none, refused when it is not a
/// regular file or larger than [`MOST_CONFIG_BYTES`].
fn read_config(path: &Path) -> Result<Option<Vec<u8>>, git2::Error> {
    use std::os::unix::fs::OpenOptionsExt;
    // Looked at before it is opened: a device is not opened at all (opening one can act).
    match fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Ok(meta) if !(meta.is_file() || meta.is_dir()) => return Err(refused(path, format_args!("{WOULD_WAIT}"))),
        _ => {}
    }
    let file = match fs::OpenOptions::new()
        .read(true)
        .custom_flags(crate::base::os::NONBLOCK | crate::base::os::CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(refused(path, format_args!("cannot be read ({e}); not read"))),
    };
    let meta = file.metadata().map_err(|e| refused(path, format_args!("cannot be read ({e})")))?;
    if meta.is_dir() {
        return Ok(None);
    }
    if !meta.is_file() {
        return Err(refused(path, format_args!("{WOULD_WAIT}")));
    }
    if meta.len() > MOST_CONFIG_BYTES {
        return Err(refused(
            path,
            format_args!("is {} bytes, more than the {MOST_CONFIG_BYTES} read to check it", meta.len()),
        ));
    }
    let mut text = Vec::new();
    file.take(MOST_CONFIG_BYTES)
        .read_to_end(&mut text)
        .map_err(|e| refused(path, format_args!("cannot be read ({e})")))?;
    Ok(Some(text))
}

/// Where an include's path leads: `~/` from the operator's home, a relative path from the
/// directory of the file that includes it (git-config(1), "Includes").
fn resolve(dir: &Path, target: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStrExt;
    let home = std::env::var_os("HOME").map(PathBuf::from);
    match (target.strip_prefix(b"~/"), home) {
        (Some(rest), Some(home)) => home.join(std::ffi::OsStr::from_bytes(rest)),
        _ => dir.join(std::ffi::OsStr::from_bytes(target)),
    }
}

fn refused(path: &Path, why: std::fmt::Arguments<'_>) -> git2::Error {
    git2::Error::from_str(&format!("{} {why}", path.display()))
}

/// The values of every `path` variable of an `include` or `includeIf` section of a configuration
/// text, in git-config(1)'s syntax; the number of the first line that does not parse otherwise.
fn include_paths(text: &[u8]) -> Result<Vec<Vec<u8>>, usize> {
    let mut parser = Parser { text, at: 0, line: 1 };
    let mut section = Vec::new();
    let mut paths = Vec::new();
    loop {
        parser.skip_blanks();
        match parser.peek() {
            None => return Ok(paths),
            Some(b'\n') => parser.bump(),
            Some(b'#' | b';') => parser.skip_comment(),
            Some(b'[') => section = parser.section_name().ok_or(parser.line)?,
            Some(c) if c.is_ascii_alphabetic() => {
                let (name, value) = parser.variable().ok_or(parser.line)?;
                let is_include = section.eq_ignore_ascii_case(b"include") || section.eq_ignore_ascii_case(b"includeif");
                if is_include && name.eq_ignore_ascii_case(b"path") {
                    paths.extend(value);
                }
            }
            Some(_) => return Err(parser.line),
        }
    }
}

struct Parser<'t> {
    text: &'t [u8],
    at: usize,
    line: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.text.get(self.at).copied()
    }

    fn bump(&mut self) {
        if self.peek() == Some(b'\n') {
            self.line += 1;
        }
        self.at += 1;
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\r')) {
            self.bump();
        }
    }

    fn skip_comment(&mut self) {
        while !matches!(self.peek(), None | Some(b'\n')) {
            self.bump();
        }
    }

    /// `[name]`, `[name.sub]` or `[name "sub"]`: the name before any subsection, which is all an
    /// include's section is told by.
    fn section_name(&mut self) -> Option<Vec<u8>> {
        self.bump();
        let mut name = Vec::new();
        while let Some(c) = self.peek().filter(|c| c.is_ascii_alphanumeric() || *c == b'-') {
            name.push(c);
            self.bump();
        }
        match self.peek()? {
            b']' => {}
            b'.' => {
                while !matches!(self.peek()?, b']' | b'\n') {
                    self.bump();
                }
            }
            b' ' | b'\t' => {
                self.skip_blanks();
                (self.peek()? == b'"').then_some(())?;
                self.bump();
                loop {
                    match self.peek()? {
                        b'"' => break,
                        b'\n' => return None,
                        b'\\' => {
                            self.bump();
                            (self.peek()? != b'\n').then_some(())?;
                            self.bump();
                        }
                        _ => self.bump(),
                    }
                }
                self.bump();
            }
            _ => return None,
        }
        (self.peek()? == b']').then_some(())?;
        self.bump();
        Some(name)
    }

    /// `name`, `name = value`: the name and the value as git reads it (`None` for a name alone).
    fn variable(&mut self) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
        let mut name = Vec::new();
        while let Some(c) = self.peek().filter(|c| c.is_ascii_alphanumeric() || *c == b'-') {
            name.push(c);
            self.bump();
        }
        self.skip_blanks();
        match self.peek() {
            None | Some(b'\n') => return Some((name, None)),
            Some(b'#' | b';') => {
                self.skip_comment();
                return Some((name, None));
            }
            Some(b'=') => self.bump(),
            Some(_) => return None,
        }
        self.skip_blanks();
        Some((name, Some(self.value()?)))
    }

    /// A value to the end of its line (or lines, continued with a `\`): quotes taken out, escapes
    /// read, blanks outside quotes at its end dropped, a comment outside quotes ending it.
    fn value(&mut self) -> Option<Vec<u8>> {
        let mut value = Vec::new();
        let mut quoted = false;
        // How long the value is without the blanks at its end that are outside quotes.
        let mut kept = 0;
        loop {
            match self.peek() {
                None | Some(b'\n') => break,
                Some(b'#' | b';') if !quoted => {
                    self.skip_comment();
                    break;
                }
                Some(b'"') => {
                    quoted = !quoted;
                    self.bump();
                    kept = value.len();
                }
                Some(b'\\') => {
                    self.bump();
                    let escaped = match self.peek()? {
                        b'\n' => {
                            self.bump();
                            continue;
                        }
                        b'n' => b'\n',
                        b't' => b'\t',
                        b'b' => 8,
                        b'\\' => b'\\',
                        b'"' => b'"',
                        _ => return None,
                    };
                    self.bump();
                    value.push(escaped);
                    kept = value.len();
                }
                Some(c) => {
                    self.bump();
                    value.push(c);
                    if quoted || !matches!(c, b' ' | b'\t' | b'\r') {
                        kept = value.len();
                    }
                }
            }
        }
        if quoted {
            return None;
        }
        value.truncate(kept);
        Some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::include_paths;

    fn paths(text: &str) -> Result<Vec<String>, usize> {
        include_paths(text.as_bytes()).map(|p| p.into_iter().map(|p| String::from_utf8(p).unwrap()).collect())
    }

    /// Every way git-config(1) lets a `path` of an include be written is read as git reads it;
    /// other sections' `path`s and other variables of an include are not includes.
    #[test]
    fn include_paths_are_read_as_git_reads_them() {
        let text = "# a comment\n[core]\n\tbare = false\n\tpath = not-an-include\n[include]\n\tpath = plain\n\
                    [Include] PATH = \"quoted # not a comment\" ; a comment\n[includeIf \"gitdir:/x/\"]\n\
                    path = ~/cond\n[include.sub]\n  path = con\\\ntinued  \n[include]\n\tpath\n\tother = x\n\
                    [include]path=esc\\\\aped\\\"q\\t";
        assert_eq!(paths(text).unwrap(), ["plain", "quoted # not a comment", "~/cond", "continued", "esc\\aped\"q\t"],);
        assert_eq!(paths("").unwrap(), Vec::<String>::new());
    }

    /// A text git would refuse is refused, with its line: an unclosed quote, an escape git does
    /// not know, a section header without its end, a stray character.
    #[test]
    fn a_text_that_does_not_parse_is_refused_with_its_line() {
        assert_eq!(paths("[include]\n\tpath = \"open\n"), Err(2));
        assert_eq!(paths("[include]\n\tpath = a\\qb\n"), Err(2));
        assert_eq!(paths("[core]\n[include\n\tpath = x\n"), Err(2));
        assert_eq!(paths("[core]\n\n= x\n"), Err(3));
    }
}
