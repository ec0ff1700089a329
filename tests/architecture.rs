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
