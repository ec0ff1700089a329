//! The conventions every executed document follows (README.md and docs/*.md), read here once:
//!
//! - A fenced block tagged `sh` holds operator commands: it is run, in document order, as one
//!   `bash -e -o pipefail` script. Its expected exit code is 0 unless it holds a line `# exit N`.
//! - A block tagged `text` right after an `sh` block (only blank lines between) is that block's
//!   output: each of its lines must appear in the output (stdout, then stderr), in order; `…`
//!   inside a line stands for any text. Other `text` blocks, and `json` blocks, are shown content.
//! - A block tagged `sh dev` holds the project's own developer commands (build, test, benchmark,
//!   mutation runs), which CI runs itself or which take hours: each `scripts/…` it names must
//!   exist and be executable, and each `cargo test` filter must name a test module that exists.
//! - Any other tag, or none, fails: a command cannot slip into a document unrun.

/// One fenced block that a test acts on.
#[derive(Debug, Clone)]
pub struct Block {
    /// The `## ` heading it is under.
    pub heading: String,
    /// Its first line's number in the file (the fence), 1-based.
    pub line: usize,
    pub kind: Kind,
    pub body: String,
    /// `# exit N`, else 0.
    pub exit: i32,
    /// The `text` block right after it: its output, when it shows one.
    pub output: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Run,
    Developer,
}

/// The blocks of `doc` (named `file` in messages) that are run or checked.
pub fn blocks(file: &str, doc: &str) -> Vec<Block> {
    let mut blocks: Vec<Block> = Vec::new();
    let mut heading = String::new();
    let lines: Vec<&str> = doc.lines().collect();
    let mut n = 0;
    // The index of the last `sh` block while only blank lines have followed it.
    let mut open_run: Option<usize> = None;
    while n < lines.len() {
        let line = lines[n].trim_start();
        if lines[n].starts_with("## ") {
            heading = lines[n].to_owned();
        }
        let Some(tag) = line.strip_prefix("```") else {
            if !line.is_empty() {
                open_run = None;
            }
            n += 1;
            continue;
        };
        let fence = n;
        let mut body = Vec::new();
        n += 1;
        while n < lines.len() && !lines[n].trim_start().starts_with("```") {
            body.push(lines[n]);
            n += 1;
        }
        n += 1;
        let indent = lines[fence].len() - line.len();
        let body: String =
            body.iter().map(|l| l.get(indent..).unwrap_or(l.trim_start())).collect::<Vec<_>>().join("\n");
        match tag.trim() {
            "sh" | "sh dev" => {
                let exit = body
                    .lines()
                    .find_map(|l| l.trim().strip_prefix("# exit ").map(|c| c.trim().parse::<i32>().unwrap()))
                    .unwrap_or(0);
                let kind = if tag.trim() == "sh" { Kind::Run } else { Kind::Developer };
                blocks.push(Block { heading: heading.clone(), line: fence + 1, kind, body, exit, output: None });
                open_run = (kind == Kind::Run).then_some(blocks.len() - 1);
            }
            "text" => {
                if let Some(at) = open_run.take() {
                    blocks[at].output = Some(body);
                }
            }
            "json" => open_run = None,
            other => panic!("{file}:{}: a ```{other} block is neither run nor shown; tag commands `sh`", fence + 1),
        }
    }
    blocks
}

/// Whether every line of `expected` appears in `output`, in order, `…` standing for any text.
/// `Err` names the first line that does not.
pub fn shows(expected: &str, output: &str) -> Result<(), String> {
    let mut lines = output.lines();
    for wanted in expected.lines().filter(|l| !l.trim().is_empty()) {
        if !lines.any(|line| line_matches(wanted.trim_end(), line.trim_end())) {
            return Err(wanted.to_owned());
        }
    }
    Ok(())
}

/// `line` is `pattern`, each `…` of which stands for any text (also none).
fn line_matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split('…').collect();
    if parts.len() == 1 {
        return pattern == line;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !line.starts_with(first) || line.len() < first.len() + last.len() || !line.ends_with(last) {
        return false;
    }
    let mut rest = &line[first.len()..line.len() - last.len()];
    for part in &parts[1..parts.len() - 1] {
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// A developer block's commands hold: the scripts it names exist and are executable, and its
/// `cargo test` filters name test modules that exist. `Err` says what does not.
pub fn check_developer(block: &Block, root: &std::path::Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    for word in block.body.split_whitespace() {
        if let Some(script) = word.strip_prefix("scripts/") {
            let path = root.join("scripts").join(script);
            let mode = std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?.permissions().mode();
            if mode & 0o111 == 0 {
                return Err(format!("{} is not executable", path.display()));
            }
        }
        if word.ends_with("::") && word.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
            let module = word.trim_end_matches("::").replace("::", "/");
            let (file, dir) = (root.join(format!("tests/{module}.rs")), root.join(format!("tests/{module}")));
            if !file.is_file() && !dir.is_dir() {
                return Err(format!("the test filter {word} names no module under tests/"));
            }
        }
    }
    Ok(())
}

#[test]
fn blocks_outputs_and_patterns_read_as_documented() {
    let doc = "## A\n\n```sh\nls\n# exit 2\n```\n\n```text\nerror: …\n```\n\nprose\n\n```text\nnot an output\n```\n\
               \n```sh dev\ncargo test\n```\n";
    let blocks = blocks("doc.md", doc);
    assert_eq!(blocks.len(), 2);
    assert_eq!((blocks[0].exit, blocks[0].output.as_deref()), (2, Some("error: …")));
    assert_eq!((blocks[1].kind, blocks[1].output.as_deref()), (Kind::Developer, None));
    assert!(shows("a …\nc", "a b\nx\nc\n").is_ok());
    assert_eq!(shows("c\na …", "a b\nc\n"), Err("a …".to_owned()), "in order");
    assert!(line_matches("jk-… · ready · tier …", "jk-abc · ready · tier 1"));
    assert!(!line_matches("jk-… · ready", "jk-abc · not ready · x"));
    assert!(!line_matches("a…a", "a"), "the two ends do not overlap");
}
