//! The library's folders are its layers (lib/lib.rs): a layer uses only the layers before it.
//! This reads the sources as text, so a `crate::…` path that reaches upward fails here, before a
//! reviewer has to notice it.

use std::fs;
use std::path::{Path, PathBuf};

/// Bottom to top, as lib/lib.rs lists them.
const LAYERS: [&str; 8] = ["base", "state", "protocol", "engines", "services", "tools", "face", "extras"];

fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    files
}

/// Every layer named after `crate::` in `text`.
fn layers_used(text: &str) -> Vec<&'static str> {
    let mut used = Vec::new();
    for (at, _) in text.match_indices("crate::") {
        let rest = &text[at + "crate::".len()..];
        let name: String = rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if let Some(layer) = LAYERS.iter().find(|l| **l == name) {
            used.push(*layer);
        }
    }
    used
}

#[test]
fn no_layer_reaches_upward() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("lib");
    let mut upward = Vec::new();
    for (rank, layer) in LAYERS.iter().enumerate() {
        for file in sources(&lib.join(layer)) {
            let text = fs::read_to_string(&file).unwrap();
            for used in layers_used(&text) {
                let used_rank = LAYERS.iter().position(|l| *l == used).unwrap();
                if used_rank > rank {
                    upward.push(format!("{} ({layer}) uses {used}", file.strip_prefix(&lib).unwrap().display()));
                }
            }
        }
    }
    upward.sort();
    upward.dedup();
    assert!(upward.is_empty(), "layers reaching upward:\n{}", upward.join("\n"));
}

#[test]
fn every_folder_of_lib_is_a_layer_and_lib_rs_names_them_in_order() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("lib");
    let mut folders: Vec<String> = fs::read_dir(&lib)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let mut layers: Vec<String> = LAYERS.iter().map(|l| l.to_string()).collect();
    layers.sort();
    assert_eq!(folders, layers);
    let lib_rs = fs::read_to_string(lib.join("lib.rs")).unwrap();
    let positions: Vec<usize> = LAYERS.iter().map(|l| lib_rs.find(&format!("- `{l}`")).expect(l)).collect();
    assert!(positions.windows(2).all(|w| w[0] < w[1]), "lib.rs lists the layers out of order");
}

#[test]
fn the_check_sees_an_upward_path() {
    assert_eq!(layers_used("use crate::tools::keep;\nlet x = crate::base::time::now();"), ["tools", "base"]);
    assert!(layers_used("use crate::toolsmith::x; // not a layer").is_empty());
}

/// The tools named after `crate::tools::` in `text`.
fn tools_used(text: &str) -> Vec<String> {
    text.match_indices("crate::tools::")
        .map(|(at, _)| {
            let rest = &text[at + "crate::tools::".len()..];
            rest.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
        })
        .collect()
}

/// Each tool is a room of its own (lib/tools/mod.rs): a file of one tool never names another
/// tool, so what two tools share stands below them, in `services`.
#[test]
fn no_tool_uses_another_tools_internals() {
    let tools = Path::new(env!("CARGO_MANIFEST_DIR")).join("lib/tools");
    let mut crossing = Vec::new();
    for file in sources(&tools) {
        let relative = file.strip_prefix(&tools).unwrap();
        let first = relative.components().next().unwrap().as_os_str().to_string_lossy().into_owned();
        let own = first.trim_end_matches(".rs");
        if own == "mod" {
            continue;
        }
        for used in tools_used(&fs::read_to_string(&file).unwrap()) {
            if used != own {
                crossing.push(format!("tools/{} uses tools::{used}", relative.display()));
            }
        }
    }
    crossing.sort();
    crossing.dedup();
    assert!(crossing.is_empty(), "tools using another tool's internals:\n{}", crossing.join("\n"));
}

/// The five tools link none of the extras (lib/extras/mod.rs): no function of `extras` (the
/// archive's format included) and none of the crates only an extra needs (flate2; tar but for
/// restore's image contexts) is in their binaries' symbol tables. Read with
/// `nm`, which reads the symbol table alone (debug information names more than is linked).
#[test]
fn the_five_tools_link_no_code_of_the_extras() {
    let tools = [
        assert_cmd::cargo::cargo_bin!("jackin-assess"),
        assert_cmd::cargo::cargo_bin!("jackin-keep"),
        assert_cmd::cargo::cargo_bin!("jackin-purge"),
        assert_cmd::cargo::cargo_bin!("jackin-reconcile"),
        assert_cmd::cargo::cargo_bin!("jackin-restore"),
    ];
    let extra = assert_cmd::cargo::cargo_bin!("jackin-move");
    let symbols = |binary: &Path| {
        let out = std::process::Command::new("nm").arg("--defined-only").arg(binary).output().expect("nm (binutils)");
        assert!(out.status.success(), "nm {}: {}", binary.display(), String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    // tar also builds tier 3's image contexts: jackin-restore links it for that, and only that.
    let of_extras = |symbols: &str, tar_too: bool| -> Vec<String> {
        let words = ["6jackin6extras", "_ZN6flate2", "_ZN3tar"];
        let words = if tar_too { &words[..] } else { &words[..2] };
        symbols.lines().filter(|line| words.iter().any(|word| line.contains(word))).map(str::to_owned).collect()
    };
    // The check sees them where they are.
    assert!(!of_extras(&symbols(extra), true).is_empty(), "jackin-move links the extras");
    for tool in tools {
        let linked = of_extras(&symbols(tool), !tool.ends_with("jackin-restore"));
        assert!(linked.is_empty(), "{} links the extras: {:?}", tool.display(), &linked[..linked.len().min(5)]);
    }
}

#[test]
fn the_check_sees_a_tool_using_another() {
    assert_eq!(tools_used("use crate::tools::purge::remove;\nuse crate::services::claim;"), ["purge"]);
}

/// Whether `text` names the `git2` crate: the word `git2` in code or in a comment, not part of a
/// longer name (`libgit2`, the C library; `git2_curl`, the bins' transport).
fn names_git2(text: &str) -> bool {
    let part_of_a_name = |c: char| c.is_ascii_alphanumeric() || c == '_';
    text.match_indices("git2").any(|(at, word)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(part_of_a_name) && !after.is_some_and(part_of_a_name)
    })
}

/// The files under `lib/` that name the `git2` crate, relative to `lib/`.
fn naming_git2(lib: &Path) -> Vec<PathBuf> {
    let mut naming: Vec<PathBuf> = sources(lib)
        .into_iter()
        .filter(|file| names_git2(&fs::read_to_string(file).unwrap()))
        .map(|file| file.strip_prefix(lib).unwrap().to_path_buf())
        .collect();
    naming.sort();
    naming
}

/// git is sealed behind `lib/engines/git/` as Docker is behind `lib/engines/docker/`: no other
/// file of the library names libgit2's crate, so no tool holds a libgit2 type or classifies its
/// errors itself.
#[test]
fn only_engines_git_names_git2() {
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("lib");
    let outside: Vec<String> = naming_git2(&lib)
        .into_iter()
        .filter(|file| !file.starts_with("engines/git"))
        .map(|file| file.display().to_string())
        .collect();
    assert!(outside.is_empty(), "files outside engines/git naming git2:\n{}", outside.join("\n"));
}

#[test]
fn the_check_sees_a_planted_git2() {
    assert!(names_git2("use git2::Repository;"));
    assert!(names_git2("fn f(e: &git2::Error) {}"));
    assert!(names_git2("// opened with git2"));
    assert!(!names_git2("//! git through libgit2; git2_curl registers the transport"));
    // The scan reads the real files: the sealed module's own uses are found.
    let lib = Path::new(env!("CARGO_MANIFEST_DIR")).join("lib");
    assert!(naming_git2(&lib).contains(&PathBuf::from("engines/git/mod.rs")));
}

// --- sizes ---------------------------------------------------------------------------------

/// The most lines of code (neither blank nor only a comment) a library file holds outside its
/// `#[cfg(test)]` items.
const MOST_FILE_CODE_LINES: usize = 500;
/// The most lines a function spans, from `fn` to its closing brace.
const MOST_FUNCTION_LINES: usize = 80;
/// The most lines of a binary's file: a short `main` and the tool's own loop.
const MOST_BIN_LINES: usize = 150;

/// What is over its limit today, each at most as large as it is now: a ratchet that lets none
/// grow and no new one in. An entry goes when its file or function is split; a listed one that
/// is within its limit fails the test, so the list never outlives what it excuses.
const OVER_TODAY: &[(&str, &str, usize)] = &[];

/// One measure of one source: a file's code lines (`function` empty) or a function's lines.
#[derive(Debug, Clone, PartialEq)]
struct Size {
    file: String,
    function: String,
    lines: usize,
    limit: usize,
}

fn is_cfg_test(attrs: &[syn::Attribute]) -> bool {
    attrs
        .iter()
        .any(|a| a.path().is_ident("cfg") && a.meta.require_list().is_ok_and(|l| l.tokens.to_string() == "test"))
}

/// The functions of a parsed file outside `#[cfg(test)]` items, each with its lines.
#[derive(Default)]
struct Functions {
    found: Vec<(String, usize)>,
    /// The line ranges of `#[cfg(test)]` items, left out of the file's code lines too.
    test_lines: Vec<(usize, usize)>,
}

fn lines_of(span: proc_macro2::Span) -> (usize, usize) {
    (span.start().line, span.end().line)
}

impl<'ast> syn::visit::Visit<'ast> for Functions {
    fn visit_item(&mut self, item: &'ast syn::Item) {
        let attrs = match item {
            syn::Item::Mod(m) => &m.attrs,
            syn::Item::Fn(f) => &f.attrs,
            syn::Item::Impl(i) => &i.attrs,
            syn::Item::Use(u) => &u.attrs,
            syn::Item::Const(c) => &c.attrs,
            syn::Item::Struct(s) => &s.attrs,
            _ => return syn::visit::visit_item(self, item),
        };
        if is_cfg_test(attrs) {
            self.test_lines.push(lines_of(syn::spanned::Spanned::span(item)));
            return;
        }
        syn::visit::visit_item(self, item);
    }

    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.function(&f.sig, &f.block);
        syn::visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        if is_cfg_test(&f.attrs) {
            return;
        }
        self.function(&f.sig, &f.block);
        syn::visit::visit_impl_item_fn(self, f);
    }
}

impl Functions {
    fn function(&mut self, sig: &syn::Signature, block: &syn::Block) {
        let start = sig.fn_token.span.start().line;
        let end = block.brace_token.span.close().end().line;
        self.found.push((sig.ident.to_string(), end - start + 1));
    }
}

/// Every size limit of one source file, measured.
fn sizes_of(root: &Path, path: &Path) -> Vec<Size> {
    let text = fs::read_to_string(path).unwrap();
    let file = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
    let measure = |function: &str, lines, limit| Size { file: file.clone(), function: function.into(), lines, limit };
    if file.starts_with("bins/") {
        return vec![measure("", text.lines().count(), MOST_BIN_LINES)];
    }
    let parsed = syn::parse_file(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
    let mut functions = Functions::default();
    syn::visit::Visit::visit_file(&mut functions, &parsed);
    let code_lines = text
        .lines()
        .enumerate()
        .filter(|(at, line)| {
            let n = at + 1;
            let code = line.trim();
            !code.is_empty()
                && !code.starts_with("//")
                && !functions.test_lines.iter().any(|(s, e)| (*s..=*e).contains(&n))
        })
        .count();
    let mut sizes = vec![measure("", code_lines, MOST_FILE_CODE_LINES)];
    sizes.extend(functions.found.iter().map(|(name, lines)| measure(name, *lines, MOST_FUNCTION_LINES)));
    sizes
}

/// Every library file's and every function's size against its limit, and the binaries' lengths,
/// measured on the parsed source; what is over is only what `OVER_TODAY` lists, at most as large.
/// Test files (`tests.rs`, `*_tests.rs`, `tests/` folders) are not measured.
#[test]
fn no_file_or_function_is_over_its_size() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files: Vec<PathBuf> = sources(&root.join("lib"));
    files.retain(|p| {
        let name = p.file_name().unwrap().to_string_lossy();
        name != "tests.rs" && !name.ends_with("_tests.rs") && !p.components().any(|c| c.as_os_str() == "tests")
    });
    files.extend(sources(&root.join("bins")));
    let mut problems = Vec::new();
    // The largest of each (file, function) measured: two functions of one file can share a name.
    let mut largest: Vec<Size> = Vec::new();
    for path in &files {
        for size in sizes_of(root, path) {
            match largest.iter_mut().find(|s| s.file == size.file && s.function == size.function) {
                Some(seen) if seen.lines >= size.lines => {}
                Some(seen) => *seen = size,
                None => largest.push(size),
            }
        }
    }
    for size in &largest {
        let listed = OVER_TODAY.iter().find(|(f, n, _)| *f == size.file && *n == size.function);
        let shown = format!("{} {}", size.file, size.function);
        match (size.lines > size.limit, listed) {
            (true, None) => problems.push(format!("{shown}: {} lines, over {}", size.lines, size.limit)),
            (true, Some((_, _, most))) if size.lines > *most => {
                problems.push(format!("{shown}: {} lines, grown past the {most} it was", size.lines))
            }
            (false, Some(_)) => problems.push(format!("{shown}: within {} now; take it off OVER_TODAY", size.limit)),
            _ => {}
        }
    }
    for (file, function, _) in OVER_TODAY {
        if !largest.iter().any(|s| s.file == *file && s.function == *function) {
            problems.push(format!("{file} {function}: listed in OVER_TODAY but not found"));
        }
    }
    assert!(problems.is_empty(), "sizes:\n  {}", problems.join("\n  "));
}

/// The measure sees a long function, a long file and the code of a test module apart.
#[test]
fn the_size_check_sees_a_long_function_and_leaves_tests_out() {
    let tmp = tempfile::tempdir().unwrap();
    let lib = tmp.path().join("lib");
    fs::create_dir_all(&lib).unwrap();
    let body = "    let x = 1;\n".repeat(90);
    let text = format!("fn long() {{\n{body}}}\n\nfn short() {{}}\n\n#[cfg(test)]\nmod tests {{\n    fn long_test() {{\n{body}    }}\n}}\n");
    fs::write(lib.join("a.rs"), text).unwrap();
    let sizes = sizes_of(tmp.path(), &lib.join("a.rs"));
    let of = |name: &str| sizes.iter().find(|s| s.function == name).map(|s| s.lines);
    assert_eq!(of("long"), Some(92));
    assert_eq!(of("short"), Some(1));
    assert_eq!(of("long_test"), None, "a test module's functions are not measured");
    assert_eq!(of(""), Some(93), "the file's code lines, the test module left out");
}

// --- what differs between systems ----------------------------------------------------------

/// Marks of a call, a file or a build condition that only Linux has. `lib/base/os/` is the room
/// where what differs between systems is kept (issue 68): outside it, product code names none.
const LINUX_ONLY: [&str; 8] = ["/proc/", "syncfs", "target_os", "setfsuid", "mknodat", "inotify", "epoll", "prctl"];

/// The Linux-only marks in the code lines of `text` (comments and `#[cfg(test)]` items left
/// out), each with its line.
fn linux_only_marks(text: &str) -> Vec<(usize, &'static str)> {
    let parsed = syn::parse_file(text).unwrap();
    let mut functions = Functions::default();
    syn::visit::Visit::visit_file(&mut functions, &parsed);
    let in_tests = |n: usize| functions.test_lines.iter().any(|(s, e)| (*s..=*e).contains(&n));
    let mut marks = Vec::new();
    for (at, line) in text.lines().enumerate() {
        let code = line.trim();
        if code.starts_with("//") || in_tests(at + 1) {
            continue;
        }
        marks.extend(LINUX_ONLY.iter().filter(|mark| code.contains(*mark)).map(|mark| (at + 1, *mark)));
    }
    marks
}

#[test]
fn no_linux_only_call_outside_the_os_room() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut found = Vec::new();
    for dir in ["lib", "bins"] {
        for file in sources(&root.join(dir)) {
            let rel = file.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            let name = file.file_name().unwrap().to_string_lossy();
            let test_file = name == "tests.rs" || name.ends_with("_tests.rs") || rel.contains("/tests/");
            if rel.starts_with("lib/base/os/") || test_file {
                continue;
            }
            let text = fs::read_to_string(&file).unwrap();
            found.extend(linux_only_marks(&text).into_iter().map(|(line, mark)| format!("{rel}:{line}: {mark}")));
        }
    }
    assert!(found.is_empty(), "Linux-only calls outside lib/base/os/:\n{}", found.join("\n"));
}

#[test]
fn the_os_check_sees_a_planted_linux_call_and_leaves_tests_and_comments_out() {
    let planted = "fn f() {\n    let _ = std::fs::read(\"/proc/locks\");\n}\n";
    assert_eq!(linux_only_marks(planted), [(2, "/proc/")]);
    let excused = "// reads /proc/stat elsewhere\n#[cfg(test)]\nmod tests {\n    fn g() { rustix::fs::syncfs(); }\n}\n";
    assert!(linux_only_marks(excused).is_empty());
    // The room itself holds them: the check would see them there.
    let room = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("lib/base/os/linux.rs")).unwrap();
    assert!(linux_only_marks(&room).iter().any(|(_, mark)| *mark == "syncfs"));
}
