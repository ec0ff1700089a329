//! The library's folders are its layers (lib/lib.rs): a layer uses only the layers before it.
//! This reads the sources as text, so a `crate::…` path that reaches upward fails here, before a
//! reviewer has to notice it.

use std::fs;
use std::path::{Path, PathBuf};

/// Bottom to top, as lib/lib.rs lists them.
const LAYERS: [&str; 6] = ["base", "state", "protocol", "engines", "tools", "face"];

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
